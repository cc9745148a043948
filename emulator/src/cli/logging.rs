//! How logs are written: which lines (`--log-level`, `--quiet`, ...), in which format, to
//! standard error or beneath the progress lines.

use clap::{Args, ValueEnum};

use super::progress;

/// Which log lines are written, and how much of a function's lines (`docs/function-logs.md`).
#[derive(Debug, Clone, Args)]
pub(super) struct LogOptions {
    /// The least severe lines written, the function's and the emulator's: trace, debug, info,
    /// warn, error. `KINESIS_ESM_LOG` (a `tracing` filter), when set, decides instead.
    #[arg(long, value_name = "LEVEL", default_value = "info", global = true)]
    log_level: LogLevel,
    /// The least severe of the function's lines written (by default, --log-level).
    #[arg(long, value_name = "LEVEL", global = true)]
    function_log_level: Option<LogLevel>,
    /// Writes the function's lines whole: the request id, the trace id and every span.
    #[arg(short, long, global = true, conflicts_with = "quiet")]
    pub(super) verbose: bool,
    /// Writes no log line and no progress: the summary alone (and errors).
    #[arg(short, long, global = true)]
    pub(super) quiet: bool,
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

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

pub(super) fn init_logging(
    format: LogFormat,
    options: &LogOptions,
    progress: Option<&progress::Progress>,
) {
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
