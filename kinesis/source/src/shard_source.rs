//! The seam between a consumer and a Kinesis: the calls a shard reader makes.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::SourceError;
use crate::records::{GetRecordsOutput, IteratorPosition};
use crate::sequence::SequenceNumber;
use crate::stream::{Shard, StreamDescription};

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
