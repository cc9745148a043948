//! The run's order of events: the template read, the streams set up, the endpoint served, the
//! functions and their mappings started, and the run stopped.

use std::net::SocketAddr;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::sync::watch;

use super::args::RunArgs;
use super::invoker::known_functions;
use super::signals::StopSignals;
use super::start::{self, Statuses};
use super::stop;
use super::streams::Streams;
use crate::cli::commands::STATUS_PATH;
use crate::cli::connection::connection_to;
use crate::cli::exit::Exit;
use crate::cli::function_binary::FunctionLogs;
use crate::cli::listen_failure::listen_failure;
use crate::cli::page_actions::RunActions;
use crate::cli::progress::Progress;
use crate::cli::sam_options::{self, EnvVarsFile};
use crate::control::{Control, Phase as ControlPhase};
use crate::endpoint::{SideDocument, serve_with_page};
use crate::metrics_report::{METRICS_PATH, PROMETHEUS_CONTENT_TYPE, prometheus};
use crate::page::LivePage;
use crate::state::StateDir;
use crate::template::{LOCAL_DYNAMODB_VARIABLE, Template, TemplateOptions};
use embedded_kinesis::http::{DEFAULT_ADDR, ServerHandle};
use esm_engine::aws::{AwsConnection, DynamoLeaseStore};
use esm_engine::lease::{Checkpoint, LeaseStore, MemoryLeaseStore};
use esm_engine::mapping::{MappingOptions, MappingStatus};

pub(in crate::cli) async fn run(
    args: RunArgs,
    progress: Option<Progress>,
    logs: FunctionLogs,
) -> anyhow::Result<Exit> {
    // Listened to from the start: a signal's default action would end the run with its function
    // processes left behind. One that comes while the run starts stops it as soon as it runs.
    let stop_signals = StopSignals::listen().context("listening for Ctrl-C and SIGTERM")?;
    let options = template_options(&args)?;
    let template = Template::load_with(&args.template, &options)?;
    let functions = start::chosen_functions(&args, &template)?;
    start::check_streams(&args, &template, &functions)?;
    let env_vars = args
        .env_vars
        .as_deref()
        .map(|path| read_env_vars(path, &template))
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let local_dynamodb = options.local_dynamodb.as_deref();
    super::provision::make(&args, &template, local_dynamodb, logs.quiet).await?;
    let state = args.state_dir.as_deref().map(StateDir::open).transpose()?;
    let streams = Streams::set_up(&args, &template, state.as_ref()).await?;
    let statuses = Statuses::default();
    let actions = Arc::new(RunActions::default());
    let page = LivePage::new(streams.source(), Arc::clone(&actions) as _);
    let control = Control::new();
    let server = if args.no_listen {
        None
    } else {
        let routes = page.router().merge(control.router());
        let served = serve(&streams, args.listen, &statuses, routes, logs.quiet).await?;
        actions.connect(streams.client(&served, &args.region).await?);
        Some(served)
    };
    let leases = open_lease_store(&args, state.as_ref()).await?;
    warn_of_streams_that_end(&args, &streams, state.as_ref());
    let resumed_from = resumed_from(&args, leases.as_ref()).await;
    let function_kinesis = function_kinesis_endpoint(&args, &streams, server.as_ref());
    let start = start::Start {
        args: &args,
        template: &template,
        streams: &streams,
        env_vars: env_vars.as_ref(),
        logs,
        function_kinesis: function_kinesis.as_deref(),
        leases,
        options: mapping_options(&args, &streams),
        page: &page,
        control: &control,
        statuses: &statuses,
    };
    let started = start.functions(functions).await?;
    control.set_phase(ControlPhase::Running);
    let progress = progress.map(|progress| {
        let (stop_progress, progress_stopped) = watch::channel(false);
        let shown = tokio::spawn(progress.show(Arc::clone(&statuses), progress_stopped));
        (shown, stop_progress)
    });
    let running = stop::Running {
        started,
        server,
        progress,
        resumed_from,
    };
    running
        .until_stopped(
            args.until_idle,
            args.fail_on_discard,
            &control,
            stop_signals,
        )
        .await
}

/// Where the run's checkpoints came from, when it resumes from stored ones (a lease of the store
/// past its start): the summary then says its counts are this run's alone.
async fn resumed_from(args: &RunArgs, leases: &dyn LeaseStore) -> Option<String> {
    let stored = leases.list_leases().await.ok()?;
    let resumed = stored.iter().any(|lease| {
        matches!(
            lease.checkpoint,
            Checkpoint::SequenceNumber(_) | Checkpoint::ShardEnd
        )
    });
    if !resumed {
        return None;
    }
    Some(match (&args.lease_table, &args.state_dir) {
        (Some(table), _) => format!("the lease table {table}"),
        (None, Some(dir)) => format!("the state directory {}", dir.display()),
        (None, None) => "the lease store".to_owned(),
    })
}

/// The template's reading: the run's region and account, SAM's parameter overrides, and the
/// local DynamoDB the template's tables are named for.
fn template_options(args: &RunArgs) -> anyhow::Result<TemplateOptions> {
    Ok(TemplateOptions {
        region: args.region.clone(),
        account_id: args.account_id.clone(),
        parameter_overrides: sam_options::parameter_overrides(&args.parameter_overrides)
            .map_err(anyhow::Error::msg)?,
        local_dynamodb: std::env::var(LOCAL_DYNAMODB_VARIABLE).ok(),
        ..TemplateOptions::default()
    })
}

/// The mappings' options that the command line sets.
fn mapping_options(args: &RunArgs, streams: &Streams) -> MappingOptions {
    let mut options = MappingOptions {
        failover_time: args.failover_time,
        retry_backoff_initial: args.retry_pause,
        retry_backoff_max: args.max_retry_pause.max(args.retry_pause),
        invoke_identity_arn: format!("arn:aws:iam::{}:role/kinesis-esm", args.account_id),
        ..MappingOptions::default()
    };
    if matches!(streams, Streams::Embedded(..)) {
        // Listing the embedded Kinesis' shards costs nothing: new shards show up within a second.
        options.shard_sync_interval = Duration::from_secs(1);
    }
    if let Some(worker_id) = &args.worker_id {
        options.worker_id.clone_from(worker_id);
    }
    options
}

/// Warns when the checkpoints outlive the streams: a lease table over an embedded Kinesis that
/// keeps nothing.
fn warn_of_streams_that_end(args: &RunArgs, streams: &Streams, state: Option<&StateDir>) {
    if let (Streams::Embedded(..), None, Some(table)) = (streams, state, &args.lease_table) {
        tracing::warn!(
            lease_table = %table,
            "the embedded Kinesis lives in memory: its streams and records end with this run, \
             but the checkpoints in the lease table stay; the next run starts fresh streams \
             and reports each checkpoint it cannot resume at (pass --state-dir DIR to keep \
             the streams too)"
        );
    }
}

/// Reads `--env-vars`, warning of each key that names none of the template's functions (SAM
/// passes over them without a word; a typo would go unseen).
fn read_env_vars(path: &std::path::Path, template: &Template) -> Result<EnvVarsFile, String> {
    let file = EnvVarsFile::read(path)?;
    let functions: Vec<(&str, &str)> = template
        .functions
        .iter()
        .map(|function| {
            (
                function.logical_id.as_str(),
                function.function_name.as_str(),
            )
        })
        .collect();
    for key in file.unknown_keys(&functions) {
        tracing::warn!(
            "--env-vars {}: {key} names no function of the template with a Kinesis event, and \
             is not used; the template has {}",
            path.display(),
            known_functions(template)
        );
    }
    Ok(file)
}

/// The Kinesis endpoint a function run here is pointed at (`AWS_ENDPOINT_URL_KINESIS`), so that
/// a function that publishes reaches the Kinesis the run reads: `--kinesis-endpoint`, or the
/// embedded Kinesis where it is served. None with `--aws` (the SDK finds AWS itself) or when the
/// embedded Kinesis is not served (`--no-listen`: nothing could reach it).
fn function_kinesis_endpoint(
    args: &RunArgs,
    streams: &Streams,
    server: Option<&ServerHandle>,
) -> Option<String> {
    match (streams, &args.kinesis_endpoint) {
        (Streams::Sdk(_), endpoint) => endpoint.clone(),
        (Streams::Embedded(..), _) => server.map(ServerHandle::endpoint_url),
    }
}

/// Serves the mappings' status and the live page on `listen`, beside the Kinesis API when the
/// run reads the embedded Kinesis: `kinesis-esm status` reads it at the same path in every mode.
async fn serve(
    streams: &Streams,
    listen: Option<SocketAddr>,
    statuses: &Statuses,
    routes: axum::Router,
    quiet: bool,
) -> anyhow::Result<ServerHandle> {
    let snapshot = {
        let statuses = Arc::clone(statuses);
        move || -> Vec<MappingStatus> {
            statuses
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|(status, invoker)| status.borrow().clone().with_environments(&**invoker))
                .collect()
        }
    };
    let status_snapshot = snapshot.clone();
    let documents = vec![
        SideDocument::new(STATUS_PATH, "application/json", move || {
            serde_json::to_vec(&status_snapshot()).unwrap_or_default()
        }),
        SideDocument::new(METRICS_PATH, PROMETHEUS_CONTENT_TYPE, move || {
            prometheus(&snapshot()).into_bytes()
        }),
    ];
    let addr = listen.unwrap_or(DEFAULT_ADDR);
    let embedded = match streams {
        Streams::Embedded(_, fan_out) => Some(fan_out.clone()),
        Streams::Sdk(_) => None,
    };
    match serve_with_page(embedded, addr, documents, routes).await {
        Ok(server) if quiet => Ok(server),
        Ok(server) => {
            match streams {
                Streams::Embedded(..) => say!(
                    "kinesis-esm: Kinesis API at {url} (aws --endpoint-url {url} kinesis ...; kinesis-esm status --endpoint {url}); live page at {url}/",
                    url = server.endpoint_url()
                ),
                Streams::Sdk(_) => say!(
                    "kinesis-esm: status at {url} (kinesis-esm status --endpoint {url}); live page at {url}/",
                    url = server.endpoint_url()
                ),
            }
            Ok(server)
        }
        // The default port may belong to another local stack (LocalStack's is 4566): carrying on
        // without the endpoint would let `put`, `status` and `reshard` talk to it instead.
        Err(error) => bail!("{}", listen_failure(&error, listen.is_none())),
    }
}

async fn open_lease_store(
    args: &RunArgs,
    state: Option<&StateDir>,
) -> anyhow::Result<Arc<dyn LeaseStore>> {
    let Some(table) = &args.lease_table else {
        return Ok(match state {
            Some(state) => Arc::new(state.lease_store()?),
            None => Arc::new(MemoryLeaseStore::new()),
        });
    };
    let connection = match &args.dynamodb_endpoint {
        Some(endpoint) => connection_to(endpoint),
        None => AwsConnection::from_environment(),
    };
    // The store's errors name the table already.
    let store =
        DynamoLeaseStore::connect(&connection.with_region(&args.region), table.as_str()).await?;
    Ok(Arc::new(store))
}
