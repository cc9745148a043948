//! A typed Kinesis producer (cargo feature `publish`): serde values with a partition key, batched
//! into `PutRecords`, the failed entries alone sent again with backoff, per-key order kept, and a
//! report of what could not be published.
//!
//! ```no_run
//! use lambda_kinesis::publish::Publisher;
//!
//! #[derive(serde::Serialize)]
//! struct Booked { shipment_id: u64, carrier: String }
//!
//! # async fn example() {
//! // The endpoint, region and credentials come the SDK's standard way: the environment
//! // (`AWS_ENDPOINT_URL_KINESIS`, `AWS_REGION`, ...), the profile, the role.
//! let booked: Publisher<Booked> = Publisher::from_env("bookings").await;
//! let report = booked
//!     .publish([("customer-17", &Booked { shipment_id: 1, carrier: "dhl".into() })])
//!     .await;
//! for failure in report.unpublished() {
//!     lambda_kinesis::tracing::warn!("{failure}");
//! }
//! # }
//! ```
//!
//! The rules (`outbox.rs`): a request carries at most 500 records and 5 MiB, keys counted; a
//! record over 1 MiB, or with a partition key Kinesis refuses, is reported without being sent. A
//! request carries one record per partition key, so that a key's later record is never sent
//! before its earlier one succeeded; a record whose attempts run out (or that meets a failure
//! retrying cannot pass, such as a missing stream) is reported, with every record of its key
//! given after it, unsent.

mod outbox;

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use aws_sdk_kinesis::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::PutRecordsRequestEntry;
use serde::Serialize;

use outbox::{EntryResult, GiveUp, Index, Outbox};

/// Publishes values of `T`, as JSON, to one Kinesis stream.
pub struct Publisher<T> {
    client: aws_sdk_kinesis::Client,
    stream_name: String,
    max_attempts: u32,
    first_backoff: Duration,
    max_backoff: Duration,
    max_record_bytes: usize,
    marker: PhantomData<fn(&T)>,
}

impl<T> Clone for Publisher<T> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            stream_name: self.stream_name.clone(),
            max_attempts: self.max_attempts,
            first_backoff: self.first_backoff,
            max_backoff: self.max_backoff,
            max_record_bytes: self.max_record_bytes,
            marker: PhantomData,
        }
    }
}

impl<T> fmt::Debug for Publisher<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher")
            .field("stream_name", &self.stream_name)
            .field("max_attempts", &self.max_attempts)
            .field("first_backoff", &self.first_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("max_record_bytes", &self.max_record_bytes)
            .finish_non_exhaustive()
    }
}

impl<T: Serialize> Publisher<T> {
    /// A publisher to `stream_name` with a client configured the SDK's standard way: the
    /// environment (`AWS_ENDPOINT_URL_KINESIS` or `AWS_ENDPOINT_URL`, `AWS_REGION`, the
    /// credentials Lambda gives the function), then the shared config files. `kinesis-esm run`
    /// gives the function it runs the variables that point it at the Kinesis it reads.
    pub async fn from_env(stream_name: impl Into<String>) -> Self {
        let config = aws_config::load_from_env().await;
        Self::with_client(aws_sdk_kinesis::Client::new(&config), stream_name)
    }

    /// A publisher to `stream_name` through `client`: 5 attempts per record, pauses from 100 ms
    /// doubling to 2 s between requests that met a failure.
    pub fn with_client(client: aws_sdk_kinesis::Client, stream_name: impl Into<String>) -> Self {
        Self {
            client,
            stream_name: stream_name.into(),
            max_attempts: 5,
            first_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            max_record_bytes: 1024 * 1024,
            marker: PhantomData,
        }
    }

    /// Takes records of up to `kib` KiB (data and partition key), for a stream whose
    /// `MaxRecordSizeInKiB` was raised (1024 to 10240; 1024, every stream's default, unless
    /// set). The publisher does not ask the stream: one `DescribeStreamSummary` a publish would
    /// double its calls. A record over the limit is reported unpublished without a request.
    pub fn max_record_size_kib(mut self, kib: u32) -> Self {
        self.max_record_bytes = kib as usize * 1024;
        self
    }

    /// Gives each record at most `attempts` tries (at least one) before it is reported.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Pauses `first` after a request that met a failure, doubling after each such request in
    /// a row, at most `max`.
    pub fn backoff(mut self, first: Duration, max: Duration) -> Self {
        self.first_backoff = first;
        self.max_backoff = max.max(first);
        self
    }

    /// The stream it publishes to.
    pub fn stream_name(&self) -> &str {
        &self.stream_name
    }

    /// Publishes `records` (partition key, value), in the order given for each key, and returns
    /// once each is published or given up. Never fails as a whole: what could not be published
    /// is in the report. The values are serialized before the first request.
    pub fn publish<'a, K>(
        &self,
        records: impl IntoIterator<Item = (K, &'a T)>,
    ) -> impl Future<Output = PublishReport> + Send + '_
    where
        K: Into<String>,
        T: 'a,
    {
        let mut outbox = Outbox::with_max_record_bytes(self.max_record_bytes);
        for (partition_key, value) in records {
            let data = serde_json::to_vec(value)
                .map_err(|error| format!("it cannot be serialized as JSON: {error}"));
            outbox.push(partition_key.into(), data);
        }
        self.drain(outbox)
    }

    /// Publishes one value; the error says why it could not be.
    pub fn publish_one(
        &self,
        partition_key: impl Into<String>,
        value: &T,
    ) -> impl Future<Output = Result<Published, Unpublished>> + Send + '_ {
        let report = self.publish([(partition_key.into(), value)]);
        async move {
            let mut report = report.await;
            match report.unpublished.pop() {
                Some(failure) => Err(failure),
                None => Ok(report.published.pop().expect("one record, published")),
            }
        }
    }
}

impl<T> Publisher<T> {
    /// Sends requests until every record in `outbox` is settled.
    async fn drain(&self, mut outbox: Outbox) -> PublishReport {
        let mut failed_rounds = 0;
        while !outbox.is_settled() {
            let request = outbox.next_request();
            let results = self.put_records(&outbox, &request).await;
            let any_failed = results
                .iter()
                .any(|result| matches!(result, EntryResult::Rejected { .. }));
            for (index, result) in request.into_iter().zip(results) {
                outbox.settle(index, result, self.max_attempts);
            }
            if any_failed && !outbox.is_settled() {
                failed_rounds += 1;
                let pause = outbox::backoff(failed_rounds, self.first_backoff, self.max_backoff);
                tokio::time::sleep(pause).await;
            } else {
                failed_rounds = 0;
            }
        }
        self.report(outbox)
    }

    /// One `PutRecords` call: what each entry of `request` met, in order.
    async fn put_records(&self, outbox: &Outbox, request: &[Index]) -> Vec<EntryResult> {
        let entries = request.iter().map(|&index| {
            let entry = outbox.entry(index);
            PutRecordsRequestEntry::builder()
                .partition_key(&entry.partition_key)
                .data(Blob::new(entry.data.clone()))
                .build()
                .expect("data and partition key are set")
        });
        let answer = self
            .client
            .put_records()
            .stream_name(&self.stream_name)
            .set_records(Some(entries.collect()))
            .send()
            .await;
        match answer {
            Ok(output) if output.records().len() == request.len() => output
                .records()
                .iter()
                .map(|entry| match (entry.shard_id(), entry.sequence_number()) {
                    (Some(shard_id), Some(sequence_number)) if entry.error_code().is_none() => {
                        EntryResult::Accepted {
                            shard_id: shard_id.to_owned(),
                            sequence_number: sequence_number.to_owned(),
                        }
                    }
                    _ => EntryResult::Rejected {
                        code: entry.error_code().map(str::to_owned),
                        message: entry
                            .error_message()
                            .unwrap_or("the entry was not taken")
                            .to_owned(),
                        // Kinesis fails an entry only for a throttle or an internal failure.
                        retryable: true,
                    },
                })
                .collect(),
            Ok(output) => {
                let message = format!(
                    "PutRecords answered {} entries for a request of {}",
                    output.records().len(),
                    request.len()
                );
                rejected_all(request.len(), None, message, true)
            }
            Err(error) => {
                let (code, message) = describe(&error);
                let retryable = outbox::call_failure_is_retryable(code.as_deref());
                rejected_all(request.len(), code, message, retryable)
            }
        }
    }

    fn report(&self, outbox: Outbox) -> PublishReport {
        let (accepted, given_up) = outbox.into_report();
        let published = accepted
            .into_iter()
            .map(|(index, shard_id, sequence_number)| Published {
                index,
                shard_id,
                sequence_number,
            })
            .collect();
        let unpublished = given_up
            .into_iter()
            .map(|(index, partition_key, why)| Unpublished {
                index,
                partition_key,
                stream_name: self.stream_name.clone(),
                why,
            })
            .collect();
        PublishReport {
            published,
            unpublished,
        }
    }
}

fn rejected_all(
    count: usize,
    code: Option<String>,
    message: String,
    retryable: bool,
) -> Vec<EntryResult> {
    vec![
        EntryResult::Rejected {
            code,
            message,
            retryable,
        };
        count
    ]
}

/// A failed call's error code and a one-sentence message, never the SDK error's `Debug` form.
fn describe<E: ProvideErrorMetadata, R>(error: &SdkError<E, R>) -> (Option<String>, String) {
    match error {
        SdkError::ServiceError(service) => {
            let inner = service.err();
            let code = inner.code().map(str::to_owned);
            let message = inner.message().unwrap_or("no message").to_owned();
            (code, message)
        }
        SdkError::DispatchFailure(_) => (None, "nothing answered at the Kinesis endpoint".into()),
        SdkError::TimeoutError(_) => (None, "the Kinesis endpoint did not answer in time".into()),
        SdkError::ResponseError(_) => (
            None,
            "the answer could not be read as Kinesis' (is the endpoint a Kinesis server?)".into(),
        ),
        _ => (None, "the request could not be made".into()),
    }
}

/// What a [`Publisher::publish`] call published and what it could not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishReport {
    published: Vec<Published>,
    unpublished: Vec<Unpublished>,
}

impl PublishReport {
    /// The records published, in the order they were given.
    pub fn published(&self) -> &[Published] {
        &self.published
    }

    /// The records not published, in the order they were given.
    pub fn unpublished(&self) -> &[Unpublished] {
        &self.unpublished
    }

    /// Whether every record was published.
    pub fn is_complete(&self) -> bool {
        self.unpublished.is_empty()
    }
}

/// A record Kinesis took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    index: usize,
    shard_id: String,
    sequence_number: String,
}

impl Published {
    /// Its position in what `publish` was given, from 0.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The shard it went to.
    pub fn shard_id(&self) -> &str {
        &self.shard_id
    }

    /// Its sequence number in that shard.
    pub fn sequence_number(&self) -> &str {
        &self.sequence_number
    }
}

/// A record that was not published, and why. Its `Display` is one sentence naming the stream,
/// the record's position and partition key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpublished {
    index: usize,
    partition_key: String,
    stream_name: String,
    why: GiveUp,
}

impl Unpublished {
    /// Its position in what `publish` was given, from 0.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its partition key.
    pub fn partition_key(&self) -> &str {
        &self.partition_key
    }

    /// The error code of its last failed attempt (such as
    /// `ProvisionedThroughputExceededException`), if Kinesis gave one.
    pub fn error_code(&self) -> Option<&str> {
        match &self.why {
            GiveUp::Failed { code, .. } => code.as_deref(),
            _ => None,
        }
    }

    /// How many times it was sent.
    pub fn attempts(&self) -> u32 {
        match &self.why {
            GiveUp::Failed { attempts, .. } => *attempts,
            _ => 0,
        }
    }
}

impl fmt::Display for Unpublished {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "record {} (partition key {:?}) was not published to stream {}: ",
            self.index, self.partition_key, self.stream_name
        )?;
        match &self.why {
            GiveUp::Refused(reason) => write!(f, "{reason}"),
            GiveUp::Failed {
                code,
                message,
                attempts,
            } => {
                let tries = if *attempts == 1 { "try" } else { "tries" };
                match code {
                    Some(code) => write!(f, "{code} after {attempts} {tries}: {message}"),
                    None => write!(f, "{message} after {attempts} {tries}"),
                }
            }
            GiveUp::BehindFailed { ahead } => write!(
                f,
                "not sent, since record {ahead} of the same partition key was not published (its order is kept)"
            ),
        }
    }
}

impl std::error::Error for Unpublished {}
