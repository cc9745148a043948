//! Destinations at a real SQS, SNS or S3 API (AWS itself, LocalStack, moto's server), through
//! the AWS SDK's clients. The SDK does not retry (`crate::aws::connection`): the reader retries a
//! failed delivery with its own backoff, and every failure is said in one sentence
//! (`crate::aws::failure`).

use async_trait::async_trait;
use aws_sdk_kinesis::config::http::HttpResponse;
use aws_sdk_kinesis::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sns::operation::list_topics::ListTopicsError;
use tokio::sync::OnceCell;

use super::delivery::{DeliveryError, Destination, FailedBatch};
use super::shape::{SNS_MESSAGE_LIMIT, fits_sns, metadata_text, s3_body, s3_key};
use super::target::{DestinationKind, Target};
use crate::aws::AwsConnection;
use crate::aws::failure::observe;

/// A destination at an SDK endpoint.
pub struct SdkDestination {
    target: Target,
    endpoint: String,
    client: Client,
    /// The queue's URL or the topic's ARN, looked up at the first delivery.
    address: OnceCell<String>,
}

enum Client {
    Sqs(aws_sdk_sqs::Client),
    Sns(aws_sdk_sns::Client),
    S3(aws_sdk_s3::Client),
}

impl SdkDestination {
    /// The `target` at the endpoint `connection` names (`endpoint` says which, for messages).
    pub async fn connect(
        target: Target,
        connection: &AwsConnection,
        endpoint: String,
    ) -> Result<Self, DeliveryError> {
        let config = connection.sdk_config().await.map_err(|error| {
            DeliveryError(format!("the on-failure destination {target}: {error}"))
        })?;
        let client = match target.kind {
            DestinationKind::Sqs => Client::Sqs(aws_sdk_sqs::Client::new(&config)),
            DestinationKind::Sns => Client::Sns(aws_sdk_sns::Client::new(&config)),
            DestinationKind::S3 => {
                // Local servers answer on one host: address buckets by path, not by subdomain.
                let s3 = aws_sdk_s3::config::Builder::from(&config)
                    .force_path_style(connection.endpoint_url().is_some())
                    .build();
                Client::S3(aws_sdk_s3::Client::from_conf(s3))
            }
        };
        Ok(Self {
            target,
            endpoint,
            client,
            address: OnceCell::new(),
        })
    }

    fn failed<E>(&self, action: &str, error: &SdkError<E, HttpResponse>) -> DeliveryError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let service = self.target.kind.service();
        DeliveryError(format!(
            "{action} the {} at {}: {}",
            self.target,
            self.endpoint,
            observe(error).describe(service, &self.endpoint)
        ))
    }

    async fn queue_url(&self, sqs: &aws_sdk_sqs::Client) -> Result<&str, DeliveryError> {
        self.address
            .get_or_try_init(|| async {
                let answer = sqs
                    .get_queue_url()
                    .queue_name(&self.target.name)
                    .send()
                    .await
                    .map_err(|error| self.failed("looking up", &error))?;
                answer.queue_url.ok_or_else(|| {
                    DeliveryError(format!(
                        "looking up the {} at {}: the answer held no queue URL",
                        self.target, self.endpoint
                    ))
                })
            })
            .await
            .map(String::as_str)
    }

    /// The topic's ARN, found among the account's topics by name.
    async fn topic_arn(&self, sns: &aws_sdk_sns::Client) -> Result<&str, DeliveryError> {
        self.address
            .get_or_try_init(|| async {
                find_topic_arn(sns, &self.target.name)
                    .await
                    .map_err(|error| self.failed("looking up", &error))?
                    .ok_or_else(|| {
                        DeliveryError(format!(
                            "looking up the {} at {}: no such topic",
                            self.target, self.endpoint
                        ))
                    })
            })
            .await
            .map(String::as_str)
    }
}

/// The ARN of the SNS topic `name`, looked up through every page of `ListTopics` (SNS has no
/// lookup by name); `None` when the account has no such topic.
pub async fn find_topic_arn(
    sns: &aws_sdk_sns::Client,
    name: &str,
) -> Result<Option<String>, SdkError<ListTopicsError, HttpResponse>> {
    let suffix = format!(":{name}");
    let mut next_token = None;
    loop {
        let page = sns.list_topics().set_next_token(next_token).send().await?;
        if let Some(arn) = page
            .topics()
            .iter()
            .filter_map(|topic| topic.topic_arn())
            .find(|arn| arn.ends_with(&suffix))
        {
            return Ok(Some(arn.to_owned()));
        }
        next_token = page.next_token;
        if next_token.is_none() {
            return Ok(None);
        }
    }
}

#[async_trait]
impl Destination for SdkDestination {
    async fn deliver(&self, batch: &FailedBatch) -> Result<String, DeliveryError> {
        match &self.client {
            Client::Sqs(sqs) => {
                let queue_url = self.queue_url(sqs).await?;
                let sent = sqs
                    .send_message()
                    .queue_url(queue_url)
                    .message_body(metadata_text(&batch.record))
                    .send()
                    .await
                    .map_err(|error| self.failed("sending the record to", &error))?;
                Ok(format!(
                    "{} message {}",
                    self.target,
                    sent.message_id.unwrap_or_default()
                ))
            }
            Client::Sns(sns) => {
                let message = metadata_text(&batch.record);
                if !fits_sns(&message) {
                    return Err(DeliveryError(format!(
                        "the record for the {} is {} bytes, over SNS's {SNS_MESSAGE_LIMIT}",
                        self.target,
                        message.len()
                    )));
                }
                let topic_arn = self.topic_arn(sns).await?;
                let published = sns
                    .publish()
                    .topic_arn(topic_arn)
                    .message(message)
                    .send()
                    .await
                    .map_err(|error| self.failed("publishing the record to", &error))?;
                Ok(format!(
                    "{} message {}",
                    self.target,
                    published.message_id.unwrap_or_default()
                ))
            }
            Client::S3(s3) => {
                let key = s3_key(
                    &batch.mapping_uuid,
                    &batch.shard_id,
                    batch.discarded_at,
                    &uuid::Uuid::new_v4().to_string(),
                );
                let body = s3_body(&batch.record, &batch.event);
                s3.put_object()
                    .bucket(&self.target.name)
                    .key(&key)
                    .content_type("application/json")
                    .body(body.into_bytes().into())
                    .send()
                    .await
                    .map_err(|error| self.failed("putting the record in", &error))?;
                Ok(format!("s3://{}/{key}", self.target.name))
            }
        }
    }

    fn describe(&self) -> String {
        format!("the {} at {}", self.target, self.endpoint)
    }
}
