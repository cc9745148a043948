//! Enhanced fan-out of the embedded Kinesis in process: [`LocalFanOut`] subscribes to the
//! model's consumers so that `kinesis-esm run` registers the template's
//! consumers and subscribes its readers to them without a round trip through HTTP, while
//! `aws kinesis list-stream-consumers` against the endpoint sees the same consumers. A
//! subscription made here is the endpoint's own (`subscribe.rs`): the same claim (an `ACTIVE`
//! consumer, not subscribed to the shard within 5 seconds), the same task pushing events.

use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};

use super::error::{ApiError, ErrorKind};
use super::format::Format;
use super::subscribe::{self, Pushed};
use crate::EmbeddedKinesis;
use crate::StreamStatus;
use crate::clock::{duration_millis, millis_floor};
use crate::consumers::Refused;
use kinesis_source::{IteratorPosition, SourceError};
use kinesis_source::{ShardEvent, ShardSubscriber, Subscription};

/// How often a consumer being registered is looked at until it is `ACTIVE`.
const STATUS_POLL: Duration = Duration::from_millis(10);

/// Enhanced fan-out of an embedded Kinesis in process: its consumers (which the model keeps
/// beside its streams, so that the endpoint's [`super::KinesisApi`] sees the same ones) and
/// subscriptions to them; cheap to clone, shared by the readers in process.
#[derive(Clone)]
pub struct LocalFanOut {
    kinesis: EmbeddedKinesis,
}

impl LocalFanOut {
    /// The endpoint state of `kinesis`, with no consumers yet.
    pub fn new(kinesis: EmbeddedKinesis) -> Self {
        Self { kinesis }
    }

    /// The embedded Kinesis whose consumers this subscribes to.
    pub fn kinesis(&self) -> &EmbeddedKinesis {
        &self.kinesis
    }

    /// The ARN of consumer `name` of `stream` (a name or ARN), registered first when the
    /// stream has none of that name (as CloudFormation registers an
    /// `AWS::Kinesis::StreamConsumer`), once it is `ACTIVE`.
    pub async fn ensure_consumer(&self, stream: &str, name: &str) -> Result<String, SourceError> {
        let summary = self.kinesis.describe_stream_summary(stream)?;
        let key = (summary.name.clone(), summary.created);
        let now = self.kinesis.current_time();
        let delay_ms = duration_millis(self.kinesis.stream_status_delay());
        let registered = self.kinesis.attachments().consumers().register(
            &key,
            &summary.arn,
            name,
            now,
            delay_ms,
        );
        let arn = match registered {
            Ok(consumer) => consumer.arn,
            Err(Refused::NameTaken) => {
                let now_ms = millis_floor(now);
                self.kinesis
                    .attachments()
                    .consumers()
                    .by_name(&key, name, now_ms)
                    .map(|consumer| consumer.arn)
                    .ok_or_else(|| SourceError::NotFound {
                        what: format!("consumer {name} of stream {}", summary.name),
                    })?
            }
            Err(_) => {
                return Err(SourceError::LimitExceeded {
                    message: format!(
                        "stream {} has 20 registered consumers, the most a stream may have: \
                         consumer {name} cannot be registered",
                        summary.name
                    ),
                });
            }
        };
        loop {
            let now_ms = millis_floor(self.kinesis.current_time());
            let status = self
                .kinesis
                .attachments()
                .consumers()
                .by_arn(&key, &arn, now_ms)
                .map(|consumer| consumer.status_at(now_ms));
            match status {
                Some(StreamStatus::Active) => return Ok(arn),
                Some(StreamStatus::Creating) => tokio::time::sleep(STATUS_POLL).await,
                _ => {
                    return Err(SourceError::ResourceInUse {
                        message: format!("consumer {arn} is being deregistered"),
                    });
                }
            }
        }
    }
}

/// A subscription in process: the endpoint's task pushing events, read from its channel.
struct LocalSubscription {
    events: mpsc::Receiver<Pushed>,
    /// Kept so that the task's stop signal never fires: the subscription ends when this is
    /// dropped (the task sees its receiver gone) or by its own rules.
    _stop: watch::Sender<bool>,
    consumer_arn: String,
    shard_id: String,
}

#[async_trait]
impl Subscription for LocalSubscription {
    async fn next_event(&mut self) -> Result<Option<ShardEvent>, SourceError> {
        match self.events.recv().await {
            Some(Pushed::Event(event)) => Ok(Some(event)),
            Some(Pushed::Failed(error)) => Err(source_error(
                error,
                &format!(
                    "the subscription of consumer {} to shard {}",
                    self.consumer_arn, self.shard_id
                ),
            )),
            None => Ok(None),
        }
    }
}

/// An endpoint's error answer as the readers' error, its message prefixed with `what` failed.
fn source_error(error: ApiError, what: &str) -> SourceError {
    let message = format!("{what}: {}", error.message);
    match error.kind {
        ErrorKind::ResourceNotFound => SourceError::NotFound { what: message },
        ErrorKind::ResourceInUse => SourceError::ResourceInUse { message },
        ErrorKind::LimitExceeded | ErrorKind::ProvisionedThroughputExceeded => {
            SourceError::Throttled { message }
        }
        ErrorKind::ExpiredIterator => SourceError::ExpiredIterator,
        ErrorKind::InvalidArgument | ErrorKind::Validation | ErrorKind::Serialization => {
            SourceError::InvalidArgument { message }
        }
        _ => SourceError::Service { message },
    }
}

#[async_trait]
impl ShardSubscriber for LocalFanOut {
    async fn subscribe(
        &self,
        consumer_arn: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<Box<dyn Subscription>, SourceError> {
        let what = format!("SubscribeToShard of consumer {consumer_arn} to shard {shard_id}");
        let subscription = subscribe::claim(
            &self.kinesis,
            Format::Json,
            consumer_arn,
            shard_id,
            position,
        )
        .map_err(|error| source_error(error, &what))?;
        let (stop, stopped) = watch::channel(false);
        Ok(Box::new(LocalSubscription {
            events: subscribe::start(self.kinesis.clone(), subscription, stopped),
            _stop: stop,
            consumer_arn: consumer_arn.to_owned(),
            shard_id: shard_id.to_owned(),
        }))
    }
}
