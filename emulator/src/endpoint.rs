//! The endpoint `kinesis-esm run` and `serve` listen on: the embedded Kinesis' API (when the run
//! reads it) composed with the front's own routes: the live page, the control endpoint and the
//! side documents (`/status`, `/metrics`). The local Kinesis serves one `tower::Service`; this
//! module decides which requests are the front's and hands it the rest. On loopback it answers
//! only requests addressed to a loopback name (see `host_guard.rs`).

mod host_guard;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::header::{CONTENT_TYPE, HOST};
use axum::http::{HeaderValue, Method, Request, Response, StatusCode};
use embedded_kinesis::EmbeddedKinesis;
use embedded_kinesis::http::{KinesisApi, LocalFanOut, ServeError, ServerHandle, serve_service};
use tower::ServiceExt as _;

/// A side document the endpoint serves on `GET <path>`, beside the Kinesis API: how
/// `kinesis-esm run` publishes its mappings' status for `kinesis-esm status` (JSON) and their
/// metrics for scraping (the Prometheus text format).
#[derive(Clone)]
pub struct SideDocument {
    /// The path it is served at.
    pub path: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Makes its body, at each request.
    pub body: Arc<dyn Fn() -> Vec<u8> + Send + Sync>,
}

impl SideDocument {
    /// A document at `path` of `content_type`, made by `body` at each request.
    pub fn new(
        path: &'static str,
        content_type: &'static str,
        body: impl Fn() -> Vec<u8> + Send + Sync + 'static,
    ) -> Self {
        Self {
            path,
            content_type,
            body: Arc::new(body),
        }
    }

    fn answer(&self) -> Response<Body> {
        let mut response = Response::new(Body::from((self.body)()));
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(self.content_type));
        response
    }
}

/// Serves `kinesis` over the Kinesis API on `addr`, also answering `GET` on each document's
/// path with it.
pub async fn serve_with(
    kinesis: EmbeddedKinesis,
    addr: SocketAddr,
    documents: Vec<SideDocument>,
) -> Result<ServerHandle, ServeError> {
    let front = Front {
        documents: Arc::new(documents),
        page: None,
        loopback_only: host_guard::guards(addr),
    };
    let server = serve_service(addr, front.beside(KinesisApi::new(kinesis))).await?;
    tracing::info!(local_addr = %server.local_addr(), "serving the embedded Kinesis over the Kinesis API");
    Ok(server)
}

/// [`serve_with`] (or, when `kinesis` is `None`, the documents alone, every Kinesis call
/// answered with an `UnknownOperationException` saying where the Kinesis is), also serving the
/// live page and the control endpoint (`page` holds both routers): `GET /`, the paths under
/// `/page/`, `/healthz`, `/readyz` and the replay endpoint.
pub async fn serve_with_page(
    kinesis: Option<LocalFanOut>,
    addr: SocketAddr,
    documents: Vec<SideDocument>,
    page: axum::Router,
) -> Result<ServerHandle, ServeError> {
    let api = match kinesis {
        Some(fan_out) => KinesisApi::new(fan_out.kinesis().clone()),
        None => KinesisApi::absent(no_kinesis_note(&documents)),
    };
    let front = Front {
        documents: Arc::new(documents),
        page: Some(page),
        loopback_only: host_guard::guards(addr),
    };
    let server = serve_service(addr, front.beside(api)).await?;
    tracing::info!(local_addr = %server.local_addr(), "serving the live page at /");
    Ok(server)
}

/// What a Kinesis call to a run that reads another Kinesis is told.
fn no_kinesis_note(documents: &[SideDocument]) -> String {
    let paths: Vec<&str> = documents.iter().map(|document| document.path).collect();
    format!(
        "This kinesis-esm endpoint serves no Kinesis API, only GET {}: the run reads a Kinesis \
         elsewhere (--kinesis-endpoint or --aws); send Kinesis calls there",
        paths.join(" and ")
    )
}

/// The front's own routes.
#[derive(Clone)]
struct Front {
    documents: Arc<Vec<SideDocument>>,
    page: Option<axum::Router>,
    /// Whether requests must be addressed to a loopback name (the endpoint is on loopback).
    loopback_only: bool,
}

impl Front {
    /// One service: the front's requests answered by the front, every other by `api`.
    fn beside(
        self,
        api: KinesisApi,
    ) -> impl tower::Service<
        Request<Body>,
        Response = Response<Body>,
        Error = Infallible,
        Future = impl Send,
    > + Clone
    + Send
    + Sync
    + 'static {
        tower::service_fn(move |request: Request<Body>| {
            let front = self.clone();
            let api = api.clone();
            async move {
                if front.loopback_only
                    && let Some(reason) = host_guard::refusal(request_host(&request))
                {
                    return Ok(forbidden(reason));
                }
                let (method, path) = (request.method().clone(), request.uri().path().to_owned());
                if method == Method::GET
                    && let Some(document) = front.documents.iter().find(|doc| doc.path == path)
                {
                    return Ok(document.answer());
                }
                match &front.page {
                    Some(page)
                        if crate::page::serves(&method, &path)
                            || crate::control::serves(&method, &path) =>
                    {
                        page.clone().oneshot(request).await
                    }
                    _ => api.oneshot(request).await,
                }
            }
        })
    }
}

/// The host a request is addressed to: its URI's authority (HTTP/2, or an absolute URI), else
/// its `Host` header.
fn request_host(request: &Request<Body>) -> Option<&[u8]> {
    match request.uri().authority() {
        Some(authority) => Some(authority.as_str().as_bytes()),
        None => request.headers().get(HOST).map(HeaderValue::as_bytes),
    }
}

/// A 403 saying why, in one line of text.
fn forbidden(reason: String) -> Response<Body> {
    let mut response = Response::new(Body::from(reason + "\n"));
    *response.status_mut() = StatusCode::FORBIDDEN;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
