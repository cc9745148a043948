//! What the wrapper's tests share: the shipment they book, events of shipments, a clock moved by
//! hand, an item another invocation holds, and a store whose requests fail.

#![allow(dead_code)] // Each test file uses its own part.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lambda_kinesis::HandlerOutcome;
use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::testing::TestEvent;
use lambda_kinesis_idempotency::{
    Idempotency, IdempotencyRecord, MemoryStore, Status, Store, StoreError, Take,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Shipment {
    pub(crate) id: u64,
    pub(crate) carrier: String,
}

pub(crate) fn shipment(id: u64, carrier: &str) -> Shipment {
    Shipment {
        id,
        carrier: carrier.into(),
    }
}

/// A clock a test moves by hand, in seconds since the epoch.
#[derive(Clone, Default)]
pub(crate) struct Clock(Arc<AtomicU64>);

impl Clock {
    pub(crate) fn at(seconds: u64) -> Self {
        Self(Arc::new(AtomicU64::new(seconds)))
    }
    pub(crate) fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.0.load(Ordering::SeqCst))
    }
    pub(crate) fn advance(&self, seconds: u64) {
        self.0.fetch_add(seconds, Ordering::SeqCst);
    }
}

/// One store, ledger and clock across deliveries; the clock starts at 1,000,000 s.
pub(crate) struct Run<Ledger> {
    pub(crate) store: Arc<MemoryStore>,
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) clock: Clock,
}

impl<Ledger: Default> Run<Ledger> {
    pub(crate) fn new() -> Self {
        Self {
            store: Arc::new(MemoryStore::new()),
            ledger: Arc::default(),
            clock: Clock::at(1_000_000),
        }
    }
}

/// An event of `shipments`, in order.
pub(crate) fn event(shipments: &[Shipment]) -> TestEvent {
    shipments
        .iter()
        .fold(TestEvent::new(), |event, shipment| event.json(shipment))
}

/// The item another invocation wrote when it took `shipment`'s key (function `shipping`, keyed
/// by id) at `clock`'s time, its deadline `lapses_after` later, and is still running.
pub(crate) async fn in_progress_elsewhere(
    shipment: &Shipment,
    clock: &Clock,
    lapses_after: Duration,
) -> IdempotencyRecord {
    // The key and payload hash the wrapper writes: those of a run in a store of its own.
    let store = Arc::new(MemoryStore::new());
    let now = clock.now();
    Idempotency::new(store.clone())
        .function_name("shipping")
        .wrap(|_: &Shipment| async { HandlerOutcome::ack() })
        .key(|shipment: &Shipment| shipment.id)
        .clock(move || now)
        .into_adapter()
        .settle(&event(std::slice::from_ref(shipment)), &Context::default())
        .await;
    let mut item = store
        .get(&format!("shipping#{}", shipment.id))
        .expect("the run took the key");
    item.status = Status::InProgress;
    item.outcome = None;
    let deadline = (now + lapses_after).duration_since(UNIX_EPOCH).unwrap();
    item.in_progress_expiration = Some(deadline.as_millis() as u64);
    item
}

/// A store whose requests fail: taking always, or only storing the outcome.
pub(crate) struct Failing {
    pub(crate) take_fails: bool,
    pub(crate) inner: MemoryStore,
}

pub(crate) fn unavailable(id: &str) -> StoreError {
    StoreError {
        operation: "DynamoDB PutItem on table idempotency".into(),
        id: id.into(),
        message: "service unavailable".into(),
    }
}

impl Store for Failing {
    async fn take(&self, record: &IdempotencyRecord, now: SystemTime) -> Result<Take, StoreError> {
        if self.take_fails {
            return Err(unavailable(&record.id));
        }
        self.inner.take(record, now).await
    }
    async fn complete(&self, record: &IdempotencyRecord) -> Result<(), StoreError> {
        Err(unavailable(&record.id))
    }
    async fn release(&self, id: &str) -> Result<(), StoreError> {
        self.inner.release(id).await
    }
}
