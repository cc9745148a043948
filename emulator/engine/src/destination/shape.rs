//! What each destination receives for one discarded batch, as pure functions
//! (`docs/event-source-mapping.md` §5).

use std::time::SystemTime;

use serde_json::Value;

use kinesis_source::arn::Arn;
use kinesis_source::sequence::SequenceNumber;
use kinesis_source::time::iso8601_millis;

/// The largest SNS message: 256 KiB. Lambda drops the payload from a record that would exceed
/// it; a Kinesis record sent to SNS carries no payload, so only the metadata is left to fit.
pub const SNS_MESSAGE_LIMIT: usize = 256 * 1024;

/// The SQS message body and SNS message: the record as JSON text.
pub fn metadata_text(record: &Value) -> String {
    record.to_string()
}

/// The S3 object's body: the record with `payload`, the event the function received, as an
/// escaped JSON string.
pub fn s3_body(record: &Value, event: &str) -> String {
    let mut object = record.clone();
    if let Value::Object(fields) = &mut object {
        fields.insert("payload".to_owned(), Value::String(event.to_owned()));
    }
    object.to_string()
}

/// The S3 object's key: `aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<uuid>`,
/// the date and time being the record's `timestamp` in UTC.
pub fn s3_key(
    mapping_uuid: &str,
    shard_id: &str,
    discarded_at: SystemTime,
    unique: &str,
) -> String {
    let (date, time) = key_date_and_time(discarded_at);
    format!(
        "aws/lambda/{mapping_uuid}/{shard_id}/{}/{date}T{time}-{unique}",
        date.replace('-', "/")
    )
}

/// A folder record's file name, below the shard's folder: `YYYY-MM-DDTHH.MM.SS-<uuid>.json`,
/// so that a listing sorts by time.
pub fn file_name(discarded_at: SystemTime, unique: &str) -> String {
    let (date, time) = key_date_and_time(discarded_at);
    format!("{date}T{time}-{unique}.json")
}

/// `("YYYY-MM-DD", "HH.MM.SS")` of a time, in UTC.
fn key_date_and_time(time: SystemTime) -> (String, String) {
    // `iso8601_millis` writes `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    let iso = iso8601_millis(time);
    let (date, rest) = iso.split_once('T').unwrap_or((&iso, ""));
    let clock = rest.get(..8).unwrap_or(rest).replace(':', ".");
    (date.to_owned(), clock)
}

/// Whether an SNS message of this text fits SNS's limit.
pub fn fits_sns(message: &str) -> bool {
    message.len() <= SNS_MESSAGE_LIMIT
}

/// Where the records an invocation record describes lie: what `kinesis-esm failures replay`
/// reads again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchPosition {
    /// `streamArn`.
    pub stream_arn: String,
    /// The stream's name, from `streamArn`.
    pub stream_name: String,
    /// `shardId`.
    pub shard_id: String,
    /// `startSequenceNumber`.
    pub first: SequenceNumber,
    /// `endSequenceNumber`.
    pub last: SequenceNumber,
    /// `batchSize`.
    pub batch_size: u64,
    /// `requestContext.condition`.
    pub condition: String,
    /// `timestamp`.
    pub timestamp: String,
}

impl BatchPosition {
    /// Reads an invocation record (any destination's shape: SQS's body, SNS's message, an S3
    /// object, a folder file), or says which field is missing.
    pub fn of_record(record: &Value) -> Result<Self, String> {
        let info = record
            .get("KinesisBatchInfo")
            .ok_or("it has no KinesisBatchInfo: it is not a Kinesis on-failure record")?;
        let text = |value: Option<&Value>, name: &str| {
            value
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("it has no {name}"))
        };
        let field = |name: &str| text(info.get(name), &format!("KinesisBatchInfo.{name}"));
        let sequence_number = |name: &str| {
            field(name)?
                .parse::<SequenceNumber>()
                .map_err(|_| format!("KinesisBatchInfo.{name} is not a sequence number"))
        };
        let stream_arn = field("streamArn")?;
        let stream = Arn::parse_stream(&stream_arn)
            .map_err(|error| format!("KinesisBatchInfo.streamArn {error}"))?;
        let stream_name = stream.stream_name().unwrap_or_default().to_owned();
        Ok(Self {
            stream_arn,
            stream_name,
            shard_id: field("shardId")?,
            first: sequence_number("startSequenceNumber")?,
            last: sequence_number("endSequenceNumber")?,
            batch_size: info.get("batchSize").and_then(Value::as_u64).unwrap_or(0),
            condition: text(
                record
                    .get("requestContext")
                    .and_then(|context| context.get("condition")),
                "requestContext.condition",
            )
            .unwrap_or_default(),
            timestamp: text(record.get("timestamp"), "timestamp").unwrap_or_default(),
        })
    }

    /// Whether a record with this sequence number is one the invocation record describes.
    pub fn holds(&self, sequence_number: &SequenceNumber) -> bool {
        (&self.first..=&self.last).contains(&sequence_number)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    /// 2019-11-14T00:38:06.021Z, the timestamp of AWS's example record.
    fn example_time() -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_573_691_886_021)
    }

    #[test]
    fn the_s3_key_is_lambdas_layout_with_the_records_time() {
        assert_eq!(
            s3_key("ab12", "shardId-000000000001", example_time(), "u-1"),
            "aws/lambda/ab12/shardId-000000000001/2019/11/14/2019-11-14T00.38.06-u-1"
        );
    }

    #[test]
    fn the_s3_body_carries_the_event_as_an_escaped_string() {
        let record = serde_json::json!({"version": "1.0"});
        let body: Value =
            serde_json::from_str(&s3_body(&record, r#"{"Records":[]}"#)).expect("JSON");
        assert_eq!(
            body,
            serde_json::json!({"version": "1.0", "payload": "{\"Records\":[]}"})
        );
    }

    #[test]
    fn a_folder_file_is_named_by_time_then_uuid() {
        assert_eq!(
            file_name(example_time(), "u-1"),
            "2019-11-14T00.38.06-u-1.json"
        );
    }

    #[test]
    fn a_record_says_where_its_batch_lies() {
        let record = serde_json::json!({
            "requestContext": {"condition": "RetryAttemptsExhausted"},
            "timestamp": "2019-11-14T00:38:06.021Z",
            "KinesisBatchInfo": {
                "shardId": "shardId-000000000001",
                "startSequenceNumber": "100",
                "endSequenceNumber": "300",
                "batchSize": 3,
                "streamArn": "arn:aws:kinesis:us-east-1:123456789012:stream/shipments",
            },
        });
        let position = BatchPosition::of_record(&record).expect("a record");
        assert_eq!(position.stream_name, "shipments");
        assert_eq!(position.shard_id, "shardId-000000000001");
        assert_eq!(position.batch_size, 3);
        assert_eq!(position.condition, "RetryAttemptsExhausted");
        let number = |n: &str| n.parse::<SequenceNumber>().expect("a number");
        assert!(position.holds(&number("100")) && position.holds(&number("300")));
        assert!(!position.holds(&number("99")) && !position.holds(&number("301")));
        assert_eq!(
            BatchPosition::of_record(&serde_json::json!({"version": "1.0"})),
            Err("it has no KinesisBatchInfo: it is not a Kinesis on-failure record".to_owned())
        );
    }

    #[test]
    fn sns_takes_messages_up_to_256_kib() {
        assert!(fits_sns(&"x".repeat(SNS_MESSAGE_LIMIT)));
        assert!(!fits_sns(&"x".repeat(SNS_MESSAGE_LIMIT + 1)));
    }
}
