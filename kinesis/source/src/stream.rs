//! Streams and shards as `DescribeStreamSummary`, `ListShards` and `GetRecords` tell them.

use std::time::SystemTime;

use crate::arn::Arn;
use crate::sequence::SequenceNumber;

/// A stream as `DescribeStreamSummary` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamDescription {
    /// The stream's name.
    pub name: String,
    /// The stream's ARN, read where the description entered (its region and account name the
    /// stream's place in events and lease keys).
    pub arn: Arn,
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
