//! The Kinesis event as the adapter reads it: the text of the fields it uses, in one buffer, with
//! where each record's fields lie in it.
//!
//! `aws_lambda_events::kinesis::KinesisEvent` allocates a `String` for every field of every
//! record and decodes every record's data up front, whether or not the handler ever sees it.
//! [`KinesisBatch`] copies the text of the fields it uses into one buffer, record after record,
//! and records spans of it (see `scan`), and keeps the data in base64 until the record is
//! handled, so a batch of 10,000 records costs a few allocations rather than a hundred thousand.

mod scan;

use std::fmt;
use std::time::{Duration, SystemTime};

use aws_lambda_events::kinesis::KinesisEvent;
use base64::Engine as _;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::aggregate::{self, AggregateError, UserRecord};

/// A Kinesis event, read once from its JSON: the text of its records' fields, and where each
/// record's fields lie in it. This is the payload type the adapter's [`tower::Service`]
/// takes; build one with [`KinesisBatch::from_json`], with `From` an `aws_lambda_events`
/// [`KinesisEvent`], or with the [`testing`](crate::testing) kit.
///
/// It deserialises from JSON only (serde_json's `Deserializer` or `Value`): the `Records` array
/// is taken whole as a `serde_json` `RawValue`.
#[derive(Clone, Default)]
pub struct KinesisBatch {
    text: String,
    records: Vec<Spans>,
    /// The user records of KPL aggregates (see `deaggregate`), which `Aggregated::User` indexes.
    user_records: Vec<UserSpans>,
    /// The data of those user records, which their `data` spans index.
    user_data: Vec<u8>,
}

/// Where one record's fields lie in the batch's text.
#[derive(Clone, Copy)]
struct Spans {
    shard_id: Span,
    sequence_number: Span,
    partition_key: Span,
    data_base64: Span,
    event_source_arn: Span,
    arrival_millis: i64,
    /// For a user record of a KPL aggregate, `partition_key` is the user record's own and
    /// `data_base64` the whole aggregate's.
    aggregated: Aggregated,
}

/// Whether a record is a KPL aggregate's user record (see `docs/kpl-aggregation.md`).
#[derive(Clone, Copy)]
enum Aggregated {
    /// A record as the producer put it.
    Plain,
    /// A user record: its index in `KinesisBatch::user_records`.
    User(u32),
    /// An aggregate that cannot be read, kept whole to be rejected.
    Corrupt(AggregateError),
}

/// What a user record of an aggregate has of its own.
#[derive(Clone, Copy)]
struct UserSpans {
    sub_sequence_number: u32,
    /// In `KinesisBatch::user_data`.
    data: Span,
    /// In the batch's text.
    explicit_hash_key: Option<Span>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
}

impl KinesisBatch {
    /// Reads a Lambda Kinesis event from its JSON text.
    pub fn from_json(json: &[u8]) -> Result<Self, serde_json::Error> {
        // An event as Lambda writes it is read in one pass that checks the text itself; any
        // other text is read by serde_json first, which answers with the same batch or error.
        if let Some(batch) = std::str::from_utf8(json)
            .ok()
            .and_then(Self::from_plain_json)
        {
            return Ok(batch);
        }
        serde_json::from_slice(json)
    }

    /// Reads an event that [`scan::plain_event`] can read without serde_json.
    fn from_plain_json(json: &str) -> Option<Self> {
        let scanned = scan::plain_event(json)?;
        let batch = Self {
            text: scanned.text,
            records: scanned.records,
            ..Self::default()
        };
        Some(batch.deaggregated_if(scanned.might_hold_aggregates))
    }

    /// The batch deaggregated, when the scanner saw a record that might be an aggregate; as it
    /// is otherwise, without another pass over its records' text.
    fn deaggregated_if(self, might_hold_aggregates: bool) -> Self {
        match might_hold_aggregates {
            true => self.deaggregate(),
            false => self,
        }
    }

    /// Replaces each KPL aggregate with its user records, in order; an aggregate that cannot be
    /// read stays, marked to be rejected (see `docs/kpl-aggregation.md`). A batch without
    /// aggregates costs one look at the first characters of each record's data.
    fn deaggregate(mut self) -> Self {
        let might_be_aggregate = |batch: &Self, spans: &Spans| {
            batch
                .slice(spans.data_base64)
                .starts_with(aggregate::MAGIC_BASE64_PREFIX)
        };
        if !self
            .records
            .iter()
            .any(|spans| might_be_aggregate(&self, spans))
        {
            return self;
        }
        let records = std::mem::take(&mut self.records);
        self.records.reserve(records.len());
        // Each aggregate is decoded straight into the buffer the batch keeps, and its user
        // records' data are spans of it, in place: nothing is copied twice.
        let mut user_data = std::mem::take(&mut self.user_data);
        for spans in records {
            let start = user_data.len();
            let is_aggregate = might_be_aggregate(&self, &spans)
                && base64::engine::general_purpose::STANDARD
                    .decode_vec(self.slice(spans.data_base64), &mut user_data)
                    .is_ok()
                && aggregate::is_aggregate(&user_data[start..]);
            if !is_aggregate {
                // Bad base64 is reported when the record is decoded for the handler.
                user_data.truncate(start);
                self.records.push(spans);
                continue;
            }
            match aggregate::decode(&user_data[start..]) {
                Ok(user_records) => {
                    self.records.reserve(user_records.len());
                    let base = user_data.as_ptr() as usize;
                    for (sub_sequence_number, user) in user_records.iter().enumerate() {
                        let data_start = user.data.as_ptr() as usize - base;
                        let data = Span {
                            start: data_start,
                            end: data_start + user.data.len(),
                        };
                        self.push_user_record(spans, sub_sequence_number, user, data);
                    }
                }
                Err(error) => {
                    user_data.truncate(start);
                    self.records.push(Spans {
                        aggregated: Aggregated::Corrupt(error),
                        ..spans
                    });
                }
            }
        }
        self.user_data = user_data;
        self
    }

    fn push_user_record(
        &mut self,
        aggregate: Spans,
        sub_sequence_number: usize,
        user: &UserRecord<'_>,
        data: Span,
    ) {
        let partition_key = self.push_text(user.partition_key);
        let explicit_hash_key = user.explicit_hash_key.map(|key| self.push_text(key));
        let index = u32::try_from(self.user_records.len())
            .expect("a batch holds fewer than 2^32 user records");
        self.user_records.push(UserSpans {
            sub_sequence_number: u32::try_from(sub_sequence_number)
                .expect("an aggregate of at most 1 MiB holds fewer than 2^32 user records"),
            data,
            explicit_hash_key,
        });
        self.records.push(Spans {
            partition_key,
            aggregated: Aggregated::User(index),
            ..aggregate
        });
    }

    /// How many records the batch holds.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records, in the order of the event (shard order, as Lambda sends them).
    pub fn records(&self) -> impl ExactSizeIterator<Item = RecordMeta<'_>> + '_ {
        self.records.iter().map(|spans| self.meta(spans))
    }

    /// The shard ids of the first record and of the first record of another shard, when the
    /// batch holds more than one shard's records. Records whose shard id has the same span
    /// (as the scanner and [`push`](Self::push) make them) are of the same shard without a look
    /// at the text.
    pub(crate) fn mixed_shards(&self) -> Option<(&str, &str)> {
        let first = self.records.first()?.shard_id;
        let other = self
            .records
            .iter()
            .map(|spans| spans.shard_id)
            .find(|&shard_id| shard_id != first && self.slice(shard_id) != self.slice(first))?;
        Some((self.slice(first), self.slice(other)))
    }

    /// The record at `index`.
    pub fn record(&self, index: usize) -> Option<RecordMeta<'_>> {
        self.records.get(index).map(|spans| self.meta(spans))
    }

    fn meta<'a>(&'a self, spans: &'a Spans) -> RecordMeta<'a> {
        RecordMeta { batch: self, spans }
    }

    fn slice(&self, span: Span) -> &str {
        &self.text[span.start..span.end]
    }

    /// Reads the JSON text of an event's `Records` array.
    fn from_records_json(records: &RawValue) -> Result<Self, String> {
        let scanned = scan::records(records.get())?;
        let batch = Self {
            text: scanned.text,
            records: scanned.records,
            ..Self::default()
        };
        Ok(batch.deaggregated_if(scanned.might_hold_aggregates))
    }

    fn push_text(&mut self, text: &str) -> Span {
        let start = self.text.len();
        self.text.push_str(text);
        Span {
            start,
            end: self.text.len(),
        }
    }

    /// Appends a record given field by field; `data_base64` is the record's data as Lambda
    /// sends it.
    fn push(&mut self, record: OwnedRecord<'_>) {
        let shard_id = record
            .event_id
            .and_then(|id| id.rsplit_once(':').map(|(shard, _)| shard))
            .unwrap_or_default();
        // Every record of a batch names the same stream and, within a shard, the same shard id:
        // store each once rather than once per record.
        let previous = self.records.last().copied();
        let shard_id = match previous {
            Some(p) if self.slice(p.shard_id) == shard_id => p.shard_id,
            _ => self.push_text(shard_id),
        };
        let arn = record.event_source_arn.unwrap_or_default();
        let event_source_arn = match previous {
            Some(p) if self.slice(p.event_source_arn) == arn => p.event_source_arn,
            _ => self.push_text(arn),
        };
        let spans = Spans {
            shard_id,
            sequence_number: self.push_text(record.sequence_number),
            partition_key: self.push_text(record.partition_key),
            data_base64: self.push_text(record.data_base64),
            event_source_arn,
            arrival_millis: record.arrival_millis,
            aggregated: Aggregated::Plain,
        };
        self.records.push(spans);
    }
}

/// One record's fields, as [`KinesisBatch::push`] takes them.
struct OwnedRecord<'a> {
    event_id: Option<&'a str>,
    event_source_arn: Option<&'a str>,
    partition_key: &'a str,
    sequence_number: &'a str,
    data_base64: &'a str,
    arrival_millis: i64,
}

impl fmt::Debug for KinesisBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.records()).finish()
    }
}

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
    batch: &'a KinesisBatch,
    spans: &'a Spans,
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

impl From<KinesisEvent> for KinesisBatch {
    fn from(event: KinesisEvent) -> Self {
        let mut batch = KinesisBatch::default();
        let engine = base64::engine::general_purpose::STANDARD;
        for record in event.records {
            let data = engine.encode(&record.kinesis.data.0);
            batch.push(OwnedRecord {
                event_id: record.event_id.as_deref(),
                event_source_arn: record.event_source_arn.as_deref(),
                partition_key: &record.kinesis.partition_key,
                sequence_number: &record.kinesis.sequence_number,
                data_base64: &data,
                arrival_millis: record
                    .kinesis
                    .approximate_arrival_timestamp
                    .0
                    .timestamp_millis(),
            });
        }
        batch.deaggregate()
    }
}

/// Reads a Lambda Kinesis event from JSON (serde_json's `Deserializer` or `Value`; the `Records`
/// array is taken whole, as a `RawValue`, which only serde_json provides).
impl<'de> Deserialize<'de> for KinesisBatch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = KinesisBatch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kinesis event: an object with a `Records` array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KinesisBatch, A::Error> {
        let mut batch = None;
        while let Some(IsRecords(is_records)) = map.next_key()? {
            match is_records {
                true if batch.is_some() => return Err(de::Error::duplicate_field("Records")),
                true => batch = Some(map.next_value_seed(RecordsSeed)?),
                false => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        batch.ok_or_else(|| de::Error::missing_field("Records"))
    }
}

/// Whether a key of the event is `Records`. It is read as a string identifier (not as an enum
/// variant, as serde's derive would), so that `serde_path_to_error` sees the key and an error
/// in the records is reported at the path `Records`.
struct IsRecords(bool);

impl<'de> Deserialize<'de> for IsRecords {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = IsRecords;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<IsRecords, E> {
                Ok(IsRecords(key == "Records"))
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// The `Records` array, read whole and then scanned; an error in it is raised while the value is
/// read, so that an error path (`serde_path_to_error`, as `lambda_runtime` reports it) says
/// `Records`.
struct RecordsSeed;

impl<'de> DeserializeSeed<'de> for RecordsSeed {
    type Value = KinesisBatch;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<KinesisBatch, D::Error> {
        let records = Box::<RawValue>::deserialize(deserializer)?;
        KinesisBatch::from_records_json(&records).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &str = r#"{"Records":[{
        "kinesis":{"kinesisSchemaVersion":"1.0","partitionKey":"1",
            "sequenceNumber":"49590338271490256608559692538361571095921575989136588898",
            "data":"SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==","approximateArrivalTimestamp":1545084650.987},
        "eventSource":"aws:kinesis","eventVersion":"1.0",
        "eventID":"shardId-000000000006:49590338271490256608559692538361571095921575989136588898",
        "eventName":"aws:kinesis:record",
        "invokeIdentityArn":"arn:aws:iam::123456789012:role/lambda-role",
        "awsRegion":"us-east-2",
        "eventSourceARN":"arn:aws:kinesis:us-east-2:123456789012:stream/lambda-stream"}]}"#;

    #[test]
    fn reads_the_event_lambda_sends() {
        let batch = KinesisBatch::from_json(EVENT.as_bytes()).unwrap();
        assert_eq!(batch.len(), 1);
        let record = batch.record(0).unwrap();
        assert_eq!(record.shard_id(), "shardId-000000000006");
        assert_eq!(
            record.sequence_number(),
            "49590338271490256608559692538361571095921575989136588898"
        );
        assert_eq!(record.partition_key(), "1");
        assert_eq!(record.data_base64(), "SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==");
        assert_eq!(
            record.event_source_arn(),
            "arn:aws:kinesis:us-east-2:123456789012:stream/lambda-stream"
        );
        assert_eq!(
            record.approximate_arrival(),
            SystemTime::UNIX_EPOCH + Duration::from_millis(1_545_084_650_987)
        );
    }

    #[track_caller]
    fn check_arrival(json_value: &str, expected_millis: i64) {
        let event = EVENT.replace("1545084650.987", json_value);
        let batch = KinesisBatch::from_json(event.as_bytes()).unwrap();
        assert_eq!(batch.records[0].arrival_millis, expected_millis);
    }

    #[test]
    fn arrival_timestamps_keep_their_fraction() {
        // `aws_lambda_events` reads `.5` as 5 ms; it is half a second.
        check_arrival("1480641523.5", 1_480_641_523_500);
        check_arrival("1480641523.05", 1_480_641_523_050);
        check_arrival("1480641523.477", 1_480_641_523_477);
        check_arrival("1480641523", 1_480_641_523_000);
        check_arrival("\"1480641523.477\"", 1_480_641_523_477);
    }

    #[test]
    fn escaped_text_is_unescaped() {
        let event = EVENT.replace(r#""partitionKey":"1""#, r#""partitionKey":"a\"b\u00e9""#);
        let batch = KinesisBatch::from_json(event.as_bytes()).unwrap();
        assert_eq!(batch.record(0).unwrap().partition_key(), "a\"bé");
    }

    #[test]
    fn a_missing_sequence_number_is_an_error_that_says_so() {
        let event = EVENT.replace(r#""sequenceNumber""#, r#""sequence""#);
        let error = KinesisBatch::from_json(event.as_bytes()).unwrap_err();
        assert!(
            error.to_string().contains("missing field `sequenceNumber`"),
            "{error}"
        );
    }

    #[test]
    fn an_event_without_records_is_an_error() {
        let error = KinesisBatch::from_json(br#"{"records":[]}"#).unwrap_err();
        assert!(
            error.to_string().contains("missing field `Records`"),
            "{error}"
        );
    }

    #[test]
    fn converts_from_the_aws_lambda_events_type() {
        let event: KinesisEvent = serde_json::from_str(EVENT).unwrap();
        let batch = KinesisBatch::from(event);
        let record = batch.record(0).unwrap();
        assert_eq!(record.data_base64(), "SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==");
        assert_eq!(record.shard_id(), "shardId-000000000006");
    }

    /// The fields of every record as the adapter read them.
    fn read(batch: &KinesisBatch) -> Vec<(String, String, String, String, String, i64)> {
        batch
            .records()
            .map(|record| {
                (
                    record.shard_id().to_owned(),
                    record.sequence_number().to_owned(),
                    record.partition_key().to_owned(),
                    record.data_base64().to_owned(),
                    record.event_source_arn().to_owned(),
                    record.spans.arrival_millis,
                )
            })
            .collect()
    }

    /// The same fields read from a `serde_json::Value` of the event: what the scanner must find.
    fn reference(json: &str) -> Vec<(String, String, String, String, String, i64)> {
        let event: serde_json::Value = serde_json::from_str(json).unwrap();
        let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_owned();
        let seconds = |value: &serde_json::Value| match value {
            serde_json::Value::String(text) => text.trim().parse::<f64>().unwrap(),
            other => other.as_f64().unwrap_or_default(),
        };
        event["Records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|record| {
                let kinesis = &record["kinesis"];
                let event_id = text(&record["eventID"]);
                let shard = event_id.rsplit_once(':').map_or("", |(shard, _)| shard);
                (
                    shard.to_owned(),
                    text(&kinesis["sequenceNumber"]),
                    text(&kinesis["partitionKey"]),
                    text(&kinesis["data"]),
                    text(&record["eventSourceARN"]),
                    (seconds(&kinesis["approximateArrivalTimestamp"]) * 1000.0).round() as i64,
                )
            })
            .collect()
    }

    /// Reads `json` in every way the adapter can be handed it, and checks each finds what a
    /// `serde_json::Value` holds.
    #[track_caller]
    fn check(json: &str) {
        let expected = reference(json);
        let from_slice = KinesisBatch::from_json(json.as_bytes()).unwrap();
        assert_eq!(read(&from_slice), expected, "from_slice");
        let deserializer = &mut serde_json::Deserializer::from_slice(json.as_bytes());
        let as_the_runtime_does: KinesisBatch =
            serde_path_to_error::deserialize(deserializer).unwrap();
        assert_eq!(
            read(&as_the_runtime_does),
            expected,
            "through serde_path_to_error"
        );
        let from_reader: KinesisBatch = serde_json::from_reader(json.as_bytes()).unwrap();
        assert_eq!(read(&from_reader), expected, "from_reader");
        let value: serde_json::Value = serde_json::from_str(json).unwrap();
        let from_value: KinesisBatch = serde_json::from_value(value).unwrap();
        assert_eq!(read(&from_value), expected, "from_value");
    }

    #[test]
    fn the_scanner_finds_what_serde_json_finds() {
        check(EVENT);
        // As Lambda and the emulator write events: the layout the scanner matches whole.
        check(&written_event(&["a", "b", "shipment-7"]));
        check(&written_event(&["clé 🔑", "k"]));
        // That layout up to a point, then not: the record is read field by field.
        for (from, to) in [
            (r#""eventSourceARN":"#, r#""extra":1,"eventSourceARN":"#),
            (
                r#""approximateArrivalTimestamp":1767225600.123"#,
                r#""approximateArrivalTimestamp":"1767225600.123""#,
            ),
            (r#""partitionKey":"a""#, r#""partitionKey":"a""#),
            (r#""eventName":"#, r#" "eventName":"#),
            (r#""awsRegion":"us-east-1""#, r#""awsRegion":null"#),
        ] {
            let event = written_event(&["a", "b"]);
            assert!(event.contains(from), "{from}");
            check(&event.replacen(from, to, 1));
        }
        check(r#"{"Records":[]}"#);
        check(" { \"Records\" : [ ] } ");
        // Pretty-printed, with other keys around `Records`.
        let pretty = serde_json::to_string_pretty(
            &serde_json::from_str::<serde_json::Value>(EVENT).unwrap(),
        )
        .unwrap();
        check(&pretty);
        check(&format!(
            r#"{{"before":[1,{{"a":"]"}}],{},"after":null}}"#,
            &EVENT[1..EVENT.len() - 1]
        ));
        // Several records, fields in another order (as the SAM CLI writes them).
        check(
            r#"{"Records":[
            {"eventSourceARN":"arn:s","eventID":"shardId-000000000001:2","kinesis":
              {"data":"AA==","sequenceNumber":"2","partitionKey":"k","approximateArrivalTimestamp":1428537600.0}},
            {"kinesis":{"approximateArrivalTimestamp":1428537600,"partitionKey":"k2","sequenceNumber":"3","data":""},
              "eventID":"shardId-000000000001:3","eventSourceARN":"arn:s"}]}"#,
        );
    }

    /// `text` with the `n`th occurrence (from 0) of `from` replaced by `to`.
    fn replace_nth(text: &str, n: usize, from: &str, to: &str) -> String {
        let (at, _) = text
            .match_indices(from)
            .nth(n)
            .unwrap_or_else(|| panic!("no occurrence {n} of {from}"));
        format!("{}{to}{}", &text[..at], &text[at + from.len()..])
    }

    #[test]
    fn a_record_unlike_the_one_before_in_any_shared_piece_is_read_as_it_is() {
        // The second of three records differs from the first where Lambda writes the same
        // text for every record; the third is like the first again.
        let event = written_event(&["a", "bb", "c"]);
        for (from, to) in [
            (
                r#""kinesisSchemaVersion":"1.0""#,
                r#""kinesisSchemaVersion":"1.1""#,
            ),
            ("shardId-000000000003:", "shardId-000000000004:"),
            ("shardId-000000000003:4959", "shardId-000000000003:4959:"),
            ("shardId-000000000003:", "shardId-000000000003"),
            ("shardId-000000000003:", ":"),
            (
                r#""eventName":"aws:kinesis:record""#,
                r#""eventName":"other""#,
            ),
            (r#""awsRegion":"us-east-1""#, r#""awsRegion":"us-east-2""#),
            ("stream/orders", "stream/other"),
            (r#"stream/orders"}"#, r#"stream/orders","extra":1}"#),
            (":1767225600.124", r#":"1767225600.124""#),
        ] {
            // The first occurrence in the event is the second record's, for the arrival time.
            let second = usize::from(!from.starts_with(":1767"));
            let changed = replace_nth(&event, second, from, to);
            assert_ne!(changed, event, "{from}");
            check(&changed);
            check_same_either_way(changed.as_bytes());
        }
    }

    /// One record whose `kinesis` object is `kinesis` and whose other fields are `rest`.
    fn record(kinesis: &str, rest: &str) -> String {
        format!(r#"{{"Records":[{{"kinesis":{{{kinesis}}}{rest}}}]}}"#)
    }

    const KINESIS: &str = r#""partitionKey":"p","sequenceNumber":"1","data":"AA==""#;

    #[test]
    fn escapes_are_read_wherever_they_are() {
        check(&record(
            r#""partitionKey":"a\"b\\c\u00e9\n","sequenceNumber":"1","data":"AA\u003d\u003d""#,
            r#","eventID":"shard\u0049d-1:1","eventSourceARN":"arn:\"x\"""#,
        ));
        // A key spelt with escapes is still that key.
        check(&record(
            r#""partition\u004bey":"k","sequenceNumber":"1","data":"AA==""#,
            r#","event\u0049D":"s:1""#,
        ));
        // Raw UTF-8 needs no escape.
        check(&record(
            r#""partitionKey":"clé 🔑","sequenceNumber":"1","data":"AA==""#,
            "",
        ));
    }

    #[test]
    fn unknown_fields_of_any_shape_are_skipped() {
        check(&record(
            &format!(
                r#""extra":{{"nested":["}}","]",{{"q":"\""}}],"n":-1.5e3}},{KINESIS},"t":true,"f":false,"z":null"#
            ),
            r#","eventSource":"aws:kinesis","deep":[[[]],{}],"eventID":"s:1""#,
        ));
        check(&record(
            &format!(r#"{KINESIS},"encryptionType":"NONE""#),
            "",
        ));
    }

    #[test]
    fn optional_fields_may_be_missing_or_null() {
        check(&record(KINESIS, ""));
        check(&record(KINESIS, r#","eventID":null,"eventSourceARN":null"#));
        check(&record(KINESIS, r#","eventID":"no-colon""#));
    }

    #[test]
    fn arrival_timestamps_of_every_form() {
        for timestamp in [
            "1480641523",
            "1480641523.5",
            "1480641523.05",
            "1480641523.477",
            "1480641523.4775",
            "1480641523.0",
            "1.480641523477e9",
            "0",
            "0.001",
            "\"1480641523.477\"",
            "\" 1480641523.5 \"",
            "99999999999999999999",
        ] {
            check(&record(
                &format!(r#"{KINESIS},"approximateArrivalTimestamp":{timestamp}"#),
                "",
            ));
        }
    }

    #[track_caller]
    fn check_error(json: &str, message: &str) {
        let error = KinesisBatch::from_json(json.as_bytes()).unwrap_err();
        assert!(
            error.to_string().contains(message),
            "{error} should say {message:?}"
        );
    }

    #[test]
    fn events_that_are_not_kinesis_events_are_errors_that_say_why() {
        check_error(
            r#"{"Records":{}}"#,
            "invalid type: an object, expected an array of Kinesis event records",
        );
        check_error(
            r#"{"Records":null}"#,
            "expected an array of Kinesis event records",
        );
        check_error(
            r#"{"Records":[1]}"#,
            "invalid type: a number, expected a Kinesis event record",
        );
        check_error(&record("", ""), "missing field `partitionKey`");
        check_error(
            r#"{"Records":[{"eventID":"s:1"}]}"#,
            "missing field `kinesis`",
        );
        check_error(
            &record(r#""partitionKey":"p","data":"AA==""#, ""),
            "missing field `sequenceNumber`",
        );
        check_error(
            &record(r#""partitionKey":"p","sequenceNumber":"1""#, ""),
            "missing field `data`",
        );
        check_error(
            &record(r#""partitionKey":7,"sequenceNumber":"1","data":"AA==""#, ""),
            "expected a string for `partitionKey`",
        );
        check_error(
            r#"{"Records":[{"kinesis":5}]}"#,
            "expected the `kinesis` object",
        );
        check_error(
            &record(&format!(r#"{KINESIS},"data":"AA==""#), ""),
            "duplicate field `data`",
        );
        check_error(
            &record(KINESIS, r#","eventID":"a:1","eventID":"b:1""#),
            "duplicate field `eventID`",
        );
        check_error(
            &record(
                &format!(r#"{KINESIS},"approximateArrivalTimestamp":true"#),
                "",
            ),
            "expected epoch seconds",
        );
        check_error(
            &record(
                &format!(r#"{KINESIS},"approximateArrivalTimestamp":"soon""#),
                "",
            ),
            "invalid value: \"soon\"",
        );
        check_error(
            r#"{"Records":[],"Records":[]}"#,
            "duplicate field `Records`",
        );
        check_error(r#"{"Records":[}"#, "expected value");
    }

    #[test]
    fn the_scanner_refuses_text_serde_json_would_not_have_passed_it() {
        // serde_json checks the text before the scanner sees it; should anything else get
        // through, the scanner answers with an error, never a panic or an endless loop.
        for text in [
            "",
            "[",
            r#"[{"kinesis":{"data":"abc"#,
            r#"[{"kinesis":{"data":"abc"#,
            r#"[{"x":é}]"#,
            r#"[{"x":[1,}]"#,
            r#"[{"kinesis":{}"#,
        ] {
            assert!(scan::records(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn the_error_path_points_into_records() {
        let deserializer = &mut serde_json::Deserializer::from_slice(b"{\"Records\":[{}]}");
        let error = serde_path_to_error::deserialize::<_, KinesisBatch>(deserializer).unwrap_err();
        assert_eq!(error.path().to_string(), "Records");
        assert!(
            error
                .inner()
                .to_string()
                .contains("missing field `kinesis`")
        );
    }

    /// Reads `json` with `from_json` and with serde_json alone: the two must agree, on the
    /// batch or on the error.
    #[track_caller]
    fn check_same_either_way(json: &[u8]) {
        let direct = KinesisBatch::from_json(json);
        let through_serde_json = serde_json::from_slice::<KinesisBatch>(json);
        match (direct, through_serde_json) {
            (Ok(direct), Ok(general)) => {
                assert_eq!(
                    read(&direct),
                    read(&general),
                    "{}",
                    String::from_utf8_lossy(json)
                );
                assert_eq!(direct.text, general.text);
            }
            (Err(direct), Err(general)) => assert_eq!(direct.to_string(), general.to_string()),
            (direct, general) => panic!(
                "from_json gave {direct:?}, serde_json {general:?}, for {}",
                String::from_utf8_lossy(json)
            ),
        }
    }

    fn is_plain(json: &str) -> bool {
        KinesisBatch::from_plain_json(json).is_some()
    }

    /// Events with several records as the emulator writes them.
    fn written_event(partition_keys: &[&str]) -> String {
        let mut out = Vec::new();
        crate::wire::write_event(
            &mut out,
            &crate::wire::EventSource {
                stream_arn: "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
                shard_id: "shardId-000000000003",
                region: "us-east-1",
                invoke_identity_arn: "arn:aws:iam::123456789012:role/esm",
            },
            partition_keys
                .iter()
                .enumerate()
                .map(|(index, partition_key)| crate::wire::EventRecord {
                    sequence_number: [
                        "49590338271490256608559692538361571095921575989136588898",
                        "49590338271490256608559692538361571095921575989136588899",
                    ][index % 2],
                    partition_key,
                    data: b"{\"id\":1}",
                    approximate_arrival_millis: 1_767_225_600_123 + index as i64,
                }),
        );
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn events_as_lambda_writes_them_are_read_in_one_pass() {
        let events = [
            written_event(&["a", "b", "shipment-7"]),
            written_event(&["clé 🔑"]),
            EVENT.to_owned(),
            r#"{"Records":[]}"#.to_owned(),
            " { \"Records\" : [ ] } \n".to_owned(),
            record(&format!(r#"{KINESIS},"encryptionType":"NONE""#), ""),
            record(
                KINESIS,
                r#","eventID":null,"eventSourceARN":null,"extra":-0.5e+3"#,
            ),
            record(
                &format!(r#"{KINESIS},"approximateArrivalTimestamp":"1480641523.477""#),
                r#","t":true,"f":false"#,
            ),
        ];
        for json in &events {
            assert!(is_plain(json), "{json}");
            check_same_either_way(json.as_bytes());
        }
    }

    #[test]
    fn any_other_text_is_left_to_serde_json() {
        let event = written_event(&["a"]);
        let not_plain = [
            // Escapes and control characters in strings.
            EVENT.replace(r#""partitionKey":"1""#, r#""partitionKey":"a\"b""#),
            EVENT.replace(r#""partitionKey":"1""#, r#""partitionKey":"a\u0041""#),
            EVENT.replace(r#""partitionKey":"1""#, "\"partitionKey\":\"a\tb\""),
            EVENT.replace(r#""partitionKey":"1""#, r#""partitionKey":"a\qb""#),
            EVENT.replace(r#""eventName""#, r#""event\u004eame""#),
            // Numbers outside JSON's grammar, and literals that are not JSON's.
            record(
                &format!(r#"{KINESIS},"approximateArrivalTimestamp":01"#),
                "",
            ),
            record(
                &format!(r#"{KINESIS},"approximateArrivalTimestamp":1."#),
                "",
            ),
            record(
                &format!(r#"{KINESIS},"approximateArrivalTimestamp":.5"#),
                "",
            ),
            record(
                &format!(r#"{KINESIS},"approximateArrivalTimestamp":1e"#),
                "",
            ),
            record(
                &format!(r#"{KINESIS},"approximateArrivalTimestamp":+1"#),
                "",
            ),
            record(&format!(r#"{KINESIS},"approximateArrivalTimestamp":-"#), ""),
            record(KINESIS, r#","eventID":nul"#),
            record(KINESIS, r#","eventID":nulll"#),
            record(KINESIS, r#","eventSource":True"#),
            // Objects and arrays where values are stepped over, well-formed or not.
            record(KINESIS, r#","extra":{"a":[1,2]}"#),
            record(KINESIS, r#","extra":[1 2]"#),
            record(KINESIS, r#","extra":{"a" "b"}"#),
            // Structure.
            record(KINESIS, ","),
            r#"{"Records":[{"kinesis":{"partitionKey":"p","sequenceNumber":"1","data":"AA=="}},]}"#
                .to_owned(),
            r#"{"Records":[],"Records":[]}"#.to_owned(),
            r#"{"other":1,"Records":[]}"#.to_owned(),
            r#"{"Records":null}"#.to_owned(),
            r#"{"records":[]}"#.to_owned(),
            r#"[{"Records":[]}]"#.to_owned(),
            format!("{event}x"),
            format!("{event}}}"),
            event[..event.len() - 1].to_owned(),
            event[..event.len() / 2].to_owned(),
            String::new(),
        ];
        for json in &not_plain {
            assert!(!is_plain(json), "{json}");
            check_same_either_way(json.as_bytes());
        }
        // Bytes that are not UTF-8 never reach the one-pass reader.
        let mut bytes = written_event(&["k"]).into_bytes();
        let key = bytes.windows(3).position(|w| w == b"\"k\"").unwrap();
        bytes[key + 1] = 0xff;
        check_same_either_way(&bytes);
    }
}
