//! How an Invoke API invoker is set up: its options, and why it could not be made.

use std::time::Duration;

/// How an [`InvokeApi`](super::InvokeApi) waits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InvokeApiOptions {
    /// The version or alias to invoke (`Qualifier`). Default none: the unqualified function.
    pub qualifier: Option<String>,
    /// How long after the invocation's deadline an answer is still awaited before the
    /// invocation counts as timed out. It covers the network and the target's own timeout
    /// handling: Lambda stops the function at its deadline and answers `Sandbox.Timedout`.
    /// Default 1 second.
    pub grace: Duration,
    /// How long making a connection (name lookup, TCP, TLS) may take before the target counts
    /// as unreachable. Default 2 seconds. An invocation always waits at least this long plus
    /// [`grace`](Self::grace), so that a slow connection is reported as one, not as a timeout.
    pub connect_timeout: Duration,
}

impl Default for InvokeApiOptions {
    fn default() -> Self {
        Self {
            qualifier: None,
            grace: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(2),
        }
    }
}

/// Why an [`InvokeApi`](super::InvokeApi) could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The endpoint is not an `http://` or `https://` URL.
    #[error("invalid Invoke API endpoint `{endpoint}`: {reason}")]
    InvalidEndpoint {
        /// The endpoint given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The function name is empty.
    #[error("the function name is empty (Invoke API endpoint {endpoint})")]
    NoFunctionName {
        /// The endpoint the function was to be invoked at.
        endpoint: String,
    },
    /// The SDK configuration names no region, so neither the endpoint nor the signature can be
    /// made.
    #[error(
        "no AWS region to invoke function `{function_name}` in: set AWS_REGION (or a profile's region)"
    )]
    NoRegion {
        /// The function to invoke.
        function_name: String,
    },
    /// The SDK configuration has no credentials provider.
    #[error("no AWS credentials provider to sign the invocations of function `{function_name}`")]
    NoCredentials {
        /// The function to invoke.
        function_name: String,
    },
    /// TLS could not be set up: for an `https://` endpoint, the system's trusted certificates
    /// could not be loaded.
    #[error("could not set up TLS for {endpoint}: {source}")]
    Tls {
        /// The endpoint.
        endpoint: String,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
}
