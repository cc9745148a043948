//! `kinesis-esm run`: the template's streams and functions, with their event source mappings.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;

use super::Exit;
use crate::function::build_function;
use crate::invoke::Invoker;
use crate::invoke::runtime_api::{FunctionDefinition, RuntimeApi};
use crate::kinesis::{EmbeddedKinesis, MAX_PUT_RECORDS_ENTRIES, PutRecordsEntry};
use crate::mapping::{EventSourceMapping, MappingStatus, RunningMapping};
use crate::records_file::read_records;
use crate::source::ShardSource;
use crate::summary;
use crate::template::{FunctionResource, Template, TemplateOptions};

/// `kinesis-esm run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The SAM template whose Kinesis streams and functions to run.
    #[arg(long, default_value = "template.yaml")]
    template: PathBuf,
    /// Publishes records before the mappings start: a file of JSON lines
    /// (`{"data": ..., "partitionKey": "..."}`), a Lambda Kinesis event file, or a folder of them.
    /// With several streams in the template, name one: `STREAM=PATH`.
    #[arg(long = "put", value_name = "[STREAM=]PATH")]
    puts: Vec<String>,
    /// Stops once every shard is caught up and settled, or blocked on a held record that has
    /// been retried at least once (reported as held).
    #[arg(long)]
    until_idle: bool,
    /// Runs only these functions (logical id or function name); all by default.
    #[arg(long = "function", value_name = "NAME")]
    functions: Vec<String>,
    /// Builds the functions' binaries with `--release`.
    #[arg(long)]
    release: bool,
    /// The region the emulated resources live in.
    #[arg(long, default_value = "us-east-1")]
    region: String,
    /// The account id in the emulated resources' ARNs.
    #[arg(long, default_value = "123456789012")]
    account_id: String,
}

pub(super) async fn run(args: RunArgs) -> anyhow::Result<Exit> {
    let options = TemplateOptions {
        region: args.region.clone(),
        account_id: args.account_id.clone(),
        ..TemplateOptions::default()
    };
    let template = Template::load_with(&args.template, &options)?;
    let functions: Vec<&FunctionResource> = template
        .functions
        .iter()
        .filter(|function| {
            args.functions.is_empty()
                || args
                    .functions
                    .iter()
                    .any(|name| *name == function.logical_id || *name == function.function_name)
        })
        .collect();
    if functions.is_empty() {
        bail!(
            "{}: no function with a Kinesis event{}",
            args.template.display(),
            if args.functions.is_empty() {
                ""
            } else {
                " among those named by --function"
            }
        );
    }

    let kinesis = EmbeddedKinesis::builder()
        .region(&args.region)
        .account_id(&args.account_id)
        .build();
    for stream in &template.streams {
        kinesis
            .create_stream(&stream.name, stream.shard_count)
            .with_context(|| format!("creating stream {} ({})", stream.name, stream.logical_id))?;
    }
    for put in &args.puts {
        publish(&kinesis, &template, put)?;
    }

    let mut invokers: Vec<Arc<dyn Invoker>> = Vec::new();
    let mut mappings: Vec<RunningMapping> = Vec::new();
    let source: Arc<dyn ShardSource> = Arc::new(kinesis.clone());
    for function in functions {
        tracing::info!(function = %function.function_name, crate_dir = %function.code_dir.display(), "building");
        let binary = build_function(&function.code_dir, &function.binary, args.release)
            .with_context(|| {
                format!(
                    "{}: resource {}",
                    args.template.display(),
                    function.logical_id
                )
            })?;
        let mut definition = FunctionDefinition::new(&function.function_name, binary);
        definition.handler.clone_from(&function.handler);
        definition.runtime.clone_from(&function.runtime);
        definition.memory_size_mb = function.memory_size;
        definition.timeout = function.timeout;
        definition.region.clone_from(&args.region);
        definition.account_id.clone_from(&args.account_id);
        definition.environment.clone_from(&function.environment);
        let invoker: Arc<dyn Invoker> = Arc::new(RuntimeApi::new(definition));
        invokers.push(Arc::clone(&invoker));
        for config in &function.mappings {
            if !config.enabled {
                tracing::info!(function = %function.function_name, stream = %config.stream_name, "mapping disabled (Enabled: false)");
                continue;
            }
            if kinesis
                .describe_stream_summary(&config.stream_name)
                .is_err()
            {
                bail!(
                    "{}: resource {}: stream {} is not defined in the template; the embedded Kinesis only holds the template's streams",
                    args.template.display(),
                    function.logical_id,
                    config.stream_name
                );
            }
            let mapping =
                EventSourceMapping::new(config.clone(), Arc::clone(&source), Arc::clone(&invoker));
            mappings.push(mapping.start());
        }
    }

    let interrupted = if args.until_idle {
        tokio::select! {
            () = wait_until_idle(&mappings) => false,
            _ = tokio::signal::ctrl_c() => true,
        }
    } else {
        let _ = tokio::signal::ctrl_c().await;
        true
    };
    if interrupted {
        eprintln!("kinesis-esm: stopping after the batches in flight");
    }
    let mut statuses: Vec<MappingStatus> = Vec::new();
    for mapping in mappings {
        statuses.push(mapping.stop().await);
    }
    for invoker in invokers {
        invoker.shutdown().await;
    }
    let mut held = false;
    for status in &statuses {
        print!("{}", summary::render(status));
        held |= status.shards.values().any(|shard| shard.held.is_some());
    }
    Ok(if held { Exit::Held } else { Exit::Settled })
}

async fn wait_until_idle(mappings: &[RunningMapping]) {
    for mapping in mappings {
        mapping.wait_until_idle().await;
    }
}

/// Publishes the records of one `--put` argument to its stream.
fn publish(kinesis: &EmbeddedKinesis, template: &Template, put: &str) -> anyhow::Result<()> {
    let (stream, path) = match put.split_once('=') {
        Some((stream, path)) => (stream.to_owned(), PathBuf::from(path)),
        None => match template.streams.as_slice() {
            [only] => (only.name.clone(), PathBuf::from(put)),
            _ => bail!(
                "--put {put}: the template has {} streams; name one as STREAM=PATH",
                template.streams.len()
            ),
        },
    };
    let records = read_records(&path)?;
    let count = records.len();
    for chunk in records.chunks(MAX_PUT_RECORDS_ENTRIES) {
        let entries = chunk
            .iter()
            .map(|record| {
                let entry =
                    PutRecordsEntry::new(record.partition_key.as_str(), record.data.clone());
                match &record.explicit_hash_key {
                    Some(hash_key) => entry.with_explicit_hash_key(hash_key),
                    None => entry,
                }
            })
            .collect();
        kinesis
            .put_records(&stream, entries)
            .with_context(|| format!("--put {put}: publishing to stream {stream}"))?;
    }
    tracing::info!(stream, records = count, path = %path.display(), "published");
    Ok(())
}
