//! How the reader reads the function's answer to one invocation of a batch's range, with no I/O:
//! the invoker's outcome (a response, a function error, a timeout, or never reaching the
//! function), read by Lambda's rules (`docs/event-source-mapping.md` §1-2, §8), becomes a
//! [`Judgement`]: what the invocation reports, whether the range's first record is held, and,
//! from [`BatchRetry`], what follows (settle, retry, split or discard). The reader invokes,
//! judges, and does what the judgement says.

use std::time::Duration;

use kinesis_source::sequence::SequenceNumber;

use crate::invoke::{InvokeError, InvokeOutcome};
use crate::mapping::policy::{BatchRetry, InvocationResult, Next};
use crate::mapping::status::InvocationVerdict;
use crate::mapping::window::{StateAnswer, read_state};
use crate::response::{DropCounts, Verdict, read_response};

/// What the judge knows of the invoked range besides its answer.
pub(super) struct InvokedRange<'a> {
    /// The range's sequence numbers, in order.
    pub(super) sequence_numbers: &'a [SequenceNumber],
    /// `FunctionResponseTypes: [ReportBatchItemFailures]`: without it Lambda ignores the body.
    pub(super) report_batch_item_failures: bool,
    /// The range was invoked in a window event, whose answer must carry a state (§8).
    pub(super) window_open: bool,
    /// The shard, named in the reasons a window answer fails.
    pub(super) shard_id: &'a str,
    /// The function's timeout, named in a timeout's reason.
    pub(super) function_timeout: Duration,
}

/// How an invocation that reached the function failed to settle the range's first record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FailedAttempt {
    /// Why, for the shard's status and logs.
    pub(super) reason: String,
    /// `"Unhandled"` for function errors and timeouts, `None` for a bad response (the
    /// on-failure record's `functionError`).
    pub(super) function_error: Option<&'static str>,
}

/// What one invocation's answer means for the batch.
#[derive(Debug)]
pub(super) struct Judgement {
    /// How the invocation went, as the retry rules and the metrics count it.
    pub(super) result: InvocationResult,
    /// How the invocation went, as the shard's recent invocations show it.
    pub(super) verdict: InvocationVerdict,
    /// Records the function reported as dropped among those it settled.
    pub(super) dropped: DropCounts,
    /// Why the range's first record is held: set when the invocation reached the function and
    /// settled nothing.
    pub(super) failure: Option<FailedAttempt>,
    /// The window state an answered window invocation carries, to keep.
    pub(super) window_state: Option<StateAnswer>,
    /// The invocation was a retry of records that had failed, and reached the function.
    pub(super) counted_retry: bool,
    /// The invocation reached the function and did not settle every record it carried.
    pub(super) left_unsettled: bool,
    /// What follows, by the retry rules.
    pub(super) next: Next,
}

/// Judges `outcome`, the answer to the invocation of `range` (the current range of `retry`),
/// and tells `retry` how it went.
pub(super) fn judge(
    retry: &mut BatchRetry,
    outcome: Result<InvokeOutcome, InvokeError>,
    range: &InvokedRange<'_>,
) -> Judgement {
    // Which retry this was is known only before `record` takes the result in.
    let was_retry = retry.retry_number().is_some();
    let reading = read_outcome(outcome, range);
    let result = reading.result;
    let reached_function = result != InvocationResult::NotInvoked;
    let settled_all = matches!(
        result,
        InvocationResult::Returned { settled } if settled == range.sequence_numbers.len()
    );
    Judgement {
        result,
        verdict: reading.verdict,
        dropped: reading.dropped,
        failure: reading.failure,
        window_state: reading.window_state,
        counted_retry: reached_function && was_retry,
        left_unsettled: reached_function && !settled_all,
        next: retry.record(result),
    }
}

/// An outcome read, before the retry rules take it in.
struct Reading {
    result: InvocationResult,
    verdict: InvocationVerdict,
    dropped: DropCounts,
    failure: Option<FailedAttempt>,
    window_state: Option<StateAnswer>,
}

impl Reading {
    /// A function error or a timeout: the whole range failed, `Unhandled`.
    fn unhandled(result: InvocationResult, verdict: InvocationVerdict, reason: String) -> Self {
        Self {
            result,
            verdict,
            dropped: DropCounts::default(),
            failure: Some(FailedAttempt {
                reason,
                function_error: Some("Unhandled"),
            }),
            window_state: None,
        }
    }
}

fn read_outcome(outcome: Result<InvokeOutcome, InvokeError>, range: &InvokedRange<'_>) -> Reading {
    match outcome {
        Ok(InvokeOutcome::Response(body)) => read_returned(&body, range),
        Ok(InvokeOutcome::FunctionError {
            error_type,
            message,
        }) => {
            let reason = format!("function error {error_type}: {message}");
            let verdict = InvocationVerdict::FunctionError { error_type };
            Reading::unhandled(InvocationResult::FunctionError, verdict, reason)
        }
        Ok(InvokeOutcome::Timeout) => Reading::unhandled(
            InvocationResult::Timeout,
            InvocationVerdict::Timeout,
            format!("the function timed out after {:?}", range.function_timeout),
        ),
        // The batch never reached the function: no attempt is charged and nothing is held.
        Err(_) => Reading {
            result: InvocationResult::NotInvoked,
            verdict: InvocationVerdict::NotInvoked,
            dropped: DropCounts::default(),
            failure: None,
            window_state: None,
        },
    }
}

/// Reads a normal return's `body`: the partial batch response, the dropped records, and in a
/// window the state, whose absence fails the whole range.
fn read_returned(body: &[u8], range: &InvokedRange<'_>) -> Reading {
    let sequence_numbers = range.sequence_numbers;
    let mut read = read_response(body, sequence_numbers, range.report_batch_item_failures);
    let mut state = None;
    if range.window_open {
        match read_state(body, range.shard_id) {
            Ok(answer) => state = Some(answer),
            Err(reason) => read.verdict = Verdict::Failure { reason },
        }
    }
    let settled = match &read.verdict {
        Verdict::Success => sequence_numbers.len(),
        Verdict::PartialFailure { first_failed } => *first_failed,
        Verdict::Failure { .. } => 0,
    };
    let dropped = read.drops_before(settled);
    let bad_response = matches!(read.verdict, Verdict::Failure { .. });
    let verdict =
        InvocationVerdict::of_answer(bad_response, sequence_numbers, settled, dropped.total());
    let failure = (settled == 0).then(|| FailedAttempt {
        reason: match read.verdict {
            Verdict::Failure { reason } => format!("bad response: {reason}"),
            _ => "the function reported it in batchItemFailures".to_owned(),
        },
        function_error: None,
    });
    Reading {
        result: InvocationResult::Returned { settled },
        verdict,
        dropped,
        failure,
        // A partial answer's state counts the records before the one it names (§8): it is
        // kept, and the rest comes again with it. A bad response's state is not.
        window_state: state.filter(|_| !bad_response),
    }
}

#[cfg(test)]
mod tests;
