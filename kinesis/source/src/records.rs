//! Records and where a read starts, as `GetShardIterator` and `GetRecords` take and give them.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;

use crate::sequence::SequenceNumber;
use crate::stream::ChildShard;

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
