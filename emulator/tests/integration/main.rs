//! The emulator's integration tests, in one test binary: each links the AWS SDKs, and one link
//! is much cheaper than nine.
//!
//! Run with `scripts/local-stack run -- cargo test --workspace --test integration`: the
//! `aws_*` modules talk to kinesis-local and dynalite, which that script starts. (With
//! `-p kinesis-esm` cargo unifies the SDKs' features apart from the workspace build's and
//! builds them again.)

mod aws_dynamo;
mod aws_faults;
mod aws_kinesis;
mod embedded_kinesis;
mod endpoint;
mod invoke_api;
mod runtime_api;
mod sdk_source;
mod support;
mod template;
