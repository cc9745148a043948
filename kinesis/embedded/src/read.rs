//! The read path: `GetShardIterator` and `GetRecords` as the API answers them (the limit, the
//! iterator's text and age, its stream's generation checked before the stream reads), and the
//! embedded Kinesis as the [`ShardSource`] a mapping reads, whose reads and iterators are the
//! throttled ones under `--throttle` ([`super::throughput`]). The write path is `put.rs`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use super::clock::{self, duration_millis};
use super::numbering::IteratorToken;
use super::stream::Stream;
use crate::embedded::EmbeddedKinesis;
use crate::limits::MAX_GET_RECORDS_LIMIT;
use kinesis_source::arn::Arn;
use kinesis_source::sequence::SequenceNumber;
use kinesis_source::{
    GetRecordsOutput, IteratorPosition, Shard, ShardSource, SourceError, StreamDescription,
};

/// What an unreadable shard iterator is told apart by: its length and first characters, never
/// the whole text, which may be long and is the client's own (docs/kinesis.md, "Shard
/// iterators").
fn invalid_iterator_message(shard_iterator: &str) -> String {
    const SHOWN: usize = 16;
    let length = shard_iterator.chars().count();
    if length <= SHOWN {
        format!("Invalid ShardIterator `{shard_iterator}`: it is not one GetShardIterator gave")
    } else {
        let start: String = shard_iterator.chars().take(SHOWN).collect();
        format!(
            "Invalid ShardIterator `{start}...` ({length} characters): it is not one \
             GetShardIterator gave"
        )
    }
}

impl EmbeddedKinesis {
    /// `GetShardIterator`: an iterator on a shard that has not expired, open or closed. It is
    /// opaque text, valid for 5 minutes (or the configured time) after this call.
    ///
    /// `AT_SEQUENCE_NUMBER` and `AFTER_SEQUENCE_NUMBER` need a sequence number of this shard
    /// (else `InvalidArgument`); one that no record has, such as a shard's starting or ending
    /// sequence number, starts at the next record after it. `AT_TIMESTAMP` starts at the first
    /// record that arrived at or after the time: the oldest untrimmed record when the time is
    /// older, and a record still to come when it is later than every record.
    pub fn get_shard_iterator(
        &self,
        stream: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<String, SourceError> {
        let stream = self.stream(stream)?;
        Ok(stream.iterator(shard_id, position, self.now().1)?.encode())
    }

    /// `GetRecords`: up to `limit` (1 to 10,000) records from an iterator, at most 10 MiB.
    ///
    /// The output's `next_shard_iterator` continues after the last record returned (or where
    /// this call started, when it returned none). Once a closed shard has been read to its
    /// end, it is `None` and `child_shards` names the shards that took over its hash keys,
    /// each with all its parents; records and the end can come in the same output.
    /// `millis_behind_latest` is how long the oldest record not yet returned has waited, or 0
    /// when none is left.
    ///
    /// Errors: `InvalidArgument` for a limit out of range or text that is not an iterator,
    /// `ExpiredIterator` for an iterator older than its time to live, `ResourceNotFound` when
    /// its stream was deleted or its shard expired.
    ///
    /// It is never throttled: it is also the read enhanced fan-out makes. A standard consumer's
    /// read is [`get_records_limited`](Self::get_records_limited).
    pub fn get_records(
        &self,
        shard_iterator: &str,
        limit: usize,
    ) -> Result<GetRecordsOutput, SourceError> {
        let (token, stream, now_ms) = self.iterator_stream(shard_iterator, limit)?;
        stream.read(&token, limit, now_ms)
    }

    /// The checks of `GetRecords` before its read: the limit, the iterator, its age, its stream.
    pub(super) fn iterator_stream(
        &self,
        shard_iterator: &str,
        limit: usize,
    ) -> Result<(IteratorToken, Arc<Stream>, u64), SourceError> {
        if !(1..=MAX_GET_RECORDS_LIMIT).contains(&limit) {
            return Err(SourceError::InvalidArgument {
                message: format!(
                    "GetRecords Limit {limit} must be between 1 and {MAX_GET_RECORDS_LIMIT}"
                ),
            });
        }
        let token =
            IteratorToken::decode(shard_iterator).ok_or_else(|| SourceError::InvalidArgument {
                message: invalid_iterator_message(shard_iterator),
            })?;
        let (_, now_ms) = self.now();
        if now_ms.saturating_sub(token.issued_ms) > duration_millis(self.inner.iterator_ttl) {
            return Err(SourceError::ExpiredIterator);
        }
        let stream = self
            .stream(&token.stream_name)
            .ok()
            .filter(|stream| stream.generation == token.stream_generation)
            .ok_or_else(|| self.stream_not_found(&token.stream_name))?;
        Ok((token, stream, now_ms))
    }

    /// When a shard iterator was issued, by this Kinesis' clock; `None` for text that is not
    /// an iterator. Lets an `ExpiredIteratorException` say both times, as Kinesis' does.
    pub fn shard_iterator_issued(&self, shard_iterator: &str) -> Option<SystemTime> {
        IteratorToken::decode(shard_iterator).map(|token| clock::from_millis(token.issued_ms))
    }

    /// The sequence number a reader holding `shard_iterator` has read up to: the one just
    /// before its position (no record need have it). `AFTER_SEQUENCE_NUMBER` of it reads from
    /// the same place; `SubscribeToShard` sends it as `ContinuationSequenceNumber` when it has
    /// sent no record yet. `None` for text that is not an iterator of a stream that exists.
    pub(crate) fn sequence_number_read_to(&self, shard_iterator: &str) -> Option<SequenceNumber> {
        let token = IteratorToken::decode(shard_iterator)?;
        let stream = self.stream(&token.stream_name).ok()?;
        Some(stream.sequence_number_before(token.shard_index, token.cursor.counter))
    }
}

#[async_trait]
impl ShardSource for EmbeddedKinesis {
    async fn describe_stream(&self, stream: &str) -> Result<StreamDescription, SourceError> {
        let summary = self.describe_stream_summary(stream)?;
        Ok(StreamDescription {
            name: summary.name,
            arn: Arn::parse_stream(&summary.arn).map_err(|error| SourceError::Service {
                message: format!("the stream {stream}'s {error}"),
            })?,
            created: summary.created,
        })
    }

    async fn list_shards(&self, stream: &str) -> Result<Vec<Shard>, SourceError> {
        EmbeddedKinesis::list_shards(self, stream)
    }

    async fn shard_iterator(
        &self,
        stream: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<String, SourceError> {
        self.get_shard_iterator_limited(stream, shard_id, position)
    }

    async fn get_records(
        &self,
        shard_iterator: &str,
        limit: usize,
    ) -> Result<GetRecordsOutput, SourceError> {
        self.get_records_limited(shard_iterator, limit)
    }

    /// Returns as soon as the shard holds a record after `after` (any record when `None`) or
    /// is closed, or after `timeout`. It also returns at once when the stream or shard is
    /// unknown or `after` is not one of the shard's sequence numbers (the next call reports
    /// why), and when the stream is deleted while waiting.
    async fn wait_for_records(
        &self,
        stream: &str,
        shard_id: &str,
        after: Option<&SequenceNumber>,
        timeout: Duration,
    ) {
        let Ok(stream) = self.stream(stream) else {
            return;
        };
        let receiver = stream.watch_unless_ready(shard_id, after, self.now().1);
        // The stream is let go before waiting, so that deleting it drops its signals and wakes
        // this reader.
        drop(stream);
        if let Some(mut receiver) = receiver {
            let _ = tokio::time::timeout(timeout, receiver.changed()).await;
        }
    }
}
