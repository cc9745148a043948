//! Backends on real AWS services (or local stand-ins that speak their APIs).
//!
//! - [`kinesis::SdkKinesis`]: a [`kinesis_source::ShardSource`] over `aws-sdk-kinesis`.
//! - [`dynamo::DynamoLeaseStore`]: a [`crate::lease::LeaseStore`] over `aws-sdk-dynamodb`, in a
//!   table a KCL application can read.
//! - [`connection::AwsConnection`]: endpoint, region, credentials and timeouts for both.
//! - [`Backoff`] (re-exported from [`crate::backoff`]): the pauses a caller takes between attempts, since neither backend
//!   retries by itself.
//!
//! For tests and local runs, `scripts/local-stack up` starts kinesis-local and dynalite on free
//! loopback ports and prints their endpoints; `AwsConnection::local(endpoint)` reaches them.

pub mod connection;
pub mod dynamo;
pub mod failure;
pub mod fan_out;
pub mod kinesis;

pub use crate::backoff::{Backoff, BackoffConfig, RetryError, RetryKind, Retryable};
/// [`connection`] under its former name, `aws::config`.
pub use connection as config;
pub use connection::{AwsConnection, ConnectionError};
pub use dynamo::{DynamoLeaseStore, TableError};
pub use fan_out::SdkSubscriber;
pub use kinesis::{ReadPacing, SdkKinesis};
