//! What the `aws_*` tests share: the local servers' endpoints, unique names, a fault-injecting
//! proxy (all from the workspace's `test-support` crate) and the lease store contract.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub(crate) mod lease_contract;

use std::time::Duration;

pub(crate) use test_support::fault_proxy;
pub(crate) use test_support::{dynamodb_endpoint, init_logging, kinesis_endpoint, unique_name};

/// How long any one step of a test may take before the test fails.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// Fails the test if `future` takes longer than [`TIMEOUT`].
pub(crate) async fn within_timeout<T>(what: &str, future: impl Future<Output = T>) -> T {
    test_support::within_time(TIMEOUT, what, future).await
}
