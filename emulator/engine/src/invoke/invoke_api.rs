//! The Lambda Invoke API: invoking a function that something else runs.
//!
//! The emulator normally runs the function's binary itself ([`super::runtime_api`]). [`InvokeApi`]
//! instead sends each batch to a server that speaks Lambda's Invoke API
//! (`POST /2015-03-31/functions/{name}/invocations`, `X-Amz-Invocation-Type: RequestResponse`):
//!
//! - **`cargo lambda watch`** (`http://127.0.0.1:9000` by default; start it with `-A 127.0.0.1`):
//!   [`InvokeApi::new`]. The function name is the binary's (`bootstrap` for `functions/shipping`).
//!   It builds the function when the first invocation arrives, which can take longer than the
//!   function's timeout: send a first invocation before the mapping starts. It gives the
//!   function the constant deadline 600000 (milliseconds since the epoch, long past), which
//!   `lambda_kinesis` reads as no deadline; the emulator's own timer still applies.
//! - **`sam local start-lambda`** (`http://127.0.0.1:3001`): [`InvokeApi::new`], with the
//!   template's logical id as the function name. It needs Docker.
//! - **Real Lambda**: [`InvokeApi::aws`] signs each request (Signature Version 4) with the
//!   credentials and region of an [`SdkConfig`], such as the one `aws_config` loads from the
//!   environment ([`InvokeApi::aws_from_environment`]).
//!
//! The event's bytes are sent as they are and the function's answer comes back as bytes.
//!
//! How an invocation ends:
//!
//! | the target answers | outcome |
//! |---|---|
//! | 200 | [`InvokeOutcome::Response`] with the body, byte for byte |
//! | 200 with `X-Amz-Function-Error` (`Handled` / `Unhandled`; Lambda, SAM) | `FunctionError` with the body's `errorType` and `errorMessage` |
//! | 500 whose body is the runtime's error (`errorType` / `errorMessage`; `cargo lambda watch`) | `FunctionError`, as above |
//! | a function error of type `Sandbox.Timedout` (Lambda stopped the function at its timeout) | [`InvokeOutcome::Timeout`] |
//! | a 200 body over 6 MB | `FunctionError` `Function.ResponseSizeTooLarge` |
//! | nothing by the invocation's deadline plus [`InvokeApiOptions::grace`] | [`InvokeOutcome::Timeout`] |
//! | 429 (`TooManyRequestsException`) | [`InvokeError::Throttled`] |
//! | no connection (refused, DNS, TLS, none within [`InvokeApiOptions::connect_timeout`]) | [`InvokeError::Unreachable`] |
//! | 404 that says the function does not exist (`ResourceNotFoundException`, SAM's `ResourceNotFound`, `cargo lambda watch`'s `Missing function`) | [`InvokeError::NoSuchFunction`], also told by [`InvokeApi::missing_function`] |
//! | any other 4xx, a 5xx that is not a function error (`ServiceException`, `cargo lambda watch`'s own failures), a connection closed before the answer | [`InvokeError::Unreachable`] |
//!
//! The invoke errors are Lambda's "errors before the function runs": the event source mapping
//! retries them without charging a retry attempt. A missing function is a configuration error
//! that no retry mends: `kinesis-esm run` watches [`InvokeApi::missing_function`] and stops.
//!
//! `cargo lambda watch` knows a function by its binary's name. Given a
//! [fallback name](InvokeApi::fallback_function_name) (the binary), an invoker whose function
//! `cargo lambda watch` does not know tries the fallback once, says so in a warning, and keeps
//! it when it is known.

use std::error::Error as StdError;
use std::fmt::{self, Write as _};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use aws_config::BehaviorVersion;
use aws_types::SdkConfig;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper::header::{CONTENT_TYPE, HOST, HeaderName, HeaderValue, USER_AGENT};
use hyper::http::uri::{Authority, Scheme};
use hyper::{Method, Request, Uri};
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use lambda_kinesis::tower::Service;
use tokio::net::TcpStream;

use self::answer::{FUNCTION_ERROR, RejectionKind, classify};
use self::error_chain::ErrorChain;
use self::signing::{Signer, aws_endpoint, encode_uri_component};
use super::invoker::{Invocation, InvokeError, InvokeOutcome, Invoker};

mod answer;
mod error_chain;
mod signing;

/// The largest answer a synchronous invocation may return: Lambda's 6 MB limit, which it counts
/// as 6 MiB and 100 bytes.
const MAX_RESPONSE_BYTES: usize = 6_291_556;

/// The invocation type: wait for the function's answer.
const INVOCATION_TYPE: HeaderName = HeaderName::from_static("x-amz-invocation-type");

/// The request id header the Runtime API uses. `cargo lambda watch` takes the id from it, so its
/// logs show the emulator's request id; Lambda ignores it.
const REQUEST_ID: HeaderName = HeaderName::from_static("lambda-runtime-aws-request-id");

/// How long an idle connection is kept for the next invocation.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How an [`InvokeApi`] waits.
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

/// Why an [`InvokeApi`] could not be made.
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

/// Invokes a function through the Lambda Invoke API at an endpoint: `cargo lambda watch`,
/// `sam local start-lambda`, or Lambda itself. See the [module documentation](self) for how each
/// answer becomes an outcome.
pub struct InvokeApi {
    client: Client<TimedConnector, Full<Bytes>>,
    endpoint: String,
    function_name: String,
    invocations_uri: Uri,
    host: HeaderValue,
    signer: Option<Signer>,
    options: InvokeApiOptions,
    shut_down: AtomicBool,
    /// The name (and its URI) to try when `cargo lambda watch` does not know `function_name`.
    fallback: Option<(String, Uri)>,
    /// Whether invocations now go to the fallback name.
    fallen_back: AtomicBool,
    /// Set once the target said it has no such function.
    missing: tokio::sync::watch::Sender<Option<String>>,
}

impl fmt::Debug for InvokeApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InvokeApi")
            .field("endpoint", &self.endpoint)
            .field("function_name", &self.function_name)
            .field("signed", &self.signer.is_some())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl InvokeApi {
    /// Invokes `function_name` at `endpoint` (such as `http://127.0.0.1:9000` for
    /// `cargo lambda watch`) without signing: for local servers.
    ///
    /// # Errors
    /// When the endpoint is not an `http://` or `https://` URL (a path prefix is allowed; a
    /// query is not), the function name is empty, or the system's certificates cannot be loaded
    /// for an `https://` endpoint.
    pub fn new(
        endpoint: &str,
        function_name: impl Into<String>,
        options: InvokeApiOptions,
    ) -> Result<Self, SetupError> {
        Self::build(endpoint, function_name.into(), options, None)
    }

    /// Invokes `function_name` (a name, an ARN or a partial ARN) on Lambda, signing each request
    /// with the credentials and region of `config`.
    ///
    /// The endpoint is, as the AWS SDK chooses it: an endpoint URL set on `config` in code, else
    /// Lambda's own endpoint URL setting (`AWS_ENDPOINT_URL_LAMBDA`, or `endpoint_url` in the
    /// profile's `services` section), else the general one (`AWS_ENDPOINT_URL`), else the
    /// region's endpoint (`https://lambda.{region}.amazonaws.com`, with FIPS and dual-stack
    /// variants when `config` asks for them, and the China and ISO partitions' domains).
    ///
    /// # Errors
    /// When `config` has no region or no credentials provider, or its endpoint URL is not a
    /// URL.
    pub fn aws(
        config: &SdkConfig,
        function_name: impl Into<String>,
        options: InvokeApiOptions,
    ) -> Result<Self, SetupError> {
        let function_name = function_name.into();
        let Some(region) = config.region() else {
            return Err(SetupError::NoRegion { function_name });
        };
        let Some(credentials) = config.credentials_provider() else {
            return Err(SetupError::NoCredentials { function_name });
        };
        let endpoint = aws_endpoint(config, region.as_ref());
        let signer = Signer {
            credentials,
            region: region.as_ref().to_owned(),
            cached: tokio::sync::Mutex::new(None),
        };
        Self::build(&endpoint, function_name, options, Some(signer))
    }

    /// Invokes `function_name` on Lambda with the region, credentials and endpoint settings the
    /// AWS SDK finds in the environment (variables, shared config and credentials files, web
    /// identity, container and instance metadata): [`InvokeApi::aws`] with
    /// `aws_config::defaults(BehaviorVersion::latest())`.
    ///
    /// # Errors
    /// As [`InvokeApi::aws`].
    pub async fn aws_from_environment(
        function_name: impl Into<String>,
        options: InvokeApiOptions,
    ) -> Result<Self, SetupError> {
        let config = aws_config::defaults(BehaviorVersion::latest()).load().await;
        Self::aws(&config, function_name, options)
    }

    fn build(
        endpoint: &str,
        function_name: String,
        options: InvokeApiOptions,
        signer: Option<Signer>,
    ) -> Result<Self, SetupError> {
        let invalid = |reason: &str| SetupError::InvalidEndpoint {
            endpoint: endpoint.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = endpoint
            .parse()
            .map_err(|error: hyper::http::uri::InvalidUri| invalid(&error.to_string()))?;
        let scheme = match uri.scheme() {
            Some(scheme) if *scheme == Scheme::HTTP || *scheme == Scheme::HTTPS => scheme.clone(),
            _ => return Err(invalid("the scheme must be http or https")),
        };
        let authority: Authority = uri.authority().cloned().ok_or_else(|| invalid("no host"))?;
        if uri.query().is_some() {
            return Err(invalid("an endpoint takes no query"));
        }
        let base = format!("{scheme}://{authority}{}", uri.path().trim_end_matches('/'));
        if function_name.is_empty() {
            return Err(SetupError::NoFunctionName { endpoint: base });
        }
        let mut invocations = format!(
            "{base}/2015-03-31/functions/{}/invocations",
            encode_uri_component(&function_name)
        );
        if let Some(qualifier) = &options.qualifier {
            let _ = write!(
                invocations,
                "?Qualifier={}",
                encode_uri_component(qualifier)
            );
        }
        let invocations_uri: Uri = invocations
            .parse()
            .map_err(|error: hyper::http::uri::InvalidUri| invalid(&error.to_string()))?;
        // The Host header is set here, not by the client, so that the signature covers the very
        // value sent.
        let host = HeaderValue::from_str(authority.as_str())
            .map_err(|_| invalid("the host is not a valid header value"))?;
        let client = http_client(&base, scheme == Scheme::HTTPS, options.connect_timeout)?;
        Ok(Self {
            client,
            endpoint: base,
            function_name,
            invocations_uri,
            host,
            signer,
            options,
            shut_down: AtomicBool::new(false),
            fallback: None,
            fallen_back: AtomicBool::new(false),
            missing: tokio::sync::watch::Sender::new(None),
        })
    }

    /// When `cargo lambda watch` answers that it does not know the function, invokes `name`
    /// (the function's binary, which is how `cargo lambda watch` names functions) instead, and
    /// keeps it if it is known. Ignored when `name` is the function name or is empty.
    pub fn fallback_function_name(mut self, name: &str) -> Self {
        if name.is_empty() || name == self.function_name {
            return self;
        }
        let uri = self
            .invocations_uri
            .to_string()
            .replacen(
                &format!("/functions/{}/", encode_uri_component(&self.function_name)),
                &format!("/functions/{}/", encode_uri_component(name)),
                1,
            )
            .parse();
        if let Ok(uri) = uri {
            self.fallback = Some((name.to_owned(), uri));
        }
        self
    }

    /// Waits until the target has answered that it has no such function (after the fallback
    /// name, if any, was tried too), and returns what it said.
    pub async fn missing_function(&self) -> String {
        let mut missing = self.missing.subscribe();
        // The sender lives as long as `self`: the wait cannot fail.
        let told = missing
            .wait_for(Option::is_some)
            .await
            .map(|message| message.clone());
        told.ok().flatten().unwrap_or_default()
    }

    /// The name invocations go to now, and its URI.
    fn current_target(&self) -> (&str, &Uri) {
        match &self.fallback {
            Some((name, uri)) if self.fallen_back.load(Ordering::Acquire) => (name, uri),
            _ => (&self.function_name, &self.invocations_uri),
        }
    }

    /// The endpoint invocations go to, such as `https://lambda.eu-west-1.amazonaws.com`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The function invoked.
    pub fn function_name(&self) -> &str {
        &self.function_name
    }

    /// Whether requests are signed (Lambda) or not (local servers).
    pub fn is_signed(&self) -> bool {
        self.signer.is_some()
    }

    /// The function and where it is, for messages.
    fn target(&self) -> String {
        let (name, uri) = self.current_target();
        format!("function `{name}` at {uri}")
    }

    fn unreachable(&self, what: impl fmt::Display) -> InvokeError {
        InvokeError::Unreachable {
            message: format!("{}: {what}", self.target()),
        }
    }

    async fn request(&self, invocation: &Invocation) -> Result<Request<Full<Bytes>>, InvokeError> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(self.current_target().1.clone())
            .header(HOST, self.host.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(INVOCATION_TYPE, "RequestResponse")
            .header(
                USER_AGENT,
                concat!("kinesis-esm/", env!("CARGO_PKG_VERSION")),
            )
            .body(Full::new(invocation.payload.clone()))
            .map_err(|error| self.unreachable(format_args!("invalid request: {error}")))?;
        if let Ok(request_id) = HeaderValue::from_str(&invocation.request_id) {
            request.headers_mut().insert(REQUEST_ID, request_id);
        }
        if let Some(signer) = &self.signer {
            signer
                .sign(&mut request, &invocation.payload)
                .await
                .map_err(|error| self.unreachable(error))?;
        }
        Ok(request)
    }

    /// Sends the request and reads the whole answer.
    async fn exchange(&self, request: Request<Full<Bytes>>) -> Result<InvokeOutcome, InvokeError> {
        let response = self
            .client
            .request(request)
            .await
            .map_err(|error| self.unreachable(ErrorChain(&error)))?;
        let (parts, body) = response.into_parts();
        let body = match Limited::new(body, MAX_RESPONSE_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<LengthLimitError>() => {
                if parts.status.is_success() && !parts.headers.contains_key(FUNCTION_ERROR) {
                    return Ok(InvokeOutcome::FunctionError {
                        error_type: "Function.ResponseSizeTooLarge".to_owned(),
                        message: format!(
                            "Response payload size exceeded maximum allowed payload size ({MAX_RESPONSE_BYTES} bytes)."
                        ),
                    });
                }
                return Err(self.unreachable(format_args!(
                    "HTTP {} with an answer over {MAX_RESPONSE_BYTES} bytes",
                    parts.status
                )));
            }
            Err(error) => {
                return Err(self.unreachable(format_args!(
                    "the answer broke off: {}",
                    ErrorChain(&*error)
                )));
            }
        };
        classify(parts.status, &parts.headers, body).map_err(|rejection| {
            let message = format!("{}: {}", self.target(), rejection.summary);
            match rejection.kind {
                RejectionKind::Throttled => InvokeError::Throttled { message },
                RejectionKind::NoSuchFunction => InvokeError::NoSuchFunction { message },
                RejectionKind::Other => InvokeError::Unreachable { message },
            }
        })
    }

    /// Sends the invocation; when the target does not know the function, tries the fallback
    /// name once, then reports the function missing.
    async fn exchange_or_fall_back(
        &self,
        invocation: &Invocation,
    ) -> Result<InvokeOutcome, InvokeError> {
        let outcome = self.exchange(self.request(invocation).await?).await;
        let Err(InvokeError::NoSuchFunction { message }) = &outcome else {
            return outcome;
        };
        if let Some((fallback, _)) = &self.fallback
            && !self.fallen_back.swap(true, Ordering::AcqRel)
        {
            tracing::warn!(
                function = %self.function_name,
                endpoint = %self.endpoint,
                "{message}; trying the binary's name `{fallback}`, as `cargo lambda watch` names \
                 functions (pass --invoke-name binary to say so)"
            );
            let retried = self.exchange(self.request(invocation).await?).await;
            match &retried {
                Err(InvokeError::NoSuchFunction { .. }) => {
                    // Neither name is known: report the one asked for.
                    self.fallen_back.store(false, Ordering::Release);
                }
                _ => {
                    tracing::warn!(
                        function = %self.function_name,
                        "invoking `{fallback}` from now on"
                    );
                    return retried;
                }
            }
        }
        self.missing.send_replace(Some(message.clone()));
        outcome
    }
}

#[async_trait]
impl Invoker for InvokeApi {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeOutcome, InvokeError> {
        if self.shut_down.load(Ordering::Acquire) {
            return Err(self.unreachable("the invoker was shut down"));
        }
        let remaining = invocation
            .deadline
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        // A connection that cannot be made fails within the connect timeout: waiting at least
        // that long (plus the grace) lets it be reported as unreachable, never as a timeout.
        let patience = remaining.max(self.options.connect_timeout) + self.options.grace;
        let started = Instant::now();
        let exchange = self.exchange_or_fall_back(&invocation);
        let outcome = match tokio::time::timeout(patience, exchange).await {
            Ok(outcome) => outcome,
            Err(_elapsed) => Ok(InvokeOutcome::Timeout),
        };
        tracing::debug!(
            function = %self.function_name,
            endpoint = %self.endpoint,
            request_id = %invocation.request_id,
            elapsed = ?started.elapsed(),
            ?outcome,
            "invoked through the Invoke API"
        );
        outcome
    }

    async fn shutdown(&self) {
        self.shut_down.store(true, Ordering::Release);
    }
}

/// The HTTP client: HTTP/1.1, plain or over TLS, with pooled connections.
fn http_client(
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
struct TimedConnector {
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
