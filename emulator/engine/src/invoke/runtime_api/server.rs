//! One execution environment's Runtime API endpoint: the four paths a runtime calls.
//!
//! The invoker hands an invocation over as a [`Delivery`]; the runtime's long poll on `next`
//! takes it, and its `response` or `error` post settles it. Answers follow Lambda's (the
//! Runtime API's OpenAPI document and the runtime interface emulator): 202 for an accepted post,
//! 400 `InvalidRequestID` for a request id that is not the one in flight, 403
//! `InvalidStateTransition` for a post when nothing is in flight (a second answer), 413 for a
//! response over 6 MB.
//!
//! On Lambda Managed Instances an environment runs several invocations at once: its runtime
//! polls `next` concurrently, up to `AWS_LAMBDA_MAX_CONCURRENCY` times, and answers each
//! invocation on its own request id. The endpoint keeps every invocation in flight by its id.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;

use super::function_failure::FunctionFailure;
use crate::invoke::error_type::LambdaError;
use crate::invoke::invoker::InvokeOutcome;

/// The largest response Lambda accepts from a synchronously invoked function, in bytes.
pub(super) const MAX_RESPONSE_BYTES: usize = 6_291_556;

/// How much of an oversized response is read and thrown away so that the runtime gets its 413
/// instead of a reset connection. Past this the connection is dropped.
const OVERSIZE_DRAIN_BYTES: usize = 64 << 20;

/// How long the accept loop waits after the system refused a connection (out of file
/// descriptors, say) before it accepts again, so that it does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

type Body = Full<Bytes>;

/// An invocation handed to an environment.
pub(super) struct Delivery {
    /// The request id.
    pub(super) request_id: String,
    /// The event.
    pub(super) payload: Bytes,
    /// How long the function has once it takes the event: its deadline is that far from then.
    pub(super) budget: Duration,
    /// Where the function's answer goes.
    pub(super) reply: oneshot::Sender<InvokeOutcome>,
    /// Told when the runtime took the event, the moment its time starts.
    pub(super) picked: oneshot::Sender<Instant>,
}

/// What the invoker and one environment's endpoint share.
pub(super) struct Exchange {
    function_arn: HeaderValue,
    deliveries: tokio::sync::Mutex<mpsc::Receiver<Delivery>>,
    /// Where each invocation in flight is answered, by request id.
    in_flight: Mutex<HashMap<String, oneshot::Sender<InvokeOutcome>>>,
    /// How many invocations the runtime may hold at once.
    concurrency: usize,
    /// Whether the runtime has asked for an invocation: its initialisation is over.
    polled: AtomicBool,
    init_error: watch::Sender<Option<FunctionFailure>>,
}

impl Exchange {
    /// An exchange for a function with this ARN whose runtime runs up to `concurrency`
    /// invocations at once, and the sender its invocations go through.
    pub(super) fn new(
        function_arn: &str,
        concurrency: usize,
    ) -> (Arc<Self>, mpsc::Sender<Delivery>) {
        let concurrency = concurrency.max(1);
        // A slot per invocation the environment may run: the invoker never sends more.
        let (sender, receiver) = mpsc::channel(concurrency);
        let exchange = Self {
            function_arn: HeaderValue::from_str(function_arn)
                .unwrap_or_else(|_| HeaderValue::from_static("arn:aws:lambda:::function:invalid")),
            deliveries: tokio::sync::Mutex::new(receiver),
            in_flight: Mutex::new(HashMap::new()),
            concurrency,
            polled: AtomicBool::new(false),
            init_error: watch::Sender::new(None),
        };
        (Arc::new(exchange), sender)
    }

    /// Watches for the initialisation error the runtime reports, if it reports one.
    pub(super) fn init_errors(&self) -> watch::Receiver<Option<FunctionFailure>> {
        self.init_error.subscribe()
    }

    fn in_flight(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<InvokeOutcome>>> {
        // The lock guards plain data and is never held across an await: a panic while it was
        // held left nothing half-written.
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Serves the Runtime API on `listener` until the task is aborted, which also ends every
/// connection it accepted.
pub(super) async fn serve(listener: TcpListener, exchange: Arc<Exchange>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Small requests and answers: waiting to coalesce them only adds latency.
                    let _ = stream.set_nodelay(true);
                    let exchange = Arc::clone(&exchange);
                    connections.spawn(async move {
                        let service = hyper::service::service_fn(move |request| {
                            let exchange = Arc::clone(&exchange);
                            async move { Ok::<_, Infallible>(route(&exchange, request).await) }
                        });
                        // A connection that breaks only ends itself; the runtime reconnects.
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "the Runtime API could not accept a connection");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn route(exchange: &Exchange, request: Request<Incoming>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let Some(resource) = parts.uri.path().strip_prefix("/2018-06-01/runtime/") else {
        return not_found(parts.uri.path());
    };
    match (&parts.method, resource) {
        (&Method::GET, "invocation/next") => next(exchange).await,
        (&Method::POST, "init/error") => init_error(exchange, &parts.headers, body).await,
        (&Method::POST, resource) => match resource.strip_prefix("invocation/") {
            Some(rest) => {
                if let Some(request_id) = rest.strip_suffix("/response") {
                    response(exchange, request_id, body).await
                } else if let Some(request_id) = rest.strip_suffix("/error") {
                    error(exchange, request_id, &parts.headers, body).await
                } else {
                    not_found(parts.uri.path())
                }
            }
            None => not_found(parts.uri.path()),
        },
        _ => not_found(parts.uri.path()),
    }
}

/// `GET /runtime/invocation/next`: waits for the next invocation and hands it over.
async fn next(exchange: &Exchange) -> Response<Body> {
    if exchange.in_flight().len() >= exchange.concurrency {
        return invalid_state(if exchange.concurrency == 1 {
            "asked for the next invocation before answering the current one"
        } else {
            "asked for more invocations at once than AWS_LAMBDA_MAX_CONCURRENCY allows"
        });
    }
    exchange.polled.store(true, Ordering::Release);
    let delivery = {
        let mut deliveries = exchange.deliveries.lock().await;
        deliveries.recv().await
    };
    let Some(delivery) = delivery else {
        // The environment is being shut down and its process is about to be killed. Lambda
        // never answers the pending `next` then: it stops the process (SIGKILL for a runtime
        // without extensions; see the execution environment lifecycle's Shutdown phase). An
        // error answer here would reach `lambda_runtime` as an event without a request id, and
        // it would panic before it is killed. So the poll stays open until the process is gone
        // and the endpoint, with this connection, is stopped.
        return std::future::pending().await;
    };
    let picked_at = Instant::now();
    let deadline = SystemTime::now() + delivery.budget;
    let deadline_millis = deadline
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis());
    let request_id = HeaderValue::from_str(&delivery.request_id);
    exchange
        .in_flight()
        .insert(delivery.request_id, delivery.reply);
    // The invoker may have given up already; the runtime still gets its event, as on Lambda.
    let _ = delivery.picked.send(picked_at);

    let mut response = Response::new(Full::new(delivery.payload));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Ok(request_id) = request_id {
        headers.insert("lambda-runtime-aws-request-id", request_id);
    }
    headers.insert(
        "lambda-runtime-deadline-ms",
        HeaderValue::from(deadline_millis as u64),
    );
    headers.insert(
        "lambda-runtime-invoked-function-arn",
        exchange.function_arn.clone(),
    );
    if let Ok(trace_id) = HeaderValue::from_str(&trace_id()) {
        headers.insert("lambda-runtime-trace-id", trace_id);
    }
    response
}

/// `POST /runtime/invocation/{id}/response`.
async fn response(exchange: &Exchange, request_id: &str, body: Incoming) -> Response<Body> {
    if let Some(refusal) = check_in_flight(exchange, request_id) {
        return refusal;
    }
    let outcome = match read_body(body, MAX_RESPONSE_BYTES).await {
        Ok(ReadBody::Complete(body)) => InvokeOutcome::Response(body),
        Ok(ReadBody::TooLarge) => InvokeOutcome::FunctionError {
            error_type: LambdaError::ResponseSizeTooLarge.into(),
            message: format!(
                "Response payload size exceeded maximum allowed payload size ({MAX_RESPONSE_BYTES} bytes)."
            ),
        },
        Err(error) => return truncated_request(&error),
    };
    let too_large = matches!(outcome, InvokeOutcome::FunctionError { .. });
    if let Some(refusal) = settle(exchange, request_id, outcome) {
        return refusal;
    }
    if too_large {
        error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            "RequestEntityTooLarge",
            &format!("Exceeded maximum allowed payload size ({MAX_RESPONSE_BYTES} bytes)."),
        )
    } else {
        accepted()
    }
}

/// `POST /runtime/invocation/{id}/error`.
async fn error(
    exchange: &Exchange,
    request_id: &str,
    headers: &hyper::HeaderMap,
    body: Incoming,
) -> Response<Body> {
    if let Some(refusal) = check_in_flight(exchange, request_id) {
        return refusal;
    }
    let body = match read_body(body, MAX_RESPONSE_BYTES).await {
        Ok(ReadBody::Complete(body)) => body,
        // An error report too large to keep is still an error: its header names the type.
        Ok(ReadBody::TooLarge) => Bytes::new(),
        Err(error) => return truncated_request(&error),
    };
    let failure = FunctionFailure::reported(headers, &body, "Unhandled");
    if let Some(refusal) = settle(exchange, request_id, failure.into_outcome()) {
        return refusal;
    }
    accepted()
}

/// `POST /runtime/init/error`: the runtime could not start and is about to exit.
async fn init_error(
    exchange: &Exchange,
    headers: &hyper::HeaderMap,
    body: Incoming,
) -> Response<Body> {
    if exchange.polled.load(Ordering::Acquire) {
        return invalid_state("reported an initialisation error after initialisation was over");
    }
    let body = match read_body(body, MAX_RESPONSE_BYTES).await {
        Ok(ReadBody::Complete(body)) => body,
        Ok(ReadBody::TooLarge) => Bytes::new(),
        Err(error) => return truncated_request(&error),
    };
    let failure = FunctionFailure::reported(headers, &body, "Runtime.InitError");
    exchange.init_error.send_replace(Some(failure));
    accepted()
}

/// Refuses a post for `request_id` when it is not an invocation in flight.
fn check_in_flight(exchange: &Exchange, request_id: &str) -> Option<Response<Body>> {
    let in_flight = exchange.in_flight();
    if in_flight.contains_key(request_id) {
        None
    } else if in_flight.is_empty() {
        Some(invalid_state(
            "answered an invocation that is not in flight (already answered, or never given)",
        ))
    } else {
        Some(invalid_request_id())
    }
}

/// Hands the answer to the invoker, unless another post settled the invocation meanwhile.
fn settle(exchange: &Exchange, request_id: &str, outcome: InvokeOutcome) -> Option<Response<Body>> {
    let reply = {
        let mut in_flight = exchange.in_flight();
        match in_flight.remove(request_id) {
            Some(reply) => Some(reply),
            None if in_flight.is_empty() => None,
            None => return Some(invalid_request_id()),
        }
    };
    match reply {
        // The invoker may have given up (its caller went away); the answer has nowhere to go.
        Some(reply) => {
            let _ = reply.send(outcome);
            None
        }
        None => Some(invalid_state(
            "answered an invocation that was answered meanwhile",
        )),
    }
}

enum ReadBody {
    Complete(Bytes),
    TooLarge,
}

/// Reads a request body of at most `limit` bytes. A body that arrives in one piece is kept as
/// it is, without a copy.
async fn read_body(mut body: Incoming, limit: usize) -> Result<ReadBody, hyper::Error> {
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut total = 0_usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue; // Trailers carry nothing the answer needs.
        };
        total += data.len();
        if total > limit {
            while total <= OVERSIZE_DRAIN_BYTES {
                match body.frame().await {
                    Some(Ok(frame)) => total += frame.data_ref().map_or(0, Bytes::len),
                    Some(Err(_)) | None => break,
                }
            }
            return Ok(ReadBody::TooLarge);
        }
        chunks.push(data);
    }
    Ok(ReadBody::Complete(match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.swap_remove(0),
        _ => {
            let mut joined = BytesMut::with_capacity(total);
            for chunk in chunks {
                joined.extend_from_slice(&chunk);
            }
            joined.freeze()
        }
    }))
}

/// An X-Ray trace header for one invocation: a fresh root id, not sampled.
fn trace_id() -> String {
    let epoch_seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    format!(
        "Root=1-{:08x}-{:024x};Parent={:016x};Sampled=0",
        epoch_seconds as u32,
        fastrand::u128(..) >> 32,
        fastrand::u64(..)
    )
}

fn accepted() -> Response<Body> {
    json_response(StatusCode::ACCEPTED, r#"{"status":"OK"}"#.into())
}

fn invalid_request_id() -> Response<Body> {
    error_response(
        StatusCode::BAD_REQUEST,
        "InvalidRequestID",
        "Invalid request ID",
    )
}

fn invalid_state(what: &str) -> Response<Body> {
    error_response(
        StatusCode::FORBIDDEN,
        "InvalidStateTransition",
        &format!("State transition is not allowed: the runtime {what}"),
    )
}

fn truncated_request(error: &hyper::Error) -> Response<Body> {
    error_response(
        StatusCode::BAD_REQUEST,
        "TruncatedHTTPRequest",
        &format!("HTTP request detected as truncated: {error}"),
    )
}

fn not_found(path: &str) -> Response<Body> {
    error_response(
        StatusCode::NOT_FOUND,
        "NotFound",
        &format!("the Runtime API has no resource {path}"),
    )
}

fn error_response(status: StatusCode, error_type: &str, message: &str) -> Response<Body> {
    let body = serde_json::json!({ "errorMessage": message, "errorType": error_type });
    json_response(status, body.to_string().into())
}

fn json_response(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// A runtime's poll on `next` when the environment is shut down (its deliveries closed):
    /// no answer at all until the endpoint stops, then a closed connection, never an error
    /// answer without a request id.
    #[tokio::test]
    async fn a_shut_down_environment_never_answers_the_pending_next() {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("an address");
        let (exchange, deliveries) = Exchange::new("arn:aws:lambda:us-east-1:1:function:f", 1);
        let endpoint = tokio::spawn(serve(listener, exchange));
        let mut runtime = tokio::net::TcpStream::connect(address)
            .await
            .expect("connects");
        runtime
            .write_all(b"GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .expect("sends");

        drop(deliveries);
        let mut answer = Vec::new();
        let read =
            tokio::time::timeout(Duration::from_millis(300), runtime.read_to_end(&mut answer))
                .await;
        assert!(
            read.is_err(),
            "the poll was answered: {:?}",
            String::from_utf8_lossy(&answer)
        );

        // The process is gone: the endpoint stops and the connection closes without a word.
        endpoint.abort();
        let read = tokio::time::timeout(Duration::from_secs(5), runtime.read_to_end(&mut answer))
            .await
            .expect("the connection closes");
        assert!(read.is_ok_and(|_| answer.is_empty()), "{answer:?}");
    }
}
