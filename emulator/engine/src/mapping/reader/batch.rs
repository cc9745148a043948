//! One batch, settled as Lambda does (`docs/event-source-mapping.md` §1-2): the rules are
//! [`BatchRetry`]'s; this is the I/O around them. What a settled or discarded range does to the
//! shard's checkpoint is the caller's ([`Settlements`]): the reader checkpoints after it at
//! once; with `ParallelizationFactor` above 1, the lanes' ledger decides.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use lambda_kinesis::window::event::{WindowFields, write_window_event};
use lambda_kinesis::wire::{EventRecord, EventSource, write_event};
use tokio::sync::watch;

use crate::backoff::{Backoff, RetryKind};
use crate::destination::{Destination, FailedBatch};
use crate::invoke::{Invocation, InvokeError, InvokeOutcome};
use crate::mapping::judgement::{FailedAttempt, InvokedRange, judge};
use crate::mapping::metrics::{InvocationEnd, iterator_age_millis};
use crate::mapping::misconfiguration::{TEMPLATE_LINE, ignored_item_failures};
use crate::mapping::on_failure::{
    KinesisBatchInfo, OnFailureRecord, RequestContext, ResponseContext,
};
use crate::mapping::oversize::{MAX_PAYLOAD_BYTES, OversizeEvent};
use crate::mapping::policy::{
    Action, BatchRetry, Discard, DiscardCondition, InvocationResult, Next, RetryRules,
};
use crate::mapping::reader_exit::ReaderExit;
use crate::mapping::shared::Shared;
use crate::mapping::status::DiscardedRange;
use crate::mapping::status::InvocationVerdict;
use crate::mapping::status::NextRetry;
use crate::mapping::status::RecentInvocation;
use crate::mapping::status::ShardChange;
use crate::mapping::window::{
    Closing, OpenWindow, StateAnswer, WindowSpan, after_success, read_state,
};
use crate::response::DropCounts;
use kinesis_source::sequence::SequenceNumber;
use kinesis_source::time::{iso8601_millis, millis_since_epoch};
use kinesis_source::{Record, StreamDescription};

/// What the batches of one shard share: where they come from and what stops them.
pub(super) struct BatchContext {
    pub(super) shared: Arc<Shared>,
    pub(super) shard_id: String,
    /// The stream's ARN as events carry it, written once.
    stream_arn: String,
    region: String,
    account: String,
    stopping: watch::Receiver<bool>,
    lease_lost: watch::Receiver<bool>,
}

/// What a lane (the one batch in flight of a shard, or one of its concurrent batches) remembers
/// from one batch to the next.
#[derive(Default)]
pub(super) struct LaneMemory {
    /// The size of the lane's last event, to size the next one's buffer at once.
    last_payload_len: usize,
    /// With `TumblingWindowInSeconds`, the shard's open window: its batches are invoked with
    /// window events carrying its state, and their answers' states replace it. (Windows run
    /// with one lane only.)
    pub(super) window: Option<OpenWindow>,
}

/// What a window invocation is, for its event: the flags of a final one.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct WindowFlags {
    pub(super) is_final: bool,
    pub(super) terminated_early: bool,
}

/// When an invocation was sent, and how long the invoker took to answer.
#[derive(Debug, Clone, Copy)]
struct InvocationTiming {
    sent_at: SystemTime,
    duration: Duration,
}

/// The records of an event, as `lambda_kinesis::wire` writes them.
pub fn event_records(records: &[Record]) -> impl Iterator<Item = EventRecord<'_>> {
    records.iter().map(|record| EventRecord {
        sequence_number: record.sequence_number.as_str(),
        partition_key: &record.partition_key,
        data: &record.data,
        approximate_arrival_millis: millis_since_epoch(record.approximate_arrival),
    })
}

/// What becomes of the records a batch settles or gives up: the shard's checkpoint.
pub(super) trait Settlements {
    /// The function settled `batch[range]`, `dropped` of them by reporting them dropped.
    async fn settled(
        &mut self,
        batch: &[Record],
        range: Range<usize>,
        dropped: DropCounts,
    ) -> Result<(), ReaderExit>;

    /// `batch[range]` are given up (retries exhausted, or too old): the checkpoint passes them
    /// before the discard is reported.
    async fn discarded(&mut self, batch: &[Record], range: Range<usize>) -> Result<(), ReaderExit>;

    /// Before each invocation.
    async fn before_invoke(&mut self) -> Result<(), ReaderExit>;

    /// Before the pause ahead of a retry.
    async fn before_retry_pause(&mut self) -> Result<(), ReaderExit>;

    /// An invocation reached the function and did not settle every record it carried: the
    /// batch holds records until a retry settles them or they are given up.
    fn failed(&mut self) {}
}

impl BatchContext {
    pub(super) fn new(
        shared: Arc<Shared>,
        stream: Arc<StreamDescription>,
        shard_id: String,
        stopping: watch::Receiver<bool>,
        lease_lost: watch::Receiver<bool>,
    ) -> Self {
        let stream_arn = stream.arn.to_string();
        let region = stream.arn.region.clone();
        let account = stream.arn.account.clone();
        Self {
            shared,
            shard_id,
            stream_arn,
            region,
            account,
            stopping,
            lease_lost,
        }
    }

    pub(super) fn check_running(&self) -> Result<(), ReaderExit> {
        if *self.stopping.borrow() {
            return Err(ReaderExit::Stopped);
        }
        if *self.lease_lost.borrow() {
            return Err(ReaderExit::LeaseLost);
        }
        Ok(())
    }

    /// Sleeps for `pause`, or less if the mapping stops or the lease is lost.
    pub(super) async fn pause(&self, pause: Duration) -> Result<(), ReaderExit> {
        let (mut stopping, mut lease_lost) = (self.stopping.clone(), self.lease_lost.clone());
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            _ = stopping.wait_for(|stop| *stop) => {}
            _ = lease_lost.wait_for(|lost| *lost) => {}
        }
        self.check_running()
    }

    /// Settles `batch` as Lambda does: invokes, has the answer judged ([`judge`]), and retries,
    /// splits and discards by [`BatchRetry`]'s rules, handing every settled or discarded range
    /// to `settlements`.
    pub(super) async fn process(
        &self,
        batch: &[Record],
        memory: &mut LaneMemory,
        settlements: &mut impl Settlements,
    ) -> Result<(), ReaderExit> {
        let config = &self.shared.config;
        let sequence_numbers: Vec<SequenceNumber> = batch
            .iter()
            .map(|record| record.sequence_number.clone())
            .collect();
        let mut retry = BatchRetry::new(RetryRules::of(config), batch.len());
        let mut backoff = self.shared.retry_backoff();
        loop {
            self.check_running()?;
            let now = SystemTime::now();
            let range = match retry.next(now, |index| batch[index].approximate_arrival) {
                None => return Ok(()),
                Some(Action::Discard(discard)) => {
                    self.discard(settlements, batch, discard, None).await?;
                    continue;
                }
                Some(Action::Invoke(range)) => range,
            };
            settlements.before_invoke().await?;
            let records = &batch[range.clone()];
            let (outcome, timing) = self.invoke(records, memory).await;
            self.warn_of_outcome(&outcome);
            let invoked = self.invoked_range(&sequence_numbers[range], memory);
            let judgement = judge(&mut retry, outcome, &invoked);
            self.keep_window_state(memory, judgement.window_state);
            self.report_invocation_end(records, judgement.result, judgement.verdict, timing);
            self.report_attempt(records, judgement.counted_retry, judgement.failure.as_ref());
            if judgement.left_unsettled {
                settlements.failed();
            }
            match judgement.next {
                Next::Settle(settled) => {
                    settlements
                        .settled(batch, settled, judgement.dropped)
                        .await?;
                    backoff.reset();
                }
                // A range taken up afresh pauses afresh.
                Next::Split => {
                    self.shared.update_shard(&self.shard_id, ShardChange::Split);
                    backoff.reset();
                }
                Next::Discard(discard) => {
                    let failed = judgement.failure.as_ref();
                    self.discard(settlements, batch, discard, failed).await?;
                    backoff.reset();
                }
                Next::RetryAfterPause => {
                    settlements.before_retry_pause().await?;
                    self.pause_before_retry(&retry, &mut backoff).await?;
                }
            }
        }
    }

    /// Warns of what an outcome says beyond its judgement: an invocation that never reached the
    /// function, or item failures the mapping ignores.
    fn warn_of_outcome(&self, outcome: &Result<InvokeOutcome, InvokeError>) {
        match outcome {
            Ok(InvokeOutcome::Response(body)) if !self.shared.config.report_batch_item_failures => {
                self.warn_of_ignored_item_failures(body);
            }
            Err(error) => {
                tracing::warn!(shard_id = %self.shard_id, %error, "invoking the function failed; trying again");
            }
            Ok(_) => {}
        }
    }

    /// What [`judge`] reads an answer to the invocation of `sequence_numbers` against.
    fn invoked_range<'a>(
        &'a self,
        sequence_numbers: &'a [SequenceNumber],
        memory: &LaneMemory,
    ) -> InvokedRange<'a> {
        InvokedRange {
            sequence_numbers,
            report_batch_item_failures: self.shared.config.report_batch_item_failures,
            window_open: memory.window.is_some(),
            shard_id: &self.shard_id,
            function_timeout: self.shared.config.function_timeout,
        }
    }

    /// Keeps the window state an answer carried, if any: the open window goes on with it.
    fn keep_window_state(&self, memory: &mut LaneMemory, state: Option<StateAnswer>) {
        let window = memory.window.as_ref().map(|open| open.span);
        if let (Some(answer), Some(span)) = (state, window) {
            self.warn_if_over_limit(span, &answer);
            memory.window = after_success(span, answer, None);
        }
    }

    /// Reports an invocation that reached the function: a counted retry, and the range's first
    /// record held when it `failed` to settle it.
    fn report_attempt(
        &self,
        records: &[Record],
        counted_retry: bool,
        failed: Option<&FailedAttempt>,
    ) {
        if counted_retry {
            self.shared
                .update_shard(&self.shard_id, ShardChange::Retried);
        }
        if let Some(failed) = failed {
            self.hold(&records[0].sequence_number, &failed.reason);
        }
    }

    /// Reports the pause ahead of the next retry of the current range, and waits it out.
    async fn pause_before_retry(
        &self,
        retry: &BatchRetry,
        backoff: &mut Backoff,
    ) -> Result<(), ReaderExit> {
        let pause = backoff.next_pause(RetryKind::Error);
        let next_retry = NextRetry {
            number: retry.retry_number().unwrap_or(0),
            limit: self.shared.config.maximum_retry_attempts,
            at_epoch_millis: millis_since_epoch(SystemTime::now() + pause),
        };
        self.shared
            .update_shard(&self.shard_id, ShardChange::WaitingToRetry(next_retry));
        self.pause(pause).await
    }

    /// Reports how an invocation of `records` ended, for the metrics and the shard's recent
    /// invocations.
    fn report_invocation_end(
        &self,
        records: &[Record],
        result: InvocationResult,
        verdict: InvocationVerdict,
        InvocationTiming { sent_at, duration }: InvocationTiming,
    ) {
        let last = &records[records.len() - 1];
        self.shared.update_shard(
            &self.shard_id,
            ShardChange::InvocationEnded {
                end: InvocationEnd::of(result, records.len()),
                iterator_age_millis: iterator_age_millis(sent_at, last.approximate_arrival),
                invocation: RecentInvocation {
                    first: records[0].sequence_number.clone(),
                    last: last.sequence_number.clone(),
                    records: records.len() as u64,
                    at_epoch_millis: millis_since_epoch(sent_at),
                    duration_micros: u64::try_from(duration.as_micros()).unwrap_or(u64::MAX),
                    verdict,
                    discarded: false,
                },
            },
        );
    }

    /// Invokes the function with `records` (in a window event when a window is open); returns
    /// its outcome and when it was sent and how long the invoker took to answer.
    async fn invoke(
        &self,
        records: &[Record],
        memory: &mut LaneMemory,
    ) -> (Result<InvokeOutcome, InvokeError>, InvocationTiming) {
        let sent_at = SystemTime::now();
        let payload = match &memory.window {
            Some(open) => self.window_event(records, open, WindowFlags::default()),
            None => self.event(records, memory.last_payload_len),
        };
        self.shared
            .update_shard(&self.shard_id, ShardChange::Invoked { records });
        memory.last_payload_len = payload.len();
        let started = Instant::now();
        let outcome = match self.refuse_oversize(records, payload.len()) {
            Some(refused) => Ok(refused),
            None => {
                let invocation = Invocation::new(payload, self.shared.config.function_timeout);
                self.shared.invoker.invoke(invocation).await
            }
        };
        let duration = started.elapsed();
        (outcome, InvocationTiming { sent_at, duration })
    }

    /// The failed invocation counted in place of an event over Lambda's payload limit, with a
    /// warning that names the shard, the records and the size (`mapping::oversize`'s rule): such
    /// an event is never sent, and never skipped without a word.
    fn refuse_oversize(&self, records: &[Record], bytes: usize) -> Option<InvokeOutcome> {
        let ends = (
            &records.first()?.sequence_number,
            &records.last()?.sequence_number,
        );
        let oversize = OversizeEvent::check(ends, records.len(), bytes, MAX_PAYLOAD_BYTES)?;
        tracing::warn!(
            shard_id = %self.shard_id,
            first_sequence_number = %oversize.first,
            last_sequence_number = %oversize.last,
            records = oversize.records,
            event_bytes = bytes,
            limit_bytes = MAX_PAYLOAD_BYTES,
            "an event over Lambda's payload limit counts as a failed invocation; retries, \
             bisection, record age and the on-failure destination settle it"
        );
        Some(oversize.outcome())
    }

    /// The event Lambda sends the function for `records`, written into a buffer of `capacity`.
    fn event(&self, records: &[Record], capacity: usize) -> Vec<u8> {
        let mut payload = Vec::with_capacity(capacity);
        write_event(&mut payload, &self.event_source(), event_records(records));
        payload
    }

    /// The window event Lambda sends the function for `records` of the `open` window.
    pub(super) fn window_event(
        &self,
        records: &[Record],
        open: &OpenWindow,
        flags: WindowFlags,
    ) -> Vec<u8> {
        let mut payload = Vec::new();
        write_window_event(
            &mut payload,
            &self.event_source(),
            &WindowFields {
                start: open.span.start(),
                end: open.span.end(),
                state: &open.state,
                is_final: flags.is_final,
                terminated_early: flags.terminated_early,
            },
            event_records(records),
        );
        payload
    }

    fn event_source(&self) -> EventSource<'_> {
        EventSource {
            stream_arn: &self.stream_arn,
            shard_id: &self.shard_id,
            region: &self.region,
            invoke_identity_arn: &self.shared.options.invoke_identity_arn,
        }
    }

    /// Invokes the open window's final invocation (no records, `isFinalInvokeForWindow`), and
    /// tries again until it succeeds: on failure Lambda "suspends further processing until a
    /// successful invocation" (§8). No record is held, so no retry setting applies.
    pub(super) async fn invoke_final(
        &self,
        memory: &mut LaneMemory,
        closing: Closing,
    ) -> Result<(), ReaderExit> {
        let Some(open) = memory.window.clone() else {
            return Ok(());
        };
        let flags = WindowFlags {
            is_final: true,
            terminated_early: closing.terminated_early(),
        };
        let mut backoff = self.shared.retry_backoff();
        loop {
            self.check_running()?;
            let payload = self.window_event(&[], &open, flags);
            self.shared
                .update_shard(&self.shard_id, ShardChange::Invoked { records: &[] });
            let invocation = Invocation::new(payload, self.shared.config.function_timeout);
            let failure = match self.shared.invoker.invoke(invocation).await {
                Ok(InvokeOutcome::Response(body)) => match read_state(&body, &self.shard_id) {
                    Ok(answer) => {
                        memory.window = after_success(open.span, answer, Some(closing));
                        return Ok(());
                    }
                    Err(reason) => reason,
                },
                Ok(InvokeOutcome::FunctionError {
                    error_type,
                    message,
                }) => format!("function error {error_type}: {message}"),
                Ok(InvokeOutcome::Timeout) => format!(
                    "the function timed out after {:?}",
                    self.shared.config.function_timeout
                ),
                Err(error) => format!("invoking the function failed: {error}"),
            };
            tracing::warn!(
                shard_id = %self.shard_id,
                window_start = %lambda_kinesis::window::event::iso8601_seconds(open.span.start()),
                "the window's final invocation failed ({failure}); the shard waits and tries again"
            );
            self.pause(backoff.next_pause(RetryKind::Error)).await?;
        }
    }

    /// Warns when an answer's state passed Lambda's 1 MB per shard: the window ends early.
    fn warn_if_over_limit(&self, span: WindowSpan, answer: &StateAnswer) {
        if let StateAnswer::OverLimit { bytes, .. } = answer {
            tracing::warn!(
                shard_id = %self.shard_id,
                window_start = %lambda_kinesis::window::event::iso8601_seconds(span.start()),
                "the function returned a window state of {bytes} bytes, over Lambda's limit of \
                 1 MB per shard: the window ends early (isWindowTerminatedEarly) and continues \
                 with a fresh state"
            );
        }
    }

    /// Warns, once per mapping, that the function names records in `batchItemFailures` that
    /// Lambda will treat as settled, since the mapping does not ask for the partial response.
    fn warn_of_ignored_item_failures(&self, body: &[u8]) {
        let warning = &self.shared.ignored_item_failures_warning;
        if warning.given() {
            return;
        }
        let Some(records) = ignored_item_failures(body) else {
            return;
        };
        if warning.first() {
            tracing::warn!(
                function = %self.shared.config.function_name,
                shard_id = %self.shard_id,
                records = %records.join(", "),
                "the function answered with batchItemFailures, but its event source mapping has \
                 no `{TEMPLATE_LINE}`: Lambda ignores the answer and treats the whole batch as \
                 settled, so these records will not come again; to have them retried, add \
                 `{TEMPLATE_LINE}` to the event source's Properties"
            );
        }
    }

    /// Marks the shard as blocked on `sequence_number`.
    fn hold(&self, sequence_number: &SequenceNumber, reason: &str) {
        let retries_capped = self.shared.config.maximum_retry_attempts.is_some();
        tracing::debug!(shard_id = %self.shard_id, %sequence_number, reason, "batch failed");
        self.shared.update_shard(
            &self.shard_id,
            ShardChange::Failed {
                sequence_number: sequence_number.clone(),
                reason: reason.to_owned(),
                retries_capped,
            },
        );
    }

    /// Gives `batch[range]` up, as Lambda does when retries are exhausted or records are too old:
    /// the invocation record goes to the on-failure destination first (the shard waits until it
    /// is delivered, so nothing given up goes unrecorded), then the checkpoint passes the records
    /// and the discard is reported. The one place a batch is discarded.
    async fn discard(
        &self,
        settlements: &mut impl Settlements,
        batch: &[Record],
        discard: Discard,
        failed: Option<&FailedAttempt>,
    ) -> Result<(), ReaderExit> {
        let Discard {
            records: range,
            condition,
            invoke_count,
        } = discard;
        let records = &batch[range.clone()];
        let discarded_at = SystemTime::now();
        let record = self.on_failure_record(records, condition, invoke_count, failed, discarded_at);
        let delivered = match &self.shared.destination {
            Some(destination) => {
                let failed_batch = FailedBatch {
                    record: record.clone(),
                    event: String::from_utf8(self.event(records, 0)).expect("events are JSON text"),
                    mapping_uuid: self.shared.options.mapping_uuid.clone(),
                    shard_id: self.shard_id.clone(),
                    discarded_at,
                };
                Some(self.deliver(destination.as_ref(), &failed_batch).await?)
            }
            None => None,
        };
        settlements.discarded(batch, range).await?;
        self.report_discard(records, condition, record, delivered);
        Ok(())
    }

    /// The invocation record of discarded `records` (`docs/event-source-mapping.md` §5).
    fn on_failure_record(
        &self,
        records: &[Record],
        condition: DiscardCondition,
        invoke_count: u32,
        failed: Option<&FailedAttempt>,
        discarded_at: SystemTime,
    ) -> serde_json::Value {
        let first = &records[0];
        let last = &records[records.len() - 1];
        let record = OnFailureRecord {
            request_context: RequestContext {
                request_id: uuid::Uuid::new_v4().to_string(),
                function_arn: format!(
                    "arn:aws:lambda:{}:{}:function:{}",
                    self.region, self.account, self.shared.config.function_name
                ),
                condition: condition.as_str(),
                approximate_invoke_count: invoke_count,
            },
            response_context: failed.map(|failed| ResponseContext {
                status_code: 200,
                executed_version: "$LATEST",
                function_error: failed.function_error,
            }),
            version: "1.0",
            timestamp: iso8601_millis(discarded_at),
            kinesis_batch_info: KinesisBatchInfo {
                shard_id: self.shard_id.clone(),
                start_sequence_number: first.sequence_number.as_str().to_owned(),
                end_sequence_number: last.sequence_number.as_str().to_owned(),
                approximate_arrival_of_first_record: iso8601_millis(first.approximate_arrival),
                approximate_arrival_of_last_record: iso8601_millis(last.approximate_arrival),
                batch_size: records.len(),
                stream_arn: self.stream_arn.clone(),
            },
        };
        serde_json::to_value(&record).expect("an on-failure record serializes")
    }

    /// Delivers `batch`'s record to `destination`, trying again after each failure (reported,
    /// with the shard waiting) until it is delivered or the reader stops. Lambda's documentation
    /// says nothing of retrying a failed delivery (`docs/event-source-mapping.md` §5).
    async fn deliver(
        &self,
        destination: &dyn Destination,
        batch: &FailedBatch,
    ) -> Result<String, ReaderExit> {
        let mut backoff = self.shared.retry_backoff();
        loop {
            match destination.deliver(batch).await {
                Ok(location) => {
                    self.shared
                        .status
                        .send_if_modified(|status| status.destination_error.take().is_some());
                    return Ok(location);
                }
                Err(error) => {
                    tracing::warn!(
                        shard_id = %self.shard_id,
                        "{error}; the shard waits and tries again"
                    );
                    let error = error.to_string();
                    self.shared
                        .status
                        .send_modify(|status| status.destination_error = Some(error));
                    self.pause(backoff.next_pause(RetryKind::Error)).await?;
                }
            }
        }
    }

    /// Reports the discard of `records`, whose invocation `record` went to `delivered` (if the
    /// mapping has a destination).
    fn report_discard(
        &self,
        records: &[Record],
        condition: DiscardCondition,
        record: serde_json::Value,
        delivered: Option<String>,
    ) {
        let first = &records[0];
        let last = &records[records.len() - 1];
        let condition = condition.as_str();
        tracing::warn!(
            shard_id = %self.shard_id,
            first = %first.sequence_number,
            last = %last.sequence_number,
            condition,
            destination = self.shared.config.on_failure_destination.as_deref().unwrap_or("none"),
            delivered_to = delivered.as_deref().unwrap_or("nowhere"),
            "batch discarded"
        );
        let record = Arc::new(record);
        let range = DiscardedRange {
            first: first.sequence_number.clone(),
            last: last.sequence_number.clone(),
            records: records.len() as u64,
            condition: condition.to_owned(),
        };
        self.shared.status.send_modify(|status| {
            status.on_failure.push(Arc::clone(&record));
            status.on_failure_deliveries.extend(delivered);
        });
        self.shared.update_shard(
            &self.shard_id,
            ShardChange::Discarded {
                range,
                to_destination: self.shared.config.on_failure_destination.is_some(),
                record,
            },
        );
    }
}
