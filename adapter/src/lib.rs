//! Kinesis-triggered AWS Lambda functions as plain async record handlers.
//!
//! A handler decides, for each record, one of three [`HandlerOutcome`]s:
//!
//! | outcome | the record | the shard's checkpoint |
//! |---|---|---|
//! | `ack` | handled | moves past it once every earlier record of the shard is handled |
//! | `drop` | retired, never read again | as for ack |
//! | `hold` | left unhandled, delivered again | stops in front of it; only its own shard waits |
//!
//! The adapter reads the event, decodes each record's data (base64, then JSON) into the
//! handler's type, calls the handler in shard order, and answers Lambda with a partial batch
//! response (`batchItemFailures`) that names exactly one record: the first that is not settled.
//! Lambda then checkpoints in front of it and delivers it, and everything behind it, again.
//!
//! A function crate depends on `lambda-kinesis`, `serde` and `tokio` (or on `lambda-kinesis`
//! alone, through its re-exports `lambda_kinesis::serde` and `lambda_kinesis::tokio`):
//!
//! ```no_run
//! use lambda_kinesis::HandlerOutcome;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! struct Order { id: u64, amount_cents: u64 }
//!
//! async fn charge(order: &Order) -> HandlerOutcome {
//!     if order.amount_cents == 0 {
//!         return HandlerOutcome::drop(); // nothing to charge, ever
//!     }
//!     HandlerOutcome::ack()
//! }
//!
//! #[tokio::main]
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
//! - each of them with the function's state borrowed first (`async fn(&S, &T) -> O`, ...), run
//!   with [`KinesisAdapter::with_state`]: the state (clients, pools, configuration) is made once
//!   per execution environment, and [`init`] reports a failure to make it as Lambda expects.
//!
//! where `O` is [`HandlerOutcome`], `Result<HandlerOutcome, E>` or `Result<(), E>` (an `Err`
//! holds the record and is logged), and `B` is a `HandlerOutcome` that settles the whole batch or
//! a `Vec<HandlerOutcome>` with one outcome per record (a vector of the wrong length holds the
//! batch), or either inside a `Result`. The traits behind the shapes are in [`handler`].
//!
//! # What the adapter guarantees
//!
//! - **Order.** Records are handled in shard order; by default the adapter stops calling the
//!   handler at the first held record, since Lambda delivers everything behind it again anyway.
//!   [`KinesisAdapter::per_key_lanes`] keeps going for the partition keys without a held record.
//! - **Undecodable records** become a named
//!   [`UndecodableRecord`](settlement::UndecodableRecord), logged as a warning with the shard id
//!   and sequence number, and are dropped (or held, with [`KinesisAdapter::hold_undecodable`]).
//!   The handler never sees base64, nor raw bytes unless it asks for [`RawData`].
//! - **KPL-aggregated records** are unpacked: each user record is handled on its own, with its
//!   own keys and sub-sequence number in [`RecordMeta`]; a held user record holds its whole
//!   aggregate, which comes again, and the batch is cut at the aggregate's first user record
//!   (see [`aggregate`]).
//! - **Panics** in a handler hold that record and are logged; the work done before it stands.
//! - **The deadline.** When the invocation has less than the deadline margin left, no new record is
//!   started; the response names the first unstarted one, so finished work is checkpointed.
//!
//! # Modules
//!
//! - [`env`](mod@env): options read from the environment ([`retry::RetryPlan::from_env`]), and their errors.
//! - [`guard`]: the extension point around each record ([`KinesisAdapter::guard`]), which
//!   `lambda-kinesis-idempotency` plugs into.
//! - [`handler`]: the traits behind the handler shapes (sealed; you never implement them).
//! - [`invocation`]: the deadline of the invocation calling the handler.
//! - `publish` (cargo feature `publish`): `Publisher<T>`, a typed Kinesis producer.
//! - [`retry`]: the envelope of retry and dead-letter streams, and its rules.
//! - [`settlement`]: what the adapter concluded about a batch, for tests and logs.
//! - [`testing`]: builds in-memory events shaped like Lambda's and settles them.
//! - [`window`]: tumbling windows: a handler folding a window's records into a state.
//! - [`wire`]: the event and response as they travel, for tower layers and the emulator.

#![warn(missing_docs)]

pub mod aggregate;
mod batch;
mod data;
pub mod env;
pub mod guard;
pub mod handler;
mod init;
pub mod invocation;
mod outcome;
mod panic_report;
#[cfg(feature = "publish")]
pub mod publish;
pub mod retry;
mod service;
mod settle;
pub mod settlement;
pub mod testing;
pub mod window;
pub mod wire;

pub use batch::RecordMeta;
pub use data::RawData;
pub use init::init;
pub use lambda_runtime::{self, Error};
pub use outcome::HandlerOutcome;
pub use service::KinesisAdapter;
pub use {serde, serde_json, tokio, tower, tracing};

/// Runs `handler` as a Lambda function with the default settlement rules, until the runtime
/// stops. See [`KinesisAdapter`] for the other rules, and for a handler with state.
pub async fn run<H, T, K>(handler: H) -> Result<(), Error>
where
    H: handler::Handler<T, K>,
    T: 'static,
    K: 'static,
{
    KinesisAdapter::new(handler).run().await
}
