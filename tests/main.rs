//! End-to-end tests of the emulator: the shipping function and fixtures run through event source
//! mappings over the embedded Kinesis, over kinesis-local and dynalite (the `aws_*` modules, which
//! need `scripts/local-stack run -- cargo test ...`), and the `kinesis-esm` command run as a process.
//!
//! Run with `cargo test -p end-to-end`; set `RUST_LOG=debug` to see the mapping's logs. The
//! tests build what they run (the shipping `bootstrap`, `kinesis-esm`, the fixture functions
//! under `tests/fixtures/functions`) with cargo, once per run.
//!
//! The tests run on tokio's current-thread runtime (`#[tokio::test]`), so the mapping's tasks
//! and the test take turns on one thread: an observer's events and the status then change in
//! exactly the order the mapping made the changes, with no other thread in between.

mod aws_balance;
mod aws_chaos;
mod aws_destinations;
mod aws_fan_out;
mod aws_faults;
mod aws_fencing;
mod aws_idempotency;
mod aws_kill;
mod aws_lease_warning;
mod aws_reads;
mod aws_replay;
mod aws_resharding;
mod aws_resharding_twice;
mod aws_restart;
mod aws_status;
mod aws_template_resources;
mod cargo_lambda;
mod checkpoints;
mod cli;
mod cli_errors;
mod commands;
mod contract;
mod failures_replay;
mod fan_out;
mod filtering;
mod function_logs;
mod health;
mod kpl;
mod managed_instances;
mod metrics;
mod oversize_records;
mod page;
mod parallelization;
mod publish;
mod replay;
mod resharding;
mod resharding_twice;
mod responses;
mod restart;
mod retry_streams;
mod shipping_settings;
mod state_dir;
mod state_dir_restart;
mod summary;
mod throttle;
mod windows;
