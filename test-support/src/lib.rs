//! What the workspace's tests against local servers share: the endpoints of the servers
//! `scripts/local-stack` starts, names no other test uses, logs shown only when `RUST_LOG` is
//! set, waits that fail a test instead of hanging, a fault-injecting proxy ([`fault_proxy`]),
//! and one interception wrapper for each seam of kinesis-esm ([`intercept`]).
//!
//! A dev-dependency of the crates whose tests or benchmarks talk to kinesis-local and dynalite.

pub mod fault_proxy;
pub mod intercept;

use std::time::Duration;

/// Reads a local server's endpoint from the variable `scripts/local-stack run` sets; fails the
/// test (never skips it) when the variable is missing.
pub fn endpoint(variable: &str) -> String {
    match std::env::var(variable) {
        Ok(endpoint) if !endpoint.is_empty() => endpoint,
        _ => panic!(
            "{variable} is not set. This needs the local Kinesis and DynamoDB servers: run it \
             through `scripts/local-stack run -- cargo ...` (for instance `scripts/local-stack \
             run -- cargo test -p end-to-end aws_` or `... -p kinesis-esm --test integration aws_`)"
        ),
    }
}

/// kinesis-local's endpoint (`KINESIS_ENDPOINT`).
pub fn kinesis_endpoint() -> String {
    endpoint("KINESIS_ENDPOINT")
}

/// dynalite's endpoint (`DYNAMODB_ENDPOINT`).
pub fn dynamodb_endpoint() -> String {
    endpoint("DYNAMODB_ENDPOINT")
}

/// moto's server, serving SQS, SNS and S3 (`MOTO_ENDPOINT`).
pub fn moto_endpoint() -> String {
    endpoint("MOTO_ENDPOINT")
}

/// A stream or table name no other test (or earlier run against the same servers) uses.
pub fn unique_name(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..12])
}

/// Logs to the test output, only when `RUST_LOG` is set.
pub fn init_logging() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// Awaits `future`, failing the test if it takes longer than `limit`.
pub async fn within_time<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {limit:?} waiting for {what}"))
}
