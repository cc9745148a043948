//! Invoking the function: how a batch's event reaches it and its answer comes back.
//!
//! Every invoker takes the event as Lambda's JSON bytes and gives the function's answer back as
//! bytes, so the event and the response always take the path they take on Lambda.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use lambda_kinesis::KinesisAdapter;
use lambda_kinesis::handler::{FromRecordData, Handler};
use lambda_kinesis::lambda_runtime::{Context, Diagnostic, LambdaEvent};
use lambda_kinesis::tower::{Service, ServiceExt as _};
use lambda_kinesis::window::event::WindowEvent;
use lambda_kinesis::window::{WindowAdapter, WindowHandler};
use lambda_kinesis::wire::KinesisBatch;

pub mod invoke_api;
pub mod runtime_api;

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
        /// The error's type, such as `Runtime.ExitError` or the handler's own type.
        error_type: String,
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

type BoxedCall = Box<
    dyn Fn(
            LambdaEvent<KinesisBatch>,
        ) -> Pin<Box<dyn Future<Output = Result<Bytes, Diagnostic>> + Send>>
        + Send
        + Sync,
>;

/// Invokes a function in this process: the same handler value (or service) `lambda_kinesis::run`
/// takes. The event is still read from its JSON and the response written as JSON, as the Lambda
/// runtime does, so the function sees exactly what it would see on Lambda.
pub struct InProcess {
    call: BoxedCall,
}

impl fmt::Debug for InProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("InProcess")
    }
}

impl InProcess {
    /// Invokes `handler` with the adapter's default rules, as `lambda_kinesis::run(handler)` does.
    pub fn handler<H, T, K>(handler: H) -> Self
    where
        H: Handler<T, K>,
        T: 'static,
        K: 'static,
    {
        Self::service(KinesisAdapter::new(handler))
    }

    /// Invokes any service the Lambda runtime could run over a Kinesis event, such as a
    /// configured [`KinesisAdapter`] with layers around it.
    pub fn service<S>(service: S) -> Self
    where
        S: Service<LambdaEvent<KinesisBatch>> + Clone + Send + Sync + 'static,
        S::Future: Send,
        S::Response: serde::Serialize,
        S::Error: Into<Diagnostic>,
    {
        let call: BoxedCall = Box::new(move |event| {
            let service = service.clone();
            Box::pin(async move {
                let response = service.oneshot(event).await.map_err(Into::into)?;
                serde_json::to_vec(&response)
                    .map(Bytes::from)
                    .map_err(|error| Diagnostic {
                        error_type: "Runtime.SerializationError".to_owned(),
                        error_message: error.to_string(),
                    })
            })
        });
        Self { call }
    }
}

#[async_trait]
impl Invoker for InProcess {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeOutcome, InvokeError> {
        // As the runtime does: read the payload, then hand it to the service with a context.
        let batch = match KinesisBatch::from_json(&invocation.payload) {
            Ok(batch) => batch,
            Err(error) => {
                return Ok(InvokeOutcome::FunctionError {
                    error_type: "Runtime.DeserializationError".to_owned(),
                    message: error.to_string(),
                });
            }
        };
        let mut context = Context::default();
        context.request_id = invocation.request_id.clone();
        context.deadline = invocation.deadline_millis();
        let remaining = invocation
            .deadline
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        let call = (self.call)(LambdaEvent::new(batch, context));
        // A panic outside the adapter's per-record guard would kill a real runtime: an
        // unhandled function error.
        let mut running = tokio::spawn(call);
        match tokio::time::timeout(remaining, &mut running).await {
            Err(_elapsed) => {
                running.abort();
                Ok(InvokeOutcome::Timeout)
            }
            Ok(Err(join_error)) => Ok(InvokeOutcome::FunctionError {
                error_type: "Runtime.ExitError".to_owned(),
                message: format!("the function panicked: {join_error}"),
            }),
            Ok(Ok(Err(diagnostic))) => Ok(InvokeOutcome::FunctionError {
                error_type: diagnostic.error_type,
                message: diagnostic.error_message,
            }),
            Ok(Ok(Ok(body))) => Ok(InvokeOutcome::Response(body)),
        }
    }
}

type BoxedWindowCall = Box<
    dyn Fn(WindowEvent) -> Pin<Box<dyn Future<Output = Result<Bytes, Diagnostic>> + Send>>
        + Send
        + Sync,
>;

/// Invokes a tumbling-window function in this process: the [`WindowAdapter`] its `main` runs
/// on Lambda. As with [`InProcess`], the event is read from its JSON and the answer written as
/// JSON, so the function sees exactly what Lambda sends a window function.
pub struct InProcessWindow {
    call: BoxedWindowCall,
}

impl fmt::Debug for InProcessWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("InProcessWindow")
    }
}

impl InProcessWindow {
    /// Invokes `adapter` with each window event.
    pub fn new<H, S, T>(adapter: WindowAdapter<H, S, T>) -> Self
    where
        H: for<'a> WindowHandler<'a, S, T> + Send + Sync + 'static,
        S: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
        T: FromRecordData + Send + Sync + 'static,
    {
        let call: BoxedWindowCall = Box::new(move |event| {
            let adapter = adapter.clone();
            Box::pin(async move {
                let response = adapter.handle(&event).await.map_err(Diagnostic::from)?;
                serde_json::to_vec(&response)
                    .map(Bytes::from)
                    .map_err(|error| Diagnostic {
                        error_type: "Runtime.SerializationError".to_owned(),
                        error_message: error.to_string(),
                    })
            })
        });
        Self { call }
    }
}

#[async_trait]
impl Invoker for InProcessWindow {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeOutcome, InvokeError> {
        let event: WindowEvent = match serde_json::from_slice(&invocation.payload) {
            Ok(event) => event,
            Err(error) => {
                return Ok(InvokeOutcome::FunctionError {
                    error_type: "Runtime.DeserializationError".to_owned(),
                    message: error.to_string(),
                });
            }
        };
        let remaining = invocation
            .deadline
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        let mut running = tokio::spawn((self.call)(event));
        match tokio::time::timeout(remaining, &mut running).await {
            Err(_elapsed) => {
                running.abort();
                Ok(InvokeOutcome::Timeout)
            }
            Ok(Err(join_error)) => Ok(InvokeOutcome::FunctionError {
                error_type: "Runtime.ExitError".to_owned(),
                message: format!("the function panicked: {join_error}"),
            }),
            Ok(Ok(Err(diagnostic))) => Ok(InvokeOutcome::FunctionError {
                error_type: diagnostic.error_type,
                message: diagnostic.error_message,
            }),
            Ok(Ok(Ok(body))) => Ok(InvokeOutcome::Response(body)),
        }
    }
}
