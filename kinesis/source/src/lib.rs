//! `kinesis-source`: Kinesis as a consumer sees it, and the seam a consumer reads it through.
//!
//! The ground floor of the emulator's crates. [`ShardSource`] is the slice of the Kinesis API a
//! shard reader needs (`DescribeStreamSummary`, `ListShards`, `GetShardIterator`, `GetRecords`),
//! and [`ShardSubscriber`] the one enhanced fan-out needs (`SubscribeToShard`), over the types
//! those calls carry: [`Shard`], [`Record`], [`SequenceNumber`](sequence::SequenceNumber),
//! [`SourceError`]. The embedded Kinesis (crate `embedded-kinesis`) implements both in memory;
//! the event source mapping (crate `esm-engine`) implements them over `aws-sdk-kinesis` and reads
//! shards through them, never knowing which Kinesis it reads.

pub mod arn;
mod error;
mod records;
pub mod sequence;
mod shard_source;
mod stream;
mod subscription;
pub mod time;

pub use arn::{Arn, ArnError};
pub use error::SourceError;
pub use records::{GetRecordsOutput, IteratorPosition, Record};
pub use shard_source::ShardSource;
pub use stream::{ChildShard, HashKeyRange, Shard, StreamDescription};
pub use subscription::{ShardEvent, ShardSubscriber, Subscription};
