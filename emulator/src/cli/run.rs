//! `kinesis-esm run`: the template's streams and functions, with their event source mappings.
//! `command.rs` is the run's order of events; `args.rs` its options, `streams.rs` the Kinesis it
//! reads, `invoker.rs` how each function is invoked, `start.rs` the functions and mappings
//! started, `stop.rs` how the run ends, `signals.rs` Ctrl-C and SIGTERM, `fan_out.rs` the source
//! of a mapping that reads through a stream consumer, `provision.rs` the template's tables,
//! queues, topics and buckets made before it starts.

mod args;
mod command;
mod fan_out;
mod invoker;
mod provision;
mod signals;
mod start;
mod stop;
mod streams;

pub use self::args::RunArgs;
pub(super) use self::command::run;
pub(crate) use self::signals::StopSignals;
