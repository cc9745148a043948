//! `kinesis-esm serve`: the embedded Kinesis alone, for producers and tests that need a local
//! Kinesis and no function.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

use super::exit::Exit;
use super::listen_failure::listen_failure;
use super::run::StopSignals;
use crate::endpoint::serve_with;
use crate::state::StateDir;
use crate::template::{StreamMode, Template, TemplateOptions};
use embedded_kinesis::EmbeddedKinesis;
use embedded_kinesis::http::DEFAULT_ADDR;

/// How `serve` is used and stops, for `serve --help`.
pub(super) const SERVE_AFTER_HELP: &str = "\
Streams:
  the template's streams (--template), and each --stream NAME[:SHARDS] (one shard by default);
  with neither, no stream: producers create theirs (aws kinesis create-stream, an SDK's
  CreateStream). With --state-dir, the streams and records of the last serve or run are kept.

Stopping:
  Ctrl-C or SIGTERM stops it (exit 0): requests in flight are answered first. Every PutRecords
  that answered is in the state directory already.";

/// `kinesis-esm serve`.
#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    /// A stream to create, with its number of shards (1 by default); repeatable. A stream the
    /// state directory kept is served as it was.
    #[arg(long = "stream", value_name = "NAME[:SHARDS]", value_parser = parse_stream)]
    streams: Vec<(String, u32)>,
    /// Values for the template's `Parameters`, as SAM takes them: `Key=Value ...`, or
    /// `ParameterKey=Key,ParameterValue=Value`.
    #[arg(long, value_name = "KEY=VALUE", num_args = 1.., requires = "template")]
    parameter_overrides: Vec<String>,
    /// `--template`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) template: Option<PathBuf>,
    /// `--region`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) region: String,
    /// `--account-id`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) account_id: String,
    /// `--state-dir`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) state_dir: Option<PathBuf>,
    /// `--listen`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) listen: Option<std::net::SocketAddr>,
    /// Applies AWS's per-shard throughput limits (1 MiB or 1,000 records a second written, 5
    /// reads and 2 MiB a second read), answering ProvisionedThroughputExceededException past
    /// them as AWS does.
    #[arg(long)]
    throttle: bool,
}

/// Reads `NAME` or `NAME:SHARDS`.
fn parse_stream(text: &str) -> Result<(String, u32), String> {
    let (name, shards) = match text.rsplit_once(':') {
        Some((name, shards)) => {
            let shards = shards
                .parse::<u32>()
                .ok()
                .filter(|shards| *shards > 0)
                .ok_or_else(|| {
                    format!(
                        "`{text}`: the number of shards after `:` must be a whole number over 0"
                    )
                })?;
            (name, shards)
        }
        None => (text, 1),
    };
    if name.is_empty() {
        return Err(format!(
            "`{text}` names no stream: expected NAME or NAME:SHARDS"
        ));
    }
    Ok((name.to_owned(), shards))
}

pub(super) async fn serve(args: ServeArgs, quiet: bool) -> anyhow::Result<Exit> {
    let mut stop_signals = StopSignals::listen().context("listening for Ctrl-C and SIGTERM")?;
    let mut streams = Vec::new();
    let mut on_demand = Vec::new();
    if let Some(path) = &args.template {
        let options = TemplateOptions {
            region: args.region.clone(),
            account_id: args.account_id.clone(),
            parameter_overrides: super::sam_options::parameter_overrides(&args.parameter_overrides)
                .map_err(anyhow::Error::msg)?,
            ..TemplateOptions::default()
        };
        let template = Template::load_with(path, &options)?;
        streams.extend(
            template
                .streams
                .iter()
                .map(|stream| (stream.name.clone(), stream.shard_count)),
        );
        on_demand.extend(
            template
                .streams
                .iter()
                .filter(|stream| stream.mode == StreamMode::OnDemand)
                .map(|stream| stream.name.clone()),
        );
    }
    streams.extend(args.streams.iter().cloned());

    let builder = EmbeddedKinesis::builder()
        .region(&args.region)
        .account_id(&args.account_id)
        .throttle(args.throttle);
    let kinesis = match &args.state_dir {
        Some(dir) => StateDir::open(dir)?.embedded_kinesis(builder)?,
        None => builder.build(),
    };
    for (name, shard_count) in &streams {
        // A stream the state directory kept is the same stream: it keeps its records.
        if !kinesis.list_streams().contains(name) {
            kinesis
                .create_stream(name, *shard_count)
                .with_context(|| format!("stream {name}"))?;
        }
    }
    // The embedded Kinesis scales an ON_DEMAND stream as AWS does (docs/kinesis.md).
    for name in &on_demand {
        kinesis.set_on_demand(name, true)?;
    }
    let server = serve_with(
        kinesis.clone(),
        args.listen.unwrap_or(DEFAULT_ADDR),
        Vec::new(),
    )
    .await
    .map_err(|error| anyhow::Error::msg(listen_failure(&error, args.listen.is_none())))?;
    if !quiet {
        let names = kinesis.list_streams();
        say!(
            "kinesis-esm: Kinesis API at {url} (aws --endpoint-url {url} kinesis ...); streams: {}",
            if names.is_empty() {
                "none yet".to_owned()
            } else {
                names.join(", ")
            },
            url = server.endpoint_url()
        );
    }
    let signal = stop_signals.next().await;
    if !quiet {
        say!("kinesis-esm: {signal}: stopping");
    }
    server.stop().await;
    Ok(Exit::Settled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_a_name_with_an_optional_number_of_shards() {
        assert_eq!(parse_stream("orders"), Ok(("orders".to_owned(), 1)));
        assert_eq!(parse_stream("orders:4"), Ok(("orders".to_owned(), 4)));
        for bad in ["orders:0", "orders:x", "orders:"] {
            assert_eq!(
                parse_stream(bad),
                Err(format!(
                    "`{bad}`: the number of shards after `:` must be a whole number over 0"
                ))
            );
        }
        assert_eq!(
            parse_stream(":2"),
            Err("`:2` names no stream: expected NAME or NAME:SHARDS".to_owned())
        );
    }
}
