//! The `kinesis-esm` command line.

/// Writes a line to standard error for the user, ignoring a closed stderr (piped into `head`):
/// unlike `eprintln!`, it never panics.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod command_line;
mod commands;
mod connection;
mod control_client;
mod destinations;
mod dlq;
mod duration;
mod exit;
mod failures;
mod function_binary;
mod listen_failure;
mod logging;
mod page_actions;
mod port_owner;
mod progress;
mod replay;
mod run;
mod sam_options;
mod serve;
mod shared_options;

pub use command_line::Cli;
pub use commands::STATUS_PATH;
pub use exit::Exit;
pub use logging::LogFormat;
pub use run::RunArgs;
