//! The Kinesis event as the adapter reads it: one pass over the event JSON into a compact,
//! owned batch.
//!
//! `aws_lambda_events::kinesis::KinesisEvent` allocates a `String` for every field of every
//! record and decodes every record's data up front, whether or not the handler ever sees it.
//! [`KinesisBatch`] copies each field's text into one shared buffer instead, and keeps the data
//! in base64 until the record is handled, so a batch of 10,000 records costs a few allocations
//! rather than a hundred thousand.

use std::borrow::Cow;
use std::fmt;
use std::time::{Duration, SystemTime};

use aws_lambda_events::kinesis::KinesisEvent;
use base64::Engine as _;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A Kinesis event, read once from its JSON into a compact form. This is the payload type the
/// adapter's [`tower::Service`] takes; build one with [`KinesisBatch::from_json`], with `From`
/// an `aws_lambda_events` [`KinesisEvent`], or with the [`testing`](crate::testing) kit.
#[derive(Clone, Default)]
pub struct KinesisBatch {
    text: String,
    records: Vec<Spans>,
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
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
}

impl KinesisBatch {
    /// Reads a Lambda Kinesis event from its JSON text.
    pub fn from_json(json: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(json)
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

    /// The record at `index`.
    pub fn record(&self, index: usize) -> Option<RecordMeta<'_>> {
        self.records.get(index).map(|spans| self.meta(spans))
    }

    fn meta<'a>(&'a self, spans: &Spans) -> RecordMeta<'a> {
        RecordMeta {
            shard_id: self.slice(spans.shard_id),
            sequence_number: self.slice(spans.sequence_number),
            partition_key: self.slice(spans.partition_key),
            data_base64: self.slice(spans.data_base64),
            event_source_arn: self.slice(spans.event_source_arn),
            arrival_millis: spans.arrival_millis,
        }
    }

    fn slice(&self, span: Span) -> &str {
        &self.text[span.start..span.end]
    }

    fn push_text(&mut self, text: &str) -> Span {
        let start = self.text.len();
        self.text.push_str(text);
        Span {
            start,
            end: self.text.len(),
        }
    }

    /// Appends a record; `data_base64` is the record's data as Lambda sends it.
    fn push(&mut self, record: IncomingRecord<'_>) {
        let shard_id = record
            .event_id
            .as_deref()
            .and_then(|id| id.rsplit_once(':').map(|(shard, _)| shard))
            .unwrap_or_default();
        // Every record of a batch names the same stream and, within a shard, the same shard id:
        // store each once rather than once per record.
        let previous = self.records.last().copied();
        let shard_id = match previous {
            Some(p) if self.slice(p.shard_id) == shard_id => p.shard_id,
            _ => self.push_text(shard_id),
        };
        let arn = record.event_source_arn.as_deref().unwrap_or_default();
        let event_source_arn = match previous {
            Some(p) if self.slice(p.event_source_arn) == arn => p.event_source_arn,
            _ => self.push_text(arn),
        };
        let spans = Spans {
            shard_id,
            sequence_number: self.push_text(&record.kinesis.sequence_number),
            partition_key: self.push_text(&record.kinesis.partition_key),
            data_base64: self.push_text(&record.kinesis.data),
            event_source_arn,
            arrival_millis: record.kinesis.approximate_arrival_timestamp.0,
        };
        self.records.push(spans);
    }
}

impl fmt::Debug for KinesisBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.records()).finish()
    }
}

/// One record's metadata: where it sits in the stream, and its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordMeta<'a> {
    shard_id: &'a str,
    sequence_number: &'a str,
    partition_key: &'a str,
    data_base64: &'a str,
    event_source_arn: &'a str,
    arrival_millis: i64,
}

impl<'a> RecordMeta<'a> {
    /// The shard the record was read from, such as `shardId-000000000000`.
    pub fn shard_id(&self) -> &'a str {
        self.shard_id
    }

    /// The record's sequence number, a decimal string unique within its shard.
    pub fn sequence_number(&self) -> &'a str {
        self.sequence_number
    }

    /// The partition key the producer gave the record.
    pub fn partition_key(&self) -> &'a str {
        self.partition_key
    }

    /// The ARN of the stream the record was read from.
    pub fn event_source_arn(&self) -> &'a str {
        self.event_source_arn
    }

    /// When Kinesis accepted the record (millisecond precision).
    pub fn approximate_arrival(&self) -> SystemTime {
        let millis = Duration::from_millis(self.arrival_millis.unsigned_abs());
        if self.arrival_millis >= 0 {
            SystemTime::UNIX_EPOCH + millis
        } else {
            SystemTime::UNIX_EPOCH - millis
        }
    }

    /// The record's data as it travels in the event, in standard base64.
    pub(crate) fn data_base64(&self) -> &'a str {
        self.data_base64
    }
}

impl From<KinesisEvent> for KinesisBatch {
    fn from(event: KinesisEvent) -> Self {
        let mut batch = KinesisBatch::default();
        let engine = base64::engine::general_purpose::STANDARD;
        for record in event.records {
            let data = engine.encode(&record.kinesis.data.0);
            batch.push(IncomingRecord {
                event_id: record.event_id.map(Cow::Owned),
                event_source_arn: record.event_source_arn.map(Cow::Owned),
                kinesis: IncomingKinesis {
                    partition_key: Cow::Owned(record.kinesis.partition_key),
                    sequence_number: Cow::Owned(record.kinesis.sequence_number),
                    data: Cow::Owned(data),
                    approximate_arrival_timestamp: ArrivalMillis(
                        record
                            .kinesis
                            .approximate_arrival_timestamp
                            .0
                            .timestamp_millis(),
                    ),
                },
            });
        }
        batch
    }
}

/// One record of the event JSON, borrowing from the input wherever the text has no escapes.
#[derive(Deserialize)]
struct IncomingRecord<'a> {
    #[serde(rename = "eventID", borrow, default)]
    event_id: Option<Cow<'a, str>>,
    #[serde(rename = "eventSourceARN", borrow, default)]
    event_source_arn: Option<Cow<'a, str>>,
    #[serde(borrow)]
    kinesis: IncomingKinesis<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IncomingKinesis<'a> {
    #[serde(borrow)]
    partition_key: Cow<'a, str>,
    #[serde(borrow)]
    sequence_number: Cow<'a, str>,
    #[serde(borrow)]
    data: Cow<'a, str>,
    #[serde(default)]
    approximate_arrival_timestamp: ArrivalMillis,
}

/// `approximateArrivalTimestamp`: epoch seconds with a millisecond fraction. Lambda sends a JSON
/// number; `aws_lambda_events` serialises a string. Both are read, with any number of decimals.
#[derive(Default, Clone, Copy)]
struct ArrivalMillis(i64);

impl<'de> Deserialize<'de> for ArrivalMillis {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SecondsVisitor;
        impl Visitor<'_> for SecondsVisitor {
            type Value = ArrivalMillis;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("epoch seconds, as a number or a numeric string")
            }
            fn visit_f64<E: de::Error>(self, seconds: f64) -> Result<ArrivalMillis, E> {
                Ok(ArrivalMillis((seconds * 1000.0).round() as i64))
            }
            fn visit_i64<E: de::Error>(self, seconds: i64) -> Result<ArrivalMillis, E> {
                Ok(ArrivalMillis(seconds.saturating_mul(1000)))
            }
            fn visit_u64<E: de::Error>(self, seconds: u64) -> Result<ArrivalMillis, E> {
                Ok(ArrivalMillis(
                    i64::try_from(seconds).unwrap_or(i64::MAX / 1000) * 1000,
                ))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<ArrivalMillis, E> {
                let seconds: f64 = text.trim().parse().map_err(E::custom)?;
                self.visit_f64(seconds)
            }
        }
        deserializer.deserialize_any(SecondsVisitor)
    }
}

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
        #[derive(Deserialize)]
        enum Field {
            Records,
            #[serde(other)]
            Other,
        }
        let mut batch = None;
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Records if batch.is_some() => {
                    return Err(de::Error::duplicate_field("Records"));
                }
                Field::Records => batch = Some(map.next_value_seed(RecordsSeed)?),
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        batch.ok_or_else(|| de::Error::missing_field("Records"))
    }
}

struct RecordsSeed;

impl<'de> DeserializeSeed<'de> for RecordsSeed {
    type Value = KinesisBatch;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<KinesisBatch, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RecordsSeed {
    type Value = KinesisBatch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of Kinesis event records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<KinesisBatch, A::Error> {
        let mut batch = KinesisBatch::default();
        if let Some(hint) = seq.size_hint() {
            batch.records.reserve(hint);
        }
        while let Some(record) = seq.next_element::<IncomingRecord<'de>>()? {
            batch.push(record);
        }
        Ok(batch)
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
}
