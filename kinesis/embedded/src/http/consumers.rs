//! Stream consumers over the API: `RegisterStreamConsumer`, `DescribeStreamConsumer`,
//! `ListStreamConsumers` and `DeregisterStreamConsumer`. The rules (states, the limit of 20,
//! names) are `crate::consumers`; this module reads requests, finds the stream and
//! words the errors. The rules and their sources are in `docs/kinesis.md`
//! ("Enhanced fan-out").

use std::time::SystemTime;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::codec::{Request, WireTime};
use super::error::{Answer, ApiError, ErrorKind};
use super::validation::{CONSUMER_ARN, CONSUMER_NAME, NEXT_TOKEN, STREAM_ARN, Violations};
use crate::attachments::StreamKey;
use crate::clock::millis_floor;
use crate::consumer_registry::{Consumer, MAX_CONSUMERS_PER_STREAM, Refused};
use crate::embedded::EmbeddedKinesis;

/// The most consumers one `ListStreamConsumers` page holds (`MaxResults`' range ends there).
const MAX_LIST_RESULTS: i64 = 10_000;

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireConsumer<'a> {
    consumer_name: &'a str,
    #[serde(rename = "ConsumerARN")]
    consumer_arn: &'a str,
    consumer_status: &'static str,
    consumer_creation_timestamp: WireTime,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireConsumerDescription<'a> {
    consumer_name: &'a str,
    #[serde(rename = "ConsumerARN")]
    consumer_arn: &'a str,
    consumer_status: &'static str,
    consumer_creation_timestamp: WireTime,
    #[serde(rename = "StreamARN")]
    stream_arn: &'a str,
}

fn wire(consumer: &Consumer, now_ms: u64) -> WireConsumer<'_> {
    WireConsumer {
        consumer_name: &consumer.name,
        consumer_arn: &consumer.arn,
        consumer_status: consumer.status_at(now_ms).as_str(),
        consumer_creation_timestamp: WireTime(consumer.created),
    }
}

/// The stream part of a consumer ARN: everything before `/consumer/`.
pub(super) fn stream_arn_of(consumer_arn: &str) -> &str {
    consumer_arn
        .rsplit_once("/consumer/")
        .map_or(consumer_arn, |(stream, _)| stream)
}

/// Now, by the embedded Kinesis' clock, in epoch milliseconds.
fn now_ms(kinesis: &EmbeddedKinesis) -> (SystemTime, u64) {
    let now = kinesis.current_time();
    (now, millis_floor(now))
}

fn delay_ms(kinesis: &EmbeddedKinesis) -> u64 {
    crate::clock::duration_millis(kinesis.stream_status_delay())
}

fn not_found(what: &str) -> ApiError {
    ApiError::new(ErrorKind::ResourceNotFound, format!("{what} not found."))
}

/// The stream a consumer request names by `StreamARN`, or by the stream part of its
/// `ConsumerARN`: its key and its ARN as the embedded Kinesis spells it.
fn stream(kinesis: &EmbeddedKinesis, stream_arn: &str) -> Result<(StreamKey, String), ApiError> {
    let summary = kinesis.describe_stream_summary(stream_arn)?;
    Ok(((summary.name, summary.created), summary.arn))
}

/// The consumer a request names: by `ConsumerARN`, or by `StreamARN` and `ConsumerName`.
/// Either way must be given whole; a consumer of another stream, or one whose stream was
/// deleted and created again, is not found.
pub(super) fn find_consumer(
    kinesis: &EmbeddedKinesis,
    consumer_arn: Option<&str>,
    stream_arn: Option<&str>,
    name: Option<&str>,
) -> Result<(StreamKey, Consumer), ApiError> {
    let (_, now_ms) = now_ms(kinesis);
    match (consumer_arn, stream_arn, name) {
        (Some(consumer_arn), _, _) => {
            let (key, _) = stream(kinesis, stream_arn_of(consumer_arn))?;
            let consumer = kinesis
                .attachments()
                .consumers()
                .by_arn(&key, consumer_arn, now_ms)
                .ok_or_else(|| not_found(&format!("Consumer {consumer_arn}")))?;
            Ok((key, consumer))
        }
        (None, Some(stream_arn), Some(name)) => {
            let (key, arn) = stream(kinesis, stream_arn)?;
            let consumer = kinesis
                .attachments()
                .consumers()
                .by_name(&key, name, now_ms)
                .ok_or_else(|| not_found(&format!("Consumer {name} under stream {arn}")))?;
            Ok((key, consumer))
        }
        _ => Err(ApiError::invalid_argument(
            "Either ConsumerARN, or StreamARN and ConsumerName, must be given",
        )),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RegisterInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    consumer_name: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct RegisterOutput<'a> {
    consumer: WireConsumer<'a>,
}

/// `RegisterStreamConsumer`: the consumer starts `CREATING` (for the status delay).
pub(super) fn register(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: RegisterInput = request.parse()?;
    let mut violations = Violations::new();
    let stream_arn = violations.required_text(input.stream_arn.as_deref(), "StreamARN", STREAM_ARN);
    let name = violations.required_text(
        input.consumer_name.as_deref(),
        "ConsumerName",
        CONSUMER_NAME,
    );
    violations.finish()?;
    let (name, stream_arn) = (name.unwrap_or_default(), stream_arn.unwrap_or_default());
    let (key, arn) = stream(kinesis, stream_arn)?;
    let (now, now_ms) = now_ms(kinesis);
    let consumer = kinesis
        .attachments()
        .consumers()
        .register(&key, &arn, name, now, delay_ms(kinesis))
        .map_err(|refused| match refused {
            Refused::NameTaken => ApiError::new(
                ErrorKind::ResourceInUse,
                format!("Consumer {name} under stream {arn} already exists."),
            ),
            _ => ApiError::new(
                ErrorKind::LimitExceeded,
                format!(
                    "Stream {arn} has {MAX_CONSUMERS_PER_STREAM} registered consumers, the most \
                     a stream may have: deregister one before registering {name}."
                ),
            ),
        })?;
    Ok(request.reply(&RegisterOutput {
        consumer: wire(&consumer, now_ms),
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ConsumerInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    consumer_name: Option<String>,
    #[serde(rename = "ConsumerARN")]
    consumer_arn: Option<String>,
}

impl ConsumerInput {
    /// The consumer the request names (by ARN, or by stream ARN and name), once the names
    /// have their shapes: its stream's key and the consumer.
    fn find(&self, kinesis: &EmbeddedKinesis) -> Result<(StreamKey, Consumer), ApiError> {
        let mut violations = Violations::new();
        violations.text("StreamARN", self.stream_arn.as_deref(), STREAM_ARN);
        violations.text("ConsumerName", self.consumer_name.as_deref(), CONSUMER_NAME);
        violations.text("ConsumerARN", self.consumer_arn.as_deref(), CONSUMER_ARN);
        violations.finish()?;
        find_consumer(
            kinesis,
            self.consumer_arn.as_deref(),
            self.stream_arn.as_deref(),
            self.consumer_name.as_deref(),
        )
    }
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct DescribeOutput<'a> {
    consumer_description: WireConsumerDescription<'a>,
}

/// `DescribeStreamConsumer`.
pub(super) fn describe(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: ConsumerInput = request.parse()?;
    let (_, consumer) = input.find(kinesis)?;
    let (_, now_ms) = now_ms(kinesis);
    Ok(request.reply(&DescribeOutput {
        consumer_description: WireConsumerDescription {
            consumer_name: &consumer.name,
            consumer_arn: &consumer.arn,
            consumer_status: consumer.status_at(now_ms).as_str(),
            consumer_creation_timestamp: WireTime(consumer.created),
            stream_arn: &consumer.stream_arn,
        },
    }))
}

/// `DeregisterStreamConsumer`: the consumer shows `DELETING` for the status delay, then is
/// gone; its subscriptions end.
pub(super) fn deregister(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: ConsumerInput = request.parse()?;
    let (key, consumer) = input.find(kinesis)?;
    let (_, now_ms) = now_ms(kinesis);
    kinesis
        .attachments()
        .consumers()
        .deregister(&key, &consumer.name, now_ms, delay_ms(kinesis))
        .map_err(|_| not_found(&format!("Consumer {}", consumer.arn)))?;
    kinesis.attachments().consumer_tags().remove(&consumer.arn);
    Ok(Vec::new())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    next_token: Option<String>,
    max_results: Option<i64>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct ListOutput<'a> {
    consumers: Vec<WireConsumer<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_token: Option<String>,
}

/// `ListStreamConsumers`: the stream's consumers by name, `MaxResults` (default 100) a page;
/// the `NextToken` names the last consumer of the page.
pub(super) fn list(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: ListInput = request.parse()?;
    let mut violations = Violations::new();
    let stream_arn = violations.required_text(input.stream_arn.as_deref(), "StreamARN", STREAM_ARN);
    violations.number("MaxResults", input.max_results, 1, MAX_LIST_RESULTS);
    violations.text("NextToken", input.next_token.as_deref(), NEXT_TOKEN);
    violations.finish()?;
    let (key, _) = stream(kinesis, stream_arn.unwrap_or_default())?;
    let after = match &input.next_token {
        Some(token) => Some(
            URL_SAFE_NO_PAD
                .decode(token)
                .ok()
                .and_then(|name| String::from_utf8(name).ok())
                .ok_or_else(|| {
                    ApiError::invalid_argument(format!(
                        "NextToken {token} is not a token ListStreamConsumers returned"
                    ))
                })?,
        ),
        None => None,
    };
    let page = input.max_results.map_or(100, |max| max as usize);
    let (_, now_ms) = now_ms(kinesis);
    let consumers = kinesis.attachments().consumers().list(&key, now_ms);
    let rest: Vec<&Consumer> = consumers
        .iter()
        .filter(|consumer| {
            after
                .as_deref()
                .is_none_or(|after| consumer.name.as_str() > after)
        })
        .collect();
    let next_token = (rest.len() > page).then(|| URL_SAFE_NO_PAD.encode(&rest[page - 1].name));
    Ok(request.reply(&ListOutput {
        consumers: rest
            .into_iter()
            .take(page)
            .map(|consumer| wire(consumer, now_ms))
            .collect(),
        next_token,
    }))
}
