//! `kinesis-esm failures`: lists the on-failure records of discarded batches (from the folder
//! `run` writes them to, or an SQS queue), and `failures replay RECORD...` reads the records
//! each names again from the stream (its shard, first and last sequence number) and invokes the
//! template's function with them (`failures/invoke.rs`), printing its answer, or publishes them
//! to `--to-stream` (their own stream, where a running `kinesis-esm run` delivers them again, or
//! another). This is the step Lambda leaves to users of its metadata-only SQS and SNS records.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use serde_json::Value;

use super::commands::{KinesisTarget, put_every_record};
use super::destinations::folder_root;
use super::function_binary::BinaryOptions;
use super::function_binary::FunctionLogs;
use crate::records_file::RecordToPut;
use crate::summary::counted;
use crate::template::{LOCAL_DYNAMODB_VARIABLE, Template, TemplateOptions};
use esm_engine::destination::shape::BatchPosition;
use kinesis_source::{IteratorPosition, Record, ShardSource};

mod invoke;

/// `kinesis-esm failures`.
#[derive(Debug, Args)]
pub(super) struct FailuresArgs {
    #[command(subcommand)]
    action: Option<FailuresAction>,
    /// The folder `run` wrote the records to (by default `.kinesis-esm/destinations`, or
    /// `DIR/destinations` with `--state-dir DIR`).
    #[arg(long, value_name = "DIR", global = true)]
    folder: Option<PathBuf>,
    /// Lists the records in this SQS queue (its URL) instead, leaving them in the queue.
    #[arg(long, value_name = "URL")]
    queue_url: Option<String>,
    /// The SQS endpoint of `--queue-url` (moto, LocalStack); by default the SDK's.
    #[arg(long, value_name = "URL", requires = "queue_url")]
    destination_endpoint: Option<String>,
    /// `--state-dir`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) state_dir: Option<PathBuf>,
    /// `--template` (`template.yaml` by default), whose function `replay` invokes.
    #[arg(skip)]
    pub(super) template: PathBuf,
    /// `--account-id`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) account_id: String,
    #[command(flatten)]
    pub(super) target: KinesisTarget,
}

#[derive(Debug, Subcommand)]
enum FailuresAction {
    /// Reads the records each on-failure record names from the stream and invokes the
    /// template's function with them (printing its answer; no checkpoint moves), or publishes
    /// them to `--to-stream`.
    Replay(ReplayArgs),
}

#[derive(Debug, Args)]
struct ReplayArgs {
    /// On-failure record files (as `failures` lists them, or saved from a queue, topic or bucket).
    #[arg(value_name = "RECORD", required = true)]
    records: Vec<PathBuf>,
    /// Publishes the records to this stream (their own, where a running `run` delivers them
    /// again, or another) instead of invoking the function.
    #[arg(long, value_name = "STREAM")]
    to_stream: Option<String>,
    /// The function to invoke (logical id or name); by default the template's one function
    /// that reads the batch's stream.
    #[arg(long = "function", value_name = "NAME", conflicts_with = "to_stream")]
    function: Option<String>,
    /// Values for the template's `Parameters` (`Key=Value ...`), as `run` takes them.
    #[arg(long, value_name = "KEY=VALUE", num_args = 1.., conflicts_with = "to_stream")]
    parameter_overrides: Vec<String>,
    /// Takes the function's binary from this folder instead of building it with cargo.
    #[arg(long, value_name = "DIR", conflicts_with = "to_stream")]
    prebuilt_dir: Option<PathBuf>,
    /// Builds the function's binary with `--release`.
    #[arg(long, conflicts_with = "to_stream")]
    release: bool,
}

pub(super) async fn failures(args: FailuresArgs, logs: FunctionLogs) -> anyhow::Result<()> {
    let folder = args
        .folder
        .clone()
        .unwrap_or_else(|| folder_root(args.state_dir.as_deref()));
    match &args.action {
        Some(FailuresAction::Replay(replay)) => replay_records(&args, replay, logs).await,
        None => {
            let records = match &args.queue_url {
                Some(queue_url) => queue_records(&args, queue_url).await?,
                None => folder_records(&folder)?,
            };
            for (name, record) in &records {
                println!("{}", listing_line(name, record));
            }
            if records.is_empty() {
                say!(
                    "kinesis-esm: no on-failure records in {}",
                    args.queue_url
                        .as_deref()
                        .map_or_else(|| folder.display().to_string(), str::to_owned)
                );
            }
            Ok(())
        }
    }
}

/// One line per record: where it is, its shard, its first and last sequence numbers, how many
/// records, why and when they were discarded.
fn listing_line(name: &str, record: &Value) -> String {
    match BatchPosition::of_record(record) {
        Ok(position) => format!(
            "{name}  {} {}  {}..{}  {}  {}  {}",
            position.stream_name,
            position.shard_id,
            position.first,
            position.last,
            counted(position.batch_size, "record", "records"),
            position.condition,
            position.timestamp
        ),
        Err(problem) => format!("{name}  not readable: {problem}"),
    }
}

/// The records under `folder` (`<shard>/<file>.json`), oldest first within each shard.
fn folder_records(folder: &Path) -> anyhow::Result<Vec<(String, Value)>> {
    let mut paths = Vec::new();
    let shards = match std::fs::read_dir(folder) {
        Ok(shards) => shards,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => bail!("reading {}: {error}", folder.display()),
    };
    for shard in shards {
        let shard = shard
            .with_context(|| format!("reading {}", folder.display()))?
            .path();
        if !shard.is_dir() {
            continue;
        }
        for file in
            std::fs::read_dir(&shard).with_context(|| format!("reading {}", shard.display()))?
        {
            let path = file
                .with_context(|| format!("reading {}", shard.display()))?
                .path();
            if path
                .extension()
                .is_some_and(|extension| extension == "json")
            {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| Ok((path.display().to_string(), read_record(&path)?)))
        .collect()
}

fn read_record(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).map_err(|error| {
        anyhow::anyhow!(
            "{}: not an on-failure record (not JSON: {error})",
            path.display()
        )
    })
}

/// The records in an SQS queue, read without deleting them (each is hidden for a moment only).
async fn queue_records(
    args: &FailuresArgs,
    queue_url: &str,
) -> anyhow::Result<Vec<(String, Value)>> {
    let connection = match &args.destination_endpoint {
        Some(endpoint) => super::connection::connection_to(endpoint),
        None => esm_engine::aws::AwsConnection::from_environment(),
    };
    let sqs = aws_sdk_sqs::Client::new(&connection.sdk_config().await?);
    let mut seen = std::collections::BTreeMap::new();
    loop {
        let page = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .visibility_timeout(1)
            .send()
            .await
            .map_err(|error| {
                let observed = esm_engine::aws::failure::observe(&error);
                anyhow::anyhow!(
                    "reading the queue {queue_url}: {}",
                    observed.describe("SQS", queue_url)
                )
            })?;
        let mut new = 0;
        for message in page.messages() {
            let id = message.message_id().unwrap_or_default().to_owned();
            let body = message.body().unwrap_or_default();
            let record = serde_json::from_str(body).unwrap_or(Value::Null);
            if seen
                .insert(format!("{queue_url} message {id}"), record)
                .is_none()
            {
                new += 1;
            }
        }
        // Read messages are hidden for a second: a page with nothing new means all were seen.
        if new == 0 {
            break;
        }
    }
    Ok(seen.into_iter().collect())
}

/// Reads each record's batch from its shard, then invokes the function with each batch or
/// publishes it to `--to-stream`.
async fn replay_records(
    args: &FailuresArgs,
    replay: &ReplayArgs,
    logs: FunctionLogs,
) -> anyhow::Result<()> {
    let kinesis = args.target.connect().await?;
    let mut batches = Vec::new();
    for path in &replay.records {
        let record = read_record(path)?;
        let position = BatchPosition::of_record(&record)
            .map_err(|problem| anyhow::anyhow!("{}: {problem}", path.display()))?;
        let records = read_batch(&kinesis, &position).await.with_context(|| {
            format!(
                "{}: reading {} {}",
                path.display(),
                position.stream_name,
                position.shard_id
            )
        })?;
        batches.push(invoke::ReadAgain {
            path: path.display().to_string(),
            position,
            records,
        });
    }
    let Some(stream) = &replay.to_stream else {
        return invoke_function(args, replay, logs, &batches).await;
    };
    for batch in &batches {
        let to_put: Vec<RecordToPut> = batch
            .records
            .iter()
            .map(|record| RecordToPut {
                partition_key: record.partition_key.to_string(),
                data: record.data.clone(),
                explicit_hash_key: None,
            })
            .collect();
        put_every_record(&kinesis, stream, &to_put).await?;
        println!(
            "{}: {} of {} {}..{} published again to {stream}",
            batch.path,
            counted(batch.records.len() as u64, "record", "records"),
            batch.position.shard_id,
            batch.position.first,
            batch.position.last
        );
    }
    Ok(())
}

/// Invokes the template's function with each batch, as `run` would run it.
async fn invoke_function(
    args: &FailuresArgs,
    replay: &ReplayArgs,
    logs: FunctionLogs,
    batches: &[invoke::ReadAgain],
) -> anyhow::Result<()> {
    invoke::check_template_file(&args.template)?;
    let options = TemplateOptions {
        region: args.target.region.clone(),
        account_id: args.account_id.clone(),
        parameter_overrides: super::sam_options::parameter_overrides(&replay.parameter_overrides)
            .map_err(anyhow::Error::msg)?,
        local_dynamodb: std::env::var(LOCAL_DYNAMODB_VARIABLE).ok(),
        ..TemplateOptions::default()
    };
    let template = Template::load_with(&args.template, &options)?;
    let options = invoke::InvokeOptions {
        template: &template,
        function: replay.function.as_deref(),
        binary: BinaryOptions {
            prebuilt_dir: replay.prebuilt_dir.as_deref(),
            release: replay.release,
            region: &args.target.region,
            account_id: &args.account_id,
            function_env: &[],
            kinesis_endpoint: args.target.endpoint_for_functions(),
        },
        logs,
    };
    invoke::invoke_again(batches, &options).await
}

/// The records of `position`'s shard from its first to its last sequence number.
async fn read_batch(
    kinesis: &dyn ShardSource,
    position: &BatchPosition,
) -> anyhow::Result<Vec<Record>> {
    let mut iterator = Some(
        kinesis
            .shard_iterator(
                &position.stream_name,
                &position.shard_id,
                &IteratorPosition::AtSequenceNumber(position.first.clone()),
            )
            .await?,
    );
    let mut records = Vec::new();
    // A shard read to its end, or many empty reads in a row, ends the search.
    let mut empty_reads = 0;
    while let Some(current) = iterator.take() {
        let read = kinesis.get_records(&current, 1000).await?;
        empty_reads = if read.records.is_empty() {
            empty_reads + 1
        } else {
            0
        };
        let past_end = read
            .records
            .last()
            .is_some_and(|record| record.sequence_number >= position.last);
        records.extend(
            read.records
                .into_iter()
                .filter(|record| position.holds(&record.sequence_number)),
        );
        if past_end || (read.millis_behind_latest == 0 && empty_reads > 0) || empty_reads > 20 {
            break;
        }
        iterator = read.next_shard_iterator;
    }
    if records.last().map(|record| &record.sequence_number) != Some(&position.last) {
        bail!(
            "the stream no longer holds every record from {} to {} (found {}): they may have expired",
            position.first,
            position.last,
            records.len()
        );
    }
    Ok(records)
}
