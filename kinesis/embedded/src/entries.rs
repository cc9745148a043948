//! A record to put and where it went: `PutRecordsRequestEntry` and `PutRecordsResultEntry`.

use std::sync::Arc;

use bytes::Bytes;
use kinesis_source::sequence::SequenceNumber;

/// One record to put (`PutRecordsRequestEntry`, and the fields of `PutRecord`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutRecordsEntry {
    /// Chooses the shard (through its MD5 hash) unless `explicit_hash_key` is set: 1 to 256
    /// Unicode characters.
    pub partition_key: Arc<str>,
    /// The record's data. With the partition key, at most 1 MiB.
    pub data: Bytes,
    /// A hash key (a decimal number below 2^128) that chooses the shard instead of the
    /// partition key's hash.
    pub explicit_hash_key: Option<String>,
}

impl PutRecordsEntry {
    /// A record routed by the hash of its partition key.
    pub fn new(partition_key: impl Into<Arc<str>>, data: impl Into<Bytes>) -> Self {
        Self {
            partition_key: partition_key.into(),
            data: data.into(),
            explicit_hash_key: None,
        }
    }

    /// Routes the record by `explicit_hash_key` (decimal) instead.
    pub fn with_explicit_hash_key(mut self, explicit_hash_key: impl Into<String>) -> Self {
        self.explicit_hash_key = Some(explicit_hash_key.into());
        self
    }
}

/// Where a put record went (`PutRecord`'s output, one entry of `PutRecords`' output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutRecordOutput {
    /// The shard that holds the record.
    pub shard_id: Arc<str>,
    /// The record's sequence number in that shard.
    pub sequence_number: SequenceNumber,
}
