//! Where shard readers get records: the seam between the event source mapping and a Kinesis.
//!
//! [`ShardSource`] is the slice of the Kinesis API a consumer needs. The embedded Kinesis
//! ([`crate::kinesis::EmbeddedKinesis`]) implements it in memory; the SDK source implements it
//! over any Kinesis endpoint.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;

use crate::sequence::SequenceNumber;

pub mod fan_out;

/// A stream as `DescribeStreamSummary` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamDescription {
    /// The stream's name.
    pub name: String,
    /// The stream's ARN.
    pub arn: String,
    /// When the stream was created. A stream deleted and created again under the same name has a
    /// new creation time: checkpoints are tied to it.
    pub created: SystemTime,
}

/// A shard as `ListShards` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// The shard's id, such as `shardId-000000000000`.
    pub shard_id: String,
    /// The shard this one was split from, or one of the two it was merged from.
    pub parent_shard_id: Option<String>,
    /// The other shard of a merge.
    pub adjacent_parent_shard_id: Option<String>,
    /// The hash keys (MD5 of partition keys, as 128-bit numbers) routed to this shard, inclusive.
    pub hash_key_range: HashKeyRange,
    /// The sequence number of the shard's first record (or where the first would be).
    pub starting_sequence_number: SequenceNumber,
    /// Set once the shard is closed (by a split or merge); no record is added after that.
    pub ending_sequence_number: Option<SequenceNumber>,
}

impl Shard {
    /// The shard's parents, in the order `ListShards` names them.
    pub fn parents(&self) -> impl Iterator<Item = &str> {
        self.parent_shard_id
            .iter()
            .chain(&self.adjacent_parent_shard_id)
            .map(String::as_str)
    }

    /// Whether the shard is closed: readable to its end, never written again.
    pub fn is_closed(&self) -> bool {
        self.ending_sequence_number.is_some()
    }
}

/// An inclusive range of 128-bit hash keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashKeyRange {
    /// The first hash key of the range.
    pub starting_hash_key: u128,
    /// The last hash key of the range.
    pub ending_hash_key: u128,
}

impl HashKeyRange {
    /// Whether `hash_key` falls in the range.
    pub fn contains(&self, hash_key: u128) -> bool {
        (self.starting_hash_key..=self.ending_hash_key).contains(&hash_key)
    }
}

/// Where a shard iterator starts (`GetShardIterator`'s `ShardIteratorType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IteratorPosition {
    /// At the oldest record the shard still holds.
    TrimHorizon,
    /// Just after the newest record: only records added later are read.
    Latest,
    /// At the first record that arrived at or after this time; at the trim horizon when the
    /// time is older than the oldest record.
    AtTimestamp(SystemTime),
    /// At the record with this sequence number.
    AtSequenceNumber(SequenceNumber),
    /// Just after the record with this sequence number: where a consumer resumes from its
    /// checkpoint.
    AfterSequenceNumber(SequenceNumber),
}

/// A record as `GetRecords` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The record's sequence number within its shard.
    pub sequence_number: SequenceNumber,
    /// The producer's partition key.
    pub partition_key: Arc<str>,
    /// The record's data.
    pub data: Bytes,
    /// When Kinesis accepted the record (millisecond precision).
    pub approximate_arrival: SystemTime,
}

/// What one `GetRecords` call returns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetRecordsOutput {
    /// The records read, in shard order; possibly none even when more lie further on.
    pub records: Vec<Record>,
    /// Where to read next; `None` once a closed shard has been read to its end.
    pub next_shard_iterator: Option<String>,
    /// How far behind the shard's newest record this read ends (0: caught up).
    pub millis_behind_latest: u64,
    /// At the end of a closed shard: the shards that took over its hash keys.
    pub child_shards: Vec<ChildShard>,
}

/// A child shard named at the end of a closed shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildShard {
    /// The child's id.
    pub shard_id: String,
    /// All of the child's parents: one after a split, two after a merge.
    pub parent_shards: Vec<String>,
    /// The child's hash keys.
    pub hash_key_range: HashKeyRange,
}

/// Why a Kinesis call failed, in the Kinesis API's own terms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// `ResourceNotFoundException`: the stream or shard does not exist.
    #[error("{what} not found")]
    NotFound {
        /// The stream or shard, named.
        what: String,
    },
    /// `InvalidArgumentException`: the request itself is wrong.
    #[error("invalid argument: {message}")]
    InvalidArgument {
        /// Kinesis' explanation.
        message: String,
    },
    /// `ExpiredIteratorException`: the iterator is older than five minutes. Get a new one from
    /// the checkpoint.
    #[error("the shard iterator has expired")]
    ExpiredIterator,
    /// `ProvisionedThroughputExceededException` (or another throttle): try again after a pause.
    #[error("throttled: {message}")]
    Throttled {
        /// Kinesis' explanation.
        message: String,
    },
    /// `LimitExceededException`: too many resharding operations or shards.
    #[error("limit exceeded: {message}")]
    LimitExceeded {
        /// Kinesis' explanation.
        message: String,
    },
    /// `ResourceInUseException`: the stream is being created, updated or deleted.
    #[error("resource in use: {message}")]
    ResourceInUse {
        /// Kinesis' explanation.
        message: String,
    },
    /// Anything else: a 5xx answer, a dropped connection, a server that went away.
    #[error("Kinesis failed: {message}")]
    Service {
        /// What went wrong.
        message: String,
    },
}

impl SourceError {
    /// Whether the same call may succeed if tried again after a pause.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Throttled { .. } | Self::Service { .. } | Self::ResourceInUse { .. }
        )
    }
}

/// The part of the Kinesis API a consumer needs.
#[async_trait]
pub trait ShardSource: Send + Sync {
    /// Describes a stream (`DescribeStreamSummary`).
    async fn describe_stream(&self, stream: &str) -> Result<StreamDescription, SourceError>;

    /// Lists every shard of a stream that is not expired, parents before their children
    /// (`ListShards`, all pages).
    async fn list_shards(&self, stream: &str) -> Result<Vec<Shard>, SourceError>;

    /// Gets an iterator on a shard (`GetShardIterator`). It expires after five minutes.
    async fn shard_iterator(
        &self,
        stream: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<String, SourceError>;

    /// Reads up to `limit` (1 to 10,000) records from an iterator (`GetRecords`).
    async fn get_records(
        &self,
        shard_iterator: &str,
        limit: usize,
    ) -> Result<GetRecordsOutput, SourceError>;

    /// Waits until the shard may hold records after `after` (or any record, when `None`), or has
    /// been closed, or `timeout` has passed. It may return early; callers read again either way.
    ///
    /// The default polls: it sleeps for `timeout`. A source that can tell when records arrive
    /// (the embedded Kinesis) returns as soon as they do.
    async fn wait_for_records(
        &self,
        stream: &str,
        shard_id: &str,
        after: Option<&SequenceNumber>,
        timeout: Duration,
    ) {
        let _ = (stream, shard_id, after);
        tokio::time::sleep(timeout).await;
    }

    /// Whether records are pushed to this source as they arrive (enhanced fan-out): then
    /// [`wait_for_records`](Self::wait_for_records) returns when the next one comes, even for
    /// a reader at `LATEST` that has read nothing yet.
    fn pushes_records(&self) -> bool {
        false
    }

    /// Says that the reader of `shard_id` has stopped (its lease lost or given up, its shard
    /// ended, the mapping stopping): a source that holds something open for the shard (an
    /// enhanced fan-out subscription) closes it now, rather than let it stream to nobody. The
    /// next reader of the shard starts afresh. The default holds nothing.
    async fn release_shard(&self, stream: &str, shard_id: &str) {
        let _ = (stream, shard_id);
    }
}
