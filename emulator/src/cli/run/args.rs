//! `kinesis-esm run`'s options.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::cli::duration::parse_duration;

/// `kinesis-esm run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The template (`--template`, `template.yaml` by default): see `SharedOptions`.
    #[arg(skip)]
    pub(in crate::cli) template: PathBuf,
    /// Publishes records before the mappings start: a file of JSON lines
    /// (`{"data": ..., "partitionKey": "..."}`), a Lambda Kinesis event file, or a folder of them.
    /// To the template's first stream (in the template's order: the shipping template's
    /// `shipments`, before its retry and dead-letter streams), or the one named: `STREAM=PATH`.
    #[arg(long = "put", value_name = "[STREAM=]PATH")]
    pub(in crate::cli) puts: Vec<String>,
    /// Stops once every shard is caught up and settled, or blocked on a held record that has
    /// been retried at least once with no retry cap (reported as held). Under a retry cap
    /// (`MaximumRetryAttempts`) it waits for the held batch to be discarded, as Lambda would.
    #[arg(long)]
    pub(in crate::cli) until_idle: bool,
    /// Values for the template's `Parameters`, as SAM takes them: `Key=Value ...`, or
    /// `ParameterKey=Key,ParameterValue=Value`. They win over each parameter's `Default`.
    #[arg(long, value_name = "KEY=VALUE", num_args = 1..)]
    pub(in crate::cli) parameter_overrides: Vec<String>,
    /// Runs only these functions (logical id or function name); all by default.
    #[arg(
        long = "function",
        value_name = "NAME",
        env = "KINESIS_ESM_FUNCTION",
        value_delimiter = ','
    )]
    pub(in crate::cli) functions: Vec<String>,
    /// Builds the functions' binaries with `--release`.
    #[arg(long)]
    pub(in crate::cli) release: bool,
    /// `--region`: see `SharedOptions`.
    #[arg(skip)]
    pub(in crate::cli) region: String,
    /// `--account-id`: see `SharedOptions`.
    #[arg(skip)]
    pub(in crate::cli) account_id: String,
    /// Reads a Kinesis at this endpoint (LocalStack, kinesis-local, ...) instead of the embedded
    /// one. Without AWS credentials in the environment, placeholder credentials are used.
    #[arg(long, value_name = "URL", env = "KINESIS_ESM_KINESIS_ENDPOINT")]
    pub(in crate::cli) kinesis_endpoint: Option<String>,
    /// Reads real AWS Kinesis (or the endpoint `AWS_ENDPOINT_URL_KINESIS` / `AWS_ENDPOINT_URL`
    /// names) through the standard credential and region chains.
    #[arg(long, conflicts_with = "kinesis_endpoint", env = "KINESIS_ESM_AWS")]
    pub(in crate::cli) aws: bool,
    /// The embedded Kinesis: how long a stream shows CREATING, UPDATING or DELETING after the
    /// call that changed it (AWS takes seconds), in milliseconds. 0 (the default) keeps streams
    /// ACTIVE throughout, for a fast local loop.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub(in crate::cli) stream_status_delay: u64,
    /// The embedded Kinesis applies AWS's per-shard throughput limits (1 MiB or 1,000 records a
    /// second written, 5 reads and 2 MiB a second read), answering
    /// ProvisionedThroughputExceededException past them as AWS does.
    #[arg(long)]
    pub(in crate::cli) throttle: bool,
    /// With an external Kinesis: creates the template's streams that do not exist yet.
    #[arg(long)]
    pub(in crate::cli) create_streams: bool,
    /// Keeps checkpoints in this DynamoDB lease table (created if missing) instead of memory, so
    /// that a restarted run resumes where the last one stopped.
    #[arg(long, value_name = "NAME", env = "KINESIS_ESM_LEASE_TABLE")]
    pub(in crate::cli) lease_table: Option<String>,
    /// `--state-dir`: see `SharedOptions`.
    #[arg(skip)]
    pub(in crate::cli) state_dir: Option<PathBuf>,
    /// The lease table's DynamoDB endpoint; by default the standard chain (which honours
    /// `AWS_ENDPOINT_URL_DYNAMODB`).
    #[arg(
        long,
        value_name = "URL",
        requires = "lease_table",
        env = "KINESIS_ESM_DYNAMODB_ENDPOINT"
    )]
    pub(in crate::cli) dynamodb_endpoint: Option<String>,
    /// This worker's name in the lease table; a fresh one each run by default.
    #[arg(long, env = "KINESIS_ESM_WORKER_ID")]
    pub(in crate::cli) worker_id: Option<String>,
    /// Takes each function's binary from this folder (`DIR/<binary>`, e.g. `bootstrap`) instead
    /// of building it with cargo: for a container image that holds no Rust toolchain.
    #[arg(long, value_name = "DIR", env = "KINESIS_ESM_PREBUILT_DIR")]
    pub(in crate::cli) prebuilt_dir: Option<PathBuf>,
    /// Invokes the functions through the Lambda Invoke API at this URL instead of running their
    /// binaries: `cargo lambda watch` (`http://127.0.0.1:9000`), `sam local start-lambda`
    /// (`http://127.0.0.1:3001`).
    #[arg(long, value_name = "URL", env = "KINESIS_ESM_INVOKE_ENDPOINT")]
    pub(in crate::cli) invoke_endpoint: Option<String>,
    /// Invokes the deployed functions on real AWS Lambda (signed requests; standard credential
    /// and region chains) instead of running their binaries.
    #[arg(
        long,
        conflicts_with = "invoke_endpoint",
        env = "KINESIS_ESM_INVOKE_LAMBDA"
    )]
    pub(in crate::cli) invoke_lambda: bool,
    /// The name a function is invoked by through the Invoke API: its `FunctionName` (Lambda),
    /// its logical id (`sam local start-lambda`) or its binary (`cargo lambda watch`).
    #[arg(long, value_enum, default_value_t = InvokeName::FunctionName)]
    pub(in crate::cli) invoke_name: InvokeName,
    /// `--listen`: see `SharedOptions`.
    #[arg(skip)]
    pub(in crate::cli) listen: Option<std::net::SocketAddr>,
    /// `--no-listen`: see `SharedOptions`.
    #[arg(skip)]
    pub(in crate::cli) no_listen: bool,
    /// Exits with 3 when the run discarded records (their retries used up, or too old), for CI:
    /// by default a run that discarded records exits 0, as Lambda moves on.
    #[arg(long)]
    pub(in crate::cli) fail_on_discard: bool,
    /// The first pause before retrying a failed batch; pauses then grow.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "100ms")]
    pub(in crate::cli) retry_pause: Duration,
    /// The longest pause between retries of a failed batch.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "2s")]
    pub(in crate::cli) max_retry_pause: Duration,
    /// Sets a variable in the functions' environment, over the template's (repeatable). The
    /// emulator's own environment does not pass to a function, but for `PATH` and AWS
    /// credentials: `--function-env RUST_BACKTRACE=1` is how to give it a backtrace.
    #[arg(long = "function-env", value_name = "KEY=VALUE", value_parser = parse_variable)]
    pub(in crate::cli) function_env: Vec<(String, String)>,
    /// Values for the functions' environment variables from a JSON file, as `sam local` takes
    /// it: `{"Parameters": {"VAR": "value"}, "FunctionLogicalId": {"VAR": "value"}}`, a
    /// function's own object over `Parameters`. As with SAM, only variables the template
    /// declares in `Environment.Variables` take a value; --function-env wins over the file.
    #[arg(long, value_name = "FILE")]
    pub(in crate::cli) env_vars: Option<PathBuf>,
    /// Sends the records of discarded batches to the SQS, SNS or S3 API at this URL (moto,
    /// LocalStack); by default to the SDK's `AWS_ENDPOINT_URL_SQS` / `_SNS` / `_S3`, else into
    /// files under `--state-dir` (or `.kinesis-esm/destinations/`).
    #[arg(long, value_name = "URL")]
    pub(in crate::cli) destination_endpoint: Option<String>,
    /// How long another worker's lease may go unrenewed before this one takes it.
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = parse_duration,
        default_value = "10s",
        env = "KINESIS_ESM_FAILOVER_TIME"
    )]
    pub(in crate::cli) failover_time: Duration,
}

impl RunArgs {
    /// Whether the run reads the embedded Kinesis (no `--kinesis-endpoint`, no `--aws`).
    pub(super) fn reads_embedded_kinesis(&self) -> bool {
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

/// Which of a function's names the Invoke API knows it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(in crate::cli) enum InvokeName {
    /// `FunctionName`, or the logical id without one: how Lambda knows it.
    FunctionName,
    /// The resource's logical id: how `sam local start-lambda` knows it.
    LogicalId,
    /// The cargo binary (`BuildProperties.Binary`): how `cargo lambda watch` knows it.
    Binary,
}
