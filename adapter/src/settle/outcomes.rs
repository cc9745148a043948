//! What a handler or a guard came to, as record outcomes, with the log line of a failure.

use crate::outcome::{HandlerError, HandlerOutcome};
use crate::panic_report;
use crate::settlement::{DropReason, HoldReason, RecordOutcome, SkipReason};

/// What the handler returned, as a guard hears it: `None` when it failed or panicked, or when
/// it was not called (a batch handler's records the deadline stopped).
pub(super) fn handler_outcome(outcome: &RecordOutcome) -> Option<HandlerOutcome> {
    match outcome {
        RecordOutcome::Acked => Some(HandlerOutcome::Ack),
        RecordOutcome::Dropped(DropReason::Handler) => Some(HandlerOutcome::Drop),
        RecordOutcome::Held(HoldReason::Handler) => Some(HandlerOutcome::Hold),
        _ => None,
    }
}

/// The outcomes of a batch whose records were settled up to a held one: a record left
/// unsettled (`None`) is skipped behind it, and comes again.
pub(super) fn behind_held(settled: Vec<Option<RecordOutcome>>) -> Vec<RecordOutcome> {
    settled
        .into_iter()
        .map(|outcome| outcome.unwrap_or(RecordOutcome::Skipped(SkipReason::BehindHeldRecord)))
        .collect()
}

/// Logs a panic of the handler or the guard (with `what` it means) in the current span, and
/// returns its message for the hold.
pub(super) fn panicked(panic: Box<dyn std::any::Any + Send>, what: &str) -> String {
    let message = panic_report::message(panic.as_ref());
    tracing::error!(panic = %message, location = %panic_report::take_location(), "{what}");
    message
}

/// Why a record's guard neither ran the handler nor settled the record.
pub(super) enum GuardFailure {
    Refused(HandlerError),
    Panicked(Box<dyn std::any::Any + Send>),
}

/// Holds a record whose guard refused it or panicked, logged in the current span with what
/// the hold means (`"the record is held"`, or more).
pub(super) fn guard_failed(failure: GuardFailure, held: &str) -> RecordOutcome {
    match failure {
        GuardFailure::Refused(error) => {
            tracing::error!(error = %error, "the record's guard refused it; {held}");
            RecordOutcome::Held(HoldReason::Error(error))
        }
        GuardFailure::Panicked(panic) => RecordOutcome::Held(HoldReason::Panicked(panicked(
            panic,
            &format!("the record's guard panicked; {held}"),
        ))),
    }
}

pub(super) fn record_outcome(outcome: HandlerOutcome) -> RecordOutcome {
    match outcome {
        HandlerOutcome::Ack => RecordOutcome::Acked,
        HandlerOutcome::Drop => RecordOutcome::Dropped(DropReason::Handler),
        HandlerOutcome::Hold => RecordOutcome::Held(HoldReason::Handler),
    }
}
