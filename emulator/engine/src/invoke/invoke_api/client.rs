//! The Invoke API invoker: the request it sends for an invocation, and how the answer becomes an
//! outcome.

use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime};

use async_trait::async_trait;
use aws_config::BehaviorVersion;
use aws_types::SdkConfig;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper::header::{CONTENT_TYPE, HOST, HeaderName, HeaderValue, USER_AGENT};
use hyper::http::uri::{Authority, Scheme};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::Client;

use super::answer::{FUNCTION_ERROR, RejectionKind, classify};
use super::connector::{TimedConnector, http_client};
use super::error_chain::ErrorChain;
use super::setup::{InvokeApiOptions, SetupError};
use super::signing::{Signer, aws_endpoint, encode_uri_component};
use crate::invoke::error_type::LambdaError;
use crate::invoke::invoker::{Invocation, InvokeError, InvokeOutcome, Invoker};

/// The largest answer a synchronous invocation may return: Lambda's 6 MB limit, which it counts
/// as 6 MiB and 100 bytes.
const MAX_RESPONSE_BYTES: usize = 6_291_556;

/// The invocation type: wait for the function's answer.
const INVOCATION_TYPE: HeaderName = HeaderName::from_static("x-amz-invocation-type");

/// The request id header the Runtime API uses. `cargo lambda watch` takes the id from it, so its
/// logs show the emulator's request id; Lambda ignores it.
const REQUEST_ID: HeaderName = HeaderName::from_static("lambda-runtime-aws-request-id");

/// Invokes a function through the Lambda Invoke API at an endpoint: `cargo lambda watch`,
/// `sam local start-lambda`, or Lambda itself. See the [module documentation](super) for how each
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
                        error_type: LambdaError::ResponseSizeTooLarge.into(),
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
