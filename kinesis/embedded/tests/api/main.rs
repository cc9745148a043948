//! The embedded Kinesis over the Kinesis API, driven as applications drive Kinesis: by
//! `aws-sdk-kinesis` (streams, records, resharding, enhanced fan-out, throttling, a stream's
//! settings, tags by ARN, the account's limits), by raw HTTP for the envelope, and by boto3,
//! the aws CLI and CBOR requests from Python (`tests/clients/`).
//!
//! Run with `cargo test -p embedded-kinesis --test api`. Each test starts its own endpoint on
//! a free loopback port. The Python clients are installed into `.local/venv` on first use by
//! `tests/clients/python-tools` (python3 and PyPI needed once).

mod account;
mod cbor;
mod clients;
mod distribution;
mod efo;
mod fidelity;
mod large_records;
mod sdk;
mod settings;
mod support;
mod tags;
mod throttle;
