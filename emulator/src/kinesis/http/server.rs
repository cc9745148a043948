//! The HTTP side: connections, the envelope around each call (JSON 1.1 or CBOR 1.1, by its
//! `Content-Type`), and a graceful stop.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use axum::body::Body;
use hyper_util::rt::TokioExecutor;

use super::api::Api;
use super::codec::{Format, Request as ApiRequest};
use super::error::{ApiError, ErrorKind};
use super::{event_stream, subscribe};

/// The largest request body read. `PutRecords` carries at most 5 MiB of data, which is
/// 6.7 MiB as base64, plus partition keys and JSON around them.
pub(super) const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// The prefix of `X-Amz-Target` values: the service and its API version.
const TARGET_PREFIX: &str = "Kinesis_20131202.";

/// How long the accept loop waits after the system refused a connection (out of file
/// descriptors, say) before it accepts again, so that it does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// How long a stop waits for requests in flight before it drops their connections.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What one endpoint answers: the Kinesis API, a side document, or both.
pub(super) struct Served {
    /// The Kinesis API; `None` when the endpoint serves its side document only.
    pub(super) api: Option<Arc<Api>>,
    /// Documents served on `GET <path>`.
    pub(super) documents: Vec<super::SideDocument>,
    /// The live page's routes (`crate::page`), if served.
    pub(super) page: Option<axum::Router>,
}

/// Serves `api` on `listener` until `stop` turns true (or its sender goes away), then lets the
/// requests in flight finish and closes every connection.
pub(super) async fn run(listener: TcpListener, api: Arc<Served>, mut stop: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    let stop_connections = stop.clone();
    loop {
        tokio::select! {
            () = stopped(&mut stop) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(
                        stream,
                        Arc::clone(&api),
                        stop_connections.clone(),
                    ));
                }
                Err(error) => {
                    tracing::warn!(%error, "the Kinesis endpoint could not accept a connection");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(STOP_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            "the Kinesis endpoint stopped with requests still unanswered after {STOP_GRACE:?}"
        );
    }
}

/// Returns once the stop signal is given, or its sender is gone.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is dropped here, so that callers' futures stay `Send`.
    let _ = stop.wait_for(|stopped| *stopped).await;
}

async fn serve_connection(stream: TcpStream, api: Arc<Served>, mut stop: watch::Receiver<bool>) {
    // Answers are written whole: waiting to coalesce small ones only adds latency.
    let _ = stream.set_nodelay(true);
    let stop_subscriptions = stop.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let api = Arc::clone(&api);
        let stop = stop_subscriptions.clone();
        async move {
            let response = match &api.page {
                Some(page)
                    if crate::page::serves(request.method(), request.uri().path())
                        || crate::control::serves(request.method(), request.uri().path()) =>
                {
                    tower::ServiceExt::oneshot(page.clone(), request).await?
                }
                _ => respond(&api, request, stop).await,
            };
            Ok::<_, Infallible>(response)
        }
    });
    // HTTP/1.1, and HTTP/2 with prior knowledge (h2c), as clients speak it to an http://
    // endpoint: `SubscribeToShard` is an HTTP/2 call on Kinesis.
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    tokio::pin!(connection);
    // A connection that breaks only ends itself: clients reconnect.
    tokio::select! {
        _ = connection.as_mut() => return,
        () = stopped(&mut stop) => {}
    }
    // The request in flight gets its answer; an idle connection closes at once.
    connection.as_mut().graceful_shutdown();
    let _ = connection.await;
}

/// Why a request body could not be read.
enum BodyError {
    /// Longer than `MAX_REQUEST_BYTES`, declared so or found so while reading.
    TooLarge,
    /// The connection failed while it was read.
    Unreadable(String),
}

/// Answers one request: reads the envelope, runs the operation, wraps its answer or error.
/// `SubscribeToShard` answers with an event stream, which ends at the latest when `stop` turns.
async fn respond(
    served: &Arc<Served>,
    request: Request<Incoming>,
    stop: watch::Receiver<bool>,
) -> Response<Body> {
    if request.method() == Method::GET
        && let Some(document) = served
            .documents
            .iter()
            .find(|document| request.uri().path() == document.path)
    {
        let mut response = Response::new(Body::from((document.body)()));
        response.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static(document.content_type),
        );
        return response;
    }
    let request_id = uuid::Uuid::new_v4().to_string();
    let (parts, body) = request.into_parts();
    // The body is read whatever the envelope holds, so that the connection can carry the next
    // request after an error.
    // A body declared larger than the limit is refused before it is uploaded: the answer goes
    // out at once and the connection closes without reading the rest.
    let declared_too_large = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok()?.parse::<u64>().ok())
        .is_some_and(|length| length > MAX_REQUEST_BYTES as u64);
    let body = if declared_too_large {
        Err(BodyError::TooLarge)
    } else {
        Limited::new(body, MAX_REQUEST_BYTES)
            .collect()
            .await
            .map_err(|error| {
                if error.downcast_ref::<LengthLimitError>().is_some() {
                    BodyError::TooLarge
                } else {
                    BodyError::Unreadable(error.to_string())
                }
            })
    };
    let too_large = matches!(body, Err(BodyError::TooLarge));
    let format = format_of(&parts);
    let operation = operation_of(&parts);
    let result = match (&operation, body) {
        (Err(error), _) => Err(error.clone()),
        (Ok(_), Err(BodyError::TooLarge)) => Err(ApiError::new(
            ErrorKind::Serialization,
            format!("The request body is larger than {MAX_REQUEST_BYTES} bytes"),
        )),
        (Ok(_), Err(BodyError::Unreadable(error))) => Err(ApiError::new(
            ErrorKind::Serialization,
            format!("Could not read the request body (at most {MAX_REQUEST_BYTES} bytes): {error}"),
        )),
        (Ok("SubscribeToShard"), Ok(body)) if served.api.is_some() => {
            let api = served.api.as_ref().expect("checked just above");
            let request = ApiRequest {
                format,
                body: &body.to_bytes(),
            };
            match subscribe::open(api, request) {
                Ok(subscription) => {
                    tracing::debug!(request_id, "SubscribeToShard began");
                    return event_stream_answer(
                        subscribe::events(Arc::clone(api), subscription, stop),
                        &request_id,
                    );
                }
                Err(error) => Err(error),
            }
        }
        (Ok(operation), Ok(body)) => match &served.api {
            Some(api) => api.call(
                operation,
                ApiRequest {
                    format,
                    body: &body.to_bytes(),
                },
            ),
            None => Err(ApiError::new(
                ErrorKind::UnknownOperation,
                format!(
                    "This kinesis-esm endpoint serves no Kinesis API, only GET {}: the run \
                     reads a Kinesis elsewhere (--kinesis-endpoint or --aws); send Kinesis calls \
                     there",
                    served
                        .documents
                        .iter()
                        .map(|document| document.path)
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
            )),
        },
    };
    let operation = operation.unwrap_or("(none)");
    let (status, body) = match result {
        Ok(body) => {
            tracing::debug!(operation, request_id, "Kinesis API call answered");
            (StatusCode::OK, body)
        }
        Err(error) => {
            tracing::debug!(
                operation,
                request_id,
                error = error.kind.as_str(),
                detail = error.message,
                "Kinesis API call failed"
            );
            let status = if too_large {
                StatusCode::PAYLOAD_TOO_LARGE
            } else {
                error.kind.status()
            };
            (status, error.body(format))
        }
    };
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    if let Ok(request_id) = HeaderValue::from_str(&request_id) {
        headers.insert("x-amzn-RequestId", request_id);
    }
    response
}

/// The answer that carries a subscription's events.
fn event_stream_answer(events: Body, request_id: &str) -> Response<Body> {
    let mut response = Response::new(events);
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(event_stream::CONTENT_TYPE),
    );
    if let Ok(request_id) = HeaderValue::from_str(request_id) {
        headers.insert("x-amzn-RequestId", request_id);
    }
    response
}

/// The encoding of a request and its answer, by its `Content-Type`: CBOR 1.1 or JSON 1.1.
fn format_of(parts: &Parts) -> Format {
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    Format::of_content_type(content_type)
}

/// The operation a request calls: `POST` with `X-Amz-Target: Kinesis_20131202.<Operation>`.
/// Signature headers (`Authorization`, `X-Amz-Date`, ...) are not checked.
fn operation_of(parts: &Parts) -> Result<&str, ApiError> {
    if parts.method != Method::POST {
        return Err(ApiError::new(
            ErrorKind::UnknownOperation,
            format!("The Kinesis API is called with POST, not {}", parts.method),
        ));
    }
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| {
            ApiError::new(
                ErrorKind::UnknownOperation,
                "The request has no X-Amz-Target header naming the operation",
            )
        })?;
    target.strip_prefix(TARGET_PREFIX).ok_or_else(|| {
        ApiError::new(
            ErrorKind::UnknownOperation,
            format!(
                "X-Amz-Target `{target}` names no Kinesis operation: it must start with \
                 {TARGET_PREFIX}"
            ),
        )
    })
}
