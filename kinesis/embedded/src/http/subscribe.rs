//! `SubscribeToShard`: records pushed to a registered consumer over one long answer in the
//! `application/vnd.amazon.eventstream` framing (`event_stream.rs`), over HTTP/2 or HTTP/1.1.
//!
//! The request is checked and the subscription claimed before the answer starts, so that its
//! errors (an unknown consumer or shard, a consumer not `ACTIVE`, a second subscription of the
//! same consumer to the same shard within 5 seconds) are ordinary error answers. Then the
//! answer sends an `initial-response` event, and a `SubscribeToShardEvent` whenever records
//! arrive, at least every [`HEARTBEAT`] while none do, and at the shard's end (with
//! `ChildShards`, after which it ends). It ends after the subscription's lifetime (5 minutes
//! unless configured), when a newer subscription replaces it, when its consumer is
//! deregistered, or when the endpoint stops. The rules and their sources are in
//! `docs/kinesis.md` ("Enhanced fan-out").

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::codec::Request;
use super::consumers::{find_consumer, stream_arn_of};
use super::error::{ApiError, ErrorKind};
use super::event_stream;
use super::format::Format;
use super::records::{ITERATOR_TYPES, WireChildShard, WireRecord};
use super::validation::{CONSUMER_ARN, SEQUENCE_NUMBER, SHARD_ID, Violations};
use super::wire::{Timestamp, normalized_shard_id};
use crate::EmbeddedKinesis;
use crate::MAX_GET_RECORDS_LIMIT;
use crate::attachments::StreamKey;
use crate::clock::millis_floor;
use crate::consumers::{RESUBSCRIBE_PAUSE_MS, Refused};
use kinesis_source::ShardEvent;
use kinesis_source::sequence::SequenceNumber;
use kinesis_source::{IteratorPosition, ShardSource as _, SourceError};

/// The longest a subscription goes without an event while no records arrive: it tells the
/// consumer it is still there and how far it has read (`ContinuationSequenceNumber`).
pub(super) const HEARTBEAT: Duration = Duration::from_secs(5);

/// How many framed events wait to be written to a slow consumer before reading pauses.
const EVENTS_IN_FLIGHT: usize = 2;

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct SubscribeInput {
    #[serde(rename = "ConsumerARN")]
    consumer_arn: Option<String>,
    shard_id: Option<String>,
    starting_position: Option<StartingPositionInput>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StartingPositionInput {
    #[serde(rename = "Type")]
    kind: Option<String>,
    sequence_number: Option<String>,
    timestamp: Option<Timestamp>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct SubscribeToShardEvent<'a> {
    records: Vec<WireRecord<'a>>,
    /// Absent at the shard's end, where `ChildShards` says where to go on.
    #[serde(skip_serializing_if = "Option::is_none")]
    continuation_sequence_number: Option<&'a str>,
    millis_behind_latest: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    child_shards: Vec<WireChildShard<'a>>,
}

/// A subscription that has been claimed: where it reads from, and how to tell it was replaced.
pub(super) struct Subscription {
    format: Format,
    stream: String,
    stream_key: StreamKey,
    consumer_arn: String,
    shard_id: String,
    number: u64,
    iterator: String,
}

/// Checks a `SubscribeToShard` request and claims its subscription; the answer's errors are
/// those of the API reference, as ordinary error answers.
pub(super) fn open(
    kinesis: &EmbeddedKinesis,
    request: Request<'_>,
) -> Result<Subscription, ApiError> {
    let input: SubscribeInput = request.parse()?;
    let mut violations = Violations::new();
    let consumer_arn = violations.required(input.consumer_arn.as_deref(), "ConsumerARN");
    violations.text("ConsumerARN", consumer_arn, CONSUMER_ARN);
    let shard_id = violations.required(input.shard_id.as_deref(), "ShardId");
    violations.text("ShardId", shard_id, SHARD_ID);
    let position = violations.required(input.starting_position.as_ref(), "StartingPosition");
    let kind = position.and_then(|position| position.kind.as_deref());
    if position.is_some() {
        violations.required(kind, "StartingPosition.Type");
    }
    violations.one_of("StartingPosition.Type", kind, &ITERATOR_TYPES);
    violations.text(
        "StartingPosition.SequenceNumber",
        position.and_then(|position| position.sequence_number.as_deref()),
        SEQUENCE_NUMBER,
    );
    violations.finish()?;
    let consumer_arn = consumer_arn.unwrap_or_default();
    let shard_id = normalized_shard_id(shard_id.unwrap_or_default()).into_owned();
    let position = starting_position(position, &shard_id)?;
    claim(kinesis, request.format, consumer_arn, &shard_id, &position)
}

/// Claims the subscription of `consumer_arn` to `shard_id` from `position`: the consumer must
/// be `ACTIVE`, and not subscribed to the shard within the last 5 seconds. The HTTP answer and
/// the in-process subscriptions of `super::fan_out` both start here.
pub(super) fn claim(
    kinesis: &EmbeddedKinesis,
    format: Format,
    consumer_arn: &str,
    shard_id: &str,
    position: &IteratorPosition,
) -> Result<Subscription, ApiError> {
    let shard_id = shard_id.to_owned();
    let (stream_key, consumer) = find_consumer(kinesis, Some(consumer_arn), None, None)?;
    let stream = stream_arn_of(consumer_arn).to_owned();
    let iterator = kinesis.get_shard_iterator(&stream, &shard_id, position)?;
    let now_ms = millis_floor(kinesis.current_time());
    let number = kinesis
        .attachments()
        .consumers()
        .subscribe(&consumer, &shard_id, now_ms)
        .map_err(|refused| match refused {
            Refused::NotActive(status) => ApiError::new(
                ErrorKind::ResourceInUse,
                format!(
                    "Consumer {consumer_arn} is not ACTIVE, instead in state {}: it cannot be \
                     subscribed to shard {shard_id} yet",
                    status.as_str()
                ),
            ),
            _ => ApiError::new(
                ErrorKind::ResourceInUse,
                format!(
                    "Another subscription of consumer {consumer_arn} to shard {shard_id} began \
                     less than {} seconds ago",
                    RESUBSCRIBE_PAUSE_MS / 1000
                ),
            ),
        })?;
    Ok(Subscription {
        format,
        stream,
        stream_key,
        consumer_arn: consumer.arn,
        shard_id,
        number,
        iterator,
    })
}

/// The iterator position a `StartingPosition` names.
fn starting_position(
    position: Option<&StartingPositionInput>,
    shard_id: &str,
) -> Result<IteratorPosition, ApiError> {
    let position = position.expect("StartingPosition was checked to be present");
    let kind = position.kind.as_deref().unwrap_or_default();
    let sequence_number = || {
        let text = position.sequence_number.as_deref().ok_or_else(|| {
            ApiError::invalid_argument(format!(
                "StartingPosition {kind} on shard {shard_id} needs a SequenceNumber"
            ))
        })?;
        text.parse::<SequenceNumber>().map_err(|error| {
            ApiError::invalid_argument(format!("StartingPosition.SequenceNumber: {error}"))
        })
    };
    Ok(match kind {
        "TRIM_HORIZON" => IteratorPosition::TrimHorizon,
        "LATEST" => IteratorPosition::Latest,
        "AT_SEQUENCE_NUMBER" => IteratorPosition::AtSequenceNumber(sequence_number()?),
        "AFTER_SEQUENCE_NUMBER" => IteratorPosition::AfterSequenceNumber(sequence_number()?),
        _ => {
            let Timestamp(time) = position.timestamp.ok_or_else(|| {
                ApiError::invalid_argument(format!(
                    "StartingPosition AT_TIMESTAMP on shard {shard_id} needs a Timestamp"
                ))
            })?;
            IteratorPosition::AtTimestamp(time)
        }
    })
}

/// What a subscription's task hands on: an event of the shard, or the error that ends it.
pub(super) enum Pushed {
    /// A `SubscribeToShardEvent`.
    Event(ShardEvent),
    /// The exception event the subscription ends with.
    Failed(ApiError),
}

/// Starts the task that reads the shard for `subscription`, handing what it pushes to the
/// receiver returned; the task ends when the subscription does, or when the receiver is dropped.
pub(super) fn start(
    kinesis: EmbeddedKinesis,
    subscription: Subscription,
    stop: watch::Receiver<bool>,
) -> mpsc::Receiver<Pushed> {
    let (sender, receiver) = mpsc::channel::<Pushed>(EVENTS_IN_FLIGHT);
    tokio::spawn(async move { push(&kinesis, subscription, &sender, stop).await });
    receiver
}

/// The answer's body: the framed events of `subscription`, sent as they are made. It ends
/// when the subscription does; a consumer that goes away ends it too.
pub(super) fn events(
    kinesis: EmbeddedKinesis,
    subscription: Subscription,
    stop: watch::Receiver<bool>,
) -> axum::body::Body {
    let format = subscription.format;
    let receiver = start(kinesis, subscription, stop);
    let initial = futures_util::stream::once(async move {
        Ok::<_, Infallible>(event_stream::initial_response(format))
    });
    let pushed = futures_util::stream::unfold(receiver, move |mut receiver| async move {
        let frame = match receiver.recv().await? {
            Pushed::Event(event) => frame(&event, format),
            Pushed::Failed(error) => event_stream::exception(&error, format),
        };
        Some((Ok::<_, Infallible>(frame), receiver))
    });
    axum::body::Body::from_stream(futures_util::StreamExt::chain(initial, pushed))
}

/// One `SubscribeToShardEvent`, framed.
fn frame(event: &ShardEvent, format: Format) -> Bytes {
    let wire = SubscribeToShardEvent {
        records: event.records.iter().map(WireRecord::from).collect(),
        continuation_sequence_number: event
            .continuation_sequence_number
            .as_ref()
            .map(SequenceNumber::as_str),
        millis_behind_latest: event.millis_behind_latest,
        child_shards: event
            .child_shards
            .iter()
            .map(WireChildShard::from)
            .collect(),
    };
    event_stream::event("SubscribeToShardEvent", format, format.write(&wire))
}

/// Reads the shard and sends events until the subscription is over.
async fn push(
    kinesis: &EmbeddedKinesis,
    mut subscription: Subscription,
    sender: &mpsc::Sender<Pushed>,
    mut stop: watch::Receiver<bool>,
) {
    let ends_at = Instant::now() + kinesis.subscription_lifetime();
    let mut read_to = kinesis.sequence_number_read_to(&subscription.iterator);
    // Zero: the first read is sent whatever it holds, so the consumer learns where it is.
    let mut last_event: Option<Instant> = None;
    let mut idle_reads = 0_u32;
    loop {
        let now_ms = millis_floor(kinesis.current_time());
        let current = kinesis.attachments().consumers().is_current(
            &subscription.stream_key,
            &subscription.consumer_arn,
            &subscription.shard_id,
            subscription.number,
            now_ms,
        );
        if !current || *stop.borrow() || Instant::now() >= ends_at {
            return;
        }
        let output = match kinesis.get_records(&subscription.iterator, MAX_GET_RECORDS_LIMIT) {
            Ok(output) => output,
            Err(error) => {
                let error = match error {
                    SourceError::NotFound { what } => ApiError::new(
                        ErrorKind::ResourceNotFound,
                        format!(
                            "{what} not found: the subscription of {} to shard {} ends",
                            subscription.consumer_arn, subscription.shard_id
                        ),
                    ),
                    other => ApiError::from(other),
                };
                let _ = sender.send(Pushed::Failed(error)).await;
                return;
            }
        };
        if let Some(last) = output.records.last() {
            read_to = Some(last.sequence_number.clone());
        }
        let at_end = output.next_shard_iterator.is_none();
        let had_records = !output.records.is_empty();
        let next_iterator = output.next_shard_iterator;
        let due = last_event.is_none_or(|sent| sent.elapsed() >= HEARTBEAT);
        if had_records || at_end || due {
            let event = ShardEvent {
                continuation_sequence_number: if at_end { None } else { read_to.clone() },
                records: output.records,
                millis_behind_latest: output.millis_behind_latest,
                child_shards: output.child_shards,
            };
            if sender.send(Pushed::Event(event)).await.is_err() {
                return;
            }
            last_event = Some(Instant::now());
        }
        let Some(next) = next_iterator else {
            return;
        };
        subscription.iterator = next;
        if had_records {
            idle_reads = 0;
            continue;
        }
        idle_reads += 1;
        if idle_reads > 1 {
            // The wait said records were there but the read found none (a reader at a time
            // after the newest record's arrival): pause instead of spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let until_heartbeat = last_event.map_or(Duration::ZERO, |sent| {
            HEARTBEAT.saturating_sub(sent.elapsed())
        });
        let wait = until_heartbeat.min(ends_at.saturating_duration_since(Instant::now()));
        tokio::select! {
            () = kinesis.wait_for_records(
                &subscription.stream,
                &subscription.shard_id,
                read_to.as_ref(),
                wait,
            ) => {}
            _ = stop.changed() => {}
            () = sender.closed() => return,
        }
    }
}
