//! Enhanced fan-out over `aws-sdk-kinesis`: [`SdkSubscriber`] opens `SubscribeToShard`
//! subscriptions (an event stream over HTTP/2) for [`crate::fan_out_source::FanOutSource`],
//! and [`SdkSubscriber::ensure_consumer`] registers a template's consumer where it is missing.
//! Errors name the call, the consumer and the shard, in the Kinesis API's terms
//! ([`crate::aws::kinesis`]); no SDK error's `Debug` form reaches a message.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_kinesis::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_kinesis::operation::subscribe_to_shard::SubscribeToShardOutput;
use aws_sdk_kinesis::primitives::DateTime;
use aws_sdk_kinesis::types::{
    ConsumerStatus, ShardIteratorType, StartingPosition, SubscribeToShardEventStream,
};

use super::kinesis::{Call, SdkKinesis, convert_children, convert_record, parse_sequence_number};
use kinesis_source::{IteratorPosition, ShardSource as _, SourceError};
use kinesis_source::{ShardEvent, ShardSubscriber, Subscription};

/// How often a consumer being registered is looked at until it is `ACTIVE`.
const STATUS_POLL: Duration = Duration::from_millis(200);

/// How long a consumer may stay `CREATING` before the run gives up on it.
const ACTIVE_WITHIN: Duration = Duration::from_secs(120);

/// Subscribes through an [`SdkKinesis`]'s client.
#[derive(Debug, Clone)]
pub struct SdkSubscriber {
    kinesis: Arc<SdkKinesis>,
}

impl SdkSubscriber {
    /// Subscribes with `kinesis`' client.
    pub fn new(kinesis: Arc<SdkKinesis>) -> Self {
        Self { kinesis }
    }

    /// The ARN of consumer `name` of `stream`, registered first (`RegisterStreamConsumer`)
    /// when `register` and the stream has none of that name, once it is `ACTIVE`.
    pub async fn ensure_consumer(
        &self,
        stream: &str,
        name: &str,
        register: bool,
    ) -> Result<String, SourceError> {
        let stream_arn = self.kinesis.describe_stream(stream).await?.arn.to_string();
        let client = self.kinesis.client();
        let endpoint = self.kinesis.endpoint();
        let call = Call::read("DescribeStreamConsumer", stream, None);
        let described = client
            .describe_stream_consumer()
            .stream_arn(&stream_arn)
            .consumer_name(name)
            .send()
            .await;
        let arn = match described {
            Ok(output) => output
                .consumer_description
                .map(|consumer| consumer.consumer_arn)
                .unwrap_or_default(),
            Err(error) => match call.error(error, endpoint) {
                SourceError::NotFound { .. } if register => {
                    let call = Call::read("RegisterStreamConsumer", stream, None);
                    client
                        .register_stream_consumer()
                        .stream_arn(&stream_arn)
                        .consumer_name(name)
                        .send()
                        .await
                        .map_err(|error| call.error(error, endpoint))?
                        .consumer
                        .map(|consumer| consumer.consumer_arn)
                        .unwrap_or_default()
                }
                SourceError::NotFound { .. } => {
                    return Err(SourceError::NotFound {
                        what: format!(
                            "consumer {name} of stream {stream} (declare it as an \
                             AWS::Kinesis::StreamConsumer for kinesis-esm to register it)"
                        ),
                    });
                }
                other => return Err(other),
            },
        };
        let started = tokio::time::Instant::now();
        loop {
            let call = Call::read("DescribeStreamConsumer", stream, None);
            let status = client
                .describe_stream_consumer()
                .consumer_arn(&arn)
                .send()
                .await
                .map_err(|error| call.error(error, endpoint))?
                .consumer_description
                .map(|consumer| consumer.consumer_status);
            match status {
                Some(ConsumerStatus::Active) => return Ok(arn),
                Some(ConsumerStatus::Creating) if started.elapsed() < ACTIVE_WITHIN => {
                    tokio::time::sleep(STATUS_POLL).await;
                }
                other => {
                    return Err(SourceError::ResourceInUse {
                        message: format!(
                            "consumer {arn} is {} after {} s, not ACTIVE",
                            other.as_ref().map_or("gone", ConsumerStatus::as_str),
                            started.elapsed().as_secs()
                        ),
                    });
                }
            }
        }
    }
}

/// The `StartingPosition` of a subscription at `position`.
fn starting_position(position: &IteratorPosition) -> StartingPosition {
    let builder = StartingPosition::builder();
    let builder = match position {
        IteratorPosition::TrimHorizon => builder.r#type(ShardIteratorType::TrimHorizon),
        IteratorPosition::Latest => builder.r#type(ShardIteratorType::Latest),
        IteratorPosition::AtTimestamp(time) => builder
            .r#type(ShardIteratorType::AtTimestamp)
            .timestamp(DateTime::from(*time)),
        IteratorPosition::AtSequenceNumber(number) => builder
            .r#type(ShardIteratorType::AtSequenceNumber)
            .sequence_number(number.as_str()),
        IteratorPosition::AfterSequenceNumber(number) => builder
            .r#type(ShardIteratorType::AfterSequenceNumber)
            .sequence_number(number.as_str()),
    };
    builder
        .build()
        .expect("the starting position's type is always set")
}

#[async_trait]
impl ShardSubscriber for SdkSubscriber {
    async fn subscribe(
        &self,
        consumer_arn: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<Box<dyn Subscription>, SourceError> {
        let call = Call::read("SubscribeToShard", consumer_arn, Some(shard_id));
        let output = self
            .kinesis
            .client()
            .subscribe_to_shard()
            .consumer_arn(consumer_arn)
            .shard_id(shard_id)
            .starting_position(starting_position(position))
            .send()
            .await
            .map_err(|error| call.error(error, self.kinesis.endpoint()))?;
        Ok(Box::new(SdkSubscription {
            output,
            consumer_arn: consumer_arn.to_owned(),
            shard_id: shard_id.to_owned(),
        }))
    }
}

/// An open `SubscribeToShard` event stream.
struct SdkSubscription {
    output: SubscribeToShardOutput,
    consumer_arn: String,
    shard_id: String,
}

#[async_trait]
impl Subscription for SdkSubscription {
    async fn next_event(&mut self) -> Result<Option<ShardEvent>, SourceError> {
        loop {
            let received = self.output.event_stream.recv().await;
            let call = Call::read("SubscribeToShard", &self.consumer_arn, Some(&self.shard_id));
            let event = match received {
                Ok(Some(SubscribeToShardEventStream::SubscribeToShardEvent(event))) => event,
                // An event type this SDK does not know: nothing to read in it.
                Ok(Some(_)) => continue,
                Ok(None) => return Ok(None),
                Err(error) => return Err(stream_error(&error, &call)),
            };
            let records = event
                .records()
                .iter()
                .map(|record| convert_record(record, &call))
                .collect::<Result<_, _>>()?;
            // Empty at the shard's end, where the children say where to go on.
            let continuation_sequence_number = match event.continuation_sequence_number() {
                "" => None,
                text => Some(parse_sequence_number(text, &call)?),
            };
            return Ok(Some(ShardEvent {
                records,
                continuation_sequence_number,
                millis_behind_latest: event.millis_behind_latest().max(0) as u64,
                child_shards: convert_children(event.child_shards(), &call)?,
            }));
        }
    }
}

/// A failure of the event stream: an exception event Kinesis sent (by its code), or the
/// stream breaking off.
fn stream_error<E, R>(error: &SdkError<E, R>, call: &Call<'_>) -> SourceError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    if let SdkError::ServiceError(service) = error {
        let exception = service.err();
        let code = exception.code().unwrap_or("an unnamed exception");
        let message = format!(
            "{call}: the event stream ended with {code}: {}",
            exception.message().unwrap_or("no message")
        );
        return match code {
            "ResourceNotFoundException" => SourceError::NotFound { what: message },
            "ResourceInUseException" => SourceError::ResourceInUse { message },
            "LimitExceededException" | "ProvisionedThroughputExceededException" => {
                SourceError::Throttled { message }
            }
            _ => SourceError::Service { message },
        };
    }
    SourceError::Service {
        message: format!(
            "{call}: the event stream broke off: {}",
            DisplayErrorContext(error)
        ),
    }
}
