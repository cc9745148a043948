//! The command line as a whole: the commands, the options they share, and how one runs.

use clap::{Parser, Subcommand};

use super::exit::Exit;
use super::logging::{LogFormat, LogOptions, init_logging};
use super::run::RunArgs;
use super::shared_options::SharedOptions;
use super::{commands, dlq, failures, function_binary, progress, replay, run, serve};

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
