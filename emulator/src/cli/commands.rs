//! The everyday commands: `put`, `reshard` and `events`.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use clap::{Args, Subcommand};
use lambda_kinesis::aggregate::{Aggregate, MAX_AGGREGATE_BYTES};
use lambda_kinesis::testing::TestEvent;

use super::control_client::{ask, control_uri};
use crate::records_file::{
    RecordToPut, check_record_sizes, parse_records, put_records_batches, read_records,
};
use esm_engine::aws::{AwsConnection, SdkKinesis};
use esm_engine::backoff::{Backoff, BackoffConfig, RetryKind};
use kinesis_source::ShardSource;
use kinesis_source::sequence::SequenceNumber;

/// Which Kinesis a command talks to.
#[derive(Debug, Args)]
pub(super) struct KinesisTarget {
    /// The Kinesis endpoint: by default the one `kinesis-esm run` serves.
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:4566",
        global = true
    )]
    endpoint: String,
    /// Talks to real AWS Kinesis instead, through the standard credential and region chains.
    #[arg(long, global = true)]
    aws: bool,
    /// The region: `--region`, given before or after the command (see `SharedOptions`).
    #[arg(skip)]
    pub(super) region: String,
}

impl KinesisTarget {
    /// The endpoint a function run against this Kinesis is pointed at (`AWS_ENDPOINT_URL_KINESIS`);
    /// none with `--aws`, where the SDK finds AWS itself.
    pub(super) fn endpoint_for_functions(&self) -> Option<&str> {
        (!self.aws).then_some(self.endpoint.as_str())
    }

    pub(super) async fn connect(&self) -> anyhow::Result<SdkKinesis> {
        let connection = if self.aws {
            AwsConnection::from_environment()
        } else {
            super::connection::connection_to(&self.endpoint).with_region(&self.region)
        };
        Ok(SdkKinesis::connect(&connection).await?)
    }
}

/// `kinesis-esm put`: publishes records, as a producer would.
#[derive(Debug, Args)]
pub(super) struct PutArgs {
    /// The stream to publish to.
    #[arg(long)]
    stream: String,
    /// Records' data, one record per argument (published as the text given).
    data: Vec<String>,
    /// Records from a file: JSON lines (`{"data": ..., "partitionKey": "..."}`) or a Lambda event
    /// file; `-` reads JSON lines from standard input.
    #[arg(long, value_name = "PATH")]
    file: Vec<PathBuf>,
    /// The partition key of the records given as arguments (default: a new one per record).
    #[arg(long)]
    partition_key: Option<String>,
    /// Publishes the records as KPL aggregates, as the Kinesis Producer Library does: as many
    /// records in each Kinesis record as fit in 1 MiB, in order, each aggregate under its first
    /// record's keys. Each line printed then ends with the record's sub-sequence number.
    #[arg(long)]
    aggregate: bool,
    #[command(flatten)]
    pub(super) target: KinesisTarget,
}

pub(super) async fn put(args: PutArgs) -> anyhow::Result<()> {
    let partition_key = || {
        args.partition_key
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
    };
    let records = gather_records(&args.data, partition_key, &args.file)?;
    let kinesis = args.target.connect().await?;
    if !args.aggregate {
        let placed = put_every_record(&kinesis, &args.stream, &records).await?;
        let mut out = std::io::stdout().lock();
        for (record, (shard_id, sequence_number)) in records.iter().zip(placed) {
            writeln!(
                out,
                "{shard_id}\t{sequence_number}\t{}",
                record.partition_key
            )?;
        }
        return Ok(());
    }
    let aggregates = aggregate(&records);
    let outer: Vec<RecordToPut> = aggregates.iter().map(|(outer, _)| outer.clone()).collect();
    let placed = put_every_record(&kinesis, &args.stream, &outer).await?;
    let mut out = std::io::stdout().lock();
    let mut user_records = records.iter();
    for ((_, count), (shard_id, sequence_number)) in aggregates.iter().zip(placed) {
        for (sub_sequence_number, record) in user_records.by_ref().take(*count).enumerate() {
            writeln!(
                out,
                "{shard_id}\t{sequence_number}\t{}\t{sub_sequence_number}",
                record.partition_key
            )?;
        }
    }
    Ok(())
}

/// Packs `records`, in order, into KPL aggregates of at most 1 MiB (a record too large to share
/// one goes alone); returns each aggregate as the Kinesis record to put, with how many of the
/// records it holds. An aggregate takes its first record's partition key and explicit hash key,
/// as the KPL does (see `docs/kpl-aggregation.md`).
fn aggregate(records: &[RecordToPut]) -> Vec<(RecordToPut, usize)> {
    let mut aggregates = Vec::new();
    let mut current = Aggregate::new();
    let mut finish = |current: &mut Aggregate| {
        let full = std::mem::take(current);
        aggregates.push((
            RecordToPut {
                partition_key: full.partition_key().unwrap_or_default().to_owned(),
                explicit_hash_key: full.explicit_hash_key().map(str::to_owned),
                data: Bytes::from(full.to_bytes()),
            },
            full.len(),
        ));
    };
    for record in records {
        let key = &record.partition_key;
        let hash_key = record.explicit_hash_key.as_deref();
        if !current.is_empty()
            && current.size_with(key, hash_key, &record.data) > MAX_AGGREGATE_BYTES
        {
            finish(&mut current);
        }
        current.add(key, hash_key, &record.data);
    }
    if !current.is_empty() {
        finish(&mut current);
    }
    aggregates
}

/// The records given as arguments (each under `partition_key()`), then those of `files` (`-`
/// for JSON lines on standard input).
fn gather_records(
    data: &[String],
    partition_key: impl Fn() -> String,
    files: &[PathBuf],
) -> anyhow::Result<Vec<RecordToPut>> {
    let mut records: Vec<RecordToPut> = data
        .iter()
        .map(|data| RecordToPut {
            partition_key: partition_key(),
            data: Bytes::from(data.clone()),
            explicit_hash_key: None,
        })
        .collect();
    for file in files {
        if file == Path::new("-") {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading standard input")?;
            records.extend(parse_records(Path::new("stdin"), &text)?);
        } else {
            records.extend(read_records(file)?);
        }
    }
    if records.is_empty() {
        bail!("no records: give data as arguments, or --file PATH (`-` for standard input)");
    }
    Ok(records)
}

/// Puts `records` to `stream` through the SDK, in requests cut by [`put_records_batches`], and
/// returns where each landed, in order. A record over the stream's `MaxRecordSizeInKiB` is
/// refused first, by its place. Kinesis may refuse single records of a `PutRecords`
/// (throttling): those are put again, after a pause, until every record is in, so nothing given
/// is lost.
pub(super) async fn put_every_record(
    kinesis: &SdkKinesis,
    stream: &str,
    records: &[RecordToPut],
) -> anyhow::Result<Vec<(String, SequenceNumber)>> {
    if records
        .iter()
        .any(|record| record.explicit_hash_key.is_some())
    {
        bail!("explicitHashKey is only supported by the embedded Kinesis; use partition keys");
    }
    // Asked once, so that a record over the stream's limit is named before anything is put,
    // rather than refused with a whole request (`docs/put-records-limits.md`).
    let max_record_bytes = kinesis.max_record_bytes(stream).await?;
    check_record_sizes(records, stream, max_record_bytes).map_err(anyhow::Error::msg)?;
    let mut placed: Vec<Option<(String, SequenceNumber)>> = vec![None; records.len()];
    let mut backoff = Backoff::new(BackoffConfig::default());
    for batch in put_records_batches(records) {
        let mut pending: Vec<usize> = batch.collect();
        while !pending.is_empty() {
            let entries: Vec<(&str, &[u8])> = pending
                .iter()
                .map(|&index| {
                    (
                        records[index].partition_key.as_str(),
                        records[index].data.as_ref(),
                    )
                })
                .collect();
            // The error names the call and the stream already.
            let outcomes = kinesis.put_records(stream, &entries).await?;
            let mut refused = Vec::new();
            for (index, outcome) in pending.into_iter().zip(outcomes) {
                match outcome {
                    Ok(place) => placed[index] = Some(place),
                    Err(error) => {
                        tracing::debug!(%error, "record refused; putting it again");
                        refused.push(index);
                    }
                }
            }
            if !refused.is_empty() {
                tokio::time::sleep(backoff.next_pause(RetryKind::Throttled)).await;
            }
            pending = refused;
        }
    }
    Ok(placed.into_iter().flatten().collect())
}

/// `kinesis-esm reshard`: splits, merges or scales a stream.
#[derive(Debug, Args)]
pub(super) struct ReshardArgs {
    /// The stream to reshard.
    #[arg(long)]
    stream: String,
    #[command(subcommand)]
    action: ReshardAction,
    #[command(flatten)]
    pub(super) target: KinesisTarget,
}

#[derive(Debug, Subcommand)]
enum ReshardAction {
    /// Splits an open shard in two.
    Split {
        /// The shard to split.
        shard: String,
        /// The first hash key of the second child (default: the middle of the shard's range).
        #[arg(long)]
        hash_key: Option<u128>,
    },
    /// Merges two adjacent open shards into one.
    Merge {
        /// The shard to merge.
        shard: String,
        /// The shard next to it.
        adjacent_shard: String,
    },
    /// Scales the stream to a number of open shards (uniform scaling).
    Scale {
        /// The number of open shards wanted.
        shards: i32,
    },
}

pub(super) async fn reshard(args: ReshardArgs) -> anyhow::Result<()> {
    let kinesis = args.target.connect().await?;
    let stream = args.stream.as_str();
    match &args.action {
        ReshardAction::Split { shard, hash_key } => {
            split_shard(&kinesis, stream, shard, *hash_key).await?;
        }
        ReshardAction::Merge {
            shard,
            adjacent_shard,
        } => merge_shards(&kinesis, stream, shard, adjacent_shard).await?,
        ReshardAction::Scale { shards } => kinesis.update_shard_count(stream, *shards).await?,
    }
    let shards = kinesis.list_shards(stream).await?;
    let mut out = std::io::stdout().lock();
    for shard in shards {
        let parents: Vec<&str> = shard.parents().collect();
        writeln!(
            out,
            "{}\t{}\t{}",
            shard.shard_id,
            if shard.is_closed() { "closed" } else { "open" },
            if parents.is_empty() {
                "-".to_owned()
            } else {
                format!("from {}", parents.join(" + "))
            }
        )?;
    }
    Ok(())
}

/// Splits `shard` of `stream` at `hash_key`, by default at the middle of its hash key range:
/// `reshard split`, and the live page's Split.
pub(super) async fn split_shard(
    kinesis: &SdkKinesis,
    stream: &str,
    shard: &str,
    hash_key: Option<u128>,
) -> anyhow::Result<()> {
    let hash_key = match hash_key {
        Some(hash_key) => hash_key,
        None => {
            let shards = kinesis.list_shards(stream).await?;
            let Some(found) = shards.iter().find(|candidate| candidate.shard_id == shard) else {
                bail!("{}", missing_shard(stream, shard, &shards));
            };
            let range = found.hash_key_range;
            range.starting_hash_key + (range.ending_hash_key - range.starting_hash_key) / 2 + 1
        }
    };
    Ok(kinesis.split_shard(stream, shard, hash_key).await?)
}

/// Merges `shard` and `adjacent_shard` of `stream`: `reshard merge`, and the live page's Merge.
pub(super) async fn merge_shards(
    kinesis: &SdkKinesis,
    stream: &str,
    shard: &str,
    adjacent_shard: &str,
) -> anyhow::Result<()> {
    // Kinesis answers a missing shard with the same error as a missing stream: look first,
    // so the message names what is missing.
    let shards = kinesis.list_shards(stream).await?;
    for wanted in [shard, adjacent_shard] {
        if !shards.iter().any(|candidate| candidate.shard_id == wanted) {
            bail!("{}", missing_shard(stream, wanted, &shards));
        }
    }
    Ok(kinesis.merge_shards(stream, shard, adjacent_shard).await?)
}

/// Says that `stream` has no shard `wanted`, listing the shards it has.
fn missing_shard(stream: &str, wanted: &str, shards: &[kinesis_source::Shard]) -> String {
    let open: Vec<&str> = shards
        .iter()
        .filter(|shard| !shard.is_closed())
        .map(|shard| shard.shard_id.as_str())
        .collect();
    format!(
        "stream {stream} has no shard {wanted}; its open shards: {}",
        if open.is_empty() {
            "none".to_owned()
        } else {
            open.join(", ")
        }
    )
}

/// `kinesis-esm events`: writes Lambda-shaped Kinesis event files, for
/// `cargo lambda invoke --data-file` or unit tests.
#[derive(Debug, Args)]
pub(super) struct EventsArgs {
    /// Records' data, one record per argument.
    data: Vec<String>,
    /// Records from a file: JSON lines (`{"data": ..., "partitionKey": "..."}`) or a Lambda event
    /// file; `-` reads JSON lines from standard input.
    #[arg(long, value_name = "PATH")]
    file: Vec<PathBuf>,
    /// The partition key of the records given as arguments.
    #[arg(long, default_value = lambda_kinesis::testing::DEFAULT_PARTITION_KEY)]
    partition_key: String,
    /// The stream named in the events' ARN.
    #[arg(long, default_value = "shipments")]
    stream: String,
    /// The shard named in the events' `eventID`s.
    #[arg(long, default_value = "shardId-000000000000")]
    shard: String,
    /// The most records in one event; more records make more events.
    #[arg(long, default_value_t = 100)]
    batch_size: usize,
    /// Writes `event-1.json`, `event-2.json`, ... into this folder instead of printing the events.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub(super) fn events(args: EventsArgs) -> anyhow::Result<()> {
    let records = gather_records(&args.data, || args.partition_key.clone(), &args.file)?;
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    }
    let mut event = TestEvent::new()
        .shard(&args.shard)
        .stream(&args.stream)
        .arrival(SystemTime::now());
    for record in &records {
        event = event.bytes_keyed(record.partition_key.as_str(), record.data.to_vec());
    }
    let mut stdout = std::io::stdout().lock();
    for (index, json) in event
        .to_json_batches(args.batch_size)
        .into_iter()
        .enumerate()
    {
        match &args.out {
            Some(out) => {
                let path = out.join(format!("event-{}.json", index + 1));
                std::fs::write(&path, json)
                    .with_context(|| format!("writing {}", path.display()))?;
                writeln!(stdout, "{}", path.display())?;
            }
            None => {
                stdout.write_all(&json)?;
                writeln!(stdout)?;
            }
        }
    }
    Ok(())
}

/// `kinesis-esm status`: what a running `kinesis-esm run` is doing, per mapping and shard.
#[derive(Debug, Args)]
pub(super) struct StatusArgs {
    /// The endpoint `kinesis-esm run` serves.
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:4566")]
    endpoint: String,
    /// Prints the status as JSON instead of a tree.
    #[arg(long)]
    json: bool,
}

/// The path under which `kinesis-esm run` serves its mappings' status, beside the Kinesis API.
pub const STATUS_PATH: &str = "/kinesis-esm/status";

pub(super) async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let uri = control_uri(&args.endpoint, STATUS_PATH);
    let (status, body) = ask(&args.endpoint, hyper::Method::GET, &uri, None).await?;
    if !status.is_success() {
        bail!(
            "{uri} answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    let statuses: Vec<esm_engine::mapping::MappingStatus> = serde_json::from_slice(&body)
        .with_context(|| format!("{uri} did not answer a kinesis-esm status"))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &statuses)?;
        writeln!(out)?;
    } else {
        write!(
            out,
            "{}",
            crate::summary::render_tree(&statuses, std::time::SystemTime::now())
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(partition_key: &str, data: Vec<u8>) -> RecordToPut {
        RecordToPut {
            partition_key: partition_key.to_owned(),
            data: Bytes::from(data),
            explicit_hash_key: None,
        }
    }

    #[test]
    fn records_are_packed_in_order_into_aggregates_of_at_most_one_mebibyte() {
        let records: Vec<RecordToPut> = (0..5)
            .map(|n| record(&format!("key-{n}"), vec![n as u8; 400 * 1024]))
            .collect();
        let aggregates = aggregate(&records);
        let counts: Vec<usize> = aggregates.iter().map(|(_, count)| *count).collect();
        assert_eq!(counts, [2, 2, 1]);
        let mut next = records.iter();
        for (outer, count) in &aggregates {
            assert!(outer.data.len() <= MAX_AGGREGATE_BYTES);
            let users = lambda_kinesis::aggregate::decode(&outer.data).unwrap();
            assert_eq!(users.len(), *count);
            assert_eq!(outer.partition_key, users[0].partition_key);
            for user in users {
                let expected = next.next().unwrap();
                assert_eq!(user.partition_key, expected.partition_key);
                assert_eq!(user.data, &expected.data[..]);
            }
        }
        assert!(next.next().is_none());
    }

    #[test]
    fn a_record_too_large_to_share_goes_alone() {
        let records = [
            record("small", vec![1]),
            record("big", vec![2; 2 * 1024 * 1024]),
        ];
        let counts: Vec<usize> = aggregate(&records)
            .iter()
            .map(|(_, count)| *count)
            .collect();
        assert_eq!(counts, [1, 1]);
    }
}
