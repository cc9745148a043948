//! `kinesis-esm run`: the template's streams and functions, with their event source mappings.
//! This file is the run itself (its options, the invokers, the mappings started, served and
//! stopped); `streams.rs` sets up the Kinesis it reads, `fan_out.rs` the source of a mapping
//! that reads through a stream consumer.

mod fan_out;
mod start;
mod stop;
mod streams;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use tokio::sync::watch;

use self::streams::Streams;
use super::function_binary::{BinaryOptions, FunctionLogs, runtime_api_invoker};
use super::page_actions::RunActions;
use super::progress::Progress;
use super::sam_options::EnvVarsFile;
use super::{Exit, STATUS_PATH, connection_to, parse_duration};
use crate::control::{Control, Phase as ControlPhase};
use crate::endpoint::{SideDocument, serve_with_page};
use crate::metrics_report::{METRICS_PATH, PROMETHEUS_CONTENT_TYPE, prometheus};
use crate::page::LivePage;
use crate::state::StateDir;
use crate::template::{FunctionResource, LOCAL_DYNAMODB_VARIABLE, Template, TemplateOptions};
use embedded_kinesis::http::{DEFAULT_ADDR, ServerHandle};
use esm_engine::aws::{AwsConnection, DynamoLeaseStore};
use esm_engine::invoke::invoke_api::{InvokeApi, InvokeApiOptions};
use esm_engine::invoke::runtime_api::RuntimeApi;
use esm_engine::lease::{LeaseStore, MemoryLeaseStore};
use esm_engine::mapping::{MappingOptions, MappingStatus};

/// `kinesis-esm run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The template (`--template`, `template.yaml` by default): see `SharedOptions`.
    #[arg(skip)]
    pub(super) template: PathBuf,
    /// Publishes records before the mappings start: a file of JSON lines
    /// (`{"data": ..., "partitionKey": "..."}`), a Lambda Kinesis event file, or a folder of them.
    /// To the template's first stream (in the template's order: the shipping template's
    /// `shipments`, before its retry and dead-letter streams), or the one named: `STREAM=PATH`.
    #[arg(long = "put", value_name = "[STREAM=]PATH")]
    puts: Vec<String>,
    /// Stops once every shard is caught up and settled, or blocked on a held record that has
    /// been retried at least once with no retry cap (reported as held). Under a retry cap
    /// (`MaximumRetryAttempts`) it waits for the held batch to be discarded, as Lambda would.
    #[arg(long)]
    until_idle: bool,
    /// Values for the template's `Parameters`, as SAM takes them: `Key=Value ...`, or
    /// `ParameterKey=Key,ParameterValue=Value`. They win over each parameter's `Default`.
    #[arg(long, value_name = "KEY=VALUE", num_args = 1..)]
    parameter_overrides: Vec<String>,
    /// Runs only these functions (logical id or function name); all by default.
    #[arg(
        long = "function",
        value_name = "NAME",
        env = "KINESIS_ESM_FUNCTION",
        value_delimiter = ','
    )]
    functions: Vec<String>,
    /// Builds the functions' binaries with `--release`.
    #[arg(long)]
    release: bool,
    /// `--region`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) region: String,
    /// `--account-id`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) account_id: String,
    /// Reads a Kinesis at this endpoint (LocalStack, kinesis-local, ...) instead of the embedded
    /// one. Without AWS credentials in the environment, placeholder credentials are used.
    #[arg(long, value_name = "URL", env = "KINESIS_ESM_KINESIS_ENDPOINT")]
    kinesis_endpoint: Option<String>,
    /// Reads real AWS Kinesis (or the endpoint `AWS_ENDPOINT_URL_KINESIS` / `AWS_ENDPOINT_URL`
    /// names) through the standard credential and region chains.
    #[arg(long, conflicts_with = "kinesis_endpoint", env = "KINESIS_ESM_AWS")]
    aws: bool,
    /// The embedded Kinesis: how long a stream shows CREATING, UPDATING or DELETING after the
    /// call that changed it (AWS takes seconds), in milliseconds. 0 (the default) keeps streams
    /// ACTIVE throughout, for a fast local loop.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    stream_status_delay: u64,
    /// The embedded Kinesis applies AWS's per-shard throughput limits (1 MiB or 1,000 records a
    /// second written, 5 reads and 2 MiB a second read), answering
    /// ProvisionedThroughputExceededException past them as AWS does.
    #[arg(long)]
    throttle: bool,
    /// With an external Kinesis: creates the template's streams that do not exist yet.
    #[arg(long)]
    create_streams: bool,
    /// Keeps checkpoints in this DynamoDB lease table (created if missing) instead of memory, so
    /// that a restarted run resumes where the last one stopped.
    #[arg(long, value_name = "NAME", env = "KINESIS_ESM_LEASE_TABLE")]
    lease_table: Option<String>,
    /// `--state-dir`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) state_dir: Option<PathBuf>,
    /// The lease table's DynamoDB endpoint; by default the standard chain (which honours
    /// `AWS_ENDPOINT_URL_DYNAMODB`).
    #[arg(
        long,
        value_name = "URL",
        requires = "lease_table",
        env = "KINESIS_ESM_DYNAMODB_ENDPOINT"
    )]
    dynamodb_endpoint: Option<String>,
    /// This worker's name in the lease table; a fresh one each run by default.
    #[arg(long, env = "KINESIS_ESM_WORKER_ID")]
    worker_id: Option<String>,
    /// Takes each function's binary from this folder (`DIR/<binary>`, e.g. `bootstrap`) instead
    /// of building it with cargo: for a container image that holds no Rust toolchain.
    #[arg(long, value_name = "DIR", env = "KINESIS_ESM_PREBUILT_DIR")]
    prebuilt_dir: Option<PathBuf>,
    /// Invokes the functions through the Lambda Invoke API at this URL instead of running their
    /// binaries: `cargo lambda watch` (`http://127.0.0.1:9000`), `sam local start-lambda`
    /// (`http://127.0.0.1:3001`).
    #[arg(long, value_name = "URL", env = "KINESIS_ESM_INVOKE_ENDPOINT")]
    invoke_endpoint: Option<String>,
    /// Invokes the deployed functions on real AWS Lambda (signed requests; standard credential
    /// and region chains) instead of running their binaries.
    #[arg(
        long,
        conflicts_with = "invoke_endpoint",
        env = "KINESIS_ESM_INVOKE_LAMBDA"
    )]
    invoke_lambda: bool,
    /// The name a function is invoked by through the Invoke API: its `FunctionName` (Lambda),
    /// its logical id (`sam local start-lambda`) or its binary (`cargo lambda watch`).
    #[arg(long, value_enum, default_value_t = InvokeName::FunctionName)]
    invoke_name: InvokeName,
    /// `--listen`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) listen: Option<std::net::SocketAddr>,
    /// `--no-listen`: see `SharedOptions`.
    #[arg(skip)]
    pub(super) no_listen: bool,
    /// Exits with 3 when the run discarded records (their retries used up, or too old), for CI:
    /// by default a run that discarded records exits 0, as Lambda moves on.
    #[arg(long)]
    fail_on_discard: bool,
    /// The first pause before retrying a failed batch; pauses then grow.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "100ms")]
    retry_pause: Duration,
    /// The longest pause between retries of a failed batch.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "2s")]
    max_retry_pause: Duration,
    /// Sets a variable in the functions' environment, over the template's (repeatable). The
    /// emulator's own environment does not pass to a function, but for `PATH` and AWS
    /// credentials: `--function-env RUST_BACKTRACE=1` is how to give it a backtrace.
    #[arg(long = "function-env", value_name = "KEY=VALUE", value_parser = parse_variable)]
    function_env: Vec<(String, String)>,
    /// Values for the functions' environment variables from a JSON file, as `sam local` takes
    /// it: `{"Parameters": {"VAR": "value"}, "FunctionLogicalId": {"VAR": "value"}}`, a
    /// function's own object over `Parameters`. As with SAM, only variables the template
    /// declares in `Environment.Variables` take a value; --function-env wins over the file.
    #[arg(long, value_name = "FILE")]
    env_vars: Option<PathBuf>,
    /// Sends the records of discarded batches to the SQS, SNS or S3 API at this URL (moto,
    /// LocalStack); by default to the SDK's `AWS_ENDPOINT_URL_SQS` / `_SNS` / `_S3`, else into
    /// files under `--state-dir` (or `.kinesis-esm/destinations/`).
    #[arg(long, value_name = "URL")]
    destination_endpoint: Option<String>,
    /// How long another worker's lease may go unrenewed before this one takes it.
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = parse_duration,
        default_value = "10s",
        env = "KINESIS_ESM_FAILOVER_TIME"
    )]
    failover_time: Duration,
}

/// The mappings' statuses as they change, for the status document, the metrics and the
/// progress lines.
type Statuses = Arc<Mutex<Vec<watch::Receiver<MappingStatus>>>>;

impl RunArgs {
    /// Whether the run reads the embedded Kinesis (no `--kinesis-endpoint`, no `--aws`).
    fn reads_embedded_kinesis(&self) -> bool {
        self.kinesis_endpoint.is_none() && !self.aws
    }
}

/// Reads `KEY=VALUE`.
fn parse_variable(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

pub(super) async fn run(
    args: RunArgs,
    progress: Option<Progress>,
    logs: FunctionLogs,
) -> anyhow::Result<Exit> {
    // Listened to from the start: a signal's default action would end the run with its function
    // processes left behind. One that comes while the run starts stops it as soon as it runs.
    let stop_signals = StopSignals::listen().context("listening for Ctrl-C and SIGTERM")?;
    let template = Template::load_with(&args.template, &template_options(&args)?)?;
    let functions = start::chosen_functions(&args, &template)?;
    start::check_streams(&args, &template, &functions)?;
    let env_vars = args
        .env_vars
        .as_deref()
        .map(|path| read_env_vars(path, &template))
        .transpose()
        .map_err(anyhow::Error::msg)?;
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

/// The template's reading: the run's region and account, SAM's parameter overrides, and the
/// local DynamoDB the template's tables are named for.
fn template_options(args: &RunArgs) -> anyhow::Result<TemplateOptions> {
    Ok(TemplateOptions {
        region: args.region.clone(),
        account_id: args.account_id.clone(),
        parameter_overrides: super::sam_options::parameter_overrides(&args.parameter_overrides)
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

/// The template's functions, for a message: `Logical (Name), ...`, or "none".
fn known_functions(template: &Template) -> String {
    let names: Vec<String> = template
        .functions
        .iter()
        .map(|function| {
            if function.function_name == function.logical_id {
                function.logical_id.clone()
            } else {
                format!("{} ({})", function.logical_id, function.function_name)
            }
        })
        .collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// The signals that stop a run gracefully: Ctrl-C (SIGINT) and SIGTERM, which `docker stop`,
/// `timeout`, systemd and CI runners send.
pub(super) struct StopSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    pub(super) fn listen() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Waits for the next stop signal and names it.
    pub(super) async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => "Ctrl-C",
                _ = self.terminate.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

/// Which of a function's names the Invoke API knows it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum InvokeName {
    /// `FunctionName`, or the logical id without one: how Lambda knows it.
    FunctionName,
    /// The resource's logical id: how `sam local start-lambda` knows it.
    LogicalId,
    /// The cargo binary (`BuildProperties.Binary`): how `cargo lambda watch` knows it.
    Binary,
}

/// Waits until one of the Invoke API invokers is told its function does not exist.
async fn missing_function(invokers: &[Arc<InvokeApi>]) -> String {
    if invokers.is_empty() {
        return std::future::pending().await;
    }
    let waits = invokers
        .iter()
        .map(|invoker| Box::pin(invoker.missing_function()));
    futures_util::future::select_all(waits).await.0
}

/// A function's invoker, by kind: the run watches Invoke API invokers for a missing function.
enum FunctionInvoker {
    RuntimeApi(Arc<RuntimeApi>),
    InvokeApi(Arc<InvokeApi>),
}

/// How many batches of `function` its mappings may have in flight at once: one per shard and
/// concurrent batch (`ParallelizationFactor`), as Lambda runs an execution environment for each
/// (a stream outside the template counts as one shard).
fn concurrent_batches(function: &FunctionResource, template: &Template) -> usize {
    function
        .mappings
        .iter()
        .filter(|config| config.enabled)
        .map(|config| {
            let shards = template
                .stream(&config.stream_name)
                .map_or(1, |stream| stream.shard_count as usize);
            shards * config.parallelization_factor
        })
        .sum()
}

/// How the run invokes `function`: its own binary through the Runtime API (with up to
/// `environments` execution environments, and never fewer than the Runtime API's default), or
/// an Invoke API.
async fn invoker_for(
    args: &RunArgs,
    function: &FunctionResource,
    env_vars: Option<&EnvVarsFile>,
    environments: usize,
    logs: FunctionLogs,
    kinesis_endpoint: Option<&str>,
) -> anyhow::Result<FunctionInvoker> {
    let invoke_name = match args.invoke_name {
        InvokeName::FunctionName => &function.function_name,
        InvokeName::LogicalId => &function.logical_id,
        InvokeName::Binary => &function.binary,
    };
    if let Some(endpoint) = &args.invoke_endpoint {
        // Only `cargo lambda watch` knows functions by their binary.
        let invoker = InvokeApi::new(endpoint, invoke_name, InvokeApiOptions::default())?
            .fallback_function_name(&function.binary);
        return Ok(FunctionInvoker::InvokeApi(Arc::new(invoker)));
    }
    if args.invoke_lambda {
        let invoker =
            InvokeApi::aws_from_environment(invoke_name, InvokeApiOptions::default()).await?;
        return Ok(FunctionInvoker::InvokeApi(Arc::new(invoker)));
    }
    let options = BinaryOptions {
        prebuilt_dir: args.prebuilt_dir.as_deref(),
        release: args.release,
        region: &args.region,
        account_id: &args.account_id,
        function_env: &args.function_env,
        kinesis_endpoint,
    };
    let invoker = runtime_api_invoker(function, &options, env_vars, environments, logs)?;
    Ok(FunctionInvoker::RuntimeApi(Arc::new(invoker)))
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
                .map(|status| status.borrow().clone())
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

/// Why the endpoint could not listen, said once (the OS error is not repeated), with who holds
/// the port when it can be told and how to choose another address.
pub(super) fn listen_failure(
    error: &embedded_kinesis::http::ServeError,
    default_address: bool,
) -> String {
    let addr = error.addr;
    let mut message = format!("cannot serve the Kinesis API on {addr}: {}", error.source);
    if error.source.kind() == std::io::ErrorKind::AddrInUse {
        match super::port_owner::listening_process(addr.port()) {
            Some(owner) => message.push_str(&format!("; {owner} listens on port {}", addr.port())),
            None => message.push_str(&format!("; something else listens on port {}", addr.port())),
        }
    }
    let option = if default_address {
        "the default address is taken: pass --listen 127.0.0.1:PORT (127.0.0.1:0 for any free \
         port), or --no-listen to run without the endpoint"
    } else {
        "pass another --listen address (127.0.0.1:0 for any free port), or --no-listen"
    };
    format!("{message}\n  {option}")
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
