//! The adapter's behaviour, seen from a function crate: one test binary, one module per area.
//!
//! Run with `cargo test -p lambda-kinesis --test adapter`.

mod support;

mod aggregated;
mod concurrency;
mod deadline;
mod errors;
mod events;
mod guard;
mod keyless;
mod lanes;
mod panics;
mod response;
mod runtime_api;
mod service;
mod shapes;
mod state;
mod undecodable;
