//! What the `aws_*` tests share: the local servers' endpoints, unique names, a fault-injecting
//! proxy and the lease store contract.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

// One proxy serves these tests and the workspace's end-to-end tests; its items are `pub` there.
#[allow(unreachable_pub, dead_code)]
#[path = "../../../../tests/support/aws/fault_proxy.rs"]
pub(crate) mod fault_proxy;
pub(crate) mod lease_contract;

use std::time::Duration;

/// How long any one step of a test may take before the test fails.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// Reads a local server's endpoint from the variable `scripts/local-stack run` sets; fails the
/// test (never skips it) when the variable is missing.
fn endpoint(variable: &str) -> String {
    match std::env::var(variable) {
        Ok(endpoint) if !endpoint.is_empty() => endpoint,
        _ => panic!(
            "{variable} is not set. These tests need the local Kinesis and DynamoDB servers: run them \
             through `scripts/local-stack run -- cargo test -p kinesis-esm --test 'aws_*'`"
        ),
    }
}

/// kinesis-local's endpoint.
pub(crate) fn kinesis_endpoint() -> String {
    endpoint("KINESIS_ENDPOINT")
}

/// dynalite's endpoint.
pub(crate) fn dynamodb_endpoint() -> String {
    endpoint("DYNAMODB_ENDPOINT")
}

/// A stream or table name no other test (or earlier run against the same servers) uses.
pub(crate) fn unique_name(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &id[..12])
}

/// Logs to the test output when `RUST_LOG` is set.
pub(crate) fn init_logging() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// Fails the test if `future` takes longer than [`TIMEOUT`].
pub(crate) async fn within_timeout<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(TIMEOUT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {TIMEOUT:?}"))
}
