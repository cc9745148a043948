//! The deadline margin: once the invocation has less than the margin left, no new record starts,
//! and the response names the first record that did not start, so finished work is checkpointed.
//!
//! Time is paused: a handler's sleep moves tokio's clock, which the adapter measures the
//! remaining time with, so the margin is crossed exactly where the test says.

use std::time::Duration;

use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::testing::{TestEvent, context_with_deadline};
use lambda_kinesis::wire::KinesisBatch;
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};

use crate::support::{Calls, LogCapture, check_outcomes};

/// A record handler that takes one second per record.
async fn one_second_each(_: &u32) -> HandlerOutcome {
    tokio::time::sleep(Duration::from_secs(1)).await;
    HandlerOutcome::ack()
}

fn five_records() -> TestEvent {
    (0..5).fold(TestEvent::new(), |event, n| event.json(&n))
}

#[tokio::test(start_paused = true)]
async fn no_record_starts_within_the_margin() {
    let event = five_records();
    let (logs, _guard) = LogCapture::start();
    // Records start at 0 s, 1 s and 2 s: 3 s, 2 s and 1 s before the deadline. The margin of
    // 1.5 s stops the third.
    let settlement = KinesisAdapter::new(one_second_each)
        .deadline_margin(Duration::from_millis(1500))
        .settle(
            KinesisBatch::from(&event),
            &context_with_deadline(Duration::from_secs(3)),
        )
        .await;

    check_outcomes(&settlement, "ack ack deadline deadline deadline");
    assert_eq!(
        settlement.cut().map(|cut| cut.sequence_number),
        Some(event.sequence_number(2)),
        "the first record that did not start"
    );
    let line = logs
        .one("the invocation's deadline is near: no new record is started, the rest come again");
    assert_eq!(line["level"], "WARN");
    assert_eq!(line["fields"]["sequence_number"], event.sequence_number(2));
}

#[tokio::test(start_paused = true)]
async fn the_default_margin_is_half_a_second() {
    let event = five_records();
    // Records start 2.9 s, 1.9 s and 0.9 s before the deadline; the fourth would start 0.1 s
    // before it.
    let settlement = KinesisAdapter::new(one_second_each)
        .settle(
            KinesisBatch::from(&event),
            &context_with_deadline(Duration::from_millis(2900)),
        )
        .await;
    check_outcomes(&settlement, "ack ack ack deadline deadline");
}

#[tokio::test(start_paused = true)]
async fn a_deadline_already_too_close_starts_nothing() {
    let calls = Calls::default();
    let handler = calls.noting_handler(|_: &u32| HandlerOutcome::ack());
    let event = five_records();
    let settlement = KinesisAdapter::new(handler)
        .settle(
            KinesisBatch::from(&event),
            &context_with_deadline(Duration::from_millis(200)),
        )
        .await;
    check_outcomes(&settlement, "deadline deadline deadline deadline deadline");
    assert_eq!(settlement.cut(), Some(event.cut_at(0)));
    assert!(calls.taken().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_default_context_has_no_deadline() {
    // `Context::default()` has a deadline of 0: it was not made by a runtime, so nothing stops
    // the batch, however long it takes.
    let slow = |_: &u32| async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        HandlerOutcome::ack()
    };
    let settlement = KinesisAdapter::new(slow)
        .settle(KinesisBatch::from(&five_records()), &Context::default())
        .await;
    check_outcomes(&settlement, "ack ack ack ack ack");
}

#[tokio::test(start_paused = true)]
async fn a_batch_handler_is_not_called_within_the_margin() {
    let calls = Calls::default();
    let handler = {
        let calls = calls.clone();
        move |numbers: &[u32]| {
            calls.push(numbers.len());
            std::future::ready(HandlerOutcome::ack())
        }
    };
    let adapter = KinesisAdapter::new(handler);
    let event = five_records();
    let late = adapter
        .settle(
            KinesisBatch::from(&event),
            &context_with_deadline(Duration::from_millis(400)),
        )
        .await;
    check_outcomes(&late, "deadline deadline deadline deadline deadline");
    let in_time = adapter
        .settle(
            KinesisBatch::from(&event),
            &context_with_deadline(Duration::from_secs(2)),
        )
        .await;
    check_outcomes(&in_time, "ack ack ack ack ack");
    assert_eq!(calls.taken(), [5]);
}

#[tokio::test(start_paused = true)]
async fn in_lanes_every_lane_stops_at_the_margin() {
    // Two keys handled side by side, one second a record: at 2 s each lane has handled two.
    let mut event = TestEvent::new();
    for n in 0..8 {
        event = event.json_keyed(["a", "b"][n % 2], &(n as u32));
    }
    let settlement = KinesisAdapter::new(one_second_each)
        .per_key_lanes(2)
        .deadline_margin(Duration::from_millis(1500))
        .settle(
            KinesisBatch::from(&event),
            &context_with_deadline(Duration::from_secs(3)),
        )
        .await;
    check_outcomes(
        &settlement,
        "ack ack ack ack deadline deadline deadline deadline",
    );
    assert_eq!(
        settlement.cut().map(|cut| cut.sequence_number),
        Some(event.sequence_number(4))
    );
}
