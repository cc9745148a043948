//! What every test here starts from: an endpoint over an embedded Kinesis with an SDK client
//! for it, a journal kept in memory, and the reading of a failed call.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_kinesis::Client;
use aws_sdk_kinesis::config::http::HttpResponse;
use aws_sdk_kinesis::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_kinesis::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_kinesis::operation::create_stream::builders::CreateStreamFluentBuilder;
use aws_sdk_kinesis::operation::get_records::GetRecordsOutput;
use aws_sdk_kinesis::operation::put_record::PutRecordOutput;
use aws_sdk_kinesis::operation::update_shard_count::UpdateShardCountOutput;
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::{
    PutRecordsRequestEntry, ScalingType, ShardIteratorType, StreamDescriptionSummary, StreamMode,
    StreamModeDetails,
};
use embedded_kinesis::http::{self, ServerHandle};
use embedded_kinesis::{EmbeddedKinesis, Journal, JournalError};

impl Endpoint {
    /// Creates `stream` through the API with what `configure` sets on its `CreateStream`.
    pub(crate) async fn create_with(
        &self,
        stream: &str,
        configure: impl FnOnce(CreateStreamFluentBuilder) -> CreateStreamFluentBuilder,
    ) {
        configure(self.client.create_stream().stream_name(stream))
            .send()
            .await
            .unwrap();
    }

    /// Puts `entries` into `stream` in one `PutRecords` call; a refused call's failure.
    pub(crate) async fn put_entries(
        &self,
        stream: &str,
        entries: impl Iterator<Item = PutRecordsRequestEntry>,
    ) -> Result<(), (String, String, u16)> {
        let put = self
            .client
            .put_records()
            .stream_name(stream)
            .set_records(Some(entries.collect()))
            .send()
            .await;
        put.map(drop).map_err(|error| failure::<(), _>(Err(error)))
    }

    /// `DescribeStreamSummary` of `stream`, which must exist.
    pub(crate) async fn summary(&self, stream: &str) -> StreamDescriptionSummary {
        summary(&self.client, stream).await
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
    let server = serve_loopback(kinesis.clone()).await;
    let client = Client::from_conf(sdk_config(&server.endpoint_url()));
    (server, client)
}

/// Serves `kinesis` on a free loopback port, until the handle is stopped or dropped.
pub(crate) async fn serve_loopback(kinesis: EmbeddedKinesis) -> ServerHandle {
    http::serve(kinesis, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
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

/// A new embedded Kinesis served with a provisioned stream `stream` of `shards` shards: the
/// Kinesis, its endpoint (it stops when dropped) and an SDK client of it.
pub(crate) async fn listen_with_stream(
    stream: &str,
    shards: i32,
) -> (EmbeddedKinesis, ServerHandle, Client) {
    let kinesis = EmbeddedKinesis::new();
    let (server, client) = listen(&kinesis).await;
    create(&client, stream, shards).await;
    (kinesis, server, client)
}

/// `DescribeStreamSummary` of `stream`, which must exist.
pub(crate) async fn summary(client: &Client, stream: &str) -> StreamDescriptionSummary {
    let described = client
        .describe_stream_summary()
        .stream_name(stream)
        .send()
        .await
        .unwrap();
    described.stream_description_summary.unwrap()
}

/// A TRIM_HORIZON iterator of the only shard of `stream`.
pub(crate) async fn trim_horizon_iterator(client: &Client, stream: &str) -> String {
    client
        .get_shard_iterator()
        .stream_name(stream)
        .shard_id("shardId-000000000000")
        .shard_iterator_type(ShardIteratorType::TrimHorizon)
        .send()
        .await
        .unwrap()
        .shard_iterator
        .unwrap()
}

/// Puts one record of `data` with the partition key `key` into `stream`.
pub(crate) async fn put_record(
    client: &Client,
    stream: &str,
    key: &str,
    data: impl Into<Vec<u8>>,
) -> PutRecordOutput {
    client
        .put_record()
        .stream_name(stream)
        .partition_key(key)
        .data(Blob::new(data))
        .send()
        .await
        .unwrap()
}

/// `UpdateShardCount` of `stream` to `target` open shards, by uniform scaling.
pub(crate) async fn update_shard_count(
    client: &Client,
    stream: &str,
    target: i32,
) -> UpdateShardCountOutput {
    client
        .update_shard_count()
        .stream_name(stream)
        .target_shard_count(target)
        .scaling_type(ScalingType::UniformScaling)
        .send()
        .await
        .unwrap()
}

/// One `GetRecords` call at `iterator`.
pub(crate) async fn get_records(client: &Client, iterator: impl Into<String>) -> GetRecordsOutput {
    client
        .get_records()
        .shard_iterator(iterator)
        .send()
        .await
        .unwrap()
}

/// `StreamModeDetails` of an `ON_DEMAND` stream.
pub(crate) fn on_demand() -> StreamModeDetails {
    StreamModeDetails::builder()
        .stream_mode(StreamMode::OnDemand)
        .build()
        .unwrap()
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
    /// An endpoint over a new embedded Kinesis that keeps its changes in a new journal, and
    /// that journal, to restart from.
    pub(crate) async fn serve() -> (Arc<Self>, Endpoint) {
        let journal = Arc::new(Self::default());
        let endpoint = serve(journal.kinesis()).await;
        (journal, endpoint)
    }

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

/// Sends each request of the table and checks that it fails with its exception, as a client
/// error (400), and a message holding each of its parts. A row is `request => "Exception",
/// &["part", ...];`, the request being an SDK call's builder without its `.send()`; a failing
/// row is named by its request.
macro_rules! expect_errors {
    ($($request:expr => $code:expr, $parts:expr;)+) => {
        $(
            $crate::support::expect_error_of(
                stringify!($request),
                $request.send().await,
                $code,
                $parts,
            );
        )+
    };
}
pub(crate) use expect_errors;

/// Checks that an SDK call failed with the exception `expected_code`, as a client error (400),
/// with a message holding each of `parts`.
#[track_caller]
pub(crate) fn expect_error<T: std::fmt::Debug, E: ProvideErrorMetadata + std::fmt::Debug>(
    result: Result<T, SdkError<E, HttpResponse>>,
    expected_code: &str,
    parts: &[&str],
) {
    expect_error_of("the call", result, expected_code, parts);
}

/// [`expect_error`] of the call `request`, which names it when the check fails.
#[track_caller]
pub(crate) fn expect_error_of<T: std::fmt::Debug, E: ProvideErrorMetadata + std::fmt::Debug>(
    request: &str,
    result: Result<T, SdkError<E, HttpResponse>>,
    expected_code: &str,
    parts: &[&str],
) {
    assert!(result.is_err(), "{request} should have failed: {result:?}");
    check_failure_of(request, failure(result), expected_code, parts);
}

/// Checks a failure's exception name, that it came as a client error (400, as every Kinesis
/// exception does), and that its message holds each of `parts`.
#[track_caller]
pub(crate) fn check_failure(failure: (String, String, u16), expected_code: &str, parts: &[&str]) {
    check_failure_of("the call", failure, expected_code, parts);
}

/// [`check_failure`] of the call `request`, which names it when the check fails.
#[track_caller]
fn check_failure_of(
    request: &str,
    (code, message, status): (String, String, u16),
    expected_code: &str,
    parts: &[&str],
) {
    assert_eq!(
        (code.as_str(), status),
        (expected_code, 400),
        "{request}: {message}"
    );
    for part in parts {
        assert!(
            message.contains(part),
            "{request}: `{message}` should mention `{part}`"
        );
    }
}
