//! The idempotent batch handler through the adapter and the testing kit, with the in-memory
//! store: each record keyed on its own, the handler given only the records not yet completed.
//!
//! Run with `cargo test -p lambda-kinesis-idempotency --test batch`.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Clock, Failing, Run, Shipment, event, in_progress_elsewhere, shipment};
use lambda_kinesis::HandlerOutcome;
use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::settlement::Settlement;
use lambda_kinesis_idempotency::{Idempotency, MemoryStore, Status, Store, StoredOutcome};

/// The batches the handler under test was given: the ids of each, in order.
#[derive(Default)]
struct Ledger {
    batches: Mutex<Vec<Vec<u64>>>,
}

impl Ledger {
    fn batches(&self) -> Vec<Vec<u64>> {
        self.batches.lock().unwrap().clone()
    }
}

/// Books a batch of shipments, one outcome each: carrier "later" holds and "never" drops. A
/// "broken" carrier fails the batch, "panic" panics, and "short" answers with no outcome at all.
async fn book(ledger: &Arc<Ledger>, shipments: &[Shipment]) -> Result<Vec<HandlerOutcome>, String> {
    let ids = shipments.iter().map(|shipment| shipment.id).collect();
    ledger.batches.lock().unwrap().push(ids);
    let carriers = || shipments.iter().map(|shipment| shipment.carrier.as_str());
    if carriers().any(|carrier| carrier == "broken") {
        return Err("the carrier is down".into());
    }
    if carriers().any(|carrier| carrier == "panic") {
        panic!("the carrier client panicked");
    }
    if carriers().any(|carrier| carrier == "short") {
        return Ok(Vec::new());
    }
    Ok(carriers()
        .map(|carrier| match carrier {
            "later" => HandlerOutcome::hold(),
            "never" => HandlerOutcome::drop(),
            _ => HandlerOutcome::ack(),
        })
        .collect())
}

/// Settles `shipments` with the batch handler, idempotent by shipment id over `store`.
async fn settle<St: Store>(
    store: St,
    ledger: &Arc<Ledger>,
    clock: &Clock,
    shipments: &[Shipment],
) -> Settlement {
    let clock = clock.clone();
    Idempotency::new(store)
        .function_name("shipping")
        .wrap_batch_with_state(ledger.clone(), book)
        .key(|shipment: &Shipment| shipment.id)
        .clock(move || clock.now())
        .into_batch_adapter()
        .settle(&event(shipments), &Context::default())
        .await
}

impl Run<Ledger> {
    async fn settle(&self, shipments: &[Shipment]) -> String {
        settle(self.store.clone(), &self.ledger, &self.clock, shipments)
            .await
            .summary()
    }

    fn stored(&self, id: u64) -> Option<lambda_kinesis_idempotency::IdempotencyRecord> {
        self.store.get(&format!("shipping#{id}"))
    }
}

#[tokio::test]
async fn a_redelivered_batch_gives_the_handler_only_the_records_not_yet_completed() {
    let run = Run::new();
    let held = [shipment(1, "dhl"), shipment(2, "later"), shipment(3, "dhl")];
    // The handler acked 3 behind the held 2: 3 is completed, and Lambda delivers it again.
    assert_eq!(run.settle(&held).await, "ack hold ack");
    let fixed = [shipment(1, "dhl"), shipment(2, "ups"), shipment(3, "dhl")];
    assert_eq!(run.settle(&fixed).await, "ack ack ack");
    assert_eq!(run.settle(&fixed).await, "ack ack ack");
    assert_eq!(run.ledger.batches(), [vec![1, 2, 3], vec![2]]);
    assert_eq!(run.stored(2).unwrap().status, Status::Completed);
}

#[tokio::test]
async fn a_duplicate_settles_with_its_stored_outcome_unrun() {
    let run = Run::new();
    let shipments = [shipment(1, "never"), shipment(2, "dhl")];
    assert_eq!(run.settle(&shipments).await, "drop ack");
    assert_eq!(run.settle(&shipments).await, "drop ack");
    assert_eq!(run.ledger.batches(), [vec![1, 2]]);
    assert_eq!(run.stored(1).unwrap().outcome, Some(StoredOutcome::Drop));
}

#[tokio::test]
async fn a_record_in_progress_elsewhere_is_held_with_those_behind_it_unkeyed() {
    let run = Run::new();
    let busy = shipment(2, "dhl");
    let lapses_after = Duration::from_secs(30);
    run.store
        .put(in_progress_elsewhere(&busy, &run.clock, lapses_after).await);
    let shipments = [shipment(1, "dhl"), busy, shipment(3, "dhl")];
    assert_eq!(run.settle(&shipments).await, "ack hold hold");
    assert_eq!(run.ledger.batches(), [vec![1]]);
    assert_eq!(
        run.stored(3),
        None,
        "a record behind the held one is not keyed"
    );
    // The other invocation died: once its deadline passed, the redelivery runs 2 and 3.
    run.clock.advance(lapses_after.as_secs() + 1);
    assert_eq!(run.settle(&shipments).await, "ack ack ack");
    assert_eq!(run.ledger.batches(), [vec![1], vec![2, 3]]);
}

#[tokio::test]
async fn a_key_reused_for_another_payload_holds_from_that_record() {
    let run = Run::new();
    assert_eq!(run.settle(&[shipment(1, "dhl")]).await, "ack");
    let reused = [shipment(2, "dhl"), shipment(1, "ups"), shipment(3, "dhl")];
    assert_eq!(run.settle(&reused).await, "ack hold hold");
    assert_eq!(run.ledger.batches(), [vec![1], vec![2]]);
    assert_eq!(run.stored(3), None);
}

#[tokio::test]
async fn an_error_a_panic_or_a_miscount_releases_every_key_taken() {
    let run = Run::new();
    assert_eq!(run.settle(&[shipment(1, "dhl")]).await, "ack");
    for failing in ["broken", "panic", "short"] {
        let shipments = [shipment(1, "dhl"), shipment(2, "dhl"), shipment(3, failing)];
        let summary = run.settle(&shipments).await;
        // The handler's failure holds the whole batch, the duplicate 1 with it (it settles from
        // the store again); the keys taken for 2 and 3 are released.
        assert_eq!(summary, "hold skip skip", "{failing}");
        assert_eq!(run.stored(2), None, "{failing}");
        assert_eq!(run.stored(3), None, "{failing}");
        assert_eq!(run.stored(1).unwrap().status, Status::Completed);
    }
    assert_eq!(
        run.ledger.batches(),
        [vec![1], vec![2, 3], vec![2, 3], vec![2, 3]]
    );
}

#[tokio::test]
async fn a_miscount_is_named_with_the_records_the_handler_was_given() {
    let run = Run::new();
    let settlement = settle(
        run.store.clone(),
        &run.ledger,
        &run.clock,
        &[shipment(1, "short")],
    )
    .await;
    let held = format!("{:?}", settlement.outcome(0));
    assert!(
        held.contains("returned 0 outcomes for the 1 records it was given"),
        "{held}"
    );
}

/// Settles `shipments` once over a [`Failing`] store (taking fails when `take_fails`, else
/// only storing the outcome): the summary, and the batches the handler booked.
async fn settle_failing(take_fails: bool, shipments: &[Shipment]) -> (String, Vec<Vec<u64>>) {
    let ledger = Arc::default();
    let store = Failing {
        take_fails,
        inner: MemoryStore::new(),
    };
    let settlement = settle(store, &ledger, &Clock::at(1_000_000), shipments).await;
    (settlement.summary(), ledger.batches())
}

#[tokio::test]
async fn a_store_that_cannot_take_a_key_holds_the_batch_unrun() {
    let shipments = [shipment(1, "dhl"), shipment(2, "dhl")];
    let (summary, booked) = settle_failing(true, &shipments).await;
    assert_eq!(summary, "hold hold");
    assert_eq!(booked, Vec::<Vec<u64>>::new());
}

#[tokio::test]
async fn an_outcome_that_cannot_be_stored_still_settles_the_batch() {
    let shipments = [shipment(1, "dhl"), shipment(2, "never")];
    let (summary, booked) = settle_failing(false, &shipments).await;
    assert_eq!(summary, "ack drop");
    assert_eq!(booked, [vec![1, 2]]);
}
