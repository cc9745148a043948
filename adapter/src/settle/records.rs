//! The engine for record handlers: one record at a time, in one lane or one lane per
//! partition key, each stopping at its first held record; under a retry plan, a held record
//! is published to the next stream instead.

use std::collections::HashMap;
use std::time::SystemTime;

use futures_util::StreamExt as _;
use tracing::Instrument as _;

use super::call::CallRecord;
use super::decode::{decode, record_bytes, rejection, undecodable};
use super::options::{Deadline, Job, Options};
use super::outcomes::{
    GuardFailure, behind_held, guard_failed, handler_outcome, panicked, record_outcome,
};
use super::span::record_span;
use crate::batch::{RecordData, RecordMeta};
use crate::data::FromRecordData;
use crate::guard::{DynGuard, Entry};
use crate::outcome::HandlerOutcome;
use crate::panic_report;
use crate::retry::route::RetryRoute;
use crate::retry::{Envelope, Hop, Origin, wait_before_retry};
use crate::settlement::{
    DecodeFailure, DropReason, HoldReason, RecordOutcome, Republished, SkipReason,
    UndecodableRecord,
};

/// Settles a batch with a record handler: in one lane by default, or in one lane per partition key.
pub(crate) async fn records<T, C>(handler: C, job: Job<'_, T>) -> Vec<RecordOutcome>
where
    T: FromRecordData + Send + Sync,
    C: CallRecord<T>,
{
    let handler = Guarded {
        handler,
        guard: job.guard,
    };
    let (batch, options, deadline) = (job.batch, job.options, job.deadline);
    let Some(max_concurrent) = options.lanes else {
        return lane(&handler, batch.records(), options, deadline).await;
    };
    // Lanes: the records of each partition key, in shard order. A key's lane stops at its first
    // held record; the other lanes go on.
    let mut lane_of_key: HashMap<&str, usize> = HashMap::new();
    let mut lanes: Vec<Vec<usize>> = Vec::new();
    for (index, record) in batch.records().enumerate() {
        let lane = *lane_of_key
            .entry(record.partition_key())
            .or_insert_with(|| {
                lanes.push(Vec::new());
                lanes.len() - 1
            });
        lanes[lane].push(index);
    }
    let handler = &handler;
    let mut settled: Vec<Option<RecordOutcome>> = vec![None; batch.len()];
    let mut finished = futures_util::stream::iter(lanes)
        .map(|indices| async move {
            let records = indices.iter().map(|&index| {
                batch
                    .record(index)
                    .expect("lanes hold indices of the batch")
            });
            let outcomes = lane(handler, records, options, deadline).await;
            (indices, outcomes)
        })
        .buffer_unordered(max_concurrent.max(1));
    while let Some((indices, outcomes)) = finished.next().await {
        for (index, outcome) in indices.into_iter().zip(outcomes) {
            settled[index] = Some(outcome);
        }
    }
    behind_held(settled)
}

/// Handles `records` one after the other until one is held; the rest are skipped.
async fn lane<'b, T, C>(
    handler: &Guarded<'_, T, C>,
    records: impl ExactSizeIterator<Item = RecordMeta<'b>>,
    options: &Options,
    deadline: Deadline,
) -> Vec<RecordOutcome>
where
    T: FromRecordData + Send + Sync,
    C: CallRecord<T>,
{
    let total = records.len();
    let mut outcomes = Vec::with_capacity(total);
    let mut data = Vec::new();
    for record in records {
        if deadline.too_close(options.deadline_margin) {
            tracing::warn!(
                shard_id = record.shard_id(),
                sequence_number = record.sequence_number(),
                "the invocation's deadline is near: no new record is started, the rest come again"
            );
            outcomes.resize(total, RecordOutcome::Skipped(SkipReason::Deadline));
            break;
        }
        let outcome = match options.retry.as_ref() {
            None => match decode::<T>(&record, &mut data) {
                Ok(value) => handler.handle(&value, &record).await,
                Err(rejection) => undecodable(rejection, &record, options),
            },
            Some(route) => {
                match with_retry_route(handler, &record, &mut data, route, options, deadline).await
                {
                    Some(outcome) => outcome,
                    None => {
                        outcomes.resize(total, RecordOutcome::Skipped(SkipReason::Deadline));
                        break;
                    }
                }
            }
        };
        let held = !outcome.is_settled();
        outcomes.push(outcome);
        if held {
            outcomes.resize(total, RecordOutcome::Skipped(SkipReason::BehindHeldRecord));
            break;
        }
    }
    outcomes
}

/// Settles one record under a retry plan: a record of the retry stream is unwrapped from its
/// envelope (and waits for its retry time), and a record the handler holds is published to the
/// next stream of the plan, which settles it. `None` when the record's retry time falls past
/// the deadline margin: it is not started, like a record the deadline stops.
async fn with_retry_route<T, C>(
    handler: &Guarded<'_, T, C>,
    record: &RecordMeta<'_>,
    data: &mut Vec<u8>,
    route: &RetryRoute,
    options: &Options,
    deadline: Deadline,
) -> Option<RecordOutcome>
where
    T: FromRecordData + Send + Sync,
    C: CallRecord<T>,
{
    let unwrapped = match unwrap(record, data, &route.plan) {
        Ok(unwrapped) => unwrapped,
        Err(rejection) => return Some(undecodable(rejection, record, options)),
    };
    if let Some(envelope) = &unwrapped {
        // One delay for the whole retry stream, and records enter it in the order they were
        // held: every record behind this one is due no earlier, so waiting here delays none of
        // them past its own time (docs/retry-streams.md).
        let wait = wait_before_retry(envelope, SystemTime::now());
        if !wait.is_zero() {
            if deadline.too_close(options.deadline_margin + wait) {
                return None;
            }
            tokio::time::sleep(wait).await;
        }
    }
    let bytes = match &unwrapped {
        Some(envelope) => envelope.data.as_slice(),
        None => plain_bytes(record, data),
    };
    let value = match T::from_record_data(bytes) {
        Ok(value) => value,
        Err(error) => {
            let rejection = rejection(record, DecodeFailure::InvalidData(error));
            return Some(undecodable(rejection, record, options));
        }
    };
    let meta = record.with_retry(unwrapped.as_ref());
    let outcome = handler.handle(&value, &meta).await;
    let reason = match &outcome {
        RecordOutcome::Held(HoldReason::Handler) => "the handler held it".to_owned(),
        RecordOutcome::Held(HoldReason::Error(error)) => format!("the handler failed: {error}"),
        RecordOutcome::Held(HoldReason::Panicked(message)) => {
            format!("the handler panicked: {message}")
        }
        _ => return Some(outcome),
    };
    let retries_so_far = meta.retry_attempt();
    let Some(hop) = route.plan.next_hop(retries_so_far) else {
        return Some(outcome);
    };
    let origin = match &unwrapped {
        Some(envelope) => envelope.origin.clone(),
        None => Origin {
            stream: record.stream_name().to_owned(),
            shard_id: record.shard_id().to_owned(),
            sequence_number: record.sequence_number().to_owned(),
            sub_sequence_number: record.sub_sequence_number(),
            partition_key: record.partition_key().to_owned(),
            arrival_millis: crate::retry::millis_since_epoch(record.approximate_arrival()),
        },
    };
    let envelope = route
        .plan
        .envelope(hop, origin, bytes.to_vec(), reason, SystemTime::now());
    Some(publish_held(route, hop, record, &envelope, outcome).await)
}

/// Publishes a held record's envelope on `hop`; a publish that fails leaves it `held`.
async fn publish_held(
    route: &RetryRoute,
    hop: Hop<'_>,
    record: &RecordMeta<'_>,
    envelope: &Envelope,
    held: RecordOutcome,
) -> RecordOutcome {
    let (stream, attempt, dead_letter) = match hop {
        Hop::Retry { stream, attempt } => (stream, attempt, false),
        Hop::DeadLetter { stream, attempts } => (stream, attempts, true),
    };
    // Kinesis refuses an empty partition key on a stream that is not `AUTO`. A keyless record
    // has no per-key order to keep, so its envelope goes out under its own sequence number,
    // which is unique; the envelope still says the origin had no key.
    let partition_key = match envelope.origin.partition_key.as_str() {
        "" => envelope.origin.sequence_number.as_str(),
        key => key,
    };
    match route.sender.send(stream, partition_key, envelope).await {
        Ok(()) => {
            tracing::warn!(
                shard_id = record.shard_id(),
                sequence_number = record.sequence_number(),
                stream,
                attempt,
                "held record published to the {} stream {stream}",
                if dead_letter { "dead-letter" } else { "retry" }
            );
            RecordOutcome::Republished(Republished {
                stream: stream.to_owned(),
                attempt,
                dead_letter,
            })
        }
        Err(error) => {
            tracing::error!(
                shard_id = record.shard_id(),
                sequence_number = record.sequence_number(),
                "held record {} of {} could not be published to stream {stream}, so it stays \
                 held and comes again: {error}",
                record.sequence_number(),
                record.shard_id(),
            );
            held
        }
    }
}

/// The envelope of a record read from the plan's retry stream, `None` for any other record.
fn unwrap(
    record: &RecordMeta<'_>,
    data: &mut Vec<u8>,
    plan: &crate::retry::RetryPlan,
) -> Result<Option<Envelope>, UndecodableRecord> {
    let bytes = record_bytes(record, data)?;
    if !plan.unwraps(record.stream_name()) {
        return Ok(None);
    }
    Envelope::from_slice(bytes)
        .map(Some)
        .map_err(|error| rejection(record, DecodeFailure::NotAnEnvelope(error.to_string())))
}

/// A record's bytes once [`record_bytes`] has decoded them into `data`.
fn plain_bytes<'d>(record: &RecordMeta<'d>, data: &'d [u8]) -> &'d [u8] {
    match record.data() {
        RecordData::Raw(bytes) => bytes,
        RecordData::Base64(_) | RecordData::CorruptAggregate(_) => data,
    }
}

/// A record handler and the guard around each record, if the adapter has one.
struct Guarded<'g, T, C> {
    handler: C,
    guard: Option<&'g dyn DynGuard<T>>,
}

impl<T: Sync, C: CallRecord<T>> Guarded<'_, T, C> {
    /// Handles one record: through the guard when there is one, else straight to the handler
    /// (an adapter without a guard pays one branch for it).
    async fn handle(&self, value: &T, record: &RecordMeta<'_>) -> RecordOutcome {
        match self.guard {
            None => call(&self.handler, value, record, record_span(record)).await,
            Some(guard) => guarded(guard, &self.handler, value, record).await,
        }
    }
}

/// Handles one record inside its guard: the guard decides whether the handler runs, and hears
/// what it came to. A guard that panics holds the record, as a handler that panics does.
async fn guarded<T: Sync, C: CallRecord<T>>(
    guard: &dyn DynGuard<T>,
    handler: &C,
    value: &T,
    record: &RecordMeta<'_>,
) -> RecordOutcome {
    let span = record_span(record);
    let entered = panic_report::caught(guard.enter_dyn(value, record))
        .instrument(span.clone())
        .await;
    let failure = match entered {
        Ok(Entry::Run(pass)) => {
            let outcome = call(handler, value, record, span.clone()).await;
            guard
                .leave_dyn(pass, handler_outcome(&outcome))
                .instrument(span)
                .await;
            return outcome;
        }
        Ok(Entry::Settle(outcome)) => return record_outcome(outcome),
        Ok(Entry::Refuse(error)) => GuardFailure::Refused(error),
        Err(panic) => GuardFailure::Panicked(panic),
    };
    let _entered = span.enter();
    guard_failed(failure, "the record is held")
}

/// Calls the handler for one record in `span`, turning an error or a panic into a held record.
async fn call<T: Sync, C: CallRecord<T>>(
    handler: &C,
    value: &T,
    record: &RecordMeta<'_>,
    span: tracing::Span,
) -> RecordOutcome {
    let result = panic_report::caught_call(|| handler.call_record(value, record))
        .instrument(span.clone())
        .await;
    let _entered = span.enter();
    match result {
        Ok(Ok(HandlerOutcome::Ack)) => RecordOutcome::Acked,
        Ok(Ok(HandlerOutcome::Drop)) => RecordOutcome::Dropped(DropReason::Handler),
        Ok(Ok(HandlerOutcome::Hold)) => RecordOutcome::Held(HoldReason::Handler),
        Ok(Err(error)) => {
            tracing::error!(error = %error, "the handler failed; the record is held");
            RecordOutcome::Held(HoldReason::Error(error))
        }
        Err(panic) => RecordOutcome::Held(HoldReason::Panicked(panicked(
            panic,
            "the handler panicked; the record is held",
        ))),
    }
}
