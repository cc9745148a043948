//! The Kinesis a `kinesis-esm run` reads, and its set-up before any mapping starts: the embedded
//! Kinesis (its status delay, `--throttle`'s limits, the journal of `--state-dir`), or one
//! reached through the SDK (`--kinesis-endpoint`, `--aws`); the template's streams, created where
//! missing (on an external Kinesis only with `--create-streams`) and scaled as AWS scales them
//! when `ON_DEMAND`; and the records of `--put`. The source a mapping reads through a stream
//! consumer is `fan_out.rs`'. Kept apart from `run.rs`, which starts the mappings and stops them:
//! nothing here knows of functions or mappings.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};

use super::args::RunArgs;
use crate::cli::commands::put_every_record;
use crate::cli::connection::connection_to;
use crate::records_file::{RecordToPut, check_record_sizes, put_records_batches, read_records};
use crate::state::StateDir;
use crate::template::{StreamMode, StreamResource, Template};
use embedded_kinesis::http::{LocalFanOut, ServerHandle};
use embedded_kinesis::{EmbeddedKinesis, PutRecordsEntry, RecordDistribution};
use esm_engine::aws::{AwsConnection, SdkKinesis};
use kinesis_source::{ShardSource, SourceError};

/// The Kinesis the run reads: the embedded one (with its endpoint's state, which holds its
/// consumers), or one reached through the SDK.
pub(super) enum Streams {
    Embedded(EmbeddedKinesis, LocalFanOut),
    Sdk(Arc<SdkKinesis>),
}

impl Streams {
    /// Opens the Kinesis `args` name, makes the template's streams there and publishes the
    /// records of each `--put`, in that order: the mappings start on streams that exist and
    /// hold what was put.
    pub(super) async fn set_up(
        args: &RunArgs,
        template: &Template,
        state: Option<&StateDir>,
    ) -> anyhow::Result<Self> {
        let streams = Self::open(args, state).await?;
        for stream in &template.streams {
            streams
                .ensure_stream(&stream.name, stream.shard_count, args.create_streams)
                .await
                .with_context(|| format!("stream {} ({})", stream.name, stream.logical_id))?;
            // The embedded Kinesis scales an ON_DEMAND stream as AWS does (docs/kinesis.md).
            if let (Self::Embedded(kinesis, _), StreamMode::OnDemand) = (&streams, stream.mode) {
                kinesis.set_on_demand(&stream.name, true)?;
            }
            streams
                .apply_settings(stream)
                .await
                .with_context(|| format!("stream {} ({})", stream.name, stream.logical_id))?;
        }
        for put in &args.puts {
            publish(&streams, template, put).await?;
        }
        Ok(streams)
    }

    async fn open(args: &RunArgs, state: Option<&StateDir>) -> anyhow::Result<Self> {
        let connection = match &args.kinesis_endpoint {
            Some(endpoint) => connection_to(endpoint).with_region(&args.region),
            None if args.aws => AwsConnection::from_environment(),
            None => {
                let builder = EmbeddedKinesis::builder()
                    .region(&args.region)
                    .account_id(&args.account_id)
                    .stream_status_delay(Duration::from_millis(args.stream_status_delay))
                    .throttle(args.throttle);
                let kinesis = match state {
                    Some(state) => state.embedded_kinesis(builder)?,
                    None => builder.build(),
                };
                let fan_out = LocalFanOut::new(kinesis.clone());
                return Ok(Self::Embedded(kinesis, fan_out));
            }
        };
        Ok(Self::Sdk(Arc::new(SdkKinesis::connect(&connection).await?)))
    }

    /// The SDK client the page's actions use: the one the run reads through, or one of the
    /// embedded Kinesis' own endpoint, so they go as `put` and `reshard` go.
    pub(super) async fn client(
        &self,
        server: &ServerHandle,
        region: &str,
    ) -> anyhow::Result<Arc<SdkKinesis>> {
        match self {
            Self::Sdk(kinesis) => Ok(Arc::clone(kinesis)),
            Self::Embedded(..) => {
                let connection = connection_to(&server.endpoint_url()).with_region(region);
                Ok(Arc::new(SdkKinesis::connect(&connection).await?))
            }
        }
    }

    pub(super) fn source(&self) -> Arc<dyn ShardSource> {
        match self {
            Self::Embedded(kinesis, _) => Arc::new(kinesis.clone()),
            Self::Sdk(kinesis) => Arc::clone(kinesis) as Arc<dyn ShardSource>,
        }
    }

    async fn ensure_stream(
        &self,
        name: &str,
        shard_count: u32,
        create: bool,
    ) -> anyhow::Result<()> {
        match self {
            // A stream the state directory kept is the same stream: it keeps its records.
            Self::Embedded(kinesis, _)
                if kinesis.list_streams().iter().any(|kept| kept == name) =>
            {
                Ok(())
            }
            Self::Embedded(kinesis, _) => {
                kinesis.create_stream(name, shard_count)?;
                Ok(kinesis.wait_until_active(name).await?)
            }
            Self::Sdk(kinesis) => {
                // Only a stream Kinesis says is missing may be created: an endpoint where nothing
                // answers, or something that is not Kinesis, is said as it is.
                match kinesis.describe_stream(name).await {
                    Ok(_) => return Ok(()),
                    Err(SourceError::NotFound { .. }) => {}
                    Err(error) => return Err(error.into()),
                }
                if !create {
                    bail!(
                        "stream {name} does not exist on that Kinesis (pass --create-streams to create it)"
                    );
                }
                kinesis
                    .create_stream(name, i32::try_from(shard_count)?)
                    .await?;
                kinesis
                    .wait_until_active(name, Duration::from_secs(60))
                    .await?;
                Ok(())
            }
        }
    }

    /// Gives a stream of the embedded Kinesis the template's `MaxRecordSizeInKiB` and
    /// `RecordDistributionStrategy`, where it has others (a stream made here, or kept by
    /// `--state-dir` from an older template). A Kinesis reached through the SDK keeps its own:
    /// the run only says where they differ from the template's.
    async fn apply_settings(&self, stream: &StreamResource) -> anyhow::Result<()> {
        let Self::Embedded(kinesis, _) = self else {
            if stream.max_record_size_kib != 1024 || stream.auto_distribution {
                tracing::warn!(
                    stream = %stream.name,
                    "the template's MaxRecordSizeInKiB and RecordDistributionStrategy are given \
                     to the embedded Kinesis' streams only; set them on this endpoint's stream \
                     with UpdateMaxRecordSize and UpdateStreamRecordDistributionStrategy"
                );
            }
            return Ok(());
        };
        let settings = kinesis.stream_settings(&stream.name)?;
        if settings.max_record_size_kib != stream.max_record_size_kib {
            kinesis.update_max_record_size(&stream.name, stream.max_record_size_kib)?;
            kinesis.wait_until_active(&stream.name).await?;
        }
        let wanted = if stream.auto_distribution {
            RecordDistribution::Auto
        } else {
            RecordDistribution::UserPartitionKey
        };
        if settings.record_distribution != wanted {
            kinesis.set_record_distribution(&stream.name, wanted)?;
            kinesis.wait_until_active(&stream.name).await?;
        }
        Ok(())
    }

    async fn put(&self, stream: &str, records: &[RecordToPut]) -> anyhow::Result<()> {
        let kinesis = match self {
            Self::Sdk(kinesis) => {
                return put_every_record(kinesis, stream, records).await.map(drop);
            }
            Self::Embedded(kinesis, _) => kinesis,
        };
        let max_record_bytes = kinesis.stream_settings(stream)?.max_record_bytes();
        check_record_sizes(records, stream, max_record_bytes).map_err(anyhow::Error::msg)?;
        for batch in put_records_batches(records) {
            let entries = records[batch]
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
            put_until_written(kinesis, stream, entries).await?;
        }
        Ok(())
    }
}

/// Puts records to the embedded Kinesis, sending again, after a pause, those its shards'
/// write limits refused under `--throttle` (a shard refuses the tail of what it was sent, so
/// each shard keeps the records' order).
async fn put_until_written(
    kinesis: &EmbeddedKinesis,
    stream: &str,
    mut entries: Vec<PutRecordsEntry>,
) -> Result<(), SourceError> {
    /// A tenth of a shard's write budget refills in this time.
    const PAUSE: Duration = Duration::from_millis(100);
    loop {
        let results = kinesis.put_records_each(stream, entries.clone())?;
        entries = entries
            .into_iter()
            .zip(results)
            .filter_map(|(entry, result)| result.is_err().then_some(entry))
            .collect();
        if entries.is_empty() {
            return Ok(());
        }
        tokio::time::sleep(PAUSE).await;
    }
}

/// Publishes the records of one `--put` argument to its stream.
async fn publish(streams: &Streams, template: &Template, put: &str) -> anyhow::Result<()> {
    let (stream, path) = match put.split_once('=') {
        Some((stream, path)) => (stream.to_owned(), PathBuf::from(path)),
        None => match template.streams.first() {
            Some(first) => (first.name.clone(), PathBuf::from(put)),
            None => bail!("--put {put}: the template has no stream; name one as STREAM=PATH"),
        },
    };
    let records = read_records(&path)?;
    streams
        .put(&stream, &records)
        .await
        .with_context(|| format!("--put {put}: publishing to stream {stream}"))?;
    tracing::info!(stream, records = records.len(), path = %path.display(), "published");
    Ok(())
}
