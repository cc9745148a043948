//! The engine: calling the handler over a batch, record by record (in one lane or one lane per
//! partition key) or all at once, and turning what it returns into each record's outcome.
//!
//! The one rule everything here serves: the response names the first record, in shard order,
//! that is not settled (acked or dropped). Lambda checkpoints in front of it and delivers it and
//! every record behind it again; with nothing named, Lambda checkpoints past the whole batch.
//! The report of what was decided is [`crate::settlement`].

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use futures_util::StreamExt as _;
use tracing::Instrument as _;

use crate::batch::{KinesisBatch, RecordData, RecordMeta, data_excerpt};
use crate::data::FromRecordData;
use crate::guard::{DynGuard, Entry};
use crate::outcome::{BatchOutcome, HandlerError, HandlerOutcome};
use crate::panic_report;
use crate::retry::route::RetryRoute;
use crate::retry::{Envelope, Hop, Origin, wait_before_retry};
use crate::settlement::{
    DecodeFailure, DropReason, HoldReason, RecordOutcome, Republished, SkipReason,
    UndecodableRecord,
};

/// How the adapter settles a batch; set through [`KinesisAdapter`](crate::KinesisAdapter).
#[derive(Debug, Clone)]
pub struct Options {
    pub(crate) lanes: Option<usize>,
    pub(crate) hold_undecodable: bool,
    pub(crate) deadline_margin: Duration,
    /// Where held records are published, when the adapter has retry or dead-letter streams.
    pub(crate) retry: Option<RetryRoute>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            lanes: None,
            hold_undecodable: false,
            deadline_margin: Duration::from_millis(500),
            retry: None,
        }
    }
}

/// When the invocation must answer: Lambda's deadline, or none.
///
/// Lambda gives the deadline as wall-clock time; it is turned into an instant of tokio's
/// monotonic clock once, when the invocation starts. A wall clock can jump while records are
/// handled (an NTP step), and tokio's clock is the one a test can pause and advance.
#[derive(Debug, Clone, Copy)]
pub struct Deadline(Option<tokio::time::Instant>);

impl Deadline {
    /// Reads the deadline of a Lambda context. A deadline of 0 (as in `Context::default()`) means
    /// none: the context was not made by a runtime. So does one too early to be a time (before
    /// September 2001): `cargo lambda watch` sends the constant 600000, which would otherwise
    /// make every invocation past its deadline before it starts.
    pub(crate) fn of(context: &lambda_runtime::Context) -> Self {
        const EARLIEST_REAL_DEADLINE_MILLIS: u64 = 1_000_000_000_000;
        match context.deadline {
            deadline if deadline < EARLIEST_REAL_DEADLINE_MILLIS => Self(None),
            _ => {
                let left = context
                    .deadline()
                    .duration_since(SystemTime::now())
                    .unwrap_or(Duration::ZERO);
                Self(Some(tokio::time::Instant::now() + left))
            }
        }
    }

    fn too_close(self, margin: Duration) -> bool {
        match self.0 {
            None => false,
            Some(at) => at
                .checked_duration_since(tokio::time::Instant::now())
                .is_none_or(|left| left < margin),
        }
    }
}

/// How the engine calls a record handler, whatever its shape.
pub(crate) trait CallRecord<T>: Send + Sync {
    fn call_record<'r>(
        &'r self,
        record: &'r T,
        meta: &'r RecordMeta<'r>,
    ) -> impl Future<Output = Result<HandlerOutcome, HandlerError>> + Send + 'r;
}

/// How the engine calls a batch handler, whatever its shape.
pub(crate) trait CallBatch<T>: Send + Sync {
    fn call_batch<'r>(
        &'r self,
        records: &'r [T],
    ) -> impl Future<Output = Result<BatchOutcome, HandlerError>> + Send + 'r;
}

/// Settles a batch with a record handler: in one lane by default, or in one lane per partition key.
pub(crate) async fn records<T, C>(
    handler: C,
    batch: &KinesisBatch,
    options: &Options,
    guard: Option<&dyn DynGuard<T>>,
    deadline: Deadline,
) -> Vec<RecordOutcome>
where
    T: FromRecordData + Send + Sync,
    C: CallRecord<T>,
{
    let handler = Guarded { handler, guard };
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
    settled
        .into_iter()
        .map(|outcome| outcome.unwrap_or(RecordOutcome::Skipped(SkipReason::BehindHeldRecord)))
        .collect()
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
    let pass = match entered {
        Ok(Entry::Run(pass)) => pass,
        Ok(Entry::Settle(outcome)) => return record_outcome(outcome),
        Ok(Entry::Refuse(error)) => {
            let _entered = span.enter();
            tracing::error!(error = %error, "the record's guard refused it; the record is held");
            return RecordOutcome::Held(HoldReason::Error(error));
        }
        Err(panic) => {
            let message = panic_report::message(panic.as_ref());
            let _entered = span.enter();
            tracing::error!(panic = %message, location = %panic_report::take_location(), "the record's guard panicked; the record is held");
            return RecordOutcome::Held(HoldReason::Panicked(message));
        }
    };
    let outcome = call(handler, value, record, span.clone()).await;
    guard
        .leave_dyn(pass, handler_outcome(&outcome))
        .instrument(span)
        .await;
    outcome
}

/// What the handler returned, as a guard hears it: `None` when it failed or panicked, or when
/// it was not called (a batch handler's records the deadline stopped).
fn handler_outcome(outcome: &RecordOutcome) -> Option<HandlerOutcome> {
    match outcome {
        RecordOutcome::Acked => Some(HandlerOutcome::Ack),
        RecordOutcome::Dropped(DropReason::Handler) => Some(HandlerOutcome::Drop),
        RecordOutcome::Held(HoldReason::Handler) => Some(HandlerOutcome::Hold),
        _ => None,
    }
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
        Err(panic) => {
            let message = panic_report::message(panic.as_ref());
            tracing::error!(panic = %message, location = %panic_report::take_location(), "the handler panicked; the record is held");
            RecordOutcome::Held(HoldReason::Panicked(message))
        }
    }
}

/// The span a record is handled in, naming the record; `Span::none()` when nothing could
/// see it (see [`record_span_is_seen`]), so that a function without logs pays neither for the
/// span nor for reading its fields.
fn record_span(record: &RecordMeta<'_>) -> tracing::Span {
    if !record_span_is_seen(tracing::dispatcher::has_been_set(), log::max_level()) {
        return tracing::Span::none();
    }
    tracing::info_span!(
        "record",
        shard_id = record.shard_id(),
        sequence_number = record.sequence_number(),
        sub_sequence_number = record.is_aggregated().then(|| record.sub_sequence_number()),
        partition_key = record.partition_key(),
    )
}

/// Whether an INFO span could reach anyone. A tracing subscriber, once one has been set,
/// decides for itself (`info_span!` asks it). Until then tracing hands spans to the `log` crate
/// (its `log` feature, which `lambda_runtime` turns on), and a span's lines reach a logger only
/// when `log`'s maximum level lets INFO through: below that, the span is as good as none.
fn record_span_is_seen(subscriber_set: bool, log_max_level: log::LevelFilter) -> bool {
    subscriber_set || log_max_level >= log::LevelFilter::Info
}

/// Decodes a record's data into `data` (a buffer reused across records), then into `T`.
fn decode<T: FromRecordData>(
    record: &RecordMeta<'_>,
    data: &mut Vec<u8>,
) -> Result<T, UndecodableRecord> {
    let bytes = record_bytes(record, data)?;
    T::from_record_data(bytes).map_err(|error| rejection(record, DecodeFailure::InvalidData(error)))
}

/// A record's data as bytes: base64 decoded into `data` (a buffer reused across records), or
/// a user record's own.
fn record_bytes<'d>(
    record: &RecordMeta<'d>,
    data: &'d mut Vec<u8>,
) -> Result<&'d [u8], UndecodableRecord> {
    match record.data() {
        RecordData::Base64(text) => {
            data.clear();
            base64::engine::general_purpose::STANDARD
                .decode_vec(text, data)
                .map_err(|error| {
                    rejection(record, DecodeFailure::InvalidBase64(error.to_string()))
                })?;
            Ok(data.as_slice())
        }
        RecordData::Raw(bytes) => Ok(bytes),
        RecordData::CorruptAggregate(error) => {
            Err(rejection(record, DecodeFailure::CorruptAggregate(error)))
        }
    }
}

fn rejection(record: &RecordMeta<'_>, failure: DecodeFailure) -> UndecodableRecord {
    UndecodableRecord {
        shard_id: record.shard_id().to_owned(),
        sequence_number: record.sequence_number().to_owned(),
        sub_sequence_number: record.is_aggregated().then(|| record.sub_sequence_number()),
        failure,
    }
}

/// Settles an undecodable record by the adapter's rule, with a warning that names it, its
/// partition key and its data's first bytes: the partition key usually names the producer, and
/// the bytes show the format it wrote.
fn undecodable(
    rejection: UndecodableRecord,
    record: &RecordMeta<'_>,
    options: &Options,
) -> RecordOutcome {
    let data = data_excerpt(record.data());
    if options.hold_undecodable {
        tracing::warn!(
            shard_id = %rejection.shard_id,
            sequence_number = %rejection.sequence_number,
            partition_key = record.partition_key(),
            data = %data,
            error = %rejection,
            "undecodable record held"
        );
        RecordOutcome::Held(HoldReason::Undecodable(rejection))
    } else {
        tracing::warn!(
            shard_id = %rejection.shard_id,
            sequence_number = %rejection.sequence_number,
            partition_key = record.partition_key(),
            data = %data,
            error = %rejection,
            "undecodable record dropped"
        );
        RecordOutcome::Dropped(DropReason::Undecodable(rejection))
    }
}

/// Settles a batch with a batch handler: one call with every decoded record (every record the
/// guard let through, when the adapter has one).
pub(crate) async fn whole_batch<T, C>(
    handler: C,
    batch: &KinesisBatch,
    options: &Options,
    guard: Option<&dyn DynGuard<T>>,
    deadline: Deadline,
) -> Vec<RecordOutcome>
where
    T: FromRecordData + Send + Sync,
    C: CallBatch<T>,
{
    let mut outcomes: Vec<Option<RecordOutcome>> = vec![None; batch.len()];
    let mut values = Vec::with_capacity(batch.len());
    let mut positions = Vec::with_capacity(batch.len());
    let mut data = Vec::new();
    for (index, record) in batch.records().enumerate() {
        match decode::<T>(&record, &mut data) {
            Ok(value) => {
                values.push(value);
                positions.push(index);
            }
            Err(rejection) => {
                let outcome = undecodable(rejection, &record, options);
                let held = !outcome.is_settled();
                outcomes[index] = Some(outcome);
                if held {
                    break;
                }
            }
        }
    }
    if !values.is_empty() {
        let span = batch_span(batch, positions[0], values.len());
        let given = if deadline.too_close(options.deadline_margin) {
            let _entered = span.enter();
            tracing::warn!("the invocation's deadline is near: the batch handler is not called");
            vec![RecordOutcome::Skipped(SkipReason::Deadline); values.len()]
        } else {
            match guard {
                None => match call_batch(&handler, &values, span).await {
                    Ok(given) => given,
                    Err(reason) => hold_all(reason, values.len()),
                },
                Some(guard) => {
                    guarded_batch(guard, &handler, values, &positions, batch, span).await
                }
            }
        };
        for (position, outcome) in positions.into_iter().zip(given) {
            outcomes[position] = Some(outcome);
        }
    }
    outcomes
        .into_iter()
        .map(|outcome| outcome.unwrap_or(RecordOutcome::Skipped(SkipReason::BehindHeldRecord)))
        .collect()
}

/// The outcomes of `count` records a batch handler failed on: the first held for `reason`, the
/// others behind it.
fn hold_all(reason: HoldReason, count: usize) -> Vec<RecordOutcome> {
    let mut outcomes = vec![RecordOutcome::Skipped(SkipReason::BehindHeldRecord); count];
    outcomes[0] = RecordOutcome::Held(reason);
    outcomes
}

/// The span of a batch handler's call: its first record's shard and sequence number.
fn batch_span(batch: &KinesisBatch, first: usize, records: usize) -> tracing::Span {
    let first = batch
        .record(first)
        .expect("the first decoded record is in the batch");
    tracing::info_span!(
        "batch",
        shard_id = first.shard_id(),
        first_sequence_number = first.sequence_number(),
        records,
    )
}

/// Settles the decoded `values` of a batch (at `positions`) through the guard and the batch
/// handler, as one call of the handler would have settled them with the guard inside it: the
/// records the guard settles keep its outcomes, the first one it holds is held with every
/// record behind it (which the guard does not enter), and the handler is given the records it
/// let through. When the handler fails, panics or miscounts, the guard hears `None` for each of
/// its records and the whole batch is held, the records the guard settled included.
async fn guarded_batch<T, C>(
    guard: &dyn DynGuard<T>,
    handler: &C,
    values: Vec<T>,
    positions: &[usize],
    batch: &KinesisBatch,
    span: tracing::Span,
) -> Vec<RecordOutcome>
where
    T: Send + Sync,
    C: CallBatch<T>,
{
    let count = values.len();
    let entered = enter_batch(guard, values, positions, batch).await;
    let mut outcomes = entered.outcomes;
    if entered.values.is_empty() {
        return outcomes;
    }
    let result = call_batch(handler, &entered.values, span).await;
    let heard: Vec<Option<HandlerOutcome>> = match &result {
        Ok(given) => given.iter().map(handler_outcome).collect(),
        Err(_) => vec![None; entered.passes.len()],
    };
    let left = entered
        .passes
        .into_iter()
        .zip(heard)
        .map(|(pass, outcome)| guard.leave_dyn(pass, outcome));
    futures_util::future::join_all(left).await;
    match result {
        Ok(given) => {
            for (place, outcome) in entered.places.into_iter().zip(given) {
                outcomes[place] = outcome;
            }
            outcomes
        }
        Err(HoldReason::OutcomeCountMismatch {
            records,
            outcomes: returned,
        }) => hold_all(
            HoldReason::Error(HandlerError::new(format!(
                "the batch handler returned {returned} outcomes for the {records} records it \
                 was given (those its guard let through); the batch is held"
            ))),
            count,
        ),
        Err(reason) => hold_all(reason, count),
    }
}

/// A batch's decoded records once the guard entered them.
struct Entered<T> {
    /// The outcome of each decoded record: the guard's, or a hold, for the records it did not
    /// let through; a placeholder for those it did.
    outcomes: Vec<RecordOutcome>,
    /// The records it let through, in shard order, their places among the decoded records, and
    /// their passes.
    values: Vec<T>,
    places: Vec<usize>,
    passes: Vec<Box<dyn std::any::Any + Send>>,
}

/// Enters the decoded records of a batch into the guard in shard order, up to the first it
/// holds: the records it settles get its outcomes, the ones it lets through are returned, and
/// the first one it holds is held with every record behind it, which are not entered (they
/// come again).
async fn enter_batch<T: Sync>(
    guard: &dyn DynGuard<T>,
    values: Vec<T>,
    positions: &[usize],
    batch: &KinesisBatch,
) -> Entered<T> {
    let count = values.len();
    let mut entered = Entered {
        outcomes: vec![RecordOutcome::Held(HoldReason::Handler); count],
        values: Vec::with_capacity(count),
        places: Vec::with_capacity(count),
        passes: Vec::with_capacity(count),
    };
    for (place, (value, index)) in values.into_iter().zip(positions).enumerate() {
        let record = batch.record(*index).expect("positions are of the batch");
        let span = record_span(&record);
        let decided = panic_report::caught(guard.enter_dyn(&value, &record))
            .instrument(span.clone())
            .await;
        let _entered = span.enter();
        let held = match decided {
            Ok(Entry::Run(pass)) => {
                entered.values.push(value);
                entered.places.push(place);
                entered.passes.push(pass);
                continue;
            }
            Ok(Entry::Settle(HandlerOutcome::Hold)) => RecordOutcome::Held(HoldReason::Handler),
            Ok(Entry::Settle(outcome)) => {
                entered.outcomes[place] = record_outcome(outcome);
                continue;
            }
            Ok(Entry::Refuse(error)) => {
                tracing::error!(error = %error, "the record's guard refused it; the record is held, with the records behind it");
                RecordOutcome::Held(HoldReason::Error(error))
            }
            Err(panic) => {
                let message = panic_report::message(panic.as_ref());
                tracing::error!(panic = %message, location = %panic_report::take_location(), "the record's guard panicked; the record is held, with the records behind it");
                RecordOutcome::Held(HoldReason::Panicked(message))
            }
        };
        // This record and every one behind it keep the hold they start with.
        entered.outcomes[place] = held;
        break;
    }
    entered
}

/// Calls a batch handler in `span` and matches what it returned with the `values` it was
/// given: their outcomes, or why the batch is held (an error, a panic, a miscount).
async fn call_batch<T, C>(
    handler: &C,
    values: &[T],
    span: tracing::Span,
) -> Result<Vec<RecordOutcome>, HoldReason>
where
    T: Send + Sync,
    C: CallBatch<T>,
{
    let result = panic_report::caught_call(|| handler.call_batch(values))
        .instrument(span.clone())
        .await;
    let _entered = span.enter();
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(panic) => {
            let message = panic_report::message(panic.as_ref());
            tracing::error!(panic = %message, location = %panic_report::take_location(), "the batch handler panicked; the batch is held");
            return Err(HoldReason::Panicked(message));
        }
    };
    match outcome {
        Ok(BatchOutcome::All(outcome)) => Ok(vec![record_outcome(outcome); values.len()]),
        Ok(BatchOutcome::Each(each)) if each.len() == values.len() => {
            Ok(each.into_iter().map(record_outcome).collect())
        }
        Ok(BatchOutcome::Each(each)) => {
            tracing::error!(
                records = values.len(),
                outcomes = each.len(),
                "the batch handler returned a number of outcomes unlike the number of records; the batch is held"
            );
            Err(HoldReason::OutcomeCountMismatch {
                records: values.len(),
                outcomes: each.len(),
            })
        }
        Err(error) => {
            tracing::error!(error = %error, "the batch handler failed; the batch is held");
            Err(HoldReason::Error(error))
        }
    }
}

fn record_outcome(outcome: HandlerOutcome) -> RecordOutcome {
    match outcome {
        HandlerOutcome::Ack => RecordOutcome::Acked,
        HandlerOutcome::Drop => RecordOutcome::Dropped(DropReason::Handler),
        HandlerOutcome::Hold => RecordOutcome::Held(HoldReason::Handler),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_span_is_made_only_when_a_subscriber_or_a_logger_can_see_it() {
        use log::LevelFilter::{Debug, Error, Info, Off, Trace, Warn};
        for level in [Off, Error, Warn, Info, Debug, Trace] {
            assert!(
                record_span_is_seen(true, level),
                "a subscriber, log at {level}"
            );
        }
        for level in [Info, Debug, Trace] {
            assert!(
                record_span_is_seen(false, level),
                "no subscriber, log at {level}"
            );
        }
        for level in [Off, Error, Warn] {
            assert!(
                !record_span_is_seen(false, level),
                "no subscriber, log at {level}"
            );
        }
    }
}
