//! The embedded Kinesis over the Kinesis API: a loopback endpoint that `aws-sdk-kinesis`,
//! boto3, the aws CLI and the event source mapping's SDK source talk to as they talk to Kinesis.
//!
//! In a test, start it on a free loopback port and hand its endpoint to the AWS SDK; what a
//! client writes, the same `EmbeddedKinesis` holds in process:
//!
//! ```
//! use aws_sdk_kinesis::config::{BehaviorVersion, Credentials, Region};
//! use embedded_kinesis::{EmbeddedKinesis, http};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let kinesis = EmbeddedKinesis::new();
//! // Port 0 picks a free port; `http::DEFAULT_ADDR` is 127.0.0.1:4566.
//! let server = http::serve(kinesis.clone(), "127.0.0.1:0".parse()?).await?;
//!
//! // Any credentials and region: requests are not authenticated.
//! let config = aws_sdk_kinesis::Config::builder()
//!     .behavior_version(BehaviorVersion::latest())
//!     .endpoint_url(server.endpoint_url())
//!     .region(Region::new("us-east-1"))
//!     .credentials_provider(Credentials::new("test", "test", None, None, "doctest"))
//!     .build();
//! let client = aws_sdk_kinesis::Client::from_conf(config);
//! client.create_stream().stream_name("orders").shard_count(2).send().await?;
//! assert_eq!(kinesis.list_streams(), ["orders"]);
//!
//! server.stop().await;
//! # Ok(())
//! # }
//! ```
//!
//! A front that serves routes of its own on the same port mounts [`KinesisApi`] (a
//! `tower::Service`) beside them and serves the whole with [`serve_service`], as `kinesis-esm`
//! does with its live page.
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
//! `ListTagsForStream`, `TagResource`, `UntagResource`, `ListTagsForResource` (streams and
//! consumers, by ARN), `PutResourcePolicy`, `GetResourcePolicy` and `DeleteResourcePolicy`
//! (policies are kept, not enforced), `UpdateMaxRecordSize` (records up to 10 MiB),
//! `EnableEnhancedMonitoring`, `DisableEnhancedMonitoring`, `StartStreamEncryption`,
//! `StopStreamEncryption` and `UpdateStreamWarmThroughput` (kept and shown, not acted on),
//! `UpdateStreamRecordDistributionStrategy` (`AUTO` streams take records without keys),
//! `DescribeLimits`, `DescribeAccountSettings` and `UpdateAccountSettings`, and the stream
//! consumer operations of enhanced fan-out with `SubscribeToShard`. Wherever the API takes a
//! `StreamName` it takes a `StreamARN` too. Channels and queues are not emulated.
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
//! - Enhanced monitoring names metrics without measuring them, and stream encryption names a
//!   KMS key without encrypting: both are shown by `DescribeStream(Summary)` only.
//! - A `NextToken` of `ListShards` cannot come with a `ShardFilter` either: it carries its own.
//!   `ListStreams` tokens do not expire.
//! - `ListShards`' time filters count a time before the trim horizon as the trim horizon, for
//!   `AT_TIMESTAMP` as Kinesis does for `FROM_TIMESTAMP`.

mod account_settings;
mod codec;
mod configuration;
mod consumers;
mod error;
mod event_stream;
mod fan_out;
mod format;
mod operations;
mod policies;
mod records;
mod server;
mod service;
mod shards;
mod streams;
mod subscribe;
mod tags;
mod validation;
mod wire;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

pub use self::fan_out::LocalFanOut;
pub use self::server::{HttpService, ServeError, ServerHandle, serve_service};
pub use self::service::KinesisApi;
use crate::embedded::EmbeddedKinesis;

/// Where the endpoint listens unless told otherwise: `127.0.0.1:4566`, LocalStack's port, which
/// tools already point at.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 4566));

/// Serves `kinesis` over the Kinesis API on `addr` (port 0 picks a free one), in a task of the
/// current tokio runtime. The endpoint answers as soon as this returns.
pub async fn serve(kinesis: EmbeddedKinesis, addr: SocketAddr) -> Result<ServerHandle, ServeError> {
    let server = serve_service(addr, KinesisApi::new(kinesis)).await?;
    tracing::info!(local_addr = %server.local_addr(), "serving the embedded Kinesis over the Kinesis API");
    Ok(server)
}
