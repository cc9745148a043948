//! The Kinesis API as a `tower::Service`: the envelope around each call (JSON 1.1 or CBOR 1.1,
//! by its `Content-Type`), the operation it names, and its answer or error. A front mounts it
//! beside routes of its own and serves the whole with [`super::serve_service`].

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode};
use tokio::sync::watch;

use super::codec::Request as ApiRequest;
use super::error::{ApiError, ErrorKind};
use super::format::Format;
use super::operations;
use super::server::Stopping;
use super::{event_stream, subscribe};
use crate::embedded::EmbeddedKinesis;

/// The largest request body read. `PutRecords` carries at most 10 MiB of data and partition
/// keys (to a stream whose `MaxRecordSizeInKiB` is above 1024), which is 13.4 MiB as base64,
/// plus the JSON around them.
pub(crate) const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// The prefix of `X-Amz-Target` values: the service and its API version.
const TARGET_PREFIX: &str = "Kinesis_20131202.";

/// The Kinesis API over an [`EmbeddedKinesis`], as a `tower::Service` of HTTP requests; cheap
/// to clone. Requests are not authenticated: any signature is accepted unchecked.
///
/// ```
/// use embedded_kinesis::EmbeddedKinesis;
/// use embedded_kinesis::http::KinesisApi;
/// use tower::ServiceExt as _;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let api = KinesisApi::new(EmbeddedKinesis::new());
/// let request = axum::http::Request::post("/")
///     .header("X-Amz-Target", "Kinesis_20131202.ListStreams")
///     .header("Content-Type", "application/x-amz-json-1.1")
///     .body(axum::body::Body::from("{}"))
///     .unwrap();
/// let answer = api.oneshot(request).await.unwrap();
/// assert_eq!(answer.status(), 200);
/// # }
/// ```
#[derive(Clone)]
pub struct KinesisApi {
    kinesis: Option<EmbeddedKinesis>,
    /// What a call is told when no Kinesis stands behind the endpoint.
    absent_note: Arc<str>,
    /// Held so that a subscription served outside [`super::serve_service`] (which hands each
    /// request its stop signal) is never told to stop.
    never_stops: Arc<watch::Sender<bool>>,
}

impl KinesisApi {
    /// The Kinesis API over `kinesis`.
    pub fn new(kinesis: EmbeddedKinesis) -> Self {
        Self {
            kinesis: Some(kinesis),
            absent_note: Arc::from(""),
            never_stops: Arc::new(watch::Sender::new(false)),
        }
    }

    /// An endpoint with no Kinesis behind it: every call is answered with an
    /// `UnknownOperationException` carrying `note` (which should say where the Kinesis is).
    pub fn absent(note: impl Into<String>) -> Self {
        Self {
            kinesis: None,
            absent_note: Arc::from(note.into()),
            never_stops: Arc::new(watch::Sender::new(false)),
        }
    }
}

impl tower::Service<Request<Body>> for KinesisApi {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let api = self.clone();
        Box::pin(async move { Ok(respond(&api, request).await) })
    }
}

/// Why a request body could not be read.
enum BodyError {
    /// Longer than `MAX_REQUEST_BYTES`, declared so or found so while reading.
    TooLarge,
    /// The connection failed while it was read.
    Unreadable(String),
}

impl BodyError {
    /// What Kinesis answers a body it cannot read: a `SerializationException`.
    fn to_api_error(&self) -> ApiError {
        let message = match self {
            Self::TooLarge => format!("The request body is larger than {MAX_REQUEST_BYTES} bytes"),
            Self::Unreadable(error) => format!(
                "Could not read the request body (at most {MAX_REQUEST_BYTES} bytes): {error}"
            ),
        };
        ApiError::new(ErrorKind::Serialization, message)
    }
}

/// Answers one request: reads the envelope, runs the operation, wraps its answer or error.
/// `SubscribeToShard` answers with an event stream, which ends at the latest when `stop` turns.
async fn respond(api: &KinesisApi, request: Request<Body>) -> Response<Body> {
    let stop = match request.extensions().get::<Stopping>() {
        Some(Stopping(stop)) => stop.clone(),
        None => api.never_stops.subscribe(),
    };
    let request_id = uuid::Uuid::new_v4().to_string();
    let (parts, body) = request.into_parts();
    // The body is read whatever the envelope holds, so that the connection can carry the next
    // request after an error.
    let body = read_body(&parts, body).await;
    let too_large = matches!(body, Err(BodyError::TooLarge));
    let format = format_of(&parts);
    let operation = operation_of(&parts);
    let result = match (&operation, body) {
        (Err(error), _) => Err(error.clone()),
        (Ok(_), Err(error)) => Err(error.to_api_error()),
        (Ok("SubscribeToShard"), Ok(body)) if api.kinesis.is_some() => {
            let kinesis = api.kinesis.as_ref().expect("checked just above");
            let request = ApiRequest {
                format,
                body: &body,
            };
            match subscribe::open(kinesis, request) {
                Ok(subscription) => {
                    tracing::debug!(request_id, "SubscribeToShard began");
                    let events = subscribe::events(kinesis.clone(), subscription, stop);
                    return event_stream_answer(events, &request_id);
                }
                Err(error) => Err(error),
            }
        }
        (Ok(operation), Ok(body)) => match &api.kinesis {
            Some(kinesis) => operations::call(
                kinesis,
                operation,
                ApiRequest {
                    format,
                    body: &body,
                },
            ),
            None => Err(ApiError::new(
                ErrorKind::UnknownOperation,
                api.absent_note.to_string(),
            )),
        },
    };
    let operation = operation.unwrap_or("(none)");
    answer(result, operation, format, &request_id, too_large)
}

/// Reads a request's body, up to `MAX_REQUEST_BYTES`. A body declared larger than the limit is
/// refused before it is uploaded: the answer goes out at once and the connection closes
/// without reading the rest.
async fn read_body(parts: &Parts, body: Body) -> Result<Bytes, BodyError> {
    let declared_too_large = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok()?.parse::<u64>().ok())
        .is_some_and(|length| length > MAX_REQUEST_BYTES as u64);
    if declared_too_large {
        return Err(BodyError::TooLarge);
    }
    match Limited::new(body, MAX_REQUEST_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.downcast_ref::<LengthLimitError>().is_some() => {
            Err(BodyError::TooLarge)
        }
        Err(error) => Err(BodyError::Unreadable(error.to_string())),
    }
}

/// The HTTP answer to a call: its body with 200, or its error with the error's status (413
/// for a body over the limit), in the request's encoding, with the request id.
fn answer(
    result: Result<Vec<u8>, ApiError>,
    operation: &str,
    format: Format,
    request_id: &str,
    too_large: bool,
) -> Response<Body> {
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
    if let Ok(request_id) = HeaderValue::from_str(request_id) {
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
