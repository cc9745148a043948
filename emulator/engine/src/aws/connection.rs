//! How the AWS backends reach Kinesis and DynamoDB: endpoint, region, credentials, timeouts.
//!
//! Two starting points:
//!
//! - [`AwsConnection::from_environment`]: real AWS, or whatever the SDK's standard settings name.
//!   The endpoint comes from `AWS_ENDPOINT_URL_KINESIS` / `AWS_ENDPOINT_URL_DYNAMODB`, else
//!   `AWS_ENDPOINT_URL`, else the service's AWS endpoint; region and credentials come from the
//!   standard chains (environment, shared config and credentials files with profiles, web
//!   identity, a credentials process, ECS and EC2 instance metadata). SSO profiles are not
//!   supported: the SSO clients would add two more SDK crates to every build.
//! - [`AwsConnection::local`]: a local stand-in (kinesis-local, dynalite, moto) at a given
//!   endpoint, with fixed placeholder credentials (local servers check that requests are signed,
//!   not by whom) and `us-east-1` unless another region is set. Nothing is read from the
//!   environment, so tests never probe the instance metadata address.
//!
//! An endpoint given explicitly ([`AwsConnection::with_endpoint_url`], the command line's
//! `--kinesis-endpoint`) wins over the environment's.
//!
//! **Retries.** The SDK's own retries are turned off: every failure reaches the backend, which
//! reports it with its kind ([`kinesis_source::SourceError::Throttled`],
//! [`crate::lease::LeaseError::Unavailable`], ...) at once, and the caller pauses with
//! [`crate::backoff::Backoff`]. Retrying in two layers would multiply the pauses, hide
//! throttling from the mapping's pacing, and replay conditional writes behind the lease store's
//! back. Each attempt has a timeout, so a server that stops answering is a failure, not a hang.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_kinesis::config::Credentials;

/// The region used with local servers when none is set.
pub const LOCAL_REGION: &str = "us-east-1";

/// Where and as whom to reach AWS services.
#[derive(Debug, Clone)]
pub struct AwsConnection {
    endpoint_url: Option<String>,
    region: Option<String>,
    credentials: Option<Credentials>,
    connect_timeout: Duration,
    attempt_timeout: Duration,
}

/// Why no SDK configuration could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionError {
    /// No region was given and the standard chain found none.
    #[error("no AWS region: set AWS_REGION (or a profile's region), or pass a region explicitly")]
    NoRegion,
}

impl AwsConnection {
    /// Real AWS (or the endpoints the standard environment variables name), with the standard
    /// region and credential chains.
    pub fn from_environment() -> Self {
        Self {
            endpoint_url: None,
            region: None,
            credentials: None,
            connect_timeout: Duration::from_secs(3),
            attempt_timeout: Duration::from_secs(10),
        }
    }

    /// A local server at `endpoint_url` (such as `http://127.0.0.1:4567`), with placeholder
    /// credentials and region [`LOCAL_REGION`].
    pub fn local(endpoint_url: impl Into<String>) -> Self {
        Self::from_environment()
            .with_endpoint_url(endpoint_url)
            .with_region(LOCAL_REGION)
            .with_static_credentials("local", "local")
    }

    /// Sends every call to this endpoint, whatever the environment says.
    pub fn with_endpoint_url(mut self, endpoint_url: impl Into<String>) -> Self {
        self.endpoint_url = Some(endpoint_url.into());
        self
    }

    /// Uses this region, whatever the environment says.
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// Signs with these keys instead of the standard credential chain.
    pub fn with_static_credentials(
        mut self,
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
    ) -> Self {
        self.credentials = Some(Credentials::new(
            access_key_id,
            secret_access_key,
            None,
            None,
            "kinesis-esm",
        ));
        self
    }

    /// Fails an attempt that has not got its answer within `timeout` (default 10 s), and a
    /// connection not made within `connect` (default 3 s).
    pub fn with_timeouts(mut self, connect: Duration, timeout: Duration) -> Self {
        self.connect_timeout = connect;
        self.attempt_timeout = timeout;
        self
    }

    /// The endpoint given explicitly, if any.
    pub fn endpoint_url(&self) -> Option<&str> {
        self.endpoint_url.as_deref()
    }

    /// Resolves the configuration: reads the environment for what was not given explicitly.
    pub async fn sdk_config(&self) -> Result<SdkConfig, ConnectionError> {
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .retry_config(RetryConfig::disabled())
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(self.connect_timeout)
                    .operation_attempt_timeout(self.attempt_timeout)
                    .build(),
            );
        if let Some(endpoint_url) = &self.endpoint_url {
            loader = loader.endpoint_url(endpoint_url);
        }
        if let Some(region) = &self.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if let Some(credentials) = &self.credentials {
            loader = loader.credentials_provider(credentials.clone());
        }
        let config = loader.load().await;
        if config.region().is_none() {
            return Err(ConnectionError::NoRegion);
        }
        Ok(config)
    }
}

impl Default for AwsConnection {
    fn default() -> Self {
        Self::from_environment()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_local_connection_needs_nothing_from_the_environment() {
        let config = AwsConnection::local("http://127.0.0.1:1")
            .sdk_config()
            .await
            .unwrap();
        assert_eq!(config.region().map(Region::as_ref), Some(LOCAL_REGION));
        assert_eq!(config.endpoint_url(), Some("http://127.0.0.1:1"));
        assert_eq!(
            config.retry_config().map(RetryConfig::max_attempts),
            Some(1),
            "the SDK must not retry behind the backends' backs"
        );
        assert!(config.credentials_provider().is_some());
    }

    #[tokio::test]
    async fn an_explicit_region_wins() {
        let config = AwsConnection::local("http://127.0.0.1:1")
            .with_region("eu-west-1")
            .sdk_config()
            .await
            .unwrap();
        assert_eq!(config.region().map(Region::as_ref), Some("eu-west-1"));
    }
}
