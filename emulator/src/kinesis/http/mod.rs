//! The embedded Kinesis over the Kinesis API: a loopback endpoint that `aws-sdk-kinesis`,
//! boto3, the aws CLI and [`crate::aws::SdkKinesis`] talk to as they talk to Kinesis.
//!
//! ```
//! use kinesis_esm::kinesis::EmbeddedKinesis;
//! use kinesis_esm::kinesis::http;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), http::ServeError> {
//! let kinesis = EmbeddedKinesis::new();
//! // Port 0 picks a free port; `http::DEFAULT_ADDR` is 127.0.0.1:4566.
//! let server = http::serve(kinesis.clone(), "127.0.0.1:0".parse().unwrap()).await?;
//! println!("Kinesis at {}", server.endpoint_url());
//! // Point any Kinesis client at that URL, with any credentials and region.
//! server.stop().await;
//! # Ok(())
//! # }
//! ```
//!
//! **Protocol.** AWS JSON 1.1, as the Kinesis API reference describes it: `POST` with
//! `Content-Type: application/x-amz-json-1.1` and `X-Amz-Target: Kinesis_20131202.<Operation>`;
//! blobs (`Data`) are base64 text, timestamps are seconds since the Unix epoch with a fraction.
//! A request with `Content-Type: application/x-amz-cbor-1.1` (what the AWS SDKs for Java, the
//! KPL and the KCL send by default) is read as CBOR and answered in CBOR: the same members,
//! blobs as byte strings, timestamps as tag 1 around epoch milliseconds (`codec.rs`).
//! Every answer carries an `x-amzn-RequestId` header. Errors are HTTP 400 with
//! `{"__type": "<Name>Exception", "message": "..."}` (a CBOR map of the same to a CBOR
//! request): the embedded Kinesis' own errors keep
//! their Kinesis names (`ResourceNotFoundException`, `InvalidArgumentException`,
//! `ExpiredIteratorException`, `LimitExceededException`, `ResourceInUseException`,
//! `ExpiredNextTokenException`); a request that breaks a constraint of the API model (a
//! required member missing, a count out of range, a malformed name) is a
//! `ValidationException`; a body that is not JSON of the operation's shape (wrong types, bad
//! base64) is a `SerializationException`, as Kinesis answers it; an operation not served is an
//! `UnknownOperationException`.
//!
//! **Operations.** `CreateStream`, `DeleteStream`, `DescribeStream`, `DescribeStreamSummary`,
//! `ListStreams`, `UpdateStreamMode`, `ListShards` (paging with `NextToken` and `MaxResults`, every `ShardFilter`
//! type, `ExclusiveStartShardId`), `PutRecord`, `PutRecords`, `GetShardIterator`, `GetRecords`,
//! `SplitShard`, `MergeShards`, `UpdateShardCount`, `IncreaseStreamRetentionPeriod`,
//! `DecreaseStreamRetentionPeriod`, `AddTagsToStream`, `RemoveTagsFromStream`,
//! `ListTagsForStream`, and `PutResourcePolicy`, `GetResourcePolicy` and
//! `DeleteResourcePolicy` (policies are kept, not enforced). Wherever the API takes a
//! `StreamName` it takes a `StreamARN` too.
//!
//! **Validation** comes first: a request is checked against the API model's constraints
//! before anything is looked up, and one `ValidationException` lists every violation, in
//! Kinesis' words (`validation.rs`; the rules in `docs/kinesis.md`, section 4). A
//! `ShardIterator` in literal double quotes is read without them, as Kinesis reads it.
//!
//! **Differences from Kinesis**, besides those of the embedded Kinesis itself (streams are
//! `ACTIVE` at once, no throttling; see [`super`]):
//! - Requests are not authenticated: signature headers are accepted without being checked, so
//!   any credentials work. Serve on loopback only.
//! - `ON_DEMAND` streams (what `CreateStream` without a `ShardCount` makes, with 4 shards) are
//!   a mode and nothing more: they do not scale by themselves, and resharding calls work on
//!   them as on `PROVISIONED` ones. `UpdateStreamMode` switches at once, as often as asked.
//! - `StreamId` members are ignored, as are a `StreamARN` sent along with `GetRecords` (the
//!   iterator alone says what is read) and `SequenceNumberForOrdering` beyond its shape
//!   (records are numbered in arrival order anyway).
//! - `PutRecords` answers `FailedRecordCount: 0`: no record fails on its own, and a record that
//!   breaks a rule fails the whole call.
//! - A `NextToken` of `ListShards` cannot come with a `ShardFilter` either: it carries its own.
//!   `ListStreams` tokens do not expire.
//! - `ListShards`' time filters count a time before the trim horizon as the trim horizon, for
//!   `AT_TIMESTAMP` as Kinesis does for `FROM_TIMESTAMP`.

mod api;
mod codec;
mod consumers;
mod error;
mod event_stream;
mod fan_out;
mod policies;
mod records;
mod server;
mod shards;
mod streams;
mod subscribe;
mod validation;
mod wire;

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use self::api::Api;
pub use self::fan_out::LocalFanOut;
use self::server::Served;
use super::EmbeddedKinesis;

/// Where the endpoint listens unless told otherwise: `127.0.0.1:4566`, LocalStack's port, which
/// tools already point at.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 4566));

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
#[error("the endpoint could not listen on {addr}: {source}")]
pub struct ServeError {
    /// The address it was to listen on.
    pub addr: SocketAddr,
    /// Why not.
    #[source]
    pub source: std::io::Error,
}

/// A running endpoint. [`stop`](Self::stop) ends it gracefully; dropping the handle ends it
/// too, without waiting.
pub struct ServerHandle {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerHandle")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

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
}

/// Serves `kinesis` over the Kinesis API on `addr` (port 0 picks a free one), in a task of the
/// current tokio runtime. The endpoint answers as soon as this returns.
pub async fn serve(kinesis: EmbeddedKinesis, addr: SocketAddr) -> Result<ServerHandle, ServeError> {
    serve_with(kinesis, addr, Vec::new()).await
}

/// [`serve`], also answering `GET` on each document's path with it.
pub async fn serve_with(
    kinesis: EmbeddedKinesis,
    addr: SocketAddr,
    documents: Vec<SideDocument>,
) -> Result<ServerHandle, ServeError> {
    let served = Served {
        api: Some(Arc::new(Api::new(kinesis))),
        documents,
        page: None,
    };
    let server = start(addr, served).await?;
    tracing::info!(local_addr = %server.local_addr, "serving the embedded Kinesis over the Kinesis API");
    Ok(server)
}

/// Serves only `documents`, each on `GET <path>`, on `addr`: how `kinesis-esm run` publishes
/// its mappings' status and metrics when it reads a Kinesis elsewhere, so that `kinesis-esm
/// status` reads them the same way in every mode. Kinesis calls get an
/// `UnknownOperationException` saying so.
pub async fn serve_documents(
    addr: SocketAddr,
    documents: Vec<SideDocument>,
) -> Result<ServerHandle, ServeError> {
    let paths: Vec<&str> = documents.iter().map(|document| document.path).collect();
    let paths = paths.join(", ");
    let served = Served {
        api: None,
        documents,
        page: None,
    };
    let server = start(addr, served).await?;
    tracing::info!(local_addr = %server.local_addr, paths, "serving documents");
    Ok(server)
}

/// [`serve_with`] (or [`serve_documents`] when `kinesis` is `None`), also serving the live page
/// (`crate::page`): `GET /` and the paths under `/page/`. The endpoint keeps its consumers
/// (and tags, policies) in `kinesis`, which readers in process share.
pub async fn serve_with_page(
    kinesis: Option<LocalFanOut>,
    addr: SocketAddr,
    documents: Vec<SideDocument>,
    page: axum::Router,
) -> Result<ServerHandle, ServeError> {
    let served = Served {
        api: kinesis.map(|kinesis| Arc::clone(kinesis.api())),
        documents,
        page: Some(page),
    };
    let server = start(addr, served).await?;
    tracing::info!(local_addr = %server.local_addr, "serving the live page at /");
    Ok(server)
}

async fn start(addr: SocketAddr, served: Served) -> Result<ServerHandle, ServeError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError { addr, source })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| ServeError { addr, source })?;
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(server::run(listener, Arc::new(served), stopped));
    Ok(ServerHandle {
        local_addr,
        stop,
        task: Some(task),
    })
}

impl ServerHandle {
    /// The address the endpoint listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint URL to give clients, such as `http://127.0.0.1:4566`.
    pub fn endpoint_url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// Stops accepting connections, lets the requests in flight get their answers (for up to
    /// five seconds), closes every connection, and returns when all that is done.
    pub async fn stop(mut self) {
        self.stop.send_replace(true);
        if let Some(task) = self.task.take() {
            // The task only ends by itself; a panic in it has been reported already.
            let _ = task.await;
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}
