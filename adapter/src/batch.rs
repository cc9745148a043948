//! The Kinesis event as the adapter reads it: the text of the fields it uses, in one buffer, with
//! where each record's fields lie in it.
//!
//! `aws_lambda_events::kinesis::KinesisEvent` allocates a `String` for every field of every
//! record and decodes every record's data up front, whether or not the handler ever sees it.
//! [`KinesisBatch`] copies the text of the fields it uses into one buffer, record after record,
//! and records spans of it (see `scan`), and keeps the data in base64 until the record is
//! handled, so a batch of 10,000 records costs a few allocations rather than a hundred thousand.

mod deaggregate;
mod deserialize;
mod excerpt;
mod kinesis_batch;
mod meta;
mod pre_read;
mod scan;
mod spans;

pub(crate) use excerpt::data_excerpt;
pub use kinesis_batch::KinesisBatch;
pub(crate) use meta::RecordData;
pub use meta::RecordMeta;
pub use pre_read::{ReadBatch, ReadBatchLayer};

#[cfg(test)]
pub(crate) mod tests;
