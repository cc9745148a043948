//! The `kinesis-esm` command line.

/// Writes a line to standard error for the user, ignoring a closed stderr (piped into `head`):
/// unlike `eprintln!`, it never panics.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod commands;
mod destinations;
mod dlq;
mod failures;
mod function_binary;
mod page_actions;
mod port_owner;
mod progress;
mod replay;
mod run;
mod sam_options;
mod serve;

pub use commands::STATUS_PATH;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use run::RunArgs;

/// A local Kinesis event source mapping: runs a Lambda function over Kinesis shards the way
/// Lambda does, checkpoints and resharding order included.
#[derive(Debug, Parser)]
#[command(name = "kinesis-esm", version, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How to write logs (to standard error).
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
    #[command(flatten)]
    logs: LogOptions,
    #[command(flatten)]
    shared: SharedOptions,
}

/// Options that mean the same to every command that takes them, accepted before or after the
/// command's name (`kinesis-esm --template t.yaml run` as `kinesis-esm run --template t.yaml`).
/// A command refuses those it has no use for, rather than passing over them.
#[derive(Debug, Clone, Default, Args)]
struct SharedOptions {
    /// The SAM template: for `run`, whose streams and functions to run (by default
    /// template.yaml); for `serve`, whose streams to serve.
    #[arg(long, value_name = "PATH", global = true)]
    template: Option<std::path::PathBuf>,
    /// The region of the emulated resources (run, serve), or of the Kinesis to talk to (put,
    /// reshard). By default us-east-1.
    #[arg(long, global = true)]
    region: Option<String>,
    /// The account id in the emulated resources' ARNs (run, serve). By default 123456789012.
    #[arg(long, value_name = "ID", global = true)]
    account_id: Option<String>,
    /// Keeps the embedded Kinesis (streams, shards, records) and the checkpoints in this
    /// directory (created if missing), so that a restarted `run` or `serve` finds its records
    /// and `run` resumes at its checkpoints. A `PutRecords` that answered and a checkpoint that
    /// was written survive a crash. With `--lease-table`, the checkpoints stay in the table.
    #[arg(long, value_name = "DIR", global = true)]
    state_dir: Option<std::path::PathBuf>,
    /// Serves the embedded Kinesis' API (for the aws CLI, SDKs, `kinesis-esm put`) and `run`'s
    /// status (for `kinesis-esm status`) on this address. By default 127.0.0.1:4566; the command
    /// stops (exit 2) if that port is taken, naming what holds it.
    #[arg(long, value_name = "ADDR", global = true)]
    listen: Option<std::net::SocketAddr>,
    /// `run` serves neither the embedded Kinesis nor the status.
    #[arg(long, global = true, conflicts_with = "listen")]
    no_listen: bool,
}

/// A shared option by name, and whether it was given.
type GivenOption = (&'static str, bool);

impl SharedOptions {
    const DEFAULT_REGION: &str = "us-east-1";
    const DEFAULT_ACCOUNT_ID: &str = "123456789012";

    fn given(&self) -> [GivenOption; 6] {
        [
            ("--template", self.template.is_some()),
            ("--region", self.region.is_some()),
            ("--account-id", self.account_id.is_some()),
            ("--state-dir", self.state_dir.is_some()),
            ("--listen", self.listen.is_some()),
            ("--no-listen", self.no_listen),
        ]
    }

    /// Refuses the options given that `command` has no use for (it uses `used`).
    fn refuse_unused(&self, command: &str, used: &[&str]) -> Result<(), String> {
        match self
            .given()
            .into_iter()
            .find(|(name, given)| *given && !used.contains(name))
        {
            Some((name, _)) => Err(format!(
                "{name} is not an option of `kinesis-esm {command}`{}",
                match Self::users(name) {
                    "" => String::new(),
                    users => format!(" (only of {users})"),
                }
            )),
            None => Ok(()),
        }
    }

    /// The commands that take the option `name`, for a message.
    fn users(name: &str) -> &'static str {
        match name {
            "--template" | "--account-id" | "--state-dir" | "--listen" => "run and serve",
            "--region" => "run, serve, put, reshard, failures and dlq",
            "--no-listen" => "run",
            _ => "",
        }
    }

    /// These options with what the environment gives for those not given on the command line
    /// (`docs/production.md`): `KINESIS_ESM_TEMPLATE`, `_REGION`, `_STATE_DIR`, `_LISTEN`.
    fn with_run_environment(
        &self,
        variable: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let mut filled = self.clone();
        if filled.template.is_none() {
            filled.template = variable("KINESIS_ESM_TEMPLATE").map(Into::into);
        }
        if filled.region.is_none() {
            filled.region = variable("KINESIS_ESM_REGION");
        }
        if filled.state_dir.is_none() {
            filled.state_dir = variable("KINESIS_ESM_STATE_DIR").map(Into::into);
        }
        if filled.listen.is_none()
            && !filled.no_listen
            && let Some(listen) = variable("KINESIS_ESM_LISTEN")
        {
            filled.listen = Some(listen.parse().map_err(|_| {
                format!("KINESIS_ESM_LISTEN={listen} is not an address such as 0.0.0.0:4566")
            })?);
        }
        Ok(filled)
    }

    fn region(&self) -> String {
        self.region
            .clone()
            .unwrap_or_else(|| Self::DEFAULT_REGION.to_owned())
    }

    fn account_id(&self) -> String {
        self.account_id
            .clone()
            .unwrap_or_else(|| Self::DEFAULT_ACCOUNT_ID.to_owned())
    }
}

/// Which log lines are written, and how much of a function's lines (`docs/function-logs.md`).
#[derive(Debug, Clone, Args)]
struct LogOptions {
    /// The least severe lines written, the function's and the emulator's: trace, debug, info,
    /// warn, error. `KINESIS_ESM_LOG` (a `tracing` filter), when set, decides instead.
    #[arg(long, value_name = "LEVEL", default_value = "info", global = true)]
    log_level: LogLevel,
    /// The least severe of the function's lines written (by default, --log-level).
    #[arg(long, value_name = "LEVEL", global = true)]
    function_log_level: Option<LogLevel>,
    /// Writes the function's lines whole: the request id, the trace id and every span.
    #[arg(short, long, global = true, conflicts_with = "quiet")]
    verbose: bool,
    /// Writes no log line and no progress: the summary alone (and errors).
    #[arg(short, long, global = true)]
    quiet: bool,
}

/// A log level, as `--log-level` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl LogLevel {
    fn directive(self) -> &'static str {
        match self {
            Self::Trace => "trace",
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
        }
    }
}

impl LogOptions {
    /// The `tracing` filter these options give.
    fn filter(&self) -> String {
        if self.quiet {
            return "off".to_owned();
        }
        let mut filter = self.log_level.directive().to_owned();
        if let Some(level) = self.function_log_level {
            filter.push_str(&format!(
                ",{}={}",
                esm_engine::invoke::runtime_api::FUNCTION_LOG_TARGET,
                level.directive()
            ));
        }
        filter
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs the Kinesis event sources of a SAM template's functions.
    #[command(after_help = RUN_AFTER_HELP)]
    Run(Box<RunArgs>),
    /// Serves the embedded Kinesis alone, with no function: a local Kinesis for producers and
    /// tests, holding a template's streams, the streams named by --stream, or none.
    #[command(after_help = serve::SERVE_AFTER_HELP)]
    Serve(serve::ServeArgs),
    /// Publishes records to a stream, as a producer would (to `kinesis-esm run`'s endpoint by
    /// default).
    Put(commands::PutArgs),
    /// Splits or merges shards, or scales a stream.
    Reshard(commands::ReshardArgs),
    /// Writes Lambda-shaped Kinesis event files, for `cargo lambda invoke --data-file` or tests.
    Events(commands::EventsArgs),
    /// Shows what a running `kinesis-esm run` is doing: per mapping and shard, the lineage, state,
    /// checkpoint, lease owner, held record and iterator age.
    Status(commands::StatusArgs),
    /// Lists the on-failure records of discarded batches; `failures replay RECORD...` invokes the
    /// function with their records again (or publishes them with `--to-stream`).
    Failures(failures::FailuresArgs),
    /// Lists a dead-letter stream's records (lambda-kinesis' retry envelopes) decoded; `dlq
    /// redrive` publishes them back to the streams they first arrived on.
    Dlq(dlq::DlqArgs),
    /// Reads a running `kinesis-esm run`'s shards again, from a record, a time or the oldest
    /// record, without a restart (Lambda has no such operation).
    #[command(after_help = replay::REPLAY_AFTER_HELP)]
    Replay(replay::ReplayArgs),
}

/// How `run` stops and what its exit code says, for `run --help`.
const RUN_AFTER_HELP: &str = "\
Stopping:
  Ctrl-C or SIGTERM stops gracefully: no new batch starts, the batches in flight finish, their
  checkpoints are written, the leases are given up and the summary is printed. A second Ctrl-C
  or SIGTERM stops at once.

Exit codes:
  0    every record read was settled (acked, dropped or discarded)
  1    a shard is blocked on a held record
  2    an error: the template, a function's build, an endpoint, the options
  3    with --fail-on-discard: records were discarded (retries used up, or too old); this wins
       over 1
  4    a function never initialised: every execution environment started for it failed before
       it took an invocation (the summary names the function and the error); this wins over 1
       and 3
  130  a second Ctrl-C or SIGTERM stopped the run before the batches in flight finished";

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// What an exit code means, as `kinesis-esm` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Every record read was settled.
    Settled,
    /// At least one shard is blocked on a held record.
    Held,
    /// The run could not start or failed: bad template, function that does not build, ...
    Error,
    /// `run --fail-on-discard`: the run discarded records.
    Discarded,
    /// A function never initialised: its records were retried and discarded without one
    /// invocation reaching its handler.
    NeverInitialised,
    /// A second Ctrl-C or SIGTERM stopped the run at once, without waiting for the batches in
    /// flight (130, as a shell reports a command stopped by Ctrl-C).
    Interrupted,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        match exit {
            Exit::Settled => ExitCode::SUCCESS,
            Exit::Held => ExitCode::from(1),
            Exit::Error => ExitCode::from(2),
            Exit::Discarded => ExitCode::from(3),
            Exit::NeverInitialised => ExitCode::from(4),
            Exit::Interrupted => ExitCode::from(130),
        }
    }
}

impl Exit {
    /// How a run whose mappings ended as `finals` exits. A function that never initialised wins:
    /// nothing of its records reached it. Discarded records (with `fail_on_discard`) win over a
    /// held shard: they will not come again, a held record will.
    pub(crate) fn of_run(
        finals: &[esm_engine::mapping::MappingStatus],
        fail_on_discard: bool,
        never_initialised: bool,
    ) -> Self {
        if never_initialised {
            return Self::NeverInitialised;
        }
        let discarded = finals.iter().any(|status| status.totals().discarded > 0);
        let held = finals
            .iter()
            .any(|status| status.shards.values().any(|shard| shard.held.is_some()));
        match (fail_on_discard && discarded, held) {
            (true, _) => Self::Discarded,
            (false, true) => Self::Held,
            (false, false) => Self::Settled,
        }
    }
}

impl Cli {
    /// Runs the command line.
    pub async fn run(self) -> Exit {
        // While `run` works in a terminal, a line per shard stays at the bottom of the screen.
        let progress = match (&self.command, self.log_format) {
            _ if self.logs.quiet => None,
            (Command::Run(_), LogFormat::Text) => progress::Progress::for_terminal(),
            _ => None,
        };
        init_logging(self.log_format, &self.logs, progress.as_ref());
        let function_logs = function_binary::FunctionLogs {
            full: self.logs.verbose,
            json: self.log_format == LogFormat::Json,
            quiet: self.logs.quiet,
        };
        let result = match self.shared.fill(self.command) {
            Err(message) => Err(anyhow::Error::msg(message)),
            Ok(Command::Run(args)) => run::run(*args, progress, function_logs).await,
            Ok(Command::Serve(args)) => serve::serve(args, self.logs.quiet).await,
            Ok(Command::Put(args)) => commands::put(args).await.map(|()| Exit::Settled),
            Ok(Command::Reshard(args)) => commands::reshard(args).await.map(|()| Exit::Settled),
            Ok(Command::Events(args)) => commands::events(args).map(|()| Exit::Settled),
            Ok(Command::Status(args)) => commands::status(args).await.map(|()| Exit::Settled),
            Ok(Command::Failures(args)) => failures::failures(args, function_logs)
                .await
                .map(|()| Exit::Settled),
            Ok(Command::Dlq(args)) => dlq::dlq(args).await.map(|()| Exit::Settled),
            Ok(Command::Replay(args)) => replay::replay(args).await.map(|()| Exit::Settled),
        };
        match result {
            Ok(exit) => exit,
            Err(error) => {
                say!("kinesis-esm: {error:#}");
                Exit::Error
            }
        }
    }
}

impl SharedOptions {
    /// `command`, with the shared options it takes filled in; an error for one it does not
    /// take.
    fn fill(&self, mut command: Command) -> Result<Command, String> {
        let shared = self;
        match &mut command {
            Command::Run(args) => {
                shared.refuse_unused("run", &SHARED_BY_RUN)?;
                // Only `run` reads these from the environment too: a variable set for the
                // service must not make `status` or `put` in the same shell refuse it.
                let shared = &shared.with_run_environment(&|name| std::env::var(name).ok())?;
                args.template = shared
                    .template
                    .clone()
                    .unwrap_or_else(|| "template.yaml".into());
                args.region = shared.region();
                args.account_id = shared.account_id();
                args.state_dir.clone_from(&shared.state_dir);
                args.listen = shared.listen;
                args.no_listen = shared.no_listen;
            }
            Command::Serve(args) => {
                shared.refuse_unused("serve", &SHARED_BY_SERVE)?;
                args.template.clone_from(&shared.template);
                args.region = shared.region();
                args.account_id = shared.account_id();
                args.state_dir.clone_from(&shared.state_dir);
                args.listen = shared.listen;
            }
            Command::Put(args) => {
                shared.refuse_unused("put", &["--region"])?;
                args.target.region = shared.region();
            }
            Command::Reshard(args) => {
                shared.refuse_unused("reshard", &["--region"])?;
                args.target.region = shared.region();
            }
            Command::Events(_) => shared.refuse_unused("events", &[])?,
            Command::Status(_) => shared.refuse_unused("status", &[])?,
            Command::Replay(_) => shared.refuse_unused("replay", &[])?,
            Command::Failures(args) => {
                shared.refuse_unused(
                    "failures",
                    &["--region", "--state-dir", "--template", "--account-id"],
                )?;
                args.target.region = shared.region();
                args.state_dir.clone_from(&shared.state_dir);
                args.template = shared
                    .template
                    .clone()
                    .unwrap_or_else(|| "template.yaml".into());
                args.account_id = shared.account_id();
            }
            Command::Dlq(args) => {
                shared.refuse_unused("dlq", &["--region"])?;
                args.target.region = shared.region();
            }
        }
        Ok(command)
    }
}

/// The shared options `run` takes: all of them.
const SHARED_BY_RUN: [&str; 6] = [
    "--template",
    "--region",
    "--account-id",
    "--state-dir",
    "--listen",
    "--no-listen",
];

/// The shared options `serve` takes: all but `--no-listen` (serving is all it does).
const SHARED_BY_SERVE: [&str; 5] = [
    "--template",
    "--region",
    "--account-id",
    "--state-dir",
    "--listen",
];

fn init_logging(format: LogFormat, options: &LogOptions, progress: Option<&progress::Progress>) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("KINESIS_ESM_LOG")
        .unwrap_or_else(|_| EnvFilter::new(options.filter()));
    // Colours only on a terminal: piped into a file or a CI log, escape codes are noise.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    // A second initialisation (in tests) keeps the first subscriber.
    let _ = match (format, progress) {
        (LogFormat::Json, _) => builder.json().with_writer(|| StderrLines).try_init(),
        (LogFormat::Text, Some(progress)) => builder
            .with_target(false)
            .with_writer(progress.log_writer())
            .try_init(),
        (LogFormat::Text, None) => builder
            .with_target(false)
            .with_writer(|| StderrLines)
            .try_init(),
    };
}

/// Reads durations such as `250ms`, `2s` or `1m` (a bare number is seconds).
pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as 250ms, 2s or 1m"))?;
    let seconds = match unit {
        "ms" => number / 1000.0,
        "s" | "" => number,
        "m" => number * 60.0,
        _ => return Err(format!("`{text}`: the unit must be ms, s or m")),
    };
    std::time::Duration::try_from_secs_f64(seconds).map_err(|error| format!("`{text}`: {error}"))
}

/// An endpoint given on the command line: placeholder credentials unless the environment has
/// real ones (local stand-ins accept anything; a real endpoint needs real credentials).
fn connection_to(endpoint: &str) -> esm_engine::aws::AwsConnection {
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_some() {
        esm_engine::aws::AwsConnection::from_environment().with_endpoint_url(endpoint)
    } else {
        esm_engine::aws::AwsConnection::local(endpoint)
    }
}

/// Standard error for logs, ignoring a closed stream: `tracing-subscriber` panics (through
/// `eprintln!`) when its writer fails, and a log reader that went away (`| head`) must not stop
/// the run.
struct StderrLines;

impl std::io::Write for StderrLines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use esm_engine::mapping::{HeldRecord, MappingStatus, ShardStatus};

    fn ended(discarded: u64, held: bool) -> MappingStatus {
        let shard = ShardStatus {
            shard_id: "shardId-000000000000".to_owned(),
            discarded,
            held: held.then(|| HeldRecord {
                sequence_number: "1".parse().expect("a sequence number"),
                failed_deliveries: 2,
                reason: "function error".to_owned(),
                retries_capped: false,
                next_retry: None,
            }),
            ..ShardStatus::default()
        };
        MappingStatus {
            shards: [(shard.shard_id.clone(), shard)].into(),
            ..MappingStatus::default()
        }
    }

    #[test]
    fn run_reads_the_options_not_given_from_the_environment() {
        let environment = |name: &str| match name {
            "KINESIS_ESM_TEMPLATE" => Some("/srv/template.yaml".to_owned()),
            "KINESIS_ESM_REGION" => Some("eu-west-1".to_owned()),
            "KINESIS_ESM_LISTEN" => Some("0.0.0.0:4566".to_owned()),
            _ => None,
        };
        let given = SharedOptions {
            region: Some("us-west-2".to_owned()),
            ..SharedOptions::default()
        };
        let filled = given
            .with_run_environment(&environment)
            .expect("the environment is read");
        assert_eq!(
            filled.template.as_deref(),
            Some(std::path::Path::new("/srv/template.yaml"))
        );
        assert_eq!(filled.region(), "us-west-2", "the command line wins");
        assert_eq!(filled.listen, Some("0.0.0.0:4566".parse().unwrap()));
        assert_eq!(filled.state_dir, None);
        let bad = |name: &str| (name == "KINESIS_ESM_LISTEN").then(|| "port 80".to_owned());
        assert_eq!(
            SharedOptions::default()
                .with_run_environment(&bad)
                .unwrap_err(),
            "KINESIS_ESM_LISTEN=port 80 is not an address such as 0.0.0.0:4566"
        );
    }

    #[test]
    fn a_run_that_discarded_exits_3_only_with_fail_on_discard() {
        let cases = [
            // (discarded, held, --fail-on-discard, exit)
            (0, false, false, Exit::Settled),
            (0, false, true, Exit::Settled),
            (0, true, true, Exit::Held),
            (6, false, false, Exit::Settled),
            (6, true, false, Exit::Held),
            (6, false, true, Exit::Discarded),
            (6, true, true, Exit::Discarded),
        ];
        for (discarded, held, fail_on_discard, expected) in cases {
            assert_eq!(
                Exit::of_run(
                    &[ended(0, false), ended(discarded, held)],
                    fail_on_discard,
                    false
                ),
                expected,
                "discarded {discarded}, held {held}, --fail-on-discard {fail_on_discard}"
            );
        }
        assert_eq!(ExitCode::from(Exit::Discarded), ExitCode::from(3));
    }

    #[test]
    fn a_function_that_never_initialised_exits_4_over_held_and_discarded() {
        for fail_on_discard in [false, true] {
            assert_eq!(
                Exit::of_run(&[ended(6, true)], fail_on_discard, true),
                Exit::NeverInitialised
            );
        }
        assert_eq!(ExitCode::from(Exit::NeverInitialised), ExitCode::from(4));
    }
}
