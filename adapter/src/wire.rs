//! What passes between the adapter and Lambda, and what the `kinesis-esm` emulator needs to
//! play Lambda's part: a function author rarely needs this module.
//!
//! - **The event.** [`KinesisBatch`] is the event as the adapter reads it (the payload of its
//!   `tower::Service`); [`write_event`] writes one exactly as Lambda's event source mapping
//!   builds it, for the emulator and the testing kit. `aws_lambda_events` cannot write it:
//!   it writes the arrival timestamp as a string, adds `"encryptionType":"NONE"` and writes
//!   `null` for unset fields, none of which Lambda does. [`ReadBatchLayer`] reads the event
//!   from the invocation's bytes before `lambda_runtime` deserialises it (the adapter's
//!   [`run`](crate::KinesisAdapter::run) uses it).
//! - **The response.** [`BatchResponse`] is the partial batch response plus the adapter's
//!   extension naming the dropped records and, among them, the undecodable ones
//!   ([`EXTENSION`], read back by [`dropped_sequence_numbers`] and
//!   [`undecodable_sequence_numbers`]).
//! - **The function error.** [`AdapterError`] is what the adapter answers when the event itself
//!   is unusable.

use aws_lambda_events::streams::KinesisBatchItemFailure;
use base64::Engine as _;
use lambda_runtime::Diagnostic;
use serde::ser::{Serialize, SerializeMap, Serializer};

pub use aws_lambda_events::kinesis::KinesisEvent;
pub use aws_lambda_events::streams::KinesisEventResponse;

pub use crate::batch::{KinesisBatch, ReadBatch, ReadBatchLayer};

/// The key of the response's extension object: `{"batchItemFailures":[...],"lambdaKinesis":{...}}`.
/// Lambda reads only `batchItemFailures` and ignores it.
pub const EXTENSION: &str = "lambdaKinesis";

/// The key, inside [`EXTENSION`], of the sequence numbers of the dropped records.
pub const DROPPED: &str = "dropped";

/// The key, inside [`EXTENSION`], of the sequence numbers of the dropped records the adapter
/// could not decode: a subset of [`DROPPED`], so that a reader of `dropped` alone still counts
/// every record the checkpoint passes without an ack.
pub const UNDECODABLE: &str = "undecodable";

/// The adapter's answer to Lambda: the partial batch response, naming at most one record.
///
/// It serialises as `{"batchItemFailures":[...]}`. When records were dropped it also carries
/// `"lambdaKinesis":{"dropped":[sequence numbers]}` ([`EXTENSION`], [`DROPPED`]), plus
/// `"undecodable":[sequence numbers]` ([`UNDECODABLE`]) for those among them the adapter could
/// not decode. Lambda ignores the extension (it reads only `batchItemFailures`); the
/// `kinesis-esm` emulator reads it to tell drops from acks, and undecodable records from the
/// handler's drops. It lists only the drops in front of the record the response names: those
/// the checkpoint passes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchResponse {
    failures: KinesisEventResponse,
    dropped: Vec<String>,
    undecodable: Vec<String>,
}

impl BatchResponse {
    pub(crate) fn new(held: Option<&str>, dropped: Vec<String>, undecodable: Vec<String>) -> Self {
        let mut failures = KinesisEventResponse::default();
        if let Some(sequence_number) = held {
            failures.add_failure(sequence_number);
        }
        Self {
            failures,
            dropped,
            undecodable,
        }
    }

    /// The standard partial batch response.
    pub fn failures(&self) -> &KinesisEventResponse {
        &self.failures
    }

    /// The sequence numbers of the records that were dropped and that the checkpoint passes.
    pub fn dropped(&self) -> &[String] {
        &self.dropped
    }

    /// The sequence numbers of the dropped records that were dropped because the adapter could
    /// not decode them: a subset of [`dropped`](Self::dropped).
    pub fn undecodable(&self) -> &[String] {
        &self.undecodable
    }
}

impl From<BatchResponse> for KinesisEventResponse {
    fn from(response: BatchResponse) -> Self {
        response.failures
    }
}

impl Serialize for BatchResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Report<'a>(&'a BatchResponse);
        impl Serialize for Report<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let undecodable = &self.0.undecodable;
                let entries = if undecodable.is_empty() { 1 } else { 2 };
                let mut map = serializer.serialize_map(Some(entries))?;
                map.serialize_entry(DROPPED, &self.0.dropped)?;
                if !undecodable.is_empty() {
                    map.serialize_entry(UNDECODABLE, undecodable)?;
                }
                map.end()
            }
        }
        let entries = if self.dropped.is_empty() { 1 } else { 2 };
        let mut map = serializer.serialize_map(Some(entries))?;
        let items: &[KinesisBatchItemFailure] = &self.failures.batch_item_failures;
        map.serialize_entry("batchItemFailures", items)?;
        if !self.dropped.is_empty() {
            map.serialize_entry(EXTENSION, &Report(self))?;
        }
        map.end()
    }
}

/// The dropped records' sequence numbers a function's response names in its [`EXTENSION`], as
/// written by [`BatchResponse`]; none when the response has no extension. Entries that are not
/// strings are skipped: the extension is advisory, and Lambda ignores it altogether.
pub fn dropped_sequence_numbers(response: &serde_json::Value) -> impl Iterator<Item = &str> + '_ {
    extension_list(response, DROPPED)
}

/// The undecodable records' sequence numbers a function's response names in its
/// [`EXTENSION`] (a subset of [`dropped_sequence_numbers`]); none from a response without them,
/// such as one written by an older adapter.
pub fn undecodable_sequence_numbers(
    response: &serde_json::Value,
) -> impl Iterator<Item = &str> + '_ {
    extension_list(response, UNDECODABLE)
}

fn extension_list<'a>(response: &'a serde_json::Value, key: &str) -> impl Iterator<Item = &'a str> {
    response
        .get(EXTENSION)
        .and_then(|extension| extension.get(key))
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
}

/// Where the records of an event come from: the same for every record of one event.
#[derive(Debug, Clone, Copy)]
pub struct EventSource<'a> {
    /// The stream's ARN (`eventSourceARN`).
    pub stream_arn: &'a str,
    /// The shard the records were read from (the first half of `eventID`).
    pub shard_id: &'a str,
    /// The stream's region (`awsRegion`).
    pub region: &'a str,
    /// The event source mapping's execution role (`invokeIdentityArn`).
    pub invoke_identity_arn: &'a str,
}

/// One record of an event.
#[derive(Debug, Clone, Copy)]
pub struct EventRecord<'a> {
    /// The record's sequence number (decimal digits).
    pub sequence_number: &'a str,
    /// The producer's partition key.
    pub partition_key: &'a str,
    /// The record's data, raw; it is written in base64.
    pub data: &'a [u8],
    /// When Kinesis accepted the record, in milliseconds since the Unix epoch.
    pub approximate_arrival_millis: i64,
}

/// Appends to `out` the JSON of a Kinesis event holding `records`, field for field as Lambda
/// sends it: `data` in standard base64, `approximateArrivalTimestamp` as epoch seconds with three
/// decimals, `eventID` as `<shard id>:<sequence number>`, and no `encryptionType`.
pub fn write_event<'a>(
    out: &mut Vec<u8>,
    source: &EventSource<'_>,
    records: impl IntoIterator<Item = EventRecord<'a>>,
) {
    // What follows each record's sequence number in `eventID` is the same for every record.
    let mut tail = Vec::with_capacity(256);
    tail.extend_from_slice(br#"","eventName":"aws:kinesis:record","invokeIdentityArn":"#);
    write_json_string(&mut tail, source.invoke_identity_arn);
    tail.extend_from_slice(br#","awsRegion":"#);
    write_json_string(&mut tail, source.region);
    tail.extend_from_slice(br#","eventSourceARN":"#);
    write_json_string(&mut tail, source.stream_arn);
    tail.push(b'}');
    let mut event_id_head = Vec::with_capacity(64);
    event_id_head
        .extend_from_slice(br#"},"eventSource":"aws:kinesis","eventVersion":"1.0","eventID":"#);
    write_json_string(&mut event_id_head, source.shard_id);
    event_id_head.pop(); // the closing quote: the sequence number follows

    out.extend_from_slice(br#"{"Records":["#);
    for (index, record) in records.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"kinesis":{"kinesisSchemaVersion":"1.0","partitionKey":"#);
        write_json_string(out, record.partition_key);
        out.extend_from_slice(br#","sequenceNumber":""#);
        out.extend_from_slice(record.sequence_number.as_bytes());
        out.extend_from_slice(br#"","data":""#);
        write_base64(out, record.data);
        out.extend_from_slice(br#"","approximateArrivalTimestamp":"#);
        write_epoch_seconds(out, record.approximate_arrival_millis);
        out.extend_from_slice(&event_id_head);
        out.push(b':');
        out.extend_from_slice(record.sequence_number.as_bytes());
        out.extend_from_slice(&tail);
    }
    out.extend_from_slice(b"]}");
}

fn write_base64(out: &mut Vec<u8>, data: &[u8]) {
    let engine = base64::engine::general_purpose::STANDARD;
    let start = out.len();
    out.resize(
        start + base64::encoded_len(data.len(), true).unwrap_or(0),
        0,
    );
    let written = engine
        .encode_slice(data, &mut out[start..])
        .expect("the buffer was sized by encoded_len");
    out.truncate(start + written);
}

fn write_epoch_seconds(out: &mut Vec<u8>, millis: i64) {
    // By hand rather than through `write!`: the formatting machinery costs more than the rest
    // of a record's fields together.
    if millis < 0 {
        out.push(b'-');
    }
    let millis = millis.unsigned_abs();
    write_decimal(out, millis / 1000);
    let fraction = millis % 1000;
    out.extend_from_slice(&[
        b'.',
        b'0' + (fraction / 100) as u8,
        b'0' + (fraction / 10 % 10) as u8,
        b'0' + (fraction % 10) as u8,
    ]);
}

/// Appends `value` in decimal digits.
fn write_decimal(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0_u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

fn write_json_string(out: &mut Vec<u8>, text: &str) {
    let plain = text
        .bytes()
        .all(|byte| byte >= 0x20 && byte != b'"' && byte != b'\\');
    if plain {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(out, text).expect("a string always serialises");
    }
}

/// What makes the adapter answer Lambda with a function error instead of a response: the event
/// itself is unusable. Lambda retries the batch (and bisects it, when so configured).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterError {
    /// The event holds records of more than one shard. Lambda never sends one; a response could
    /// hold only one shard's checkpoint.
    #[error(
        "the event mixes records of shards {first} and {second}; a Kinesis event comes from one shard"
    )]
    MixedShards {
        /// The first record's shard.
        first: String,
        /// Another shard in the same event.
        second: String,
    },
}

impl From<AdapterError> for Diagnostic {
    fn from(error: AdapterError) -> Self {
        let error_type = match error {
            AdapterError::MixedShards { .. } => "LambdaKinesis.MixedShards",
        };
        Diagnostic {
            error_type: error_type.to_owned(),
            error_message: error.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_event_field_for_field_as_lambda() {
        let mut out = Vec::new();
        write_event(
            &mut out,
            &EventSource {
                stream_arn: "arn:aws:kinesis:us-east-2:123456789012:stream/lambda-stream",
                shard_id: "shardId-000000000006",
                region: "us-east-2",
                invoke_identity_arn: "arn:aws:iam::123456789012:role/lambda-role",
            },
            [EventRecord {
                sequence_number: "49590338271490256608559692538361571095921575989136588898",
                partition_key: "1",
                data: b"Hello, this is a test.",
                approximate_arrival_millis: 1_545_084_650_987,
            }],
        );
        let written: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let lambda: serde_json::Value = serde_json::from_str(crate::batch::tests::EVENT).unwrap();
        assert_eq!(written, lambda);
        assert!(
            String::from_utf8(out)
                .unwrap()
                .contains(r#""approximateArrivalTimestamp":1545084650.987}"#)
        );
    }

    #[test]
    fn the_dropped_records_read_back_as_they_were_written() {
        let response = BatchResponse::new(
            Some("30"),
            vec!["10".to_owned(), "20".to_owned()],
            vec!["20".to_owned()],
        );
        let written = serde_json::to_value(&response).unwrap();
        assert_eq!(
            written,
            serde_json::json!({
                "batchItemFailures": [{"itemIdentifier": "30"}],
                "lambdaKinesis": {"dropped": ["10", "20"], "undecodable": ["20"]}
            })
        );
        assert_eq!(
            dropped_sequence_numbers(&written).collect::<Vec<_>>(),
            ["10", "20"]
        );
        assert_eq!(
            undecodable_sequence_numbers(&written).collect::<Vec<_>>(),
            ["20"]
        );
        let handler_drop = BatchResponse::new(None, vec!["10".to_owned()], Vec::new());
        assert_eq!(
            serde_json::to_value(handler_drop).unwrap(),
            serde_json::json!({"batchItemFailures": [], "lambdaKinesis": {"dropped": ["10"]}})
        );
        let plain = serde_json::to_value(BatchResponse::new(None, Vec::new(), Vec::new())).unwrap();
        assert_eq!(plain, serde_json::json!({"batchItemFailures": []}));
        assert_eq!(dropped_sequence_numbers(&plain).count(), 0);
        let odd = serde_json::json!({"lambdaKinesis": {"dropped": ["7", 8, null]}});
        assert_eq!(dropped_sequence_numbers(&odd).collect::<Vec<_>>(), ["7"]);
    }

    #[track_caller]
    fn check_epoch_seconds(millis: i64, expected: &str) {
        let mut out = Vec::new();
        write_epoch_seconds(&mut out, millis);
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn arrival_times_are_epoch_seconds_with_three_decimals() {
        check_epoch_seconds(1_545_084_650_987, "1545084650.987");
        check_epoch_seconds(1_545_084_650_000, "1545084650.000");
        check_epoch_seconds(1_545_084_650_007, "1545084650.007");
        check_epoch_seconds(1_545_084_650_070, "1545084650.070");
        check_epoch_seconds(0, "0.000");
        check_epoch_seconds(999, "0.999");
        check_epoch_seconds(-1_500, "-1.500");
        check_epoch_seconds(-5, "-0.005");
        check_epoch_seconds(i64::MAX, "9223372036854775.807");
        check_epoch_seconds(i64::MIN, "-9223372036854775.808");
    }

    #[test]
    fn keys_that_need_escaping_survive_the_round_trip() {
        let mut out = Vec::new();
        let source = EventSource {
            stream_arn: "arn",
            shard_id: "shardId-000000000000",
            region: "eu-west-1",
            invoke_identity_arn: "role",
        };
        let record = |partition_key, sequence_number| EventRecord {
            sequence_number,
            partition_key,
            data: &[0, 159, 146, 150],
            approximate_arrival_millis: 5,
        };
        write_event(
            &mut out,
            &source,
            [record("a\"b\\c\n", "1"), record("clé", "2")],
        );
        let batch = KinesisBatch::from_json(&out).unwrap();
        let keys: Vec<_> = batch.records().map(|r| r.partition_key()).collect();
        assert_eq!(keys, ["a\"b\\c\n", "clé"]);
        assert_eq!(batch.record(1).unwrap().shard_id(), "shardId-000000000000");
        assert_eq!(
            batch.record(0).unwrap().approximate_arrival(),
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(5)
        );
    }
}
