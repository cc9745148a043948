//! Files of records to publish: JSON lines, or Lambda Kinesis event files.
//!
//! A JSON-lines file holds one record per line:
//! `{"data": <any JSON>, "partitionKey": "k", "explicitHashKey": "123"}`. When `data` is a JSON
//! string its text is published as it is (so records that are not JSON can be written);
//! anything else is published as its JSON text. `partitionKey` defaults to `<file>-<line>`.
//!
//! A Lambda event file (`{"Records": [...]}`, as Lambda sends it and as `kinesis-esm events`
//! writes it) publishes each record's decoded `data` under its `partitionKey`; the sequence
//! numbers in the file are ignored, since Kinesis assigns new ones.
//!
//! A record no Kinesis stream takes by its size (over 10 MiB of data and partition key, the
//! largest `MaxRecordSizeInKiB`) is refused here, naming its file and line; one over the target
//! stream's own limit is refused by [`check_record_sizes`] before anything is published, naming
//! the record and the stream. [`put_records_batches`] cuts the records that remain into
//! `PutRecords` requests Kinesis accepts (`docs/put-records-limits.md`).

use std::ops::Range;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use bytes::Bytes;
use serde_json::Value;

use embedded_kinesis::{MAX_MAX_RECORD_SIZE_KIB, MAX_PUT_RECORDS_BYTES, MAX_PUT_RECORDS_ENTRIES};

/// The largest record any stream takes: 10 MiB, once its `MaxRecordSizeInKiB` is 10240.
const LARGEST_RECORD_BYTES: usize = MAX_MAX_RECORD_SIZE_KIB as usize * 1024;

/// One record to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordToPut {
    /// Its partition key.
    pub partition_key: String,
    /// Its data.
    pub data: Bytes,
    /// A hash key that picks the shard instead of the partition key, if any.
    pub explicit_hash_key: Option<String>,
}

impl RecordToPut {
    /// The bytes Kinesis counts against its size limits: the data and the partition key's UTF-8
    /// bytes (`docs/put-records-limits.md`).
    pub fn size(&self) -> usize {
        self.data.len() + self.partition_key.len()
    }
}

/// Cuts `records` into consecutive runs, each fit for one `PutRecords` request: at most 500
/// records and 5 MiB of data and partition keys (`docs/put-records-limits.md`). The runs cover
/// every record, in order. A record that alone breaks the byte limit gets a run of its own: a
/// stream that takes records over 1 MiB takes `PutRecords` requests of 10 MiB, so such a record
/// alone always fits one, and 5 MiB of smaller records fit a request to any stream.
pub fn put_records_batches(records: &[RecordToPut]) -> Vec<Range<usize>> {
    cut_batches(
        records.iter().map(RecordToPut::size),
        MAX_PUT_RECORDS_ENTRIES,
        MAX_PUT_RECORDS_BYTES,
    )
}

/// The batching rule of [`put_records_batches`], over the records' sizes.
fn cut_batches(
    sizes: impl IntoIterator<Item = usize>,
    max_entries: usize,
    max_bytes: usize,
) -> Vec<Range<usize>> {
    let mut batches = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    let mut end = 0;
    for (index, size) in sizes.into_iter().enumerate() {
        let count = index - start;
        if count > 0 && (count == max_entries || bytes + size > max_bytes) {
            batches.push(start..index);
            start = index;
            bytes = 0;
        }
        bytes += size;
        end = index + 1;
    }
    if end > start {
        batches.push(start..end);
    }
    batches
}

/// A records file that cannot be read, with where.
#[derive(Debug, thiserror::Error)]
pub enum RecordsFileError {
    /// The file or folder cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line or record is not what a records file holds.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line (1-based; for event files, the record's position).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Reads the records of `path`: a file, or a folder whose `.json` and `.jsonl` files are read in
/// name order.
pub fn read_records(path: &Path) -> Result<Vec<RecordToPut>, RecordsFileError> {
    let read_error = |source| RecordsFileError::Read {
        path: path.to_owned(),
        source,
    };
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(read_error)?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|file| {
                file.extension()
                    .is_some_and(|ext| ext == "json" || ext == "jsonl")
            })
            .collect();
        files.sort();
        let mut records = Vec::new();
        for file in files {
            records.extend(read_records(&file)?);
        }
        return Ok(records);
    }
    let text = std::fs::read_to_string(path).map_err(read_error)?;
    parse_records(path, &text)
}

/// Reads records from the text of the file at `path`.
pub fn parse_records(path: &Path, text: &str) -> Result<Vec<RecordToPut>, RecordsFileError> {
    let invalid = |line: usize, message: String| RecordsFileError::Invalid {
        path: path.to_owned(),
        line,
        message,
    };
    // A whole-file JSON object with `Records` is a Lambda event; anything else is JSON lines.
    if let Ok(Value::Object(event)) = serde_json::from_str::<Value>(text)
        && let Some(records) = event.get("Records")
    {
        let records = records
            .as_array()
            .ok_or_else(|| invalid(1, "`Records` is not a list".to_owned()))?;
        return records
            .iter()
            .enumerate()
            .map(|(index, record)| {
                event_record(record)
                    .and_then(within_record_limit)
                    .map_err(|message| invalid(index + 1, message))
            })
            .collect();
    }
    let stem = path
        .file_stem()
        .map_or_else(|| "record".into(), |stem| stem.to_string_lossy());
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            json_line(line, &format!("{stem}-{}", index + 1))
                .and_then(within_record_limit)
                .map_err(|message| invalid(index + 1, message))
        })
        .collect()
}

/// Refuses a record no Kinesis stream takes for its size, before anything is published.
fn within_record_limit(record: RecordToPut) -> Result<RecordToPut, String> {
    let size = record.size();
    if size > LARGEST_RECORD_BYTES {
        return Err(format!(
            "the record (partition key `{}`) holds {size} bytes of data and partition key; \
             Kinesis takes at most {LARGEST_RECORD_BYTES} (10 MiB) per record, on a stream \
             whose MaxRecordSizeInKiB is {MAX_MAX_RECORD_SIZE_KIB}",
            record.partition_key
        ));
    }
    Ok(record)
}

/// Refuses `records` if one is over `max_record_bytes`, the limit of `stream`
/// (`DescribeStreamSummary`'s `MaxRecordSizeInKiB`), naming the first such record by its place
/// among the records given (1-based) and its partition key: Kinesis would refuse the whole
/// `PutRecords` request that carries it.
pub fn check_record_sizes(
    records: &[RecordToPut],
    stream: &str,
    max_record_bytes: usize,
) -> Result<(), String> {
    let Some((index, record)) = records
        .iter()
        .enumerate()
        .find(|(_, record)| record.size() > max_record_bytes)
    else {
        return Ok(());
    };
    Err(format!(
        "record {} of {} (partition key `{}`) holds {} bytes of data and partition key; stream \
         {stream} takes at most {max_record_bytes} (its MaxRecordSizeInKiB is {}; \
         UpdateMaxRecordSize raises it up to {MAX_MAX_RECORD_SIZE_KIB})",
        index + 1,
        records.len(),
        record.partition_key,
        record.size(),
        max_record_bytes / 1024,
    ))
}

fn event_record(record: &Value) -> Result<RecordToPut, String> {
    let kinesis = record
        .get("kinesis")
        .ok_or("the record has no `kinesis` object")?;
    let partition_key = kinesis
        .get("partitionKey")
        .and_then(Value::as_str)
        .ok_or("the record has no `kinesis.partitionKey` string")?;
    let data = kinesis
        .get("data")
        .and_then(Value::as_str)
        .ok_or("the record has no `kinesis.data` string")?;
    let data = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|error| format!("`kinesis.data` is not base64: {error}"))?;
    Ok(RecordToPut {
        partition_key: partition_key.to_owned(),
        data: Bytes::from(data),
        explicit_hash_key: None,
    })
}

fn json_line(line: &str, default_key: &str) -> Result<RecordToPut, String> {
    let value: Value = serde_json::from_str(line).map_err(|error| format!("not JSON: {error}"))?;
    let Value::Object(mut fields) = value else {
        return Err(
            "a line must be an object with `data` (and optionally `partitionKey`)".to_owned(),
        );
    };
    let data = match fields.remove("data") {
        Some(Value::String(text)) => Bytes::from(text),
        Some(value) => Bytes::from(value.to_string()),
        None => return Err("the line has no `data`".to_owned()),
    };
    let text_field = |fields: &serde_json::Map<String, Value>, name: &str| match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(format!("`{name}` must be a string, not {other}")),
    };
    let partition_key =
        text_field(&fields, "partitionKey")?.unwrap_or_else(|| default_key.to_owned());
    let explicit_hash_key = text_field(&fields, "explicitHashKey")?;
    if let Some(unknown) = fields
        .keys()
        .find(|key| !matches!(key.as_str(), "partitionKey" | "explicitHashKey"))
    {
        return Err(format!(
            "unknown field `{unknown}` (a line has `data`, `partitionKey`, `explicitHashKey`)"
        ));
    }
    Ok(RecordToPut {
        partition_key,
        data,
        explicit_hash_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<RecordToPut>, RecordsFileError> {
        parse_records(Path::new("shipments.jsonl"), text)
    }

    #[test]
    fn reads_json_lines() {
        let records = parse(
            "{\"data\":{\"id\":1},\"partitionKey\":\"a\"}\n\n{\"data\":\"not json\"}\n{\"data\":2,\"explicitHashKey\":\"5\"}\n",
        )
        .unwrap();
        assert_eq!(records[0].data, Bytes::from(r#"{"id":1}"#));
        assert_eq!(records[0].partition_key, "a");
        assert_eq!(records[1].data, Bytes::from("not json"));
        assert_eq!(records[1].partition_key, "shipments-3");
        assert_eq!(records[2].explicit_hash_key.as_deref(), Some("5"));
    }

    #[track_caller]
    fn check_error(text: &str, expected: &str) {
        let error = parse(text).unwrap_err().to_string();
        assert!(error.contains(expected), "{error}");
    }

    #[test]
    fn says_which_line_is_wrong() {
        check_error("{\"data\":1}\n{oops", "shipments.jsonl:2: not JSON");
        check_error("[1]", "shipments.jsonl:1: a line must be an object");
        check_error("{\"partitionKey\":\"a\"}", "no `data`");
        check_error(
            "{\"data\":1,\"partitionKey\":5}",
            "`partitionKey` must be a string",
        );
        check_error("{\"data\":1,\"key\":\"a\"}", "unknown field `key`");
    }

    #[test]
    fn reads_lambda_event_files() {
        let event = r#"{"Records":[{"kinesis":{"partitionKey":"k","data":"eyJpZCI6MX0=","sequenceNumber":"1"}}]}"#;
        let records = parse_records(Path::new("event.json"), event).unwrap();
        assert_eq!(
            records,
            vec![RecordToPut {
                partition_key: "k".into(),
                data: Bytes::from(r#"{"id":1}"#),
                explicit_hash_key: None
            }]
        );
        let error = parse_records(
            Path::new("event.json"),
            r#"{"Records":[{"kinesis":{"partitionKey":"k","data":"%%"}}]}"#,
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("event.json:1: `kinesis.data` is not base64"),
            "{error}"
        );
    }

    #[track_caller]
    fn check_cut(sizes: &[usize], expected: &[Range<usize>]) {
        // Three records or 10 bytes per request.
        assert_eq!(cut_batches(sizes.iter().copied(), 3, 10), expected);
    }

    #[test]
    // A one-request answer is a list of one range, not the range's numbers.
    #[expect(clippy::single_range_in_vec_init)]
    fn cuts_requests_by_count_and_by_bytes() {
        check_cut(&[], &[]);
        check_cut(&[1], &[0..1]);
        check_cut(&[1, 1, 1, 1, 1, 1, 1], &[0..3, 3..6, 6..7]);
        // Exactly the byte limit still fits; one byte more starts a new request.
        check_cut(&[4, 6, 1], &[0..2, 2..3]);
        check_cut(&[4, 7, 3], &[0..1, 1..3]);
        // A record over the byte limit goes alone, for Kinesis to refuse by name.
        check_cut(&[2, 12, 2], &[0..1, 1..2, 2..3]);
        check_cut(&[0, 0, 0, 0], &[0..3, 3..4]);
    }

    #[test]
    fn ten_mib_of_records_fit_kinesis_requests() {
        let record = |index: usize, size: usize| RecordToPut {
            partition_key: format!("key-{index}"),
            data: Bytes::from(vec![b'x'; size]),
            explicit_hash_key: None,
        };
        // 100 records of 100 KiB, then 1 200 records of 10 bytes.
        let records: Vec<RecordToPut> = (0..100)
            .map(|index| record(index, 100 * 1024))
            .chain((100..1300).map(|index| record(index, 10)))
            .collect();
        let batches = put_records_batches(&records);
        let mut next = 0;
        for batch in &batches {
            assert_eq!(
                batch.start, next,
                "the requests follow each other: {batches:?}"
            );
            next = batch.end;
            let bytes: usize = records[batch.clone()].iter().map(RecordToPut::size).sum();
            assert!(batch.len() <= MAX_PUT_RECORDS_ENTRIES, "{batch:?}");
            assert!(
                bytes <= MAX_PUT_RECORDS_BYTES,
                "{batch:?} holds {bytes} bytes"
            );
        }
        assert_eq!(next, records.len(), "every record is in a request");
        // 51 records of 100 KiB and a key fit in 5 MiB, 52 do not; then the count cuts.
        assert_eq!(batches, [0..51, 51..551, 551..1051, 1051..1300]);
    }

    #[test]
    fn a_record_over_ten_mib_is_refused_with_its_line() {
        let data = "x".repeat(LARGEST_RECORD_BYTES);
        let text =
            format!("{{\"data\":\"small\"}}\n{{\"data\":\"{data}\",\"partitionKey\":\"big\"}}\n");
        check_error(
            &text,
            "shipments.jsonl:2: the record (partition key `big`) holds 10485763 bytes of data and \
             partition key; Kinesis takes at most 10485760 (10 MiB) per record, on a stream whose \
             MaxRecordSizeInKiB is 10240",
        );
        // Exactly 10 MiB with its key is read: the target stream's own limit decides.
        let data = "x".repeat(LARGEST_RECORD_BYTES - 3);
        let text = format!("{{\"data\":\"{data}\",\"partitionKey\":\"big\"}}");
        assert_eq!(parse(&text).unwrap()[0].size(), LARGEST_RECORD_BYTES);
    }

    #[test]
    fn a_record_over_the_streams_limit_is_refused_by_its_place() {
        let record = |key: &str, bytes: usize| RecordToPut {
            partition_key: key.to_owned(),
            data: Bytes::from(vec![b'x'; bytes]),
            explicit_hash_key: None,
        };
        const MIB: usize = 1024 * 1024;
        let records = [record("a", 10), record("b", MIB), record("c", 2 * MIB)];
        assert_eq!(
            check_record_sizes(&records, "orders", MIB),
            Err(
                "record 2 of 3 (partition key `b`) holds 1048577 bytes of data and partition key; \
                 stream orders takes at most 1048576 (its MaxRecordSizeInKiB is 1024; \
                 UpdateMaxRecordSize raises it up to 10240)"
                    .to_owned()
            )
        );
        // A stream that takes 2 MiB and a key takes them all.
        assert_eq!(check_record_sizes(&records, "orders", 2 * MIB + 1), Ok(()));
        assert_eq!(check_record_sizes(&[], "orders", MIB), Ok(()));
    }
}
