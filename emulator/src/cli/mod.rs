//! The `kinesis-esm` command line.

mod run;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

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
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs the Kinesis event sources of a SAM template's functions.
    Run(RunArgs),
}

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
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        match exit {
            Exit::Settled => ExitCode::SUCCESS,
            Exit::Held => ExitCode::from(1),
            Exit::Error => ExitCode::from(2),
        }
    }
}

impl Cli {
    /// Runs the command line.
    pub async fn run(self) -> Exit {
        init_logging(self.log_format);
        let result = match self.command {
            Command::Run(args) => run::run(args).await,
        };
        match result {
            Ok(exit) => exit,
            Err(error) => {
                eprintln!("kinesis-esm: {error:#}");
                Exit::Error
            }
        }
    }
}

fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("KINESIS_ESM_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only on a terminal: piped into a file or a CI log, escape codes are noise.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    // A second initialisation (in tests) keeps the first subscriber.
    let _ = match format {
        LogFormat::Text => builder.with_target(false).try_init(),
        LogFormat::Json => builder.json().try_init(),
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
