//! The Invoke API invoker against a server in the test that answers as Lambda, SAM and
//! `cargo lambda watch` do. The end-to-end tests against a real `cargo lambda watch` are in the
//! workspace's `tests/cargo_lambda.rs`.
//!
//! Run with `cargo test --workspace --test integration invoke_api`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use aws_credential_types::provider::{self, ProvideCredentials, SharedCredentialsProvider};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use kinesis_esm::invoke::invoke_api::{InvokeApi, InvokeApiOptions, SetupError};
use kinesis_esm::invoke::{Invocation, InvokeError, InvokeOutcome, Invoker as _};
use serde_json::json;
use tokio::io::AsyncReadExt as _;
use tokio::net::TcpListener;

/// The function's timeout in the tests against the stand-in server.
const FUNCTION_TIMEOUT: Duration = Duration::from_secs(5);

/// Lambda's limit on a synchronous invocation's answer.
const MAX_RESPONSE_BYTES: usize = 6_291_556;

// ---------------------------------------------------------------------------------------------
// A stand-in for the Invoke API: the function's name picks the answer.
// ---------------------------------------------------------------------------------------------

/// A request as the stand-in received it.
#[derive(Debug, Clone)]
struct Received {
    function_name: String,
    query: Option<String>,
    headers: HeaderMap,
    body: Bytes,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Received>>>);

impl Recorder {
    fn last(&self) -> Received {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .last()
            .cloned()
            .expect("the stand-in received a request")
    }
}

fn aws_error(status: StatusCode, error_type: &str, body: serde_json::Value) -> Response {
    (
        status,
        [
            ("x-amzn-errortype", error_type),
            ("content-type", "application/json"),
        ],
        body.to_string(),
    )
        .into_response()
}

fn function_error(reported: &str, body: &str) -> Response {
    (
        StatusCode::OK,
        [
            ("x-amz-function-error", reported),
            ("content-type", "application/json"),
        ],
        body.to_owned(),
    )
        .into_response()
}

/// Answers as the Invoke API of Lambda, SAM or `cargo lambda watch` would, by the last part of
/// the function's name (so that an ARN picks the same answer as a name).
async fn invoke(
    State(recorder): State<Recorder>,
    UrlPath(function_name): UrlPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    recorder
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Received {
            function_name: function_name.clone(),
            query,
            headers,
            body: body.clone(),
        });
    let behaviour = function_name.rsplit(':').next().unwrap_or_default();
    match behaviour {
        "echo" => (StatusCode::OK, body).into_response(),
        "handled" => function_error(
            "Handled",
            r#"{"errorType":"InvalidShipment","errorMessage":"the shipment has no address"}"#,
        ),
        "crashed" => function_error(
            "Unhandled",
            r#"{"errorType":"Runtime.ExitError","errorMessage":"RequestId: 1 Error: Runtime exited with error: signal: killed"}"#,
        ),
        "timed-out" => function_error(
            "Unhandled",
            r#"{"errorType":"Sandbox.Timedout","errorMessage":"RequestId: 1 Error: Task timed out after 5.00 seconds"}"#,
        ),
        "timed-out-untyped" => function_error(
            "Unhandled",
            r#"{"errorMessage":"2024-05-01T10:00:00.000Z 1 Task timed out after 5.00 seconds"}"#,
        ),
        "not-json-error" => function_error("Unhandled", "the runtime fell over"),
        "cargo-lambda-function-error" => (
            StatusCode::INTERNAL_SERVER_ERROR,
            r#"{"errorType":"&lambda_runtime::deserializer::DeserializeError","errorMessage":"failed to deserialize the incoming data into the function's payload type"}"#,
        )
            .into_response(),
        "cargo-lambda-failure" => (
            StatusCode::INTERNAL_SERVER_ERROR,
            r#"{"type":"https://httpstatuses.com/500","status":500,"title":"Internal Server Error"}"#,
        )
            .into_response(),
        "cargo-lambda-missing" => (
            StatusCode::NOT_FOUND,
            r#"{"title":"Missing function","detail":"that function doesn't exist as a binary in your project. Available functions: {\"bootstrap\"}"}"#,
        )
            .into_response(),
        "service-error" => aws_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "ServiceException",
            json!({"Type": "Service", "message": "Lambda is having a bad day"}),
        ),
        "throttled" => {
            let mut response = aws_error(
                StatusCode::TOO_MANY_REQUESTS,
                "TooManyRequestsException:http://internal.amazon.com/coral/com.amazonaws.awslambda/",
                json!({
                    "Type": "User",
                    "message": "Rate Exceeded.",
                    "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded",
                }),
            );
            response
                .headers_mut()
                .insert("retry-after", "2".parse().expect("a header value"));
            response
        }
        "denied" => aws_error(
            StatusCode::FORBIDDEN,
            "AccessDeniedException",
            json!({"Message": "User is not authorized to perform: lambda:InvokeFunction"}),
        ),
        // `sam local start-lambda` names the type without the `Exception` suffix and writes
        // `Message` with a capital.
        "sam-missing" => aws_error(
            StatusCode::NOT_FOUND,
            "ResourceNotFound",
            json!({
                "Type": "User",
                "Message": "Function not found: arn:aws:lambda:us-west-2:012345678901:function:sam-missing",
            }),
        ),
        "too-big" => (StatusCode::OK, vec![b' '; MAX_RESPONSE_BYTES + 1]).into_response(),
        "late" => {
            // Answers after the invocation's deadline but within the grace.
            tokio::time::sleep(Duration::from_millis(300)).await;
            (StatusCode::OK, body).into_response()
        }
        "silent" => std::future::pending::<Response>().await,
        _ => aws_error(
            StatusCode::NOT_FOUND,
            "ResourceNotFoundException",
            json!({
                "Type": "User",
                "message": format!("Function not found: arn:aws:lambda:us-east-1:123456789012:function:{function_name}"),
            }),
        ),
    }
}

/// Serves the stand-in on a free loopback port, for as long as the test's runtime runs.
async fn stand_in() -> (String, Recorder) {
    let recorder = Recorder::default();
    let app = Router::new()
        .route("/2015-03-31/functions/{name}/invocations", post(invoke))
        .with_state(recorder.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let address = listener.local_addr().expect("a bound address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}"), recorder)
}

fn options() -> InvokeApiOptions {
    let mut options = InvokeApiOptions::default();
    options.grace = Duration::from_millis(200);
    options.connect_timeout = Duration::from_millis(500);
    options
}

/// Invokes `function_name` at the stand-in with `payload`.
async fn invoke_stand_in(
    function_name: &str,
    payload: &'static [u8],
) -> Result<InvokeOutcome, InvokeError> {
    let (endpoint, _recorder) = stand_in().await;
    let api = InvokeApi::new(&endpoint, function_name, options()).expect("a valid endpoint");
    api.invoke(Invocation::new(payload, FUNCTION_TIMEOUT)).await
}

#[track_caller]
fn check_function_error(
    result: Result<InvokeOutcome, InvokeError>,
    expected_type: &str,
    expected_message: &str,
) {
    assert_eq!(
        result,
        Ok(InvokeOutcome::FunctionError {
            error_type: kinesis_esm::invoke::ErrorType::new(expected_type),
            message: expected_message.to_owned(),
        })
    );
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unreachable,
    Throttled,
    NoSuchFunction,
}

/// Checks that the invocation failed before the function with an error of `kind` whose message
/// holds each of `fragments`.
#[track_caller]
fn check_invoke_error(result: Result<InvokeOutcome, InvokeError>, kind: Kind, fragments: &[&str]) {
    let (actual_kind, message) = match result {
        Err(InvokeError::Unreachable { message }) => (Kind::Unreachable, message),
        Err(InvokeError::Throttled { message }) => (Kind::Throttled, message),
        Err(InvokeError::NoSuchFunction { message }) => (Kind::NoSuchFunction, message),
        other => panic!("expected an invoke error ({kind:?}), got {other:?}"),
    };
    assert_eq!(actual_kind, kind, "{message}");
    for fragment in fragments {
        assert!(
            message.contains(fragment),
            "the message should hold {fragment:?}: {message}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Answers from the function
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn the_event_and_the_answer_travel_byte_for_byte() {
    let (endpoint, recorder) = stand_in().await;
    let api = InvokeApi::new(&endpoint, "echo", options()).unwrap();
    // Odd spacing, key order and escapes survive only if nobody re-serialises the JSON.
    let payload: &[u8] = b"{ \"Records\" :[ ] ,\"z\":1,  \"a\":\"\\u00e9\\n\" }";
    let invocation = Invocation::new(payload, FUNCTION_TIMEOUT);
    let request_id = invocation.request_id.clone();

    let outcome = api.invoke(invocation).await;

    assert_eq!(outcome, Ok(InvokeOutcome::Response(Bytes::from(payload))));
    let received = recorder.last();
    assert_eq!(received.body, payload);
    assert_eq!(received.headers["content-type"], "application/json");
    assert_eq!(received.headers["x-amz-invocation-type"], "RequestResponse");
    assert_eq!(
        received.headers["lambda-runtime-aws-request-id"],
        request_id.as_str()
    );
    assert!(
        !received.headers.contains_key("authorization"),
        "local targets get unsigned requests"
    );
}

#[tokio::test]
async fn an_arn_and_a_qualifier_reach_the_server_intact() {
    let (endpoint, recorder) = stand_in().await;
    let arn = "arn:aws:lambda:eu-west-1:123456789012:function:echo";
    let mut options = options();
    options.qualifier = Some("live".to_owned());
    // A trailing slash on the endpoint is not doubled in the path.
    let api = InvokeApi::new(&format!("{endpoint}/"), arn, options).unwrap();

    let outcome = api
        .invoke(Invocation::new(&b"{}"[..], FUNCTION_TIMEOUT))
        .await;

    assert_eq!(
        outcome,
        Ok(InvokeOutcome::Response(Bytes::from_static(b"{}")))
    );
    let received = recorder.last();
    assert_eq!(received.function_name, arn);
    assert_eq!(received.query.as_deref(), Some("Qualifier=live"));
}

#[tokio::test]
async fn a_handled_function_error_carries_the_functions_type_and_message() {
    check_function_error(
        invoke_stand_in("handled", b"{}").await,
        "InvalidShipment",
        "the shipment has no address",
    );
}

#[tokio::test]
async fn an_unhandled_function_error_carries_lambdas_type_and_message() {
    check_function_error(
        invoke_stand_in("crashed", b"{}").await,
        "Runtime.ExitError",
        "RequestId: 1 Error: Runtime exited with error: signal: killed",
    );
}

#[tokio::test]
async fn a_function_error_that_is_not_json_is_reported_as_the_header_says() {
    check_function_error(
        invoke_stand_in("not-json-error", b"{}").await,
        "Unhandled",
        "the runtime fell over",
    );
}

#[tokio::test]
async fn cargo_lambdas_500_with_the_runtimes_error_is_a_function_error() {
    check_function_error(
        invoke_stand_in("cargo-lambda-function-error", b"{}").await,
        "&lambda_runtime::deserializer::DeserializeError",
        "failed to deserialize the incoming data into the function's payload type",
    );
}

#[tokio::test]
async fn lambda_stopping_the_function_at_its_timeout_is_a_timeout() {
    assert_eq!(
        invoke_stand_in("timed-out", b"{}").await,
        Ok(InvokeOutcome::Timeout)
    );
    assert_eq!(
        invoke_stand_in("timed-out-untyped", b"{}").await,
        Ok(InvokeOutcome::Timeout)
    );
}

#[tokio::test]
async fn an_answer_over_six_megabytes_is_a_function_error() {
    let outcome = invoke_stand_in("too-big", b"{}").await;
    let Ok(InvokeOutcome::FunctionError { error_type, .. }) = outcome else {
        panic!("expected a function error, got {outcome:?}");
    };
    assert_eq!(error_type, "Function.ResponseSizeTooLarge");
}

// ---------------------------------------------------------------------------------------------
// Waiting
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn no_answer_by_the_deadline_and_grace_is_a_timeout() {
    let (endpoint, _recorder) = stand_in().await;
    let mut options = options();
    options.connect_timeout = Duration::from_millis(100);
    let api = InvokeApi::new(&endpoint, "silent", options).unwrap();
    let function_timeout = Duration::from_millis(300);
    let started = Instant::now();

    let outcome = api
        .invoke(Invocation::new(&b"{}"[..], function_timeout))
        .await;

    assert_eq!(outcome, Ok(InvokeOutcome::Timeout));
    assert!(
        started.elapsed() >= function_timeout,
        "a timeout is not reported before the deadline (after {:?})",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_answer_within_the_grace_is_taken() {
    let (endpoint, _recorder) = stand_in().await;
    let mut options = options();
    options.connect_timeout = Duration::from_millis(100);
    options.grace = Duration::from_secs(5);
    let api = InvokeApi::new(&endpoint, "late", options).unwrap();

    // The stand-in answers 300 ms after the request: past the deadline, within the grace.
    let outcome = api
        .invoke(Invocation::new(&b"late"[..], Duration::from_millis(50)))
        .await;

    assert_eq!(
        outcome,
        Ok(InvokeOutcome::Response(Bytes::from_static(b"late")))
    );
}

// ---------------------------------------------------------------------------------------------
// Errors before the function runs
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn throttling_is_reported_as_such() {
    check_invoke_error(
        invoke_stand_in("throttled", b"{}").await,
        Kind::Throttled,
        &[
            "`throttled`",
            "HTTP 429",
            "[TooManyRequestsException]: Rate Exceeded.",
            "ReservedFunctionConcurrentInvocationLimitExceeded",
            "retry after 2 s",
        ],
    );
}

#[tokio::test]
async fn lambdas_service_exception_is_not_a_function_error() {
    check_invoke_error(
        invoke_stand_in("service-error", b"{}").await,
        Kind::Unreachable,
        &["HTTP 500", "[ServiceException]: Lambda is having a bad day"],
    );
}

#[tokio::test]
async fn cargo_lambdas_own_failure_is_not_a_function_error() {
    check_invoke_error(
        invoke_stand_in("cargo-lambda-failure", b"{}").await,
        Kind::Unreachable,
        &["HTTP 500 Internal Server Error"],
    );
}

#[tokio::test]
async fn a_function_that_does_not_exist_is_a_missing_function() {
    check_invoke_error(
        invoke_stand_in("no-such-function", b"{}").await,
        Kind::NoSuchFunction,
        &[
            "`no-such-function`",
            "HTTP 404",
            "[ResourceNotFoundException]: Function not found",
        ],
    );
    check_invoke_error(
        invoke_stand_in("sam-missing", b"{}").await,
        Kind::NoSuchFunction,
        &["HTTP 404", "[ResourceNotFound]: Function not found"],
    );
    check_invoke_error(
        invoke_stand_in("cargo-lambda-missing", b"{}").await,
        Kind::NoSuchFunction,
        &[
            "HTTP 404",
            "[Missing function]: that function doesn't exist",
        ],
    );
}

#[tokio::test]
async fn a_missing_function_is_told_to_whoever_waits_for_it() {
    let (endpoint, _recorder) = stand_in().await;
    let api = InvokeApi::new(&endpoint, "cargo-lambda-missing", options()).unwrap();
    let outcome = api
        .invoke(Invocation::new(&b"{}"[..], FUNCTION_TIMEOUT))
        .await;
    assert!(
        matches!(outcome, Err(InvokeError::NoSuchFunction { .. })),
        "{outcome:?}"
    );
    let told = tokio::time::timeout(Duration::from_secs(1), api.missing_function())
        .await
        .expect("the missing function is told");
    assert!(told.contains("[Missing function]"), "{told}");
}

#[tokio::test]
async fn a_function_cargo_lambda_does_not_know_is_invoked_by_its_binary_instead() {
    let (endpoint, recorder) = stand_in().await;
    let api = InvokeApi::new(&endpoint, "cargo-lambda-missing", options())
        .unwrap()
        .fallback_function_name("echo");

    for _ in 0..2 {
        let outcome = api
            .invoke(Invocation::new(&b"{\"n\":1}"[..], FUNCTION_TIMEOUT))
            .await;
        assert_eq!(
            outcome,
            Ok(InvokeOutcome::Response(Bytes::from_static(b"{\"n\":1}")))
        );
        assert_eq!(recorder.last().function_name, "echo");
    }
    let names: Vec<String> = recorder
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|received| received.function_name.clone())
        .collect();
    assert_eq!(
        names,
        ["cargo-lambda-missing", "echo", "echo"],
        "the fallback is kept"
    );
    let told = tokio::time::timeout(Duration::from_millis(100), api.missing_function()).await;
    assert!(told.is_err(), "the function was found: nothing is missing");
}

#[tokio::test]
async fn when_neither_name_is_known_the_function_asked_for_is_missing() {
    let (endpoint, _recorder) = stand_in().await;
    let api = InvokeApi::new(&endpoint, "cargo-lambda-missing", options())
        .unwrap()
        .fallback_function_name("sam-missing");
    check_invoke_error(
        api.invoke(Invocation::new(&b"{}"[..], FUNCTION_TIMEOUT))
            .await,
        Kind::NoSuchFunction,
        &["`cargo-lambda-missing`", "[Missing function]"],
    );
}

#[tokio::test]
async fn a_refused_call_is_unreachable() {
    check_invoke_error(
        invoke_stand_in("denied", b"{}").await,
        Kind::Unreachable,
        &[
            "HTTP 403",
            "[AccessDeniedException]: User is not authorized",
        ],
    );
}

#[tokio::test]
async fn nothing_listening_is_unreachable() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let api = InvokeApi::new(&format!("http://{address}"), "echo", options()).unwrap();

    let outcome = api
        .invoke(Invocation::new(&b"{}"[..], FUNCTION_TIMEOUT))
        .await;

    check_invoke_error(
        outcome,
        Kind::Unreachable,
        &["`echo`", &address.to_string(), "refused"],
    );
}

#[tokio::test]
async fn a_connection_not_made_in_time_is_unreachable_even_past_the_deadline() {
    // A server that accepts connections and never says a word: the TLS handshake never ends.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((connection, _)) = listener.accept().await {
            held.push(connection);
        }
    });
    let mut options = options();
    options.connect_timeout = Duration::from_millis(300);
    let api = InvokeApi::new(&format!("https://{address}"), "echo", options).unwrap();

    // The function's deadline passes before the connection gives up: still, the function was
    // never reached, which is no timeout of the function.
    let outcome = api
        .invoke(Invocation::new(&b"{}"[..], Duration::from_millis(50)))
        .await;

    check_invoke_error(
        outcome,
        Kind::Unreachable,
        &["`echo`", "no connection within 300ms"],
    );
}

#[tokio::test]
async fn a_connection_closed_before_the_answer_is_unreachable() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        // Reads the request's start, then hangs up without a word.
        let (mut connection, _) = listener.accept().await.expect("a connection");
        let mut start = [0_u8; 16];
        let _ = connection.read(&mut start).await;
    });
    let api = InvokeApi::new(&format!("http://{address}"), "echo", options()).unwrap();

    let outcome = api
        .invoke(Invocation::new(&b"{}"[..], FUNCTION_TIMEOUT))
        .await;

    check_invoke_error(outcome, Kind::Unreachable, &["`echo`"]);
}

#[tokio::test]
async fn a_shut_down_invoker_invokes_nothing() {
    let (endpoint, recorder) = stand_in().await;
    let api = InvokeApi::new(&endpoint, "echo", options()).unwrap();
    api.shutdown().await;

    let outcome = api
        .invoke(Invocation::new(&b"{}"[..], FUNCTION_TIMEOUT))
        .await;

    check_invoke_error(outcome, Kind::Unreachable, &["shut down"]);
    assert!(recorder.0.lock().unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Setting up
// ---------------------------------------------------------------------------------------------

#[track_caller]
fn check_invalid_endpoint(endpoint: &str) {
    match InvokeApi::new(endpoint, "echo", options()) {
        Err(SetupError::InvalidEndpoint {
            endpoint: named, ..
        }) => assert_eq!(named, endpoint),
        other => panic!("expected {endpoint:?} to be refused, got {other:?}"),
    }
}

#[test]
fn endpoints_must_be_http_urls() {
    check_invalid_endpoint("");
    check_invalid_endpoint("127.0.0.1:9000");
    check_invalid_endpoint("ftp://127.0.0.1:9000");
    check_invalid_endpoint("http://127.0.0.1:9000/?debug=1");
    check_invalid_endpoint("http://");
}

#[test]
fn a_function_needs_a_name() {
    assert!(matches!(
        InvokeApi::new("http://127.0.0.1:9000", "", options()),
        Err(SetupError::NoFunctionName { .. })
    ));
}

mod signed;
