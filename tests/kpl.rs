//! KPL-aggregated records end to end: aggregates written by a producer library nobody here wrote
//! (the Python `aws-kinesis-agg`, run through `scripts/kpl-aggregate`) come out of the adapter as
//! exactly the user records that library put in; and through the emulator, a held user record
//! puts the checkpoint in front of its aggregate, which is delivered again whole.

use std::io::Write as _;

use base64::Engine as _;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use end_to_end::{Observed, TestStream, at, config, workspace_dir};
use kinesis_esm::config::StartingPosition;
use kinesis_esm::invoke::InProcess;
use lambda_kinesis::aggregate::Aggregate;
use lambda_kinesis::testing::{TestEvent, settle};
use lambda_kinesis::{HandlerOutcome, RawData, RecordMeta};
use serde_json::{Value, json};

/// A user record as a producer gives it: partition key, explicit hash key, data.
type UserRecord = (String, Option<String>, Vec<u8>);

/// Aggregates each group with `scripts/kpl-aggregate`; returns each aggregate's outer partition
/// key and bytes. Fails the test, naming the command, when the Python package is not there.
fn aggregate_with_python(groups: &[Vec<UserRecord>]) -> Vec<(String, Vec<u8>)> {
    let base64 = |data: &[u8]| encode_base64(data);
    let input: Vec<Vec<Value>> = groups
        .iter()
        .map(|group| {
            group
                .iter()
                .map(|(key, hash_key, data)| {
                    json!({"partitionKey": key, "explicitHashKey": hash_key, "data": base64(data)})
                })
                .collect()
        })
        .collect();
    let script = workspace_dir().join("scripts/kpl-aggregate");
    let mut child = Command::new(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("could not run {}: {error}", script.display()));
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(&serde_json::to_vec(&input).unwrap())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "scripts/kpl-aggregate failed ({}); it installs the Python package aws-kinesis-agg 1.2.3 \
         into .local/venv, so run `scripts/kpl-aggregate < /dev/null` to see why:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<(String, Vec<u8>)> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let aggregate: Value = serde_json::from_str(line).unwrap();
            (
                aggregate["partitionKey"].as_str().unwrap().to_owned(),
                decode_base64(aggregate["data"].as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(lines.len(), groups.len(), "one aggregate per group");
    lines
}

fn encode_base64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn decode_base64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("the script writes standard base64")
}

/// The groups of user records the test aggregates: explicit hash keys, empty data, keys that
/// need escaping in JSON, repeated keys, and one group of many records.
fn groups() -> Vec<Vec<UserRecord>> {
    let record = |key: &str, hash_key: Option<&str>, data: &[u8]| {
        (key.to_owned(), hash_key.map(str::to_owned), data.to_vec())
    };
    let many: Vec<UserRecord> = (0..2_000_u32)
        .map(|n| {
            let hash_key = (n % 3 == 0).then(|| (u128::from(n) * 7_919).to_string());
            let data = if n % 10 == 0 {
                Vec::new()
            } else {
                format!("{{\"n\":{n}}}").into_bytes()
            };
            (format!("key-{}", n % 17), hash_key, data)
        })
        .collect();
    vec![
        vec![record("only", None, b"one record")],
        vec![
            record("a", None, b"first"),
            record("b", Some("340282366920938463463374607431768211455"), b""),
            record("a", Some("0"), &[0, 0xff, 0xf3, 0x89, 0x9a, 0xc2]),
            record("clé \"🔑\"\n", None, b"{}"),
        ],
        vec![record("hashed", Some("12345"), b"")],
        many,
    ]
}

/// What the handler saw of each user record.
fn seen_by_the_adapter(event: TestEvent) -> Vec<(UserRecord, String, u64)> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = {
        let seen = seen.clone();
        move |raw: &RawData, meta: &RecordMeta<'_>| {
            seen.lock().unwrap().push((
                (
                    meta.partition_key().to_owned(),
                    meta.explicit_hash_key().map(str::to_owned),
                    raw.to_vec(),
                ),
                meta.sequence_number().to_owned(),
                meta.sub_sequence_number(),
            ));
            std::future::ready(HandlerOutcome::ack())
        }
    };
    let settlement = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(settle(handler, event));
    assert_eq!(settlement.cut(), None, "{}", settlement.summary());
    Arc::try_unwrap(seen).unwrap().into_inner().unwrap()
}

#[test]
fn aggregates_another_library_wrote_come_out_as_its_user_records() {
    let groups = groups();
    let aggregates = aggregate_with_python(&groups);
    let mut event = TestEvent::new();
    for (partition_key, data) in &aggregates {
        event = event.bytes_keyed(partition_key, data.clone());
    }
    let seen = seen_by_the_adapter(event.clone());
    let mut expected = Vec::new();
    for (index, group) in groups.iter().enumerate() {
        // The outer record takes the first user record's key, as the KPL does.
        assert_eq!(aggregates[index].0, group[0].0);
        for (sub_sequence_number, record) in group.iter().enumerate() {
            expected.push((
                record.clone(),
                event.sequence_number(index).to_owned(),
                sub_sequence_number as u64,
            ));
        }
    }
    assert_eq!(seen.len(), expected.len());
    assert_eq!(seen, expected);

    // The adapter's own encoder writes the same bytes as that library, group for group.
    for (group, (_, python)) in groups.iter().zip(&aggregates) {
        let mut ours = Aggregate::new();
        for (key, hash_key, data) in group {
            ours.add(key, hash_key.as_deref(), data);
        }
        assert_eq!(&ours.to_bytes(), python);
    }
}

#[tokio::test]
async fn a_held_user_record_puts_the_checkpoint_in_front_of_its_aggregate() {
    let stream = TestStream::create("kpl-aggregates", 1);
    let before = stream.put("p", &b"100"[..]);
    let mut aggregate = Aggregate::new();
    for n in [0, 1, 2] {
        aggregate.add(&format!("user-{n}"), None, n.to_string().as_bytes());
    }
    let aggregated = stream.put("user-0", aggregate.to_bytes());
    let after = stream.put("p", &b"101"[..]);

    // The handler holds user record 1 the first time it sees it.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = {
        let seen = seen.clone();
        move |n: &u32, meta: &RecordMeta<'_>| {
            let mut seen = seen.lock().unwrap();
            let first_time = !seen.contains(n);
            seen.push(*n);
            let hold = *n == 1 && first_time;
            assert_eq!(meta.is_aggregated(), *n < 100);
            std::future::ready(if hold {
                HandlerOutcome::hold()
            } else {
                HandlerOutcome::ack()
            })
        }
    };
    let mut observed = Observed::start(
        config("kpl", "kpl-aggregates", StartingPosition::TrimHorizon),
        &stream,
        Arc::new(InProcess::handler(handler)),
    );
    observed
        .wait_for_checkpoint(&after.shard_id, &at(&after.sequence_number))
        .await;
    // The first invocation checkpointed in front of the aggregate: it came again whole.
    let invocations = observed.invocations_on(&after.shard_id);
    assert_eq!(
        invocations,
        [
            vec![
                before.sequence_number.clone(),
                aggregated.sequence_number.clone(),
                after.sequence_number.clone()
            ],
            vec![aggregated.sequence_number, after.sequence_number.clone()],
        ]
    );
    assert_eq!(*seen.lock().unwrap(), [100, 0, 1, 0, 1, 2, 101]);
    observed.stop().await;
}
