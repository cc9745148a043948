//! `per_key_lanes`: after a held record, the records of other partition keys go on, a lane per
//! key, concurrently; the response still names the first unsettled record in shard order.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::settlement::Settlement;
use lambda_kinesis::testing::TestEvent;
use lambda_kinesis::wire::KinesisBatch;
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
use serde::{Deserialize, Serialize};
use tokio::sync::Barrier;

use crate::support::{Calls, Decision, check_outcomes, decide, response_json};

/// Builds an event from `key:decision` words, such as `"a:ack b:hold a:ack"`.
fn keyed(line: &str) -> TestEvent {
    line.split_whitespace()
        .fold(TestEvent::new(), |event, word| {
            let (key, decision) = word.split_once(':').expect("a word is key:decision");
            event.json_keyed(key, &Decision::parse(decision))
        })
}

async fn settle_in_lanes(lanes: usize, event: &TestEvent) -> Settlement {
    KinesisAdapter::new(decide)
        .per_key_lanes(lanes)
        .settle(KinesisBatch::from(event), &Context::default())
        .await
}

#[tokio::test]
async fn a_held_key_does_not_stop_the_other_keys() {
    let event = keyed("a:ack b:ack a:hold b:ack a:ack b:drop c:ack");
    let lanes = settle_in_lanes(4, &event).await;
    check_outcomes(&lanes, "ack ack hold ack skip drop ack");
    // The response still names the first unsettled record in shard order, and the checkpoint
    // stops in front of it: Lambda delivers everything behind it again.
    assert_eq!(
        lanes.cut().map(|cut| cut.sequence_number),
        Some(event.sequence_number(2))
    );
    assert_eq!(lanes.redelivered().count(), 5);
    // The drop behind the held record is not retired yet: it comes again.
    assert!(lanes.response().dropped().is_empty());

    // Without lanes, the adapter stops at the first held record.
    let default = lambda_kinesis::testing::settle(decide, &event).await;
    check_outcomes(&default, "ack ack hold skip skip skip skip");
    assert_eq!(response_json(&default), response_json(&lanes));
}

#[tokio::test]
async fn a_record_finished_out_of_order_moves_nothing() {
    let event = keyed("a:hold b:ack b:ack c:drop");
    let settlement = settle_in_lanes(3, &event).await;
    check_outcomes(&settlement, "hold ack ack drop");
    assert_eq!(settlement.cut(), Some(event.cut_at(0)));
    assert_eq!(
        response_json(&settlement),
        format!(
            r#"{{"batchItemFailures":[{{"itemIdentifier":"{}"}}]}}"#,
            event.sequence_number(0)
        )
    );
}

#[tokio::test]
async fn with_every_key_settled_the_response_is_empty() {
    let event = keyed("a:ack b:drop a:ack c:ack b:ack");
    let settlement = settle_in_lanes(2, &event).await;
    check_outcomes(&settlement, "ack drop ack ack ack");
    assert_eq!(settlement.cut().map(|cut| cut.index), None);
    assert_eq!(settlement.response().dropped(), [event.sequence_number(1)]);
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Step {
    key: String,
    n: u32,
}

#[tokio::test(start_paused = true)]
async fn each_key_keeps_its_shard_order() {
    let calls = Calls::default();
    let handler = {
        let calls = calls.clone();
        move |step: &Step| {
            let step = step.clone();
            let calls = calls.clone();
            async move {
                // Keys take different times, so that lanes finish in a different order than
                // they started.
                let pause = if step.key == "slow" { 7 } else { 2 };
                tokio::time::sleep(Duration::from_millis(pause)).await;
                calls.push((step.key, step.n));
                HandlerOutcome::ack()
            }
        }
    };
    let mut event = TestEvent::new();
    for n in 0..12 {
        let key = ["slow", "quick", "middle"][n as usize % 3];
        event = event.json_keyed(
            key,
            &Step {
                key: key.to_owned(),
                n,
            },
        );
    }
    let settlement = KinesisAdapter::new(handler)
        .per_key_lanes(3)
        .settle(KinesisBatch::from(&event), &Context::default())
        .await;
    assert_eq!(settlement.cut().map(|cut| cut.index), None);

    let calls = calls.taken();
    assert_eq!(calls.len(), 12);
    for key in ["slow", "quick", "middle"] {
        let order: Vec<u32> = calls
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, n)| *n)
            .collect();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(order, sorted, "the records of {key} in shard order");
    }
    let all: Vec<u32> = calls.iter().map(|(_, n)| *n).collect();
    assert_ne!(
        all,
        (0..12).collect::<Vec<_>>(),
        "lanes interleave across keys"
    );
}

/// Settles two records, of partition keys `first` and `second`, in two lanes with a handler in
/// which each waits for the other; with time paused, a deadlock makes the runtime idle, which
/// gives up at once (`Err`).
async fn two_records_that_wait_for_each_other(
    first: &str,
    second: &str,
) -> Result<Settlement, tokio::time::error::Elapsed> {
    let barrier = Arc::new(Barrier::new(2));
    let handler = move |_: &u32| {
        let barrier = Arc::clone(&barrier);
        async move {
            barrier.wait().await;
            HandlerOutcome::ack()
        }
    };
    let event = TestEvent::new()
        .json_keyed(first, &1)
        .json_keyed(second, &2);
    let adapter = KinesisAdapter::new(handler).per_key_lanes(2);
    tokio::time::timeout(
        Duration::from_secs(60),
        adapter.settle(KinesisBatch::from(&event), &Context::default()),
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn lanes_really_run_concurrently() {
    // Handled one after the other, the two records would wait forever.
    let settlement = two_records_that_wait_for_each_other("a", "b")
        .await
        .expect("the two keys were handled at the same time");
    check_outcomes(&settlement, "ack ack");
}

#[tokio::test(start_paused = true)]
async fn the_same_key_is_never_handled_concurrently() {
    let waited = two_records_that_wait_for_each_other("a", "a").await;
    assert!(waited.is_err(), "two records of one key met at the barrier");
}

/// Settles 8 keys of 3 records each and returns how many records were in the handler at once,
/// at most.
async fn most_at_once(lanes: usize) -> usize {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let handler = {
        let (in_flight, most) = (Arc::clone(&in_flight), Arc::clone(&most));
        move |_: &u32| {
            let (in_flight, most) = (Arc::clone(&in_flight), Arc::clone(&most));
            async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                HandlerOutcome::ack()
            }
        }
    };
    let mut event = TestEvent::new();
    for n in 0..24 {
        event = event.json_keyed(format!("key-{}", n % 8), &n);
    }
    let settlement = KinesisAdapter::new(handler)
        .per_key_lanes(lanes)
        .settle(KinesisBatch::from(&event), &Context::default())
        .await;
    assert_eq!(settlement.cut().map(|cut| cut.index), None);
    most.load(Ordering::SeqCst)
}

#[tokio::test(start_paused = true)]
async fn max_concurrency_is_honoured() {
    assert_eq!(most_at_once(1).await, 1);
    assert_eq!(most_at_once(3).await, 3);
    assert_eq!(most_at_once(8).await, 8);
    assert_eq!(most_at_once(100).await, 8, "one lane per key, no more");
    assert_eq!(most_at_once(0).await, 1, "zero lanes means one");
}

#[tokio::test(start_paused = true)]
async fn a_panic_stops_its_own_lane_only() {
    let handler = |n: &u32| {
        let n = *n;
        async move {
            assert_ne!(n, 2, "two is poison");
            HandlerOutcome::ack()
        }
    };
    let event = TestEvent::new()
        .json_keyed("a", &1)
        .json_keyed("b", &2)
        .json_keyed("a", &3)
        .json_keyed("b", &4);
    let settlement = KinesisAdapter::new(handler)
        .per_key_lanes(2)
        .settle(KinesisBatch::from(&event), &Context::default())
        .await;
    check_outcomes(&settlement, "ack panic ack skip");
}
