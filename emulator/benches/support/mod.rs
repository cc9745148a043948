//! What several benches share: their runtime, their settings from the environment, the load
//! they report, medians, the shipping function they build and the puts that fill a stream.
//! Each bench is a crate of its own that brings this in with `mod support;` and uses a part.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use aws_sdk_kinesis::types::{PutRecordsRequestEntry, ShardIteratorType};
use kinesis_esm::aws::{AwsConnection, SdkKinesis};
use kinesis_esm::function::build_function;

/// The multi-threaded runtime with every driver, as the emulator runs.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A knob from the environment, or its default when unset; a value that does not read is a
/// mistake to stop at, not to run the default with.
pub(crate) fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text} is not a number")),
        Err(_) => default,
    }
}

/// The load average, as `/proc/loadavg` gives it (1, 5 and 15 minutes).
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// The middle value (the upper one of an even count).
pub(crate) fn median<T: PartialOrd>(values: impl IntoIterator<Item = T>) -> T {
    let mut sorted: Vec<T> = values.into_iter().collect();
    sorted.sort_by(|a, b| a.partial_cmp(b).expect("comparable values"));
    sorted.swap_remove(sorted.len() / 2)
}

/// The shipping function's `bootstrap`, built in release mode.
pub(crate) fn shipping_binary() -> PathBuf {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../functions/shipping");
    build_function(&crate_dir, "bootstrap", true).unwrap_or_else(|error| panic!("{error}"))
}

/// A DynamoDB client for the local endpoint at `endpoint`.
pub(crate) async fn dynamodb_client(endpoint: String, region: &str) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(
        &AwsConnection::local(endpoint)
            .with_region(region)
            .sdk_config()
            .await
            .expect("a DynamoDB configuration"),
    )
}

/// An iterator at the start of the shard `shard_id` of `stream`.
pub(crate) async fn trim_horizon_iterator(
    client: &aws_sdk_kinesis::Client,
    stream: &str,
    shard_id: &str,
) -> String {
    client
        .get_shard_iterator()
        .stream_name(stream)
        .shard_id(shard_id)
        .shard_iterator_type(ShardIteratorType::TrimHorizon)
        .send()
        .await
        .expect("GetShardIterator")
        .shard_iterator()
        .expect("an iterator")
        .to_owned()
}

/// One `PutRecords` call of `entries`, every one of which must be taken.
pub(crate) async fn put_entries(
    client: &aws_sdk_kinesis::Client,
    stream: &str,
    entries: Vec<PutRecordsRequestEntry>,
) {
    let output = client
        .put_records()
        .stream_name(stream)
        .set_records(Some(entries))
        .send()
        .await
        .expect("PutRecords");
    assert_eq!(output.failed_record_count(), Some(0), "every record is put");
}

/// Puts every `(partition key, data)` record, 500 a call, again what was refused until all is
/// taken, and counts how many went to each shard.
pub(crate) async fn put_all(
    producer: &SdkKinesis,
    stream: &str,
    records: &[(String, Vec<u8>)],
) -> BTreeMap<String, usize> {
    let mut per_shard = BTreeMap::new();
    for chunk in records.chunks(500) {
        let mut pending: Vec<(&str, &[u8])> = chunk
            .iter()
            .map(|(key, data)| (key.as_str(), data.as_slice()))
            .collect();
        while !pending.is_empty() {
            let outcomes = producer
                .put_records(stream, &pending)
                .await
                .unwrap_or_else(|error| panic!("PutRecords into {stream}: {error}"));
            let mut refused = Vec::new();
            for (entry, outcome) in pending.iter().zip(outcomes) {
                match outcome {
                    Ok((shard_id, _)) => *per_shard.entry(shard_id).or_insert(0) += 1,
                    Err(_) => refused.push(*entry),
                }
            }
            pending = refused;
        }
    }
    per_shard
}

/// The machine's busy CPU ticks (10 ms), all cores together, from `/proc/stat`.
pub(crate) fn machine_busy_ticks() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .map(|field| field.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal: all but idle and iowait.
    Some(
        ticks.iter().take(8).sum::<u64>()
            - ticks.get(3).copied().unwrap_or(0)
            - ticks.get(4).copied().unwrap_or(0),
    )
}
