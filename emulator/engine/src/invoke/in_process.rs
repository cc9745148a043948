//! Invoking a function in this process: [`InProcess`] for a handler or service,
//! [`InProcessWindow`] for a tumbling-window function.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use lambda_kinesis::KinesisAdapter;
use lambda_kinesis::handler::{FromRecordData, Handler};
use lambda_kinesis::lambda_runtime::{Context, Diagnostic, LambdaEvent};
use lambda_kinesis::tower::{Service, ServiceExt as _};
use lambda_kinesis::window::event::WindowEvent;
use lambda_kinesis::window::{WindowAdapter, WindowHandler};
use lambda_kinesis::wire::KinesisBatch;

use super::error_type::{ErrorType, LambdaError};
use super::invoker::{Invocation, InvokeError, InvokeOutcome, Invoker};

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
                answer_json(&response)
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
                    error_type: LambdaError::DeserializationError.into(),
                    message: error.to_string(),
                });
            }
        };
        let mut context = Context::default();
        context.request_id = invocation.request_id.clone();
        context.deadline = invocation.deadline_millis();
        let call = (self.call)(LambdaEvent::new(batch, context));
        Ok(run_until_deadline(call, &invocation).await)
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
                answer_json(&response)
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
                    error_type: LambdaError::DeserializationError.into(),
                    message: error.to_string(),
                });
            }
        };
        Ok(run_until_deadline((self.call)(event), &invocation).await)
    }
}

/// The function's answer as the runtime writes it: its JSON, or a `SerializationError`.
fn answer_json(response: &impl serde::Serialize) -> Result<Bytes, Diagnostic> {
    serde_json::to_vec(response)
        .map(Bytes::from)
        .map_err(|error| Diagnostic {
            error_type: LambdaError::SerializationError.as_str().to_owned(),
            error_message: error.to_string(),
        })
}

/// Runs `call` until the invocation's deadline, and says how it ended as Lambda would.
async fn run_until_deadline(
    call: impl Future<Output = Result<Bytes, Diagnostic>> + Send + 'static,
    invocation: &Invocation,
) -> InvokeOutcome {
    let remaining = invocation
        .deadline
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    // A panic outside the adapter's per-record guard would kill a real runtime: an unhandled
    // function error.
    let mut running = tokio::spawn(call);
    match tokio::time::timeout(remaining, &mut running).await {
        Err(_elapsed) => {
            running.abort();
            InvokeOutcome::Timeout
        }
        Ok(Err(join_error)) => InvokeOutcome::FunctionError {
            error_type: LambdaError::ExitError.into(),
            message: format!("the function panicked: {join_error}"),
        },
        Ok(Ok(Err(diagnostic))) => InvokeOutcome::FunctionError {
            error_type: ErrorType::new(diagnostic.error_type),
            message: diagnostic.error_message,
        },
        Ok(Ok(Ok(body))) => InvokeOutcome::Response(body),
    }
}
