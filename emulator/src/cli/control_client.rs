//! Asking a running `kinesis-esm run` through its control paths, beside the Kinesis API, as
//! `status` and `replay` do.

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Method, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// The URL of the control `path` of the `kinesis-esm run` serving `endpoint`.
pub(super) fn control_uri(endpoint: &str, path: &str) -> String {
    format!("{}{path}", endpoint.trim_end_matches('/'))
}

/// Sends `body` (JSON, when there is one) to `uri` with `method`, and gives the answer's status
/// and body. A `uri` that does not parse, or nothing answering at `endpoint`, is said so.
pub(super) async fn ask(
    endpoint: &str,
    method: Method,
    uri: &str,
    body: Option<Vec<u8>>,
) -> anyhow::Result<(StatusCode, Bytes)> {
    let mut request = hyper::Request::builder().method(method).uri(uri);
    if body.is_some() {
        request = request.header(hyper::header::CONTENT_TYPE, "application/json");
    }
    let request = request
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .with_context(|| format!("`{endpoint}` is not an endpoint URL"))?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let response = client.request(request).await.with_context(|| {
        format!("nothing answers at {endpoint}: is `kinesis-esm run` running there?")
    })?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}
