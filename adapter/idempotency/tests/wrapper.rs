//! The idempotent wrapper through the adapter and the testing kit, with the in-memory store.
//!
//! Run with `cargo test -p lambda-kinesis-idempotency --test wrapper`.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{Clock, Run, Shipment, event, in_progress_elsewhere, shipment};
use lambda_kinesis::testing::{TestEvent, context_with_deadline};
use lambda_kinesis::{HandlerOutcome, RecordMeta};
use lambda_kinesis_idempotency::{
    Idempotency, IdempotencyRecord, MemoryStore, Status, StoredOutcome,
};

/// What the handler under test did: the ids it booked, in order.
#[derive(Default)]
struct Ledger {
    booked: Mutex<Vec<u64>>,
}

impl Ledger {
    fn booked(&self) -> Vec<u64> {
        self.booked.lock().unwrap().clone()
    }
}

/// Books every shipment, except that carrier "later" holds, "never" drops, "broken" fails and
/// "panic" panics.
async fn book(ledger: &Ledger, shipment: &Shipment) -> Result<HandlerOutcome, String> {
    ledger.booked.lock().unwrap().push(shipment.id);
    match shipment.carrier.as_str() {
        "later" => Ok(HandlerOutcome::hold()),
        "never" => Ok(HandlerOutcome::drop()),
        "broken" => Err("the carrier is down".into()),
        "panic" => panic!("the carrier client panicked"),
        _ => Ok(HandlerOutcome::ack()),
    }
}

/// The shipping handler, idempotent by shipment id, over `store` and with `ledger`.
fn adapter(
    store: Arc<MemoryStore>,
    ledger: Arc<Ledger>,
    clock: &Clock,
) -> lambda_kinesis::KinesisAdapter<Shipment> {
    let clock = clock.clone();
    Idempotency::new(store)
        .function_name("shipping")
        .wrap_with_state(ledger, |ledger: &Arc<Ledger>, s: &Shipment| {
            let ledger = Arc::clone(ledger);
            let s = s.clone();
            async move { book(&ledger, &s).await }
        })
        .key(|s: &Shipment| s.id)
        .clock(move || clock.now())
        .into_adapter()
}

impl Run<Ledger> {
    async fn settle(&self, shipments: &[Shipment]) -> String {
        adapter(self.store.clone(), self.ledger.clone(), &self.clock)
            .settle(
                &event(shipments),
                &lambda_kinesis::lambda_runtime::Context::default(),
            )
            .await
            .summary()
    }
}

#[tokio::test]
async fn a_redelivered_batch_books_each_shipment_once() {
    let run = Run::new();
    let held = [shipment(1, "dhl"), shipment(2, "later"), shipment(3, "dhl")];
    assert_eq!(run.settle(&held).await, "ack hold skip");
    let fixed = [shipment(1, "dhl"), shipment(2, "ups"), shipment(3, "dhl")];
    assert_eq!(run.settle(&fixed).await, "ack ack ack");
    assert_eq!(run.settle(&fixed).await, "ack ack ack");
    // 1 once; 2 held once then booked once; 3 once.
    assert_eq!(run.ledger.booked(), [1, 2, 2, 3]);
}

#[tokio::test]
async fn a_dropped_record_settles_as_dropped_again() {
    let run = Run::new();
    assert_eq!(run.settle(&[shipment(1, "never")]).await, "drop");
    assert_eq!(run.settle(&[shipment(1, "never")]).await, "drop");
    assert_eq!(run.ledger.booked(), [1]);
    let stored = run.store.get("shipping#1").unwrap();
    assert_eq!(stored.status, Status::Completed);
    assert_eq!(stored.outcome, Some(StoredOutcome::Drop));
}

#[tokio::test]
async fn an_error_or_a_panic_releases_the_key_for_the_next_delivery() {
    let run = Run::new();
    assert_eq!(run.settle(&[shipment(1, "broken")]).await, "hold");
    assert_eq!(run.store.get("shipping#1"), None);
    assert_eq!(run.settle(&[shipment(2, "panic")]).await, "hold");
    assert_eq!(run.store.get("shipping#2"), None);
    assert_eq!(run.settle(&[shipment(2, "later")]).await, "hold");
    assert_eq!(run.store.get("shipping#2"), None);
    assert_eq!(run.ledger.booked(), [1, 2, 2]);
}

#[tokio::test]
async fn a_key_reused_for_another_payload_is_held_not_skipped() {
    let run = Run::new();
    assert_eq!(run.settle(&[shipment(1, "dhl")]).await, "ack");
    let settlement = adapter(run.store.clone(), run.ledger.clone(), &run.clock)
        .settle(
            &event(&[shipment(1, "ups")]),
            &lambda_kinesis::lambda_runtime::Context::default(),
        )
        .await;
    assert_eq!(settlement.summary(), "hold");
    let held = format!("{:?}", settlement.outcome(0));
    assert!(held.contains("used before for another payload"), "{held}");
    assert_eq!(run.ledger.booked(), [1]);
}

#[tokio::test]
async fn a_key_in_progress_elsewhere_holds_the_record_until_the_mark_lapses() {
    let run = Run::new();
    let busy = shipment(1, "dhl");
    run.store
        .put(in_progress_elsewhere(&busy, &run.clock, Duration::from_secs(30)).await);
    assert_eq!(run.settle(&[shipment(1, "dhl")]).await, "hold");
    assert_eq!(run.ledger.booked(), Vec::<u64>::new());
    // The other invocation died: its deadline passes, and the next delivery books.
    run.clock.advance(31);
    assert_eq!(run.settle(&[shipment(1, "dhl")]).await, "ack");
    assert_eq!(run.ledger.booked(), [1]);
}

#[tokio::test]
async fn a_completed_key_expires() {
    let run = Run::new();
    assert_eq!(run.settle(&[shipment(1, "dhl")]).await, "ack");
    run.clock.advance(3_599);
    assert_eq!(run.settle(&[shipment(1, "dhl")]).await, "ack");
    assert_eq!(run.ledger.booked(), [1]);
    run.clock.advance(2);
    assert_eq!(run.settle(&[shipment(1, "dhl")]).await, "ack");
    assert_eq!(run.ledger.booked(), [1, 1]);
}

#[tokio::test]
async fn the_in_progress_mark_lapses_at_the_invocations_deadline() {
    let store = Arc::new(MemoryStore::new());
    let seen: Arc<Mutex<Option<IdempotencyRecord>>> = Arc::default();
    let observer = (store.clone(), seen.clone());
    let adapter = Idempotency::new(store.clone())
        .function_name("shipping")
        .wrap_with_state(observer, peek)
        .key(|s: &Shipment| s.id)
        .into_adapter();
    let before = SystemTime::now();
    adapter
        .settle(
            &event(&[shipment(9, "dhl")]),
            &context_with_deadline(Duration::from_secs(60)),
        )
        .await;
    let during = seen.lock().unwrap().clone().expect("the handler ran");
    assert_eq!(during.status, Status::InProgress);
    let lapses = UNIX_EPOCH + Duration::from_millis(during.in_progress_expiration.unwrap());
    let left = lapses.duration_since(before).unwrap();
    assert!(
        left > Duration::from_secs(58) && left <= Duration::from_secs(61),
        "{left:?}"
    );
    let after = store.get("shipping#9").unwrap();
    assert_eq!(after.status, Status::Completed);
    assert_eq!(after.in_progress_expiration, None);
}

type Observer = (Arc<MemoryStore>, Arc<Mutex<Option<IdempotencyRecord>>>);

/// Reads the key's item while the handler runs.
async fn peek(observer: &Observer, shipment: &Shipment, _meta: &RecordMeta<'_>) -> HandlerOutcome {
    let item = observer.0.get(&format!("shipping#{}", shipment.id));
    *observer.1.lock().unwrap() = item;
    HandlerOutcome::ack()
}

#[tokio::test]
async fn user_records_of_an_aggregate_keyed_by_position_each_run_once() {
    let mut aggregate = lambda_kinesis::aggregate::Aggregate::new();
    for shipment in [shipment(1, "dhl"), shipment(1, "dhl")] {
        aggregate.add("pk", None, &serde_json::to_vec(&shipment).unwrap());
    }
    let event = TestEvent::new().aggregate(&aggregate);
    let ledger = Arc::new(Ledger::default());
    let store = Arc::new(MemoryStore::new());
    for _ in 0..2 {
        let settlement = Idempotency::new(store.clone())
            .function_name("shipping")
            .wrap_with_state(ledger.clone(), booked_by_position)
            .key_by_position()
            .into_adapter()
            .settle(&event, &lambda_kinesis::lambda_runtime::Context::default())
            .await;
        assert_eq!(settlement.summary(), "ack ack");
    }
    // Two user records with the same data are two records: each booked once.
    assert_eq!(ledger.booked(), [1, 1]);
}

async fn booked_by_position(ledger: &Arc<Ledger>, shipment: &Shipment) -> HandlerOutcome {
    ledger.booked.lock().unwrap().push(shipment.id);
    HandlerOutcome::ack()
}

async fn settle_over(
    take_fails: bool,
    ledger: Arc<Ledger>,
) -> lambda_kinesis::settlement::Settlement {
    let store = common::Failing {
        take_fails,
        inner: MemoryStore::new(),
    };
    Idempotency::new(store)
        .function_name("shipping")
        .wrap_with_state(ledger, booked_by_position)
        .key(|s: &Shipment| s.id)
        .into_adapter()
        .settle(
            &event(&[shipment(1, "dhl")]),
            &lambda_kinesis::lambda_runtime::Context::default(),
        )
        .await
}

#[tokio::test]
async fn a_store_that_cannot_take_the_key_holds_the_record_unrun() {
    let ledger = Arc::new(Ledger::default());
    let settlement = settle_over(true, ledger.clone()).await;
    assert_eq!(settlement.summary(), "hold");
    let held = format!("{:?}", settlement.outcome(0));
    assert!(held.contains("the handler was not run"), "{held}");
    assert!(held.contains("service unavailable"), "{held}");
    assert_eq!(ledger.booked(), Vec::<u64>::new());
}

#[tokio::test]
async fn an_outcome_that_cannot_be_stored_still_settles_the_record() {
    let ledger = Arc::new(Ledger::default());
    assert_eq!(settle_over(false, ledger.clone()).await.summary(), "ack");
    assert_eq!(ledger.booked(), [1]);
}
