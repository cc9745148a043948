//! A record's metadata as the handler reads it, through the batch that holds its text.

use std::fmt;
use std::time::{Duration, SystemTime};

use super::kinesis_batch::KinesisBatch;
use super::spans::{Aggregated, Spans, UserSpans};
use crate::aggregate::AggregateError;
use crate::retry::Envelope;

/// One record's metadata: where it sits in the stream, and its key.
///
/// For a user record of a KPL aggregate (see [`aggregate`](crate::aggregate)) the partition key,
/// explicit hash key and sub-sequence number are the user record's own; the sequence number,
/// shard and arrival time are the aggregate's, which all its user records share.
#[derive(Clone, Copy)]
pub struct RecordMeta<'a> {
    // The record's spans, read through the batch only when a field is asked for. Slicing the
    // batch's text reads the bytes at both ends of the slice, and the text of a large event
    // does not stay in cache: a `RecordMeta` that sliced every field up front cost the adapter
    // about a cache miss per field per record on every pass over the batch (checking the
    // shard, settling, building the response), whichever fields the pass used.
    pub(super) batch: &'a KinesisBatch,
    pub(super) spans: &'a Spans,
    // The envelope a record of the adapter's retry stream came in, unwrapped by the engine.
    pub(super) retry: Option<&'a Envelope>,
}

// The batch's records as the handler reads them, here beside `RecordMeta`, which holds the batch.
impl KinesisBatch {
    /// The records, in the order of the event (shard order, as Lambda sends them).
    pub fn records(&self) -> impl ExactSizeIterator<Item = RecordMeta<'_>> + '_ {
        self.records.iter().map(|spans| self.meta(spans))
    }

    /// The record at `index`.
    pub fn record(&self, index: usize) -> Option<RecordMeta<'_>> {
        self.records.get(index).map(|spans| self.meta(spans))
    }

    fn meta<'a>(&'a self, spans: &'a Spans) -> RecordMeta<'a> {
        RecordMeta {
            batch: self,
            spans,
            retry: None,
        }
    }
}

/// Where the data the handler's type is decoded from lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordData<'a> {
    /// A plain record's data, in base64 as the event carries it.
    Base64(&'a str),
    /// A user record's data, already out of its aggregate.
    Raw(&'a [u8]),
    /// An aggregate that cannot be read.
    CorruptAggregate(AggregateError),
}

impl<'a> RecordMeta<'a> {
    /// The shard the record was read from, such as `shardId-000000000000`.
    pub fn shard_id(&self) -> &'a str {
        self.batch.slice(self.spans.shard_id)
    }

    /// The record's sequence number, a decimal string unique within its shard.
    pub fn sequence_number(&self) -> &'a str {
        self.batch.slice(self.spans.sequence_number)
    }

    /// The partition key the producer gave the record (for a user record of an aggregate, the
    /// user record's own).
    ///
    /// A stream whose record distribution strategy is `AUTO` takes records without a partition
    /// key, and Lambda's event may then carry one with no `partitionKey`, a `null` one or `""`:
    /// all three read as `""` here. Such records have no per-key order: with
    /// [`per_key_lanes`](crate::KinesisAdapter::per_key_lanes) they share one lane (the `""`
    /// key), and a retry envelope's origin keeps `""`.
    pub fn partition_key(&self) -> &'a str {
        self.batch.slice(self.spans.partition_key)
    }

    /// The explicit hash key the producer gave a user record of an aggregate, if any. Lambda's
    /// event does not carry a plain record's explicit hash key: `None` for those.
    pub fn explicit_hash_key(&self) -> Option<&'a str> {
        let span = self.user()?.explicit_hash_key?;
        Some(self.batch.slice(span))
    }

    /// The position of a user record in its KPL aggregate, from 0; 0 for a plain record, as in
    /// the KCL. Every user record of an aggregate has the aggregate's sequence number, so a key
    /// that names one user record (for idempotency) is the shard id, the sequence number and
    /// this number together.
    pub fn sub_sequence_number(&self) -> u64 {
        self.user()
            .map_or(0, |user| u64::from(user.sub_sequence_number))
    }

    /// Whether the record is a user record of a KPL aggregate.
    pub fn is_aggregated(&self) -> bool {
        self.user().is_some()
    }

    /// For a record read from the adapter's retry stream (see [`retry`](crate::retry)), the
    /// envelope it came in: [`attempt`](Envelope::attempt) (1 on the first retry), the
    /// [`origin`](Envelope::origin) (stream, shard, sequence number, partition key, arrival) and
    /// the [`reason`](Envelope::reason) it was held for. `None` on its first delivery. The other
    /// fields of this `RecordMeta` are the retry stream's record's own.
    pub fn retry(&self) -> Option<&'a Envelope> {
        self.retry
    }

    /// How many times the record was retried before this delivery: 0 on its first.
    pub fn retry_attempt(&self) -> u32 {
        self.retry.map_or(0, |envelope| envelope.attempt)
    }

    /// The same record, unwrapped from `envelope`.
    pub(crate) fn with_retry<'e>(self, envelope: Option<&'e Envelope>) -> RecordMeta<'e>
    where
        'a: 'e,
    {
        RecordMeta {
            batch: self.batch,
            spans: self.spans,
            retry: envelope,
        }
    }

    /// The name of the stream the record was read from (the last part of its ARN).
    pub fn stream_name(&self) -> &'a str {
        crate::retry::stream_name_of_arn(self.event_source_arn())
    }

    /// The ARN of the stream the record was read from.
    pub fn event_source_arn(&self) -> &'a str {
        self.batch.slice(self.spans.event_source_arn)
    }

    /// When Kinesis accepted the record (millisecond precision).
    pub fn approximate_arrival(&self) -> SystemTime {
        let arrival_millis = self.spans.arrival_millis;
        let millis = Duration::from_millis(arrival_millis.unsigned_abs());
        if arrival_millis >= 0 {
            SystemTime::UNIX_EPOCH + millis
        } else {
            SystemTime::UNIX_EPOCH - millis
        }
    }

    /// The Kinesis record's data as it travels in the event, in standard base64 (for a user
    /// record, the whole aggregate's).
    #[cfg(test)]
    pub(crate) fn data_base64(&self) -> &'a str {
        self.batch.slice(self.spans.data_base64)
    }

    /// Where the data the handler's type is decoded from lies.
    pub(crate) fn data(&self) -> RecordData<'a> {
        match self.spans.aggregated {
            Aggregated::Plain => RecordData::Base64(self.batch.slice(self.spans.data_base64)),
            Aggregated::User(_) => {
                let span = self.user().expect("a user record has its spans").data;
                RecordData::Raw(&self.batch.user_data[span.start..span.end])
            }
            Aggregated::Corrupt(error) => RecordData::CorruptAggregate(error),
        }
    }

    /// What a user record of an aggregate has of its own; `None` for any other record.
    fn user(&self) -> Option<&'a UserSpans> {
        match self.spans.aggregated {
            Aggregated::User(index) => Some(&self.batch.user_records[index as usize]),
            Aggregated::Plain | Aggregated::Corrupt(_) => None,
        }
    }

    /// Every field, for `PartialEq`.
    #[allow(clippy::type_complexity)]
    fn fields(
        &self,
    ) -> (
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        RecordData<'a>,
        Option<u32>,
        Option<&'a str>,
        &'a str,
        i64,
    ) {
        (
            self.shard_id(),
            self.sequence_number(),
            self.partition_key(),
            self.batch.slice(self.spans.data_base64),
            self.data(),
            self.user().map(|user| user.sub_sequence_number),
            self.explicit_hash_key(),
            self.event_source_arn(),
            self.spans.arrival_millis,
        )
    }
}

/// As a derived `Debug` of the record's fields would print them.
impl fmt::Debug for RecordMeta<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordMeta")
            .field("shard_id", &self.shard_id())
            .field("sequence_number", &self.sequence_number())
            .field("partition_key", &self.partition_key())
            .field("data_base64", &self.batch.slice(self.spans.data_base64))
            .field("data", &self.data())
            .field(
                "sub_sequence_number",
                &self.user().map(|user| user.sub_sequence_number),
            )
            .field("explicit_hash_key", &self.explicit_hash_key())
            .field("event_source_arn", &self.event_source_arn())
            .field("arrival_millis", &self.spans.arrival_millis)
            .finish()
    }
}

/// Two records are equal when every field is, in whichever batch they lie.
impl PartialEq for RecordMeta<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.fields() == other.fields()
    }
}

impl Eq for RecordMeta<'_> {}
