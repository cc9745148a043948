//! Idempotent [`lambda_kinesis`] handlers: a record delivered again is settled with the outcome
//! it had, without running the handler twice.
//!
//! Kinesis delivery is at least once: after a held record, a restart or a takeover, records come
//! again. Wrap a handler, and each record's key is taken in a store (DynamoDB, one conditional
//! write) before the handler runs; a key already completed settles the record with its stored
//! `ack` or `drop`. The model (Powertools' idempotency design) is in `docs/idempotency.md`.
//!
//! Idempotency plugs into the adapter as a guard around each record (an [`IdempotencyGuard`],
//! through the adapter's `RecordGuard` extension point): it changes neither the adapter's type
//! nor the handler, so a function can turn it on from its environment without a branch.
//!
//! ```no_run
//! use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
//! use lambda_kinesis_idempotency::Idempotency;
//!
//! #[derive(serde::Deserialize, serde::Serialize)]
//! struct Shipment { id: u64 }
//!
//! async fn book(shipment: &Shipment) -> HandlerOutcome { HandlerOutcome::ack() }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), lambda_kinesis::Error> {
//!     // `None` when IDEMPOTENCY_TABLE is unset or empty: the adapter then has no guard.
//!     let idempotency = Idempotency::from_env().await?;
//!     KinesisAdapter::new(book)
//!         .optional_guard(idempotency.map(|on| on.key(|shipment: &Shipment| shipment.id)))
//!         .run()
//!         .await
//! }
//! ```
//!
//! A batch handler takes the same guard: each record is keyed on its own, duplicates settle
//! with their stored outcomes, and the handler is given only the records not yet completed.

mod dynamodb;
mod key;
mod record;
mod store;
mod wrap;

pub use dynamodb::DynamoDbStore;
pub use key::{FUNCTION_NAME_VARIABLE, KeyError, KeySource, Keyed};
pub use record::{Found, IdempotencyRecord, Status, StoredOutcome, judge, may_take};
pub use store::{MemoryStore, Store, StoreError, Take};
pub use wrap::{
    DEFAULT_EXPIRY, IDEMPOTENCY_TABLE_VARIABLE, Idempotency, IdempotencyError, IdempotencyGuard,
    Idempotent, table_of,
};
