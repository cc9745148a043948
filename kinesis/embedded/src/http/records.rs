//! Record operations: `PutRecord`, `PutRecords`, `GetShardIterator` and `GetRecords`.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::codec::{BlobInput, Request, WireTime, blob};
use super::error::{Answer, ApiError, ErrorKind};
use super::validation::{
    HASH_KEY, PARTITION_KEY, SEQUENCE_NUMBER, SHARD_ID, SHARD_ITERATOR, Violations,
};
use super::wire::{
    Timestamp, WireHashKeyRange, check_stream, java_date_string, named_stream, normalized_shard_id,
    stream_names,
};
use crate::embedded::EmbeddedKinesis;
use crate::entries::PutRecordsEntry;
use crate::limits::MAX_GET_RECORDS_LIMIT;
use crate::limits::MAX_PUT_RECORDS_ENTRIES;
use crate::throughput::PutRecordsResult;
use kinesis_source::sequence::SequenceNumber;
use kinesis_source::{ChildShard, IteratorPosition, Record, SourceError};

/// `Data` in a request: base64 text (borrowed from a JSON body when it holds no escapes), or
/// the bytes of a CBOR byte string.
fn decode_data(data: Option<BlobInput<'_>>, record: Option<usize>) -> Result<Bytes, ApiError> {
    let text = match data {
        None => return Ok(Bytes::new()),
        Some(BlobInput::Bytes(bytes)) => return Ok(Bytes::from(bytes)),
        Some(BlobInput::Base64(text)) => text,
    };
    STANDARD.decode(&*text).map(Bytes::from).map_err(|error| {
        let which = record.map_or_else(String::new, |position| format!(" of record {position}"));
        ApiError::new(
            ErrorKind::Serialization,
            format!("Data{which} can not be converted to a Blob: it is not valid base64: {error}"),
        )
    })
}

/// Checks a record to put against the API's shapes; `record` is its position in a
/// `PutRecords` request.
fn check_entry(
    violations: &mut Violations,
    data: Option<&BlobInput<'_>>,
    partition_key: Option<&str>,
    explicit_hash_key: Option<&str>,
    record: Option<usize>,
) {
    let member = |name: &str| match record {
        Some(position) => format!("Records.{position}.{name}"),
        None => name.to_owned(),
    };
    violations.required(data, &member("Data"));
    // Optional in the model since `AUTO` streams take records without one; a stream that
    // places records by key refuses a record without one (`put.rs`).
    violations.text(&member("PartitionKey"), partition_key, PARTITION_KEY);
    violations.text(&member("ExplicitHashKey"), explicit_hash_key, HASH_KEY);
}

/// A record to put, checked already, with its position in the request for error messages.
fn entry(
    data: Option<BlobInput<'_>>,
    partition_key: Option<String>,
    explicit_hash_key: Option<String>,
    record: Option<usize>,
) -> Result<PutRecordsEntry, ApiError> {
    let data = decode_data(data, record)?;
    let partition_key: Arc<str> = partition_key.unwrap_or_default().into();
    let entry = PutRecordsEntry::new(partition_key, data);
    Ok(match explicit_hash_key {
        Some(key) => entry.with_explicit_hash_key(key),
        None => entry,
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PutRecordInput<'a> {
    stream_name: Option<String>,
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    #[serde(borrow)]
    data: Option<BlobInput<'a>>,
    partition_key: Option<String>,
    explicit_hash_key: Option<String>,
    sequence_number_for_ordering: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct PutRecordOutput<'a> {
    shard_id: &'a str,
    sequence_number: &'a str,
    encryption_type: &'static str,
}

/// `PutRecord`. `SequenceNumberForOrdering` is checked and otherwise ignored: the embedded
/// Kinesis numbers the records of a partition key in the order they arrive anyway. The answer's
/// `EncryptionType` is the stream's (`KMS` once `StartStreamEncryption` named a key), as AWS
/// says to check it there; nothing is encrypted.
pub(super) fn put_record(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: PutRecordInput<'_> = request.parse()?;
    let mut violations = Violations::new();
    check_stream(&mut violations, stream_names!(input));
    check_entry(
        &mut violations,
        input.data.as_ref(),
        input.partition_key.as_deref(),
        input.explicit_hash_key.as_deref(),
        None,
    );
    violations.text(
        "SequenceNumberForOrdering",
        input.sequence_number_for_ordering.as_deref(),
        SEQUENCE_NUMBER,
    );
    violations.finish()?;
    let stream = named_stream(kinesis, stream_names!(input))?;
    let record = entry(
        input.data,
        input.partition_key,
        input.explicit_hash_key,
        None,
    )?;
    let put = kinesis.put_record(stream, record)?;
    Ok(request.reply(&PutRecordOutput {
        shard_id: &put.shard_id,
        sequence_number: put.sequence_number.as_str(),
        // A stream deleted since the write has no settings left to tell: answered unencrypted.
        encryption_type: kinesis.encryption_type(stream).unwrap_or("NONE"),
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PutRecordsInput<'a> {
    stream_name: Option<String>,
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    #[serde(borrow)]
    records: Option<Vec<PutRecordsRequestEntry<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PutRecordsRequestEntry<'a> {
    #[serde(borrow)]
    data: Option<BlobInput<'a>>,
    partition_key: Option<String>,
    explicit_hash_key: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct PutRecordsOutput<'a> {
    failed_record_count: u32,
    records: Vec<PutRecordsResultEntry<'a>>,
    encryption_type: &'static str,
}

/// One record's answer: where it went, or (under `--throttle`) why it was not written.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct PutRecordsResultEntry<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    sequence_number: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shard_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_message: Option<&'a str>,
}

impl<'a> From<&'a PutRecordsResult> for PutRecordsResultEntry<'a> {
    fn from(result: &'a PutRecordsResult) -> Self {
        match result {
            Ok(put) => Self {
                sequence_number: Some(put.sequence_number.as_str()),
                shard_id: Some(&put.shard_id),
                error_code: None,
                error_message: None,
            },
            Err(refused) => Self {
                sequence_number: None,
                shard_id: None,
                error_code: Some(ErrorKind::ProvisionedThroughputExceeded.as_str()),
                error_message: Some(&refused.message),
            },
        }
    }
}

/// `PutRecords`: 1 to 500 records. Under `--throttle` a record past its shard's write limit
/// fails on its own (`ErrorCode` `ProvisionedThroughputExceededException`, counted in
/// `FailedRecordCount`) and the others are written; a record that breaks a rule fails the
/// whole call.
pub(super) fn put_records(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: PutRecordsInput<'_> = request.parse()?;
    let mut violations = Violations::new();
    check_stream(&mut violations, stream_names!(input));
    let records = violations.required(input.records, "Records");
    violations.list_length(
        "Records",
        records.as_ref().map(Vec::len),
        1,
        MAX_PUT_RECORDS_ENTRIES,
    );
    for (position, record) in records.iter().flatten().enumerate() {
        check_entry(
            &mut violations,
            record.data.as_ref(),
            record.partition_key.as_deref(),
            record.explicit_hash_key.as_deref(),
            Some(position),
        );
    }
    violations.finish()?;
    let stream = named_stream(kinesis, stream_names!(input))?;
    let records = records.unwrap_or_default();
    let entries = records
        .into_iter()
        .enumerate()
        .map(|(position, record)| {
            entry(
                record.data,
                record.partition_key,
                record.explicit_hash_key,
                Some(position),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let puts = kinesis.put_records_each(stream, entries)?;
    let failed = puts.iter().filter(|put| put.is_err()).count();
    Ok(request.reply(&PutRecordsOutput {
        failed_record_count: u32::try_from(failed).expect("at most 500 records"),
        records: puts.iter().map(PutRecordsResultEntry::from).collect(),
        // A stream deleted since the write has no settings left to tell: answered unencrypted.
        encryption_type: kinesis.encryption_type(stream).unwrap_or("NONE"),
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct GetShardIteratorInput {
    stream_name: Option<String>,
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    shard_id: Option<String>,
    shard_iterator_type: Option<String>,
    starting_sequence_number: Option<String>,
    timestamp: Option<Timestamp>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct GetShardIteratorOutput {
    shard_iterator: String,
}

/// The values of `ShardIteratorType`, in the model's order.
pub(super) const ITERATOR_TYPES: [&str; 5] = [
    "AT_SEQUENCE_NUMBER",
    "AFTER_SEQUENCE_NUMBER",
    "TRIM_HORIZON",
    "LATEST",
    "AT_TIMESTAMP",
];

/// `GetShardIterator`.
pub(super) fn get_shard_iterator(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: GetShardIteratorInput = request.parse()?;
    let mut violations = Violations::new();
    check_stream(&mut violations, stream_names!(input));
    let shard_id = violations.required(input.shard_id.as_deref(), "ShardId");
    violations.text("ShardId", shard_id, SHARD_ID);
    let kind = violations.required(input.shard_iterator_type.as_deref(), "ShardIteratorType");
    violations.one_of("ShardIteratorType", kind, &ITERATOR_TYPES);
    violations.text(
        "StartingSequenceNumber",
        input.starting_sequence_number.as_deref(),
        SEQUENCE_NUMBER,
    );
    violations.finish()?;
    let stream = named_stream(kinesis, stream_names!(input))?;
    let shard_id = normalized_shard_id(shard_id.unwrap_or_default());
    let kind = kind.unwrap_or_default();
    let sequence_number = || {
        let text = input.starting_sequence_number.as_deref().ok_or_else(|| {
            ApiError::invalid_argument(format!(
                "ShardIteratorType {kind} on shard {shard_id} of stream {stream} needs a \
                 StartingSequenceNumber"
            ))
        })?;
        text.parse::<SequenceNumber>()
            .map_err(|error| ApiError::invalid_argument(format!("StartingSequenceNumber: {error}")))
    };
    let position = match kind {
        "TRIM_HORIZON" => IteratorPosition::TrimHorizon,
        "LATEST" => IteratorPosition::Latest,
        "AT_SEQUENCE_NUMBER" => IteratorPosition::AtSequenceNumber(sequence_number()?),
        "AFTER_SEQUENCE_NUMBER" => IteratorPosition::AfterSequenceNumber(sequence_number()?),
        _ => {
            let Timestamp(time) = input.timestamp.ok_or_else(|| {
                ApiError::invalid_argument(format!(
                    "ShardIteratorType AT_TIMESTAMP on shard {shard_id} of stream {stream} \
                     needs a Timestamp"
                ))
            })?;
            IteratorPosition::AtTimestamp(time)
        }
    };
    let shard_iterator = kinesis.get_shard_iterator_limited(stream, &shard_id, &position)?;
    Ok(request.reply(&GetShardIteratorOutput { shard_iterator }))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct GetRecordsInput {
    shard_iterator: Option<String>,
    limit: Option<i64>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct GetRecordsOutput<'a> {
    records: Vec<WireRecord<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_shard_iterator: Option<&'a str>,
    millis_behind_latest: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    child_shards: Vec<WireChildShard<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WireRecord<'a> {
    sequence_number: &'a str,
    approximate_arrival_timestamp: WireTime,
    #[serde(serialize_with = "blob")]
    data: &'a [u8],
    /// Absent for a record an `AUTO` stream took without a partition key (kept as an empty
    /// key, which no other record can have).
    #[serde(skip_serializing_if = "str::is_empty")]
    partition_key: &'a str,
}

impl<'a> From<&'a Record> for WireRecord<'a> {
    fn from(record: &'a Record) -> Self {
        Self {
            sequence_number: record.sequence_number.as_str(),
            approximate_arrival_timestamp: WireTime(record.approximate_arrival),
            data: &record.data,
            partition_key: &record.partition_key,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WireChildShard<'a> {
    shard_id: &'a str,
    parent_shards: &'a [String],
    hash_key_range: WireHashKeyRange,
}

impl<'a> From<&'a ChildShard> for WireChildShard<'a> {
    fn from(child: &'a ChildShard) -> Self {
        Self {
            shard_id: &child.shard_id,
            parent_shards: &child.parent_shards,
            hash_key_range: WireHashKeyRange::from(&child.hash_key_range),
        }
    }
}

/// A shard iterator without the literal double quotes some clients wrap it in: Kinesis reads
/// `"\"AAAA...\""` as `AAAA...` (docs/kinesis.md, "Shard iterators").
fn unquoted(iterator: &str) -> &str {
    iterator
        .strip_prefix('"')
        .and_then(|inner| inner.strip_suffix('"'))
        .unwrap_or(iterator)
}

/// Kinesis' answer to an iterator past its time to live, with both times as it writes them.
fn expired_iterator(kinesis: &EmbeddedKinesis, iterator: &str) -> ApiError {
    let issued = kinesis
        .shard_iterator_issued(iterator)
        .map_or_else(|| "(unknown)".to_owned(), java_date_string);
    ApiError::new(
        ErrorKind::ExpiredIterator,
        format!(
            "Iterator expired. The iterator was created at time {issued} while right now it is \
             {} which is further in the future than the tolerated delay of {} milliseconds.",
            java_date_string(kinesis.current_time()),
            kinesis.iterator_ttl().as_millis()
        ),
    )
}

/// `GetRecords`: up to `Limit` records (10,000 when not given). A `StreamARN` may come along,
/// but the iterator alone says what is read.
pub(super) fn get_records(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: GetRecordsInput = request.parse()?;
    let mut violations = Violations::new();
    let iterator = violations.required(input.shard_iterator.as_deref(), "ShardIterator");
    let iterator = iterator.map(unquoted);
    violations.text("ShardIterator", iterator, SHARD_ITERATOR);
    violations.number("Limit", input.limit, 1, MAX_GET_RECORDS_LIMIT as i64);
    violations.finish()?;
    let iterator = iterator.unwrap_or_default();
    let limit = input
        .limit
        .map_or(MAX_GET_RECORDS_LIMIT, |limit| limit as usize);
    let output = kinesis
        .get_records_limited(iterator, limit)
        .map_err(|error| match error {
            SourceError::ExpiredIterator => expired_iterator(kinesis, iterator),
            other => ApiError::from(other),
        })?;
    Ok(request.reply(&GetRecordsOutput {
        records: output.records.iter().map(WireRecord::from).collect(),
        next_shard_iterator: output.next_shard_iterator.as_deref(),
        millis_behind_latest: output.millis_behind_latest,
        child_shards: output
            .child_shards
            .iter()
            .map(WireChildShard::from)
            .collect(),
    }))
}
