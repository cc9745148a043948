//! The engine for batch handlers: one call with every decoded record, through the guard when
//! the adapter has one.

use tracing::Instrument as _;

use super::call::CallBatch;
use super::decode::{decode, undecodable};
use super::options::Job;
use super::outcomes::{
    GuardFailure, behind_held, guard_failed, handler_outcome, panicked, record_outcome,
};
use super::span::record_span;
use crate::batch::KinesisBatch;
use crate::data::FromRecordData;
use crate::guard::{DynGuard, Entry};
use crate::outcome::{BatchOutcome, HandlerError, HandlerOutcome};
use crate::panic_report;
use crate::settlement::{HoldReason, RecordOutcome, SkipReason};

/// What a hold by the guard means for a batch handler's records.
const BEHIND: &str = "the record is held, with the records behind it";

/// Settles a batch with a batch handler: one call with every decoded record (every record the
/// guard let through, when the adapter has one).
pub(crate) async fn whole_batch<T, C>(handler: C, job: Job<'_, T>) -> Vec<RecordOutcome>
where
    T: FromRecordData + Send + Sync,
    C: CallBatch<T>,
{
    let Job {
        batch,
        options,
        guard,
        deadline,
    } = job;
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
    behind_held(outcomes)
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
            Ok(Entry::Refuse(error)) => guard_failed(GuardFailure::Refused(error), BEHIND),
            Err(panic) => guard_failed(GuardFailure::Panicked(panic), BEHIND),
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
            let message = panicked(panic, "the batch handler panicked; the batch is held");
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
