//! Every event file under `events/` is shaped like an event Lambda sends, and settles with `ship`
//! as its row in [`EXPECTED`] says. A new file needs a row.
//!
//! Run with `cargo test -p shipping --test events`.

use std::path::{Path, PathBuf};

use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::settlement::{DropReason, HoldReason, RecordOutcome};
use lambda_kinesis::wire::{EventRecord, EventSource, KinesisBatch, KinesisEvent, write_event};

/// How each file settles: every record's outcome, and the records the response names and
/// reports dropped (by index).
struct Expected {
    file: &'static str,
    outcomes: &'static str,
    named: Option<usize>,
    dropped: &'static [usize],
}

const EXPECTED: &[Expected] = &[
    Expected {
        file: "all-booked.json",
        outcomes: "ack ack ack",
        named: None,
        dropped: &[],
    },
    Expected {
        file: "dropped-and-held.json",
        outcomes: "ack drop ack hold skip skip",
        named: Some(3),
        dropped: &[1],
    },
    Expected {
        file: "not-json.json",
        outcomes: "ack undecodable ack",
        named: None,
        dropped: &[1],
    },
];

fn event_files() -> Vec<PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("events");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
        .map(|entry| entry.expect("a readable folder entry").path())
        .collect();
    files.sort();
    files
}

fn name(path: &Path) -> &str {
    path.file_name().and_then(|name| name.to_str()).unwrap()
}

fn word(outcome: &RecordOutcome) -> &'static str {
    match outcome {
        RecordOutcome::Acked => "ack",
        RecordOutcome::Dropped(DropReason::Handler) => "drop",
        RecordOutcome::Dropped(_) => "undecodable",
        RecordOutcome::Held(HoldReason::Handler) => "hold",
        RecordOutcome::Held(_) => "held",
        RecordOutcome::Skipped(_) => "skip",
        _ => "other",
    }
}

#[tokio::test]
async fn every_event_file_settles_as_expected() {
    let files = event_files();
    let names: Vec<&str> = files.iter().map(|path| name(path)).collect();
    let rows: Vec<&str> = EXPECTED.iter().map(|row| row.file).collect();
    assert_eq!(
        names, rows,
        "every file in events/ has a row in EXPECTED, and no other"
    );

    for (path, expected) in files.iter().zip(EXPECTED) {
        let json = std::fs::read(path).unwrap();
        let batch = KinesisBatch::from_json(&json)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let sequence_numbers: Vec<String> = batch
            .records()
            .map(|record| record.sequence_number().to_owned())
            .collect();

        let settlement = shipping::function()
            .settle(batch, &Context::default())
            .await;

        let file = expected.file;
        let words: Vec<&str> = settlement.outcomes().iter().map(word).collect();
        assert_eq!(words.join(" "), expected.outcomes, "{file}: outcomes");
        let named = expected.named.map(|index| sequence_numbers[index].as_str());
        assert_eq!(
            settlement.cut().map(|cut| cut.sequence_number),
            named,
            "{file}: named"
        );
        let dropped: Vec<&str> = expected
            .dropped
            .iter()
            .map(|&index| sequence_numbers[index].as_str())
            .collect();
        assert_eq!(settlement.response().dropped(), dropped, "{file}: dropped");
    }
}

/// The text of every `approximateArrivalTimestamp` value in `json`, as written.
fn written_timestamps(json: &str) -> Vec<&str> {
    json.split("\"approximateArrivalTimestamp\":")
        .skip(1)
        .map(|rest| {
            let rest = rest.trim_start();
            let end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

#[test]
fn every_event_file_is_shaped_like_lambdas() {
    for path in event_files() {
        let file = name(&path);
        let json = std::fs::read_to_string(&path).unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        let records = value["Records"].as_array().unwrap();
        assert!(!records.is_empty(), "{file}: records");

        // Epoch seconds as a JSON number with three decimals, as Lambda writes them.
        let timestamps = written_timestamps(&json);
        assert_eq!(timestamps.len(), records.len(), "{file}: timestamps");
        for timestamp in &timestamps {
            let (seconds, millis) = timestamp.split_once('.').expect("a fraction");
            assert!(
                seconds.len() == 10 && millis.len() == 3,
                "{file}: {timestamp}"
            );
        }

        // Sequence numbers of 56 digits, increasing; eventID is `<shard>:<sequence number>`.
        let mut previous = String::new();
        for record in records {
            let sequence_number = record["kinesis"]["sequenceNumber"].as_str().unwrap();
            assert_eq!(sequence_number.len(), 56, "{file}: {sequence_number}");
            assert!(sequence_number.bytes().all(|b| b.is_ascii_digit()));
            assert!(
                *sequence_number > *previous,
                "{file}: {sequence_number} increases"
            );
            previous = sequence_number.to_owned();
            assert_eq!(
                record["eventID"],
                format!("shardId-000000000000:{sequence_number}"),
                "{file}"
            );
            assert!(record["kinesis"].get("encryptionType").is_none(), "{file}");
        }

        // Field for field what Lambda writes: the same records written by the adapter's
        // Lambda-faithful writer give the same JSON.
        let typed: KinesisEvent = serde_json::from_str(&json).unwrap();
        let first = &records[0];
        let source = EventSource {
            stream_arn: first["eventSourceARN"].as_str().unwrap(),
            shard_id: "shardId-000000000000",
            region: first["awsRegion"].as_str().unwrap(),
            invoke_identity_arn: first["invokeIdentityArn"].as_str().unwrap(),
        };
        let millis: Vec<i64> = timestamps
            .iter()
            .map(|timestamp| timestamp.replace('.', "").parse().unwrap())
            .collect();
        let mut rewritten = Vec::new();
        write_event(
            &mut rewritten,
            &source,
            typed
                .records
                .iter()
                .zip(&millis)
                .map(|(record, &millis)| EventRecord {
                    sequence_number: &record.kinesis.sequence_number,
                    partition_key: &record.kinesis.partition_key,
                    data: &record.kinesis.data.0,
                    approximate_arrival_millis: millis,
                }),
        );
        let rewritten: serde_json::Value = serde_json::from_slice(&rewritten).unwrap();
        assert_eq!(
            rewritten, value,
            "{file}: the fields Lambda writes, no more"
        );
    }
}
