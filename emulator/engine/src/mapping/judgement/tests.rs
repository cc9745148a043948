//! One row per answer the reader can meet: a batch of records `101`, `102`, ... with the
//! mapping's retry settings and the results of the invocations before, the answer, and what the
//! judgement says, written as one line:
//!
//! `next | verdict [| dropped N] [| hold (functionError): reason] [| unsettled] [| counted retry] [| state kept]`
//!
//! where `next` is "settle 0..2", "retry", "split" or "discard 0..4 RetryAttemptsExhausted 3"
//! (the invoke count). A batch whose records are too old is discarded before any invocation:
//! those rows say what [`BatchRetry::next`] answers instead ("age discard 0..2 1").

use std::time::{Duration, SystemTime};

use bytes::Bytes;

use super::*;
use crate::invoke::ErrorType;
use crate::mapping::policy::{Action, Discard, InvocationResult::*, RetryRules};

const SHARD: &str = "shardId-000000000000";
const FUNCTION_TIMEOUT: Duration = Duration::from_secs(3);

/// A batch, the mapping's settings and the invocations of it so far.
struct Scenario {
    len: usize,
    rules: RetryRules,
    report_batch_item_failures: bool,
    window_open: bool,
    ages_secs: Vec<u64>,
    before: Vec<InvocationResult>,
}

/// A batch of `len` fresh records, with `ReportBatchItemFailures`, retried until they succeed.
fn batch(len: usize) -> Scenario {
    Scenario {
        len,
        rules: RetryRules::default(),
        report_batch_item_failures: true,
        window_open: false,
        ages_secs: Vec::new(),
        before: Vec::new(),
    }
}

impl Scenario {
    fn retries(mut self, maximum: u32) -> Self {
        self.rules.maximum_retry_attempts = Some(maximum);
        self
    }

    fn bisect(mut self) -> Self {
        self.rules.bisect_on_function_error = true;
        self
    }

    /// `MaximumRecordAgeInSeconds` of `max_secs`, the records this many seconds old.
    fn aged(mut self, max_secs: u64, ages_secs: &[u64]) -> Self {
        self.rules.maximum_record_age = Some(Duration::from_secs(max_secs));
        self.ages_secs = ages_secs.to_vec();
        self
    }

    fn ignoring_item_failures(mut self) -> Self {
        self.report_batch_item_failures = false;
        self
    }

    fn in_window(mut self) -> Self {
        self.window_open = true;
        self
    }

    fn after(mut self, results: &[InvocationResult]) -> Self {
        self.before = results.to_vec();
        self
    }
}

fn response(body: &str) -> Result<InvokeOutcome, InvokeError> {
    Ok(InvokeOutcome::Response(Bytes::copy_from_slice(
        body.as_bytes(),
    )))
}

fn function_error(error_type: &str, message: &str) -> Result<InvokeOutcome, InvokeError> {
    Ok(InvokeOutcome::FunctionError {
        error_type: ErrorType::new(error_type),
        message: message.to_owned(),
    })
}

fn timeout() -> Result<InvokeOutcome, InvokeError> {
    Ok(InvokeOutcome::Timeout)
}

fn not_invoked() -> Result<InvokeOutcome, InvokeError> {
    Err(InvokeError::Unreachable {
        message: "connection refused".to_owned(),
    })
}

/// Runs `scenario` to its next invocation, judges `outcome` as its answer, and checks the line
/// the judgement reads as.
#[track_caller]
fn check(scenario: Scenario, outcome: Result<InvokeOutcome, InvokeError>, expected: &str) {
    assert_eq!(step(scenario, Some(outcome)), expected);
}

/// Checks what `scenario` does before its next invocation (a discard of records too old).
#[track_caller]
fn check_before_invoking(scenario: Scenario, expected: &str) {
    assert_eq!(step(scenario, None), expected);
}

fn step(scenario: Scenario, outcome: Option<Result<InvokeOutcome, InvokeError>>) -> String {
    let sequence_numbers: Vec<SequenceNumber> = (0..scenario.len)
        .map(|index| (101 + index).to_string().parse().unwrap())
        .collect();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let arrival = |index: usize| {
        now - Duration::from_secs(scenario.ages_secs.get(index).copied().unwrap_or(0))
    };
    let mut retry = BatchRetry::new(scenario.rules, scenario.len);
    // The invocations before ran while the records were fresh; they have aged since.
    for &result in &scenario.before {
        assert!(matches!(retry.next(now, |_| now), Some(Action::Invoke(_))));
        retry.record(result);
    }
    let range = match retry.next(now, arrival) {
        Some(Action::Invoke(range)) => range,
        Some(Action::Discard(Discard {
            records,
            condition,
            invoke_count,
        })) => {
            return format!(
                "age discard {records:?} {invoke_count} {}",
                condition.as_str()
            );
        }
        None => return "done".to_owned(),
    };
    let Some(outcome) = outcome else {
        return format!("invoke {range:?}");
    };
    let invoked = InvokedRange {
        sequence_numbers: &sequence_numbers[range],
        report_batch_item_failures: scenario.report_batch_item_failures,
        window_open: scenario.window_open,
        shard_id: SHARD,
        function_timeout: FUNCTION_TIMEOUT,
    };
    describe(&judge(&mut retry, outcome, &invoked))
}

fn describe(judgement: &Judgement) -> String {
    let mut line = vec![
        judgement.next.describe(),
        match &judgement.verdict {
            InvocationVerdict::AllAcked { .. } => "all_acked".to_owned(),
            InvocationVerdict::HeldAt {
                sequence_number,
                settled,
            } => format!("held_at {sequence_number} after {settled}"),
            InvocationVerdict::FunctionError { error_type } => {
                format!("function_error {error_type}")
            }
            other => other.kind().to_owned(),
        },
    ];
    if judgement.dropped.dropped > 0 {
        line.push(format!("dropped {}", judgement.dropped.dropped));
    }
    if judgement.dropped.undecodable > 0 {
        line.push(format!("undecodable {}", judgement.dropped.undecodable));
    }
    if let Some(failure) = &judgement.failure {
        let function_error = failure.function_error.unwrap_or("none");
        line.push(format!("hold ({function_error}): {}", failure.reason));
    }
    if judgement.left_unsettled {
        line.push("unsettled".to_owned());
    }
    if judgement.counted_retry {
        line.push("counted retry".to_owned());
    }
    if let Some(state) = &judgement.window_state {
        line.push(format!("state kept {state:?}"));
    }
    line.join(" | ")
}

#[test]
fn all_acked_settles_the_range() {
    check(batch(4), response(""), "settle 0..4 | all_acked");
    check(
        batch(4),
        response(r#"{"batchItemFailures":[]}"#),
        "settle 0..4 | all_acked",
    );
}

#[test]
fn dropped_records_are_counted_when_settled() {
    check(
        batch(4),
        response(r#"{"lambdaKinesis":{"dropped":["102","104"]}}"#),
        "settle 0..4 | all_acked | dropped 2",
    );
}

#[test]
fn a_hold_at_position_k_settles_the_records_before_it() {
    check(
        batch(4),
        response(r#"{"batchItemFailures":[{"itemIdentifier":"103"}]}"#),
        "settle 0..2 | held_at 103 after 2 | unsettled",
    );
}

#[test]
fn the_lowest_item_identifier_is_the_hold() {
    check(
        batch(4),
        response(r#"{"batchItemFailures":[{"itemIdentifier":"104"},{"itemIdentifier":"102"}]}"#),
        "settle 0..1 | held_at 102 after 1 | unsettled",
    );
}

#[test]
fn dropped_records_behind_the_hold_are_not_counted() {
    check(
        batch(4),
        response(
            r#"{"batchItemFailures":[{"itemIdentifier":"103"}],"lambdaKinesis":{"dropped":["101","104"]}}"#,
        ),
        "settle 0..2 | held_at 103 after 2 | dropped 1 | unsettled",
    );
}

#[test]
fn undecodable_records_are_counted_apart_from_the_handlers_drops() {
    check(
        batch(4),
        response(
            r#"{"lambdaKinesis":{"dropped":["101","102","104"],"undecodable":["102","104"]}}"#,
        ),
        "settle 0..4 | all_acked | dropped 1 | undecodable 2",
    );
}

#[test]
fn a_hold_at_the_first_record_holds_the_shard() {
    check(
        batch(4),
        response(r#"{"batchItemFailures":[{"itemIdentifier":"101"}]}"#),
        "retry | held_at 101 after 0 \
         | hold (none): the function reported it in batchItemFailures | unsettled",
    );
}

#[test]
fn an_invalid_item_identifier_fails_the_range() {
    check(
        batch(4),
        response(r#"{"batchItemFailures":[{"itemIdentifier":"999"}]}"#),
        "retry | bad_response \
         | hold (none): bad response: `itemIdentifier` 999 is not a record of the batch | unsettled",
    );
}

#[test]
fn a_response_that_is_not_json_fails_the_range() {
    let judged = step(batch(2), Some(response("garbage")));
    assert!(
        judged.starts_with(
            "retry | bad_response | hold (none): bad response: the response is not JSON"
        ),
        "{judged}"
    );
    assert!(judged.ends_with(" | unsettled"), "{judged}");
}

#[test]
fn item_failures_are_ignored_without_report_batch_item_failures() {
    check(
        batch(4).ignoring_item_failures(),
        response(r#"{"batchItemFailures":[{"itemIdentifier":"101"}]}"#),
        "settle 0..4 | all_acked",
    );
    check(
        batch(4).ignoring_item_failures(),
        response("garbage"),
        "settle 0..4 | all_acked",
    );
}

#[test]
fn a_function_error_holds_the_range_unhandled() {
    check(
        batch(4),
        function_error("Runtime.ExitError", "exit status 1"),
        "retry | function_error Runtime.ExitError \
         | hold (Unhandled): function error Runtime.ExitError: exit status 1 | unsettled",
    );
}

#[test]
fn a_timeout_holds_the_range_unhandled() {
    check(
        batch(4),
        timeout(),
        "retry | timeout | hold (Unhandled): the function timed out after 3s | unsettled",
    );
}

#[test]
fn an_invocation_that_never_reached_the_function_is_retried_uncharged() {
    check(batch(4), not_invoked(), "retry | not_invoked");
    // Not a counted retry either, even after a failure.
    check(
        batch(4).retries(1).after(&[FunctionError]),
        not_invoked(),
        "retry | not_invoked",
    );
}

#[test]
fn a_retry_of_failed_records_is_counted() {
    check(
        batch(4).after(&[FunctionError]),
        timeout(),
        "retry | timeout | hold (Unhandled): the function timed out after 3s | unsettled \
         | counted retry",
    );
    check(
        batch(4).after(&[Timeout]),
        response(""),
        "settle 0..4 | all_acked | counted retry",
    );
}

#[test]
fn the_rest_after_a_hold_is_not_a_counted_retry() {
    check(
        batch(4).after(&[Returned { settled: 2 }]),
        response(""),
        "settle 2..4 | all_acked",
    );
}

#[test]
fn retries_exhausted_discards_the_range() {
    check(
        batch(4).retries(1).after(&[FunctionError]),
        function_error("Handled", "no"),
        "discard 0..4 RetryAttemptsExhausted 2 | function_error Handled \
         | hold (Unhandled): function error Handled: no | unsettled | counted retry",
    );
    check(
        batch(4).retries(0),
        response(r#"{"batchItemFailures":[{"itemIdentifier":"101"}]}"#),
        "discard 0..4 RetryAttemptsExhausted 1 | held_at 101 after 0 \
         | hold (none): the function reported it in batchItemFailures | unsettled",
    );
}

#[test]
fn max_record_age_passed_discards_before_invoking() {
    check_before_invoking(
        batch(4).aged(60, &[120, 61, 60, 0]),
        "age discard 0..2 1 RecordAgeExceeded",
    );
    check_before_invoking(
        batch(4)
            .aged(60, &[120, 120, 120, 120])
            .after(&[FunctionError, Timeout]),
        "age discard 0..4 2 RecordAgeExceeded",
    );
    check_before_invoking(batch(4).aged(60, &[60, 0, 0, 0]), "invoke 0..4");
}

#[test]
fn bisect_on_error_splits_the_range() {
    check(
        batch(4).bisect(),
        function_error("Runtime.ExitError", "exit status 1"),
        "split | function_error Runtime.ExitError \
         | hold (Unhandled): function error Runtime.ExitError: exit status 1 | unsettled",
    );
    check(
        batch(4).bisect(),
        timeout(),
        "split | timeout | hold (Unhandled): the function timed out after 3s | unsettled",
    );
}

#[test]
fn bisect_does_not_split_a_bad_response_or_one_record() {
    check(
        batch(4).bisect(),
        response(r#"{"batchItemFailures":[{"itemIdentifier":"101"}]}"#),
        "retry | held_at 101 after 0 \
         | hold (none): the function reported it in batchItemFailures | unsettled",
    );
    check(
        batch(4).bisect().after(&[FunctionError, FunctionError]),
        timeout(),
        "retry | timeout | hold (Unhandled): the function timed out after 3s | unsettled",
    );
}

#[test]
fn a_window_answer_keeps_its_state() {
    check(
        batch(2).in_window(),
        response(r#"{"state":{"sum":3}}"#),
        r#"settle 0..2 | all_acked | state kept Carried("{\"sum\":3}")"#,
    );
}

#[test]
fn a_partial_window_answer_keeps_its_state() {
    check(
        batch(2).in_window(),
        response(r#"{"state":{"sum":1},"batchItemFailures":[{"itemIdentifier":"102"}]}"#),
        r#"settle 0..1 | held_at 102 after 1 | unsettled | state kept Carried("{\"sum\":1}")"#,
    );
}

#[test]
fn a_window_answer_without_a_state_fails_the_range() {
    check(
        batch(2).in_window(),
        response("{}"),
        "retry | bad_response | hold (none): bad response: the answer to shard \
         shardId-000000000000's window invocation has no state (Lambda counts that as a failed \
         invocation) | unsettled",
    );
}

#[test]
fn a_bad_window_response_keeps_no_state() {
    check(
        batch(2).in_window(),
        response(r#"{"state":{"sum":1},"batchItemFailures":[{"itemIdentifier":"999"}]}"#),
        "retry | bad_response \
         | hold (none): bad response: `itemIdentifier` 999 is not a record of the batch | unsettled",
    );
}
