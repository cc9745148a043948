//! The HTTP client an Invoke API invoker sends with: HTTP/1.1, plain or over TLS, pooled, with
//! a limit on making a connection.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Uri;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use lambda_kinesis::tower::Service;
use tokio::net::TcpStream;

use super::setup::SetupError;

/// How long an idle connection is kept for the next invocation.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The HTTP client: HTTP/1.1, plain or over TLS, with pooled connections.
pub(super) fn http_client(
    endpoint: &str,
    https: bool,
    connect_timeout: Duration,
) -> Result<Client<TimedConnector, Full<Bytes>>, SetupError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = if https {
        hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(provider)
            .map_err(|source| SetupError::Tls {
                endpoint: endpoint.to_owned(),
                source,
            })?
    } else {
        // A plain HTTP endpoint never uses TLS: an empty trust store spares reading the
        // system's.
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| SetupError::Tls {
                endpoint: endpoint.to_owned(),
                source: std::io::Error::other(error),
            })?
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config)
    };
    let mut http = HttpConnector::new();
    // The HTTPS connector wraps this one, so it must accept `https://` addresses.
    http.enforce_http(false);
    http.set_nodelay(true);
    let connector = TimedConnector {
        inner: tls.https_or_http().enable_http1().wrap_connector(http),
        timeout: connect_timeout,
    };
    Ok(Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .build(connector))
}

type BoxError = Box<dyn StdError + Send + Sync>;

/// The HTTPS connector, with a limit on how long making a connection (name lookup, TCP and
/// TLS) may take.
#[derive(Clone)]
pub(super) struct TimedConnector {
    inner: HttpsConnector<HttpConnector>,
    timeout: Duration,
}

impl Service<Uri> for TimedConnector {
    type Response = MaybeHttpsStream<TokioIo<TcpStream>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.inner.call(uri);
        let timeout = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, connecting).await {
                Ok(connected) => connected,
                Err(_elapsed) => Err(format!("no connection within {timeout:?}").into()),
            }
        })
    }
}
