//! [`KinesisBatch`]: the event's text and its records' spans, and how records are added to it.

use std::fmt;

use aws_lambda_events::kinesis::KinesisEvent;
use base64::Engine as _;
use serde_json::value::RawValue;

use super::scan;
use super::spans::{Aggregated, Span, Spans, UserSpans};

/// A Kinesis event, read once from its JSON: the text of its records' fields, and where each
/// record's fields lie in it. This is the payload type the adapter's [`tower::Service`]
/// takes; build one with [`KinesisBatch::from_json`], with `From` an `aws_lambda_events`
/// [`KinesisEvent`], or with the [`testing`](crate::testing) kit.
///
/// It deserialises from JSON only (serde_json's `Deserializer` or `Value`): the `Records` array
/// is taken whole as a `serde_json` `RawValue`.
#[derive(Clone, Default)]
pub struct KinesisBatch {
    pub(super) text: String,
    pub(super) records: Vec<Spans>,
    /// The user records of KPL aggregates (see `deaggregate`), which `Aggregated::User` indexes.
    pub(super) user_records: Vec<UserSpans>,
    /// The data of those user records, which their `data` spans index.
    pub(super) user_data: Vec<u8>,
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
    pub(super) fn from_plain_json(json: &str) -> Option<Self> {
        let scanned = scan::plain_event(json)?;
        let batch = Self {
            text: scanned.text,
            records: scanned.records,
            ..Self::default()
        };
        Some(batch.deaggregated_if(scanned.might_hold_aggregates))
    }

    /// How many records the batch holds.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
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

    pub(super) fn slice(&self, span: Span) -> &str {
        &self.text[span.start..span.end]
    }

    /// Reads the JSON text of an event's `Records` array.
    pub(super) fn from_records_json(records: &RawValue) -> Result<Self, String> {
        let scanned = scan::records(records.get())?;
        let batch = Self {
            text: scanned.text,
            records: scanned.records,
            ..Self::default()
        };
        Ok(batch.deaggregated_if(scanned.might_hold_aggregates))
    }

    pub(super) fn push_text(&mut self, text: &str) -> Span {
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
