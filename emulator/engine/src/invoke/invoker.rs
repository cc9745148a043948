//! The invoker's vocabulary: an invocation, how it ended or why it never reached the function,
//! and the [`Invoker`] trait every way of invoking implements.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;

use super::error_type::ErrorType;

/// One invocation of the function.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The request id (`Lambda-Runtime-Aws-Request-Id`).
    pub request_id: String,
    /// The event, as JSON.
    pub payload: Bytes,
    /// When the function must have answered (now plus the function's `Timeout`).
    pub deadline: SystemTime,
}

impl Invocation {
    /// An invocation with a fresh request id, due `timeout` from now.
    pub fn new(payload: impl Into<Bytes>, timeout: Duration) -> Self {
        Self {
            request_id: uuid::Uuid::new_v4().to_string(),
            payload: payload.into(),
            deadline: SystemTime::now() + timeout,
        }
    }

    /// The deadline in milliseconds since the Unix epoch (`Lambda-Runtime-Deadline-Ms`).
    pub fn deadline_millis(&self) -> u64 {
        self.deadline
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64)
    }
}

/// How an invocation that reached the function ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvokeOutcome {
    /// The function returned normally with this body (which may still report failed items).
    Response(Bytes),
    /// The function reported an error or crashed: the whole batch failed (`Unhandled`).
    FunctionError {
        /// The error's type: one Lambda reports (`Runtime.ExitError`) or the handler's own.
        error_type: ErrorType,
        /// The error's message.
        message: String,
    },
    /// The function did not answer before its deadline (`Sandbox.Timedout`): the whole batch
    /// failed.
    Timeout,
}

/// Why an invocation never reached the function: the event source mapping retries it without
/// charging a retry attempt, as Lambda does for throttles and service errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvokeError {
    /// The function could not be reached (not started, not listening, connection refused).
    #[error("the function could not be reached: {message}")]
    Unreachable {
        /// What went wrong.
        message: String,
    },
    /// The invoke target answered that it has no function by that name (Lambda's and SAM's
    /// `ResourceNotFoundException`, `cargo lambda watch`'s `Missing function`): a configuration
    /// error that no retry mends.
    #[error("the invoke target has no such function: {message}")]
    NoSuchFunction {
        /// What the target said.
        message: String,
    },
    /// The invoke target throttled the call.
    #[error("the invocation was throttled: {message}")]
    Throttled {
        /// What the target said.
        message: String,
    },
}

/// A way to invoke a function.
#[async_trait]
pub trait Invoker: Send + Sync {
    /// Invokes the function once, synchronously (`RequestResponse`).
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeOutcome, InvokeError>;

    /// Stops whatever the invoker started (processes, servers). Invocations after it fail.
    async fn shutdown(&self) {}

    /// Whether the function never initialised: every execution environment started for it
    /// failed before it took an invocation. Only invokers that start the function know.
    fn never_initialised(&self) -> Option<NeverInitialised> {
        None
    }

    /// The execution environments of a function on Lambda Managed Instances, where one runs
    /// several invocations at once. Only invokers that start the function know.
    fn shared_environments(&self) -> Option<SharedEnvironments> {
        None
    }

    /// The execution environments of a function on Lambda Managed Instances running now, each
    /// with the invocations it has in flight; empty for any other function, and for invokers
    /// that do not start the function.
    fn environments_in_flight(&self) -> Vec<EnvironmentInFlight> {
        Vec::new()
    }
}

/// One running execution environment of a function on Lambda Managed Instances, and how many
/// invocations it has in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EnvironmentInFlight {
    /// The environment's number, counted from 1 in the order they were started.
    pub number: u64,
    /// How many invocations it has in flight.
    pub in_flight: usize,
}

/// What a function on Lambda Managed Instances used: environments, each running several
/// invocations at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedEnvironments {
    /// How many execution environments were started (restarts included).
    pub started: u64,
    /// The most invocations one environment had in flight at once.
    pub most_in_flight: usize,
    /// How many one may have (`PerExecutionEnvironmentMaxConcurrency`).
    pub concurrency: usize,
}

/// A function none of whose execution environments initialised: each failed before it took an
/// invocation (an init error, an exit, or no request for an invocation in time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeverInitialised {
    /// How many execution environments failed to initialise.
    pub environments: u64,
    /// The last of their failures, in words (`ErrorType: message`).
    pub last_failure: String,
}
