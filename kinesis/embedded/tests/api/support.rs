//! What every test here starts from: an endpoint over an embedded Kinesis with an SDK client
//! for it, a journal kept in memory, and the reading of a failed call.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_kinesis::Client;
use aws_sdk_kinesis::config::http::HttpResponse;
use aws_sdk_kinesis::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_kinesis::error::{ProvideErrorMetadata, SdkError};
use embedded_kinesis::http::{self, ServerHandle};
use embedded_kinesis::{EmbeddedKinesis, Journal, JournalError};

impl Endpoint {
    /// `DescribeStreamSummary` of `stream`, which must exist.
    pub(crate) async fn summary(
        &self,
        stream: &str,
    ) -> aws_sdk_kinesis::types::StreamDescriptionSummary {
        let described = self
            .client
            .describe_stream_summary()
            .stream_name(stream)
            .send()
            .await
            .unwrap();
        described.stream_description_summary.unwrap()
    }
}

/// An endpoint serving an embedded Kinesis and a client of it; the endpoint stops when this
/// is dropped with the test's runtime.
pub(crate) struct Endpoint {
    pub(crate) kinesis: EmbeddedKinesis,
    pub(crate) client: Client,
    _server: ServerHandle,
}

/// Serves `kinesis` on a free loopback port, with an SDK client pointed at it.
pub(crate) async fn serve(kinesis: EmbeddedKinesis) -> Endpoint {
    let (server, client) = listen(&kinesis).await;
    Endpoint {
        kinesis,
        client,
        _server: server,
    }
}

/// Serves `kinesis` on a free loopback port: the endpoint (it stops when dropped) and an SDK
/// client pointed at it.
pub(crate) async fn listen(kinesis: &EmbeddedKinesis) -> (ServerHandle, Client) {
    let server = http::serve(kinesis.clone(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let client = Client::from_conf(sdk_config(&server.endpoint_url()));
    (server, client)
}

/// The SDK's configuration for a local endpoint: a region and static test credentials, so
/// that nothing probes the environment or an instance metadata service.
pub(crate) fn sdk_config(endpoint_url: &str) -> aws_sdk_kinesis::Config {
    aws_sdk_kinesis::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint_url)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .build()
}

/// Creates a provisioned stream of `shards` shards through the API.
pub(crate) async fn create(client: &Client, stream: &str, shards: i32) {
    client
        .create_stream()
        .stream_name(stream)
        .shard_count(shards)
        .send()
        .await
        .unwrap();
}

/// Waits for `future`, failing the test with `what` if it takes longer than 30 seconds.
pub(crate) async fn within_timeout<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// An endpoint over a new embedded Kinesis with the defaults.
pub(crate) async fn endpoint() -> Endpoint {
    serve(EmbeddedKinesis::new()).await
}

/// A journal that keeps every change in memory, to restore a second Kinesis from.
#[derive(Debug, Default)]
pub(crate) struct MemoryJournal {
    changes: Mutex<Vec<Vec<u8>>>,
}

impl Journal for MemoryJournal {
    fn is_enabled(&self) -> bool {
        true
    }

    fn append(&self, change: &[u8]) -> Result<(), JournalError> {
        self.changes.lock().unwrap().push(change.to_vec());
        Ok(())
    }
}

impl MemoryJournal {
    /// An embedded Kinesis that keeps its changes here.
    pub(crate) fn kinesis(self: &Arc<Self>) -> EmbeddedKinesis {
        EmbeddedKinesis::builder().journal(self.clone()).build()
    }

    /// A new embedded Kinesis with every change kept so far applied: what a restart with
    /// `--state-dir` brings back.
    pub(crate) fn restored(&self) -> EmbeddedKinesis {
        let restored = EmbeddedKinesis::new();
        let changes = self.changes.lock().unwrap().clone();
        restored.restore(changes.iter().map(Vec::as_slice)).unwrap();
        restored
    }
}

/// The exception name, message and HTTP status of a call that must fail.
#[track_caller]
pub(crate) fn failure<T: std::fmt::Debug, E: ProvideErrorMetadata + std::fmt::Debug>(
    result: Result<T, SdkError<E, HttpResponse>>,
) -> (String, String, u16) {
    let error = result.expect_err("the call should have failed");
    let status = error.raw_response().map_or(0, |raw| raw.status().as_u16());
    (
        error.code().unwrap_or("(no code)").to_owned(),
        error.message().unwrap_or("(no message)").to_owned(),
        status,
    )
}

/// Checks a failure's exception name, that it came as a client error (400, as every Kinesis
/// exception does), and that its message holds each of `parts`.
#[track_caller]
pub(crate) fn check_failure(
    (code, message, status): (String, String, u16),
    expected_code: &str,
    parts: &[&str],
) {
    assert_eq!(
        (code.as_str(), status),
        (expected_code, 400),
        "message: {message}"
    );
    for part in parts {
        assert!(
            message.contains(part),
            "`{message}` should mention `{part}`"
        );
    }
}
