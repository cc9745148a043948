//! Idempotent [`lambda_kinesis`] handlers: a record delivered again is settled with the outcome
//! it had, without running the handler twice.
//!
//! Kinesis delivery is at least once: after a held record, a restart or a takeover, records come
//! again. Wrap a handler, and each record's key is taken in a store (DynamoDB, one conditional
//! write) before the handler runs; a key already completed settles the record with its stored
//! `ack` or `drop`. The model (Powertools' idempotency design) is in `docs/idempotency.md`.
//!
//! ```no_run
//! use lambda_kinesis::HandlerOutcome;
//! use lambda_kinesis_idempotency::{DynamoDbStore, Idempotency};
//!
//! #[derive(serde::Deserialize, serde::Serialize)]
//! struct Shipment { id: u64 }
//!
//! async fn book(shipment: &Shipment) -> HandlerOutcome { HandlerOutcome::ack() }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), lambda_kinesis::Error> {
//!     let store = DynamoDbStore::from_env("idempotency").await;
//!     Idempotency::new(store)
//!         .wrap(book)
//!         .key(|shipment: &Shipment| shipment.id)
//!         .into_adapter()
//!         .run()
//!         .await
//! }
//! ```
//!
//! A batch handler is wrapped with [`Idempotency::wrap_batch`]: each record is keyed on its own,
//! duplicates settle with their stored outcomes, and the handler is given only the records not
//! yet completed.

mod batch;
mod dynamodb;
mod inner;
mod key;
mod record;
mod store;
mod wrap;

pub use dynamodb::DynamoDbStore;
pub use inner::{Batch, BatchInner, Inner, Stateful};
pub use key::{FUNCTION_NAME_VARIABLE, KeyError, KeySource, Keyed};
pub use record::{Found, IdempotencyRecord, Status, StoredOutcome, judge, may_take};
pub use store::{MemoryStore, Store, StoreError, Take};
pub use wrap::{DEFAULT_EXPIRY, Idempotency, IdempotencyError, Idempotent};
