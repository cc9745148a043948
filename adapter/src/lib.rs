//! Kinesis-triggered AWS Lambda functions as plain async record handlers.
//!
//! A handler decides, for each record, one of three [`HandlerOutcome`]s:
//!
//! | outcome | the record | the shard's checkpoint |
//! |---|---|---|
//! | `ack` | handled | moves past it once every earlier record of the shard is handled |
//! | `drop` | retired, never read again | as for ack |
//! | `retry` | left unhandled | stops in front of it; only its own shard waits |
//!
//! The adapter reads the event, decodes each record's data (base64, then JSON) into the
//! handler's type, calls the handler in shard order, and answers Lambda with a partial batch
//! response (`batchItemFailures`) that names exactly one record: the first that is not settled.
//! Lambda then checkpoints in front of it and delivers it, and everything behind it, again.
//!
//! ```no_run
//! use lambda_kinesis::{HandlerOutcome, serde::Deserialize};
//!
//! #[derive(Deserialize)]
//! # #[serde(crate = "lambda_kinesis::serde")]
//! struct Order { id: u64, amount_cents: u64 }
//!
//! async fn charge(order: &Order) -> HandlerOutcome {
//!     if order.amount_cents == 0 {
//!         return HandlerOutcome::drop(); // nothing to charge, ever
//!     }
//!     HandlerOutcome::ack()
//! }
//!
//! #[lambda_kinesis::tokio::main(crate = "lambda_kinesis::tokio")]
//! async fn main() -> Result<(), lambda_kinesis::Error> {
//!     lambda_kinesis::run(charge).await
//! }
//! ```
//!
//! # Handlers
//!
//! Any of these is a handler, for any `T: DeserializeOwned + Send + Sync` (or [`RawData`] for
//! data that is not JSON):
//!
//! - `async fn(&T) -> O`
//! - `async fn(&T, &RecordMeta<'_>) -> O`, which also reads the record's shard id, sequence number,
//!   partition key and arrival time;
//! - `async fn(&[T]) -> B`, a batch handler, called once with every decodable record;
//!
//! where `O` is [`HandlerOutcome`], `Result<HandlerOutcome, E>` or `Result<(), E>` (an `Err`
//! holds the record and is logged), and `B` is a `HandlerOutcome` that settles the whole batch or
//! a `Vec<HandlerOutcome>` with one outcome per record (a vector of the wrong length holds the
//! batch), or either inside a `Result`.
//!
//! # What the adapter guarantees
//!
//! - **Order.** Records are handled in shard order; by default the adapter stops calling the
//!   handler at the first held record, since Lambda delivers everything behind it again anyway.
//!   [`KinesisAdapter::per_key_lanes`] keeps going for the partition keys without a held record.
//! - **Undecodable records** become a named [`Rejection`], logged as a warning with the shard id
//!   and sequence number, and are dropped (or held, with [`KinesisAdapter::hold_undecodable`]).
//!   The handler never sees base64, nor raw bytes unless it asks for [`RawData`].
//! - **KPL-aggregated records** are unpacked: each user record is handled on its own, with its
//!   own keys and sub-sequence number in [`RecordMeta`]; a held user record holds its whole
//!   aggregate, which comes again (see [`aggregate`]).
//! - **Panics** in a handler hold that record and are logged; the work done before it stands.
//! - **The deadline.** When the invocation has less than the deadline margin left, no new record is
//!   started; the response names the first unstarted one, so finished work is checkpointed.
//!
//! # Testing
//!
//! The [`testing`] module builds in-memory events shaped like Lambda's and settles them.

pub mod aggregate;
mod batch;
mod event_json;
mod handler;
mod outcome;
mod rejection;
mod service;
mod settle;
pub mod testing;

pub use aws_lambda_events::kinesis::KinesisEvent;
pub use aws_lambda_events::streams::{KinesisBatchItemFailure, KinesisEventResponse};
pub use batch::{KinesisBatch, RecordMeta};
pub use event_json::{EventRecord, EventSource, write_event};
pub use handler::{
    BatchHandler, FromRecordData, Handler, RawData, RecordHandler, RecordMetaHandler, kind,
};
pub use lambda_runtime::{self, Context, Error, LambdaEvent};
pub use outcome::{
    BatchOutcome, DropReason, HandlerError, HandlerOutcome, HoldReason, IntoBatchOutcome,
    IntoOutcome, RecordOutcome, SkipReason,
};
pub use rejection::{Rejection, RejectionKind};
pub use service::{AdapterError, KinesisAdapter};
pub use settle::{BatchResponse, Checkpoint, Settlement};
pub use {serde, serde_json, tokio, tower, tracing};

/// Runs `handler` as a Lambda function with the default settlement rules, until the runtime
/// stops. See [`KinesisAdapter`] for the other rules.
pub async fn run<H, T, K>(handler: H) -> Result<(), Error>
where
    H: Handler<T, K>,
    T: 'static,
    K: 'static,
{
    KinesisAdapter::new(handler).run().await
}
