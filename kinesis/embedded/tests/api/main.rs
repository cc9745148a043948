//! The embedded Kinesis over the Kinesis API, driven by `aws-sdk-kinesis` as an application
//! drives Kinesis: the operations beside records and shards (a stream's settings, tags by ARN,
//! the account's limits and settings).
//!
//! Run with `cargo test -p embedded-kinesis --test api`. Each test starts its own endpoint on
//! a free loopback port; nothing else needs to run.

mod account;
mod distribution;
mod large_records;
mod settings;
mod support;
mod tags;
