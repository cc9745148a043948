//! [`SdkKinesis`]: the [`ShardSource`] over `aws-sdk-kinesis`, for real Kinesis or any endpoint
//! that speaks its API (kinesis-local, LocalStack, moto).
//!
//! What it takes care of, so the event source mapping does not have to:
//!
//! - **Paging.** `ListShards` is read to its last page; pages after the first send only the
//!   `NextToken`, since Kinesis refuses a stream name alongside it.
//! - **Order.** Shards come back parents before children, whatever order the pages had.
//! - **Read limits.** Kinesis allows five `GetRecords` calls per second per shard and 2 MiB/s per
//!   shard, and refuses reads for five seconds after a 10 MiB answer (`docs/kinesis.md` §2). Each shard
//!   is paced accordingly ([`ReadPacing`]): a call waits until 200 ms after the previous one, and
//!   after an answer of `n` bytes until `n / 2 MiB` seconds have passed (5 s for 10 MiB).
//! - **Errors in Kinesis' terms.** `ExpiredIteratorException` is
//!   [`SourceError::ExpiredIterator`] (get a new iterator from the checkpoint);
//!   `ProvisionedThroughputExceededException` and other throttles are
//!   [`SourceError::Throttled`], as is `LimitExceededException` on reads (there it means a call
//!   rate limit); on resharding calls it stays [`SourceError::LimitExceeded`]. 5xx answers,
//!   timeouts and connection failures are [`SourceError::Service`]. Each message names the call,
//!   the stream and the shard. Nothing is retried here: see [`crate::backoff`].
//!
//! Shard iterators handed out carry their stream and shard (`stream:shard:iterator`, which
//! cannot be confused with Kinesis' own base64 text), so that reads are paced per shard and
//! failures name the shard. They are as opaque as before: pass them back unchanged.
//!
//! Server quirks: kinesis-local sets a closed shard's `EndingSequenceNumber` to the placeholder
//! `9223372036854775807`. [`Shard::ending_sequence_number`] keeps whatever the server said, so it
//! only tells *that* a shard is closed; the end of a shard is where `GetRecords` returns no next
//! iterator, never a comparison with that number. kinesis-local also answers a malformed iterator
//! with an empty HTTP 500, which arrives here as [`SourceError::Service`].

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use aws_sdk_kinesis::Client;
use aws_sdk_kinesis::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_kinesis::primitives::{Blob, DateTime};
use aws_sdk_kinesis::types::{
    PutRecordsRequestEntry, ScalingType, ShardIteratorType, StreamStatus,
};
use bytes::Bytes;
use tokio::time::Instant;

use crate::aws::connection::{AwsConnection, ConnectionError};
use crate::aws::failure::{Observed, observe};
use kinesis_source::arn::Arn;
use kinesis_source::sequence::SequenceNumber;
use kinesis_source::{
    ChildShard, GetRecordsOutput, HashKeyRange, IteratorPosition, Record, Shard, ShardSource,
    SourceError, StreamDescription,
};
pub use pacing::ReadPacing;
use pacing::ShardPacer;

mod pacing;

/// The most records one `GetRecords` call may ask for.
const MAX_RECORDS_PER_READ: usize = 10_000;

/// How often a stream's status is asked for while waiting for it to become active.
const STREAM_STATUS_POLL: Duration = Duration::from_millis(100);

/// A shard iterator with the stream and shard it reads.
#[derive(Debug, PartialEq, Eq)]
struct TaggedIterator<'a> {
    stream: &'a str,
    shard_id: &'a str,
    iterator: &'a str,
}

impl<'a> TaggedIterator<'a> {
    fn encode(stream: &str, shard_id: &str, iterator: &str) -> String {
        // Stream names and shard ids never hold a colon (`[a-zA-Z0-9_.-]+`), and Kinesis'
        // iterators are base64, which has none either.
        format!("{stream}:{shard_id}:{iterator}")
    }

    /// Reads a tagged iterator; `None` for an iterator that did not come from this source.
    fn decode(text: &'a str) -> Option<Self> {
        let mut parts = text.splitn(3, ':');
        let (stream, shard_id, iterator) = (parts.next()?, parts.next()?, parts.next()?);
        (!stream.is_empty() && !shard_id.is_empty() && !iterator.is_empty()).then_some(Self {
            stream,
            shard_id,
            iterator,
        })
    }
}

/// A call, named for error messages.
#[derive(Debug, Clone, Copy)]
pub(super) struct Call<'a> {
    operation: &'static str,
    stream: &'a str,
    shard_id: Option<&'a str>,
    /// Whether the call reshapes the stream: there `LimitExceededException` means too many
    /// shards or operations, not a call rate.
    reshapes: bool,
}

impl<'a> Call<'a> {
    pub(super) fn read(
        operation: &'static str,
        stream: &'a str,
        shard_id: Option<&'a str>,
    ) -> Self {
        Self {
            operation,
            stream,
            shard_id,
            reshapes: false,
        }
    }

    fn reshape(operation: &'static str, stream: &'a str) -> Self {
        Self {
            operation,
            stream,
            shard_id: None,
            reshapes: true,
        }
    }

    fn resource(&self) -> String {
        match self.shard_id {
            Some(shard_id) => format!("shard {shard_id} of stream {}", self.stream),
            None => format!("stream {}", self.stream),
        }
    }

    /// Turns an SDK failure at `endpoint` into the Kinesis API's terms, described once (see
    /// [`crate::aws::failure`]).
    pub(super) fn error<E>(
        &self,
        error: SdkError<E, aws_sdk_kinesis::config::http::HttpResponse>,
        endpoint: &str,
    ) -> SourceError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let observed = observe(&error);
        let message = format!("{self}: {}", observed.describe("Kinesis", endpoint));
        match (&observed, observed.code()) {
            (_, Some(code)) => classify_service_error(
                code,
                observed.status().unwrap_or_default(),
                self.reshapes,
                message,
                self.resource(),
            ),
            (Observed::Other { .. }, None) if matches!(error, SdkError::ConstructionFailure(_)) => {
                SourceError::InvalidArgument { message }
            }
            (_, None) if observed.status() == Some(429) => SourceError::Throttled { message },
            _ => SourceError::Service { message },
        }
    }
}

impl fmt::Display for Call<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}", self.operation, self.resource())
    }
}

/// Maps a Kinesis error code (and HTTP status) to a [`SourceError`].
fn classify_service_error(
    code: &str,
    status: u16,
    reshapes: bool,
    message: String,
    resource: String,
) -> SourceError {
    match code {
        "ExpiredIteratorException" => SourceError::ExpiredIterator,
        "ProvisionedThroughputExceededException"
        | "ThrottlingException"
        | "KMSThrottlingException"
        | "RequestLimitExceeded" => SourceError::Throttled { message },
        "LimitExceededException" if reshapes => SourceError::LimitExceeded { message },
        "LimitExceededException" => SourceError::Throttled { message },
        "ResourceNotFoundException" => SourceError::NotFound { what: resource },
        "InvalidArgumentException" | "ValidationException" | "ExpiredNextTokenException" => {
            SourceError::InvalidArgument { message }
        }
        "ResourceInUseException" => SourceError::ResourceInUse { message },
        _ if status == 429 => SourceError::Throttled { message },
        _ => SourceError::Service { message },
    }
}

/// The outcome of one entry of [`SdkKinesis::put_records`]: where the record went, or why not.
pub type PutOutcome = Result<(String, SequenceNumber), SourceError>;

/// A [`ShardSource`] over `aws-sdk-kinesis`, plus the producer and resharding calls that tests
/// and commands need.
#[derive(Debug)]
pub struct SdkKinesis {
    client: Client,
    /// The endpoint called, for messages.
    endpoint: String,
    list_shards_page_size: Option<i32>,
    pacing: ReadPacing,
    pacers: Mutex<HashMap<(String, String), ShardPacer>>,
}

impl SdkKinesis {
    /// A source over an SDK client made elsewhere. Give the client no retries of its own (see
    /// [`crate::aws::connection`]).
    pub fn from_client(client: Client) -> Self {
        Self {
            client,
            endpoint: "Kinesis' endpoint".to_owned(),
            list_shards_page_size: None,
            pacing: ReadPacing::default(),
            pacers: Mutex::new(HashMap::new()),
        }
    }

    /// A source for `connection`.
    pub async fn connect(connection: &AwsConnection) -> Result<Self, ConnectionError> {
        let config = connection.sdk_config().await?;
        let mut source = Self::from_client(Client::new(&config));
        if let Some(endpoint) = config.endpoint_url() {
            endpoint.clone_into(&mut source.endpoint);
        }
        Ok(source)
    }

    /// A source for a local server at `endpoint` (placeholder credentials), or for real AWS
    /// with the standard credential chain when `endpoint` is `None`; in `region` either way.
    pub async fn new(endpoint: Option<&str>, region: &str) -> Result<Self, ConnectionError> {
        let connection = match endpoint {
            Some(endpoint) => AwsConnection::local(endpoint),
            None => AwsConnection::from_environment(),
        };
        Self::connect(&connection.with_region(region)).await
    }

    /// Asks `ListShards` for at most `page_size` shards a page (Kinesis' default is 1,000).
    pub fn with_list_shards_page_size(mut self, page_size: i32) -> Self {
        self.list_shards_page_size = Some(page_size);
        self
    }

    /// Paces reads of each shard this way instead of by Kinesis' limits.
    pub fn with_read_pacing(mut self, pacing: ReadPacing) -> Self {
        self.pacing = pacing;
        self
    }

    /// The endpoint called, as messages name it.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The SDK client, for calls this type does not offer.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Waits for this shard's next read slot.
    async fn pace(&self, stream: &str, shard_id: &str) -> Instant {
        let wait = {
            let mut pacers = self.pacers.lock().expect("the pacer map is never poisoned");
            let now = Instant::now();
            pacers
                .entry((stream.to_owned(), shard_id.to_owned()))
                .or_insert(ShardPacer::from(now))
                .book(now, &self.pacing)
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Instant::now()
    }

    fn record_read(&self, stream: &str, shard_id: &str, started: Instant, bytes: usize) {
        let mut pacers = self.pacers.lock().expect("the pacer map is never poisoned");
        if let Some(pacer) = pacers.get_mut(&(stream.to_owned(), shard_id.to_owned())) {
            pacer.record_read(started, bytes, &self.pacing);
        }
    }

    /// Creates a stream with `shard_count` shards and waits until it is active.
    pub async fn create_stream(&self, stream: &str, shard_count: i32) -> Result<(), SourceError> {
        self.client
            .create_stream()
            .stream_name(stream)
            .shard_count(shard_count)
            .send()
            .await
            .map_err(|error| Call::reshape("CreateStream", stream).error(error, &self.endpoint))?;
        self.wait_until_active(stream, Duration::from_secs(60))
            .await
    }

    /// Deletes a stream (and its consumers).
    pub async fn delete_stream(&self, stream: &str) -> Result<(), SourceError> {
        self.client
            .delete_stream()
            .stream_name(stream)
            .enforce_consumer_deletion(true)
            .send()
            .await
            .map_err(|error| Call::reshape("DeleteStream", stream).error(error, &self.endpoint))?;
        Ok(())
    }

    /// Waits until a stream is `ACTIVE` (after a create, split, merge or shard count update).
    pub async fn wait_until_active(
        &self,
        stream: &str,
        timeout: Duration,
    ) -> Result<(), SourceError> {
        let deadline = Instant::now() + timeout;
        loop {
            let summary = self.stream_summary(stream).await?;
            let status = summary
                .stream_description_summary()
                .map(|summary| summary.stream_status().clone());
            if status == Some(StreamStatus::Active) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(SourceError::ResourceInUse {
                    message: format!(
                        "stream {stream} is still {status:?} after {timeout:?}, not ACTIVE"
                    ),
                });
            }
            tokio::time::sleep(STREAM_STATUS_POLL).await;
        }
    }

    /// `DescribeStreamSummary` of `stream`, its failure said as the call it was.
    async fn stream_summary(
        &self,
        stream: &str,
    ) -> Result<
        aws_sdk_kinesis::operation::describe_stream_summary::DescribeStreamSummaryOutput,
        SourceError,
    > {
        self.client
            .describe_stream_summary()
            .stream_name(stream)
            .send()
            .await
            .map_err(|error| {
                Call::read("DescribeStreamSummary", stream, None).error(error, &self.endpoint)
            })
    }

    /// The most bytes (data and partition key) one record of `stream` may hold:
    /// `DescribeStreamSummary`'s `MaxRecordSizeInKiB`, or 1 MiB where Kinesis answers without it
    /// (a stream never raised, on a Kinesis that predates the setting).
    pub async fn max_record_bytes(&self, stream: &str) -> Result<usize, SourceError> {
        let kib = self
            .stream_summary(stream)
            .await?
            .stream_description_summary()
            .and_then(|summary| summary.max_record_size_in_kib())
            .unwrap_or(1024);
        Ok(usize::try_from(kib).unwrap_or(0) * 1024)
    }

    /// Puts one record; returns its shard and sequence number.
    pub async fn put_record(
        &self,
        stream: &str,
        partition_key: &str,
        data: impl Into<Vec<u8>>,
    ) -> Result<(String, SequenceNumber), SourceError> {
        let call = Call::read("PutRecord", stream, None);
        let output = self
            .client
            .put_record()
            .stream_name(stream)
            .partition_key(partition_key)
            .data(Blob::new(data))
            .send()
            .await
            .map_err(|error| call.error(error, &self.endpoint))?;
        Ok((
            output.shard_id().to_owned(),
            parse_sequence_number(output.sequence_number(), &call)?,
        ))
    }

    /// Puts records in one `PutRecords` call (at most 500); returns, for each record in order,
    /// its shard and sequence number, or why Kinesis refused that one record.
    pub async fn put_records(
        &self,
        stream: &str,
        records: &[(&str, &[u8])],
    ) -> Result<Vec<PutOutcome>, SourceError> {
        let call = Call::read("PutRecords", stream, None);
        let entries = records
            .iter()
            .map(|(partition_key, data)| {
                PutRecordsRequestEntry::builder()
                    .partition_key(*partition_key)
                    .data(Blob::new(data.to_vec()))
                    .build()
                    .map_err(|error| SourceError::InvalidArgument {
                        message: format!("{call}: {error}"),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let output = self
            .client
            .put_records()
            .stream_name(stream)
            .set_records(Some(entries))
            .send()
            .await
            .map_err(|error| call.error(error, &self.endpoint))?;
        Ok(output
            .records()
            .iter()
            .map(|entry| match (entry.shard_id(), entry.sequence_number()) {
                (Some(shard_id), Some(sequence_number)) => Ok((
                    shard_id.to_owned(),
                    parse_sequence_number(sequence_number, &call)?,
                )),
                _ => {
                    let code = entry.error_code().unwrap_or("");
                    let message = format!(
                        "{call}: {code}: {}",
                        entry.error_message().unwrap_or("(no message)")
                    );
                    Err(classify_service_error(
                        code,
                        400,
                        false,
                        message,
                        call.resource(),
                    ))
                }
            })
            .collect())
    }

    /// Splits a shard at `new_starting_hash_key` and waits until the stream is active again.
    pub async fn split_shard(
        &self,
        stream: &str,
        shard_id: &str,
        new_starting_hash_key: u128,
    ) -> Result<(), SourceError> {
        self.client
            .split_shard()
            .stream_name(stream)
            .shard_to_split(shard_id)
            .new_starting_hash_key(new_starting_hash_key.to_string())
            .send()
            .await
            .map_err(|error| Call::reshape("SplitShard", stream).error(error, &self.endpoint))?;
        self.wait_until_active(stream, Duration::from_secs(60))
            .await
    }

    /// Merges two adjacent shards and waits until the stream is active again.
    pub async fn merge_shards(
        &self,
        stream: &str,
        shard_id: &str,
        adjacent_shard_id: &str,
    ) -> Result<(), SourceError> {
        self.client
            .merge_shards()
            .stream_name(stream)
            .shard_to_merge(shard_id)
            .adjacent_shard_to_merge(adjacent_shard_id)
            .send()
            .await
            .map_err(|error| Call::reshape("MergeShards", stream).error(error, &self.endpoint))?;
        self.wait_until_active(stream, Duration::from_secs(60))
            .await
    }

    /// Changes the number of open shards (uniform scaling) and waits until the stream is
    /// active again.
    pub async fn update_shard_count(&self, stream: &str, target: i32) -> Result<(), SourceError> {
        self.client
            .update_shard_count()
            .stream_name(stream)
            .target_shard_count(target)
            .scaling_type(ScalingType::UniformScaling)
            .send()
            .await
            .map_err(|error| {
                Call::reshape("UpdateShardCount", stream).error(error, &self.endpoint)
            })?;
        self.wait_until_active(stream, Duration::from_secs(60))
            .await
    }
}

/// A record as the SDK reads it, in the mapping's terms.
pub(super) fn convert_record(
    record: &aws_sdk_kinesis::types::Record,
    call: &Call<'_>,
) -> Result<Record, SourceError> {
    Ok(Record {
        sequence_number: parse_sequence_number(record.sequence_number(), call)?,
        partition_key: record.partition_key().unwrap_or_default().into(),
        data: Bytes::from(record.data().clone().into_inner()),
        approximate_arrival: match record.approximate_arrival_timestamp() {
            Some(time) => system_time(time, call)?,
            None => SystemTime::now(),
        },
    })
}

/// The child shards named at a shard's end, in the mapping's terms.
pub(super) fn convert_children(
    children: &[aws_sdk_kinesis::types::ChildShard],
    call: &Call<'_>,
) -> Result<Vec<ChildShard>, SourceError> {
    children
        .iter()
        .map(|child| {
            Ok(ChildShard {
                shard_id: child.shard_id().to_owned(),
                parent_shards: child.parent_shards().to_vec(),
                hash_key_range: hash_key_range(child.hash_key_range(), call)?,
            })
        })
        .collect()
}

pub(super) fn parse_sequence_number(
    text: &str,
    call: &Call<'_>,
) -> Result<SequenceNumber, SourceError> {
    text.parse().map_err(|error| SourceError::Service {
        message: format!("{call}: Kinesis answered with a bad sequence number: {error}"),
    })
}

fn parse_hash_key(text: &str, call: &Call<'_>) -> Result<u128, SourceError> {
    text.parse().map_err(|_| SourceError::Service {
        message: format!("{call}: Kinesis answered with a bad hash key `{text}`"),
    })
}

fn hash_key_range(
    range: Option<&aws_sdk_kinesis::types::HashKeyRange>,
    call: &Call<'_>,
) -> Result<HashKeyRange, SourceError> {
    let range = range.ok_or_else(|| SourceError::Service {
        message: format!("{call}: Kinesis answered without a hash key range"),
    })?;
    Ok(HashKeyRange {
        starting_hash_key: parse_hash_key(range.starting_hash_key(), call)?,
        ending_hash_key: parse_hash_key(range.ending_hash_key(), call)?,
    })
}

fn system_time(time: &DateTime, call: &Call<'_>) -> Result<SystemTime, SourceError> {
    // Kinesis times are whole milliseconds, but the SDK reads epoch seconds through an f64 and
    // lands some nanoseconds off (`1700000000.123` becomes `.122999906`): round back to the
    // millisecond, or every arrival time would read one millisecond early.
    let millis = (time.as_nanos() + 500_000).div_euclid(1_000_000);
    let rounded = i64::try_from(millis).map_or(*time, DateTime::from_millis);
    SystemTime::try_from(rounded).map_err(|error| SourceError::Service {
        message: format!("{call}: Kinesis answered with a bad time: {error}"),
    })
}

fn convert_shard(
    shard: &aws_sdk_kinesis::types::Shard,
    stream: &str,
) -> Result<Shard, SourceError> {
    let call = Call::read("ListShards", stream, Some(shard.shard_id()));
    let range = shard
        .sequence_number_range()
        .ok_or_else(|| SourceError::Service {
            message: format!("{call}: Kinesis answered without a sequence number range"),
        })?;
    Ok(Shard {
        shard_id: shard.shard_id().to_owned(),
        parent_shard_id: shard.parent_shard_id().map(str::to_owned),
        adjacent_parent_shard_id: shard.adjacent_parent_shard_id().map(str::to_owned),
        hash_key_range: hash_key_range(shard.hash_key_range(), &call)?,
        starting_sequence_number: parse_sequence_number(range.starting_sequence_number(), &call)?,
        ending_sequence_number: range
            .ending_sequence_number()
            .map(|ending| parse_sequence_number(ending, &call))
            .transpose()?,
    })
}

/// Puts every shard after its parents (those in the list), keeping the given order otherwise.
fn parents_first(shards: Vec<Shard>) -> Vec<Shard> {
    let listed: HashSet<String> = shards.iter().map(|shard| shard.shard_id.clone()).collect();
    let mut placed: HashSet<String> = HashSet::new();
    let mut ordered = Vec::with_capacity(shards.len());
    let mut waiting = shards;
    while !waiting.is_empty() {
        let before = waiting.len();
        waiting.retain(|shard| {
            let ready = shard
                .parents()
                .all(|parent| !listed.contains(parent) || placed.contains(parent));
            if ready {
                placed.insert(shard.shard_id.clone());
                ordered.push(shard.clone());
            }
            !ready
        });
        if waiting.len() == before {
            // A cycle cannot come from Kinesis; keep the shards rather than lose them.
            ordered.append(&mut waiting);
        }
    }
    ordered
}

#[async_trait]
impl ShardSource for SdkKinesis {
    async fn describe_stream(&self, stream: &str) -> Result<StreamDescription, SourceError> {
        let call = Call::read("DescribeStreamSummary", stream, None);
        let output = self.stream_summary(stream).await?;
        let summary = output
            .stream_description_summary()
            .ok_or_else(|| SourceError::Service {
                message: format!("{call}: Kinesis answered without a summary"),
            })?;
        Ok(StreamDescription {
            name: summary.stream_name().to_owned(),
            arn: Arn::parse_stream(summary.stream_arn()).map_err(|error| SourceError::Service {
                message: format!("{call}: Kinesis answered with {error}"),
            })?,
            created: system_time(summary.stream_creation_timestamp(), &call)?,
        })
    }

    async fn list_shards(&self, stream: &str) -> Result<Vec<Shard>, SourceError> {
        let call = Call::read("ListShards", stream, None);
        let mut shards = Vec::new();
        let mut next_token: Option<String> = None;
        loop {
            let request = self
                .client
                .list_shards()
                .set_max_results(self.list_shards_page_size);
            // Kinesis refuses a stream name next to a NextToken: the token names the stream.
            let request = match &next_token {
                Some(token) => request.next_token(token),
                None => request.stream_name(stream),
            };
            let page = request
                .send()
                .await
                .map_err(|error| call.error(error, &self.endpoint))?;
            for shard in page.shards() {
                shards.push(convert_shard(shard, stream)?);
            }
            match page.next_token() {
                Some(token) if !page.shards().is_empty() => next_token = Some(token.to_owned()),
                _ => break,
            }
        }
        Ok(parents_first(shards))
    }

    async fn shard_iterator(
        &self,
        stream: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<String, SourceError> {
        let call = Call::read("GetShardIterator", stream, Some(shard_id));
        let request = self
            .client
            .get_shard_iterator()
            .stream_name(stream)
            .shard_id(shard_id);
        let request = match position {
            IteratorPosition::TrimHorizon => {
                request.shard_iterator_type(ShardIteratorType::TrimHorizon)
            }
            IteratorPosition::Latest => request.shard_iterator_type(ShardIteratorType::Latest),
            IteratorPosition::AtTimestamp(time) => request
                .shard_iterator_type(ShardIteratorType::AtTimestamp)
                .timestamp(DateTime::from(*time)),
            IteratorPosition::AtSequenceNumber(sequence_number) => request
                .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
                .starting_sequence_number(sequence_number.as_str()),
            IteratorPosition::AfterSequenceNumber(sequence_number) => request
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .starting_sequence_number(sequence_number.as_str()),
        };
        let output = request
            .send()
            .await
            .map_err(|error| call.error(error, &self.endpoint))?;
        let iterator = output
            .shard_iterator()
            .ok_or_else(|| SourceError::Service {
                message: format!("{call}: Kinesis answered without an iterator"),
            })?;
        Ok(TaggedIterator::encode(stream, shard_id, iterator))
    }

    async fn get_records(
        &self,
        shard_iterator: &str,
        limit: usize,
    ) -> Result<GetRecordsOutput, SourceError> {
        let tagged = TaggedIterator::decode(shard_iterator);
        let (stream, shard_id, iterator) = match &tagged {
            Some(tagged) => (tagged.stream, Some(tagged.shard_id), tagged.iterator),
            None => ("(unknown)", None, shard_iterator),
        };
        let call = Call::read("GetRecords", stream, shard_id);
        if !(1..=MAX_RECORDS_PER_READ).contains(&limit) {
            return Err(SourceError::InvalidArgument {
                message: format!("{call}: limit {limit} is not within 1 to {MAX_RECORDS_PER_READ}"),
            });
        }
        let started = match shard_id {
            Some(shard_id) => self.pace(stream, shard_id).await,
            None => Instant::now(),
        };
        let output = self
            .client
            .get_records()
            .shard_iterator(iterator)
            .limit(limit as i32)
            .send()
            .await
            .map_err(|error| call.error(error, &self.endpoint))?;

        let mut bytes = 0;
        let mut records = Vec::with_capacity(output.records().len());
        for record in output.records() {
            let record = convert_record(record, &call)?;
            bytes += record.data.len() + record.partition_key.len();
            records.push(record);
        }
        if let Some(shard_id) = shard_id {
            self.record_read(stream, shard_id, started, bytes);
        }
        let child_shards = convert_children(output.child_shards(), &call)?;
        Ok(GetRecordsOutput {
            records,
            next_shard_iterator: output.next_shard_iterator().map(|next| match shard_id {
                Some(shard_id) => TaggedIterator::encode(stream, shard_id, next),
                None => next.to_owned(),
            }),
            millis_behind_latest: output.millis_behind_latest().unwrap_or(0).max(0) as u64,
            child_shards,
        })
    }
}

#[cfg(test)]
mod tests;
