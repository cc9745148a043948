//! A panicking handler holds the record it panicked on, and nothing else: the work before it
//! stands, the adapter goes on serving, and the panic is logged.

use std::future::poll_fn;

use lambda_kinesis::lambda_runtime::{Context, LambdaEvent};
use lambda_kinesis::settlement::{HoldReason, RecordOutcome};
use lambda_kinesis::testing::{TestEvent, settle};
use lambda_kinesis::tower::Service as _;
use lambda_kinesis::wire::{BatchResponse, KinesisBatch};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};

use crate::support::{Calls, LogCapture, check_outcomes};

/// Panics inside its future on 13; acks every other number.
async fn superstitious(n: &u32) -> HandlerOutcome {
    tokio::task::yield_now().await;
    assert_ne!(*n, 13, "record {n} is unlucky");
    HandlerOutcome::ack()
}

fn panic_message(outcome: &RecordOutcome) -> &str {
    match outcome {
        RecordOutcome::Held(HoldReason::Panicked(message)) => message,
        other => panic!("expected a panicked record, got {other:?}"),
    }
}

#[tokio::test]
async fn a_panic_inside_the_future_holds_that_record_only() {
    let event = TestEvent::new().json(&1).json(&2).json(&13).json(&4);
    let (logs, _guard) = LogCapture::start();
    let settlement = settle(superstitious, &event).await;

    check_outcomes(&settlement, "ack ack panic skip");
    assert!(
        panic_message(settlement.outcome(2)).contains("record 13 is unlucky"),
        "{:?}",
        settlement.outcome(2)
    );
    assert_eq!(
        settlement.cut().map(|cut| cut.sequence_number),
        Some(event.sequence_number(2))
    );
    let line = logs.one("the handler panicked; the record is held");
    assert_eq!(line["level"], "ERROR");
    assert_eq!(line["span"]["sequence_number"], event.sequence_number(2));
    assert!(
        line["fields"]["panic"]
            .as_str()
            .unwrap()
            .contains("record 13 is unlucky")
    );
}

#[tokio::test]
async fn a_panic_before_the_future_exists_holds_that_record_only() {
    let calls = Calls::default();
    let handler = calls.noting_handler(|n: &u32| {
        if *n == 13 {
            panic!("{n} refused at the door");
        }
        HandlerOutcome::ack()
    });
    let settlement = settle(handler, TestEvent::new().json(&1).json(&13).json(&2)).await;
    check_outcomes(&settlement, "ack panic skip");
    assert_eq!(
        panic_message(settlement.outcome(1)),
        "13 refused at the door"
    );
    assert_eq!(
        calls.taken(),
        [1, 13],
        "no record after the panic is started"
    );
}

#[tokio::test]
async fn a_panic_without_a_message_is_still_held() {
    let handler = |_: &u32| async {
        std::panic::panic_any(42_u8);
        #[allow(unreachable_code)]
        HandlerOutcome::ack()
    };
    let settlement = settle(handler, TestEvent::new().json(&1)).await;
    assert_eq!(
        panic_message(settlement.outcome(0)),
        "a panic without a message"
    );
}

#[tokio::test]
async fn a_panicking_batch_handler_holds_the_batch() {
    let handler = |numbers: &[u32]| {
        let len = numbers.len();
        async move {
            assert!(len < 2, "too many at once");
            HandlerOutcome::ack()
        }
    };
    let settlement = settle(handler, TestEvent::new().json(&1).json(&2)).await;
    check_outcomes(&settlement, "panic skip");
    assert_eq!(panic_message(settlement.outcome(0)), "too many at once");
}

#[tokio::test]
async fn the_service_answers_after_a_panic_and_serves_the_next_invocation() {
    let mut service = KinesisAdapter::new(superstitious);
    let invoke =
        |event: &TestEvent| LambdaEvent::new(KinesisBatch::from(event), Context::default());

    let unlucky = TestEvent::new().json(&12).json(&13);
    poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
    let response = service
        .call(invoke(&unlucky))
        .await
        .expect("a response, not an error");
    assert_eq!(named(&response), Some(unlucky.sequence_number(1)));

    let lucky = TestEvent::new().json(&14);
    poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
    let response = service.call(invoke(&lucky)).await.unwrap();
    assert_eq!(named(&response), None);
}

/// The record a response names, as Lambda reads it.
fn named(response: &BatchResponse) -> Option<&str> {
    let failures = &response.failures().batch_item_failures;
    failures
        .first()
        .and_then(|failure| failure.item_identifier.as_deref())
}
