//! Lambda's retry rules for one batch, as a state machine with no I/O.
//!
//! The reader asks [`BatchRetry::next`] what to do with a batch (invoke a range of it, or
//! discard records that are too old), does it, and tells [`BatchRetry::record`] how the
//! invocation went; the answer says what happens next: settle records and go on, retry the same
//! records after a pause, split them in halves, or discard them. The rules are those of
//! `docs/event-source-mapping.md` §1.5 and §2; the clock, the function and the lease table stay
//! in the reader.

use std::ops::Range;
use std::time::{Duration, SystemTime};

use crate::config::MappingConfig;

/// The mapping's settings that decide retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct RetryRules {
    /// `MaximumRetryAttempts`: `None` retries until the records expire.
    pub(super) maximum_retry_attempts: Option<u32>,
    /// `MaximumRecordAgeInSeconds`: `None` never discards a record for its age.
    pub(super) maximum_record_age: Option<Duration>,
    /// `BisectBatchOnFunctionError`.
    pub(super) bisect_on_function_error: bool,
}

impl RetryRules {
    pub(super) fn of(config: &MappingConfig) -> Self {
        Self {
            maximum_retry_attempts: config.maximum_retry_attempts,
            maximum_record_age: config.maximum_record_age,
            bisect_on_function_error: config.bisect_batch_on_function_error,
        }
    }
}

/// Why records are discarded, as the on-failure record's `condition` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiscardCondition {
    /// `MaximumRetryAttempts` is used up.
    RetryAttemptsExhausted,
    /// The records are older than `MaximumRecordAgeInSeconds`.
    RecordAgeExceeded,
}

impl DiscardCondition {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::RetryAttemptsExhausted => "RetryAttemptsExhausted",
            Self::RecordAgeExceeded => "RecordAgeExceeded",
        }
    }
}

/// How one invocation of a range of the batch went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InvocationResult {
    /// The invocation never reached the function (throttled, a service error, unreachable).
    NotInvoked,
    /// The function returned, and its response settles this many records from the front of the
    /// range: all of them on success, fewer for a partial response, none for a response that
    /// names the first record or cannot be read.
    Returned {
        /// Records settled from the front of the range.
        settled: usize,
    },
    /// The function failed: an unhandled error or a crash.
    FunctionError,
    /// The function ran past its timeout.
    Timeout,
}

/// Records given up, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Discard {
    /// The records, as indices into the batch.
    pub(super) records: Range<usize>,
    /// Why.
    pub(super) condition: DiscardCondition,
    /// The on-failure record's `approximateInvokeCount`.
    pub(super) invoke_count: u32,
}

/// What the reader does next with the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Action {
    /// Invoke the function with these records of the batch.
    Invoke(Range<usize>),
    /// Discard these records (too old), checkpoint past them, and ask again.
    Discard(Discard),
}

/// What an invocation's result leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Next {
    /// Checkpoint past these records (settled by the function); the rest of the range, if any,
    /// is invoked next with its retry budget afresh.
    Settle(Range<usize>),
    /// Pause, then invoke the same records again.
    RetryAfterPause,
    /// The range was split in halves, each to be invoked on its own.
    Split,
    /// Discard these records (retries are used up) and checkpoint past them.
    Discard(Discard),
}

/// One batch on its way to being settled: the ranges still to settle and the current range's
/// attempt history.
#[derive(Debug)]
pub(super) struct BatchRetry {
    rules: RetryRules,
    /// Ranges still to settle, the current one on top: a split pushes the two halves.
    ranges: Vec<Range<usize>>,
    /// Failed invocations charged against `MaximumRetryAttempts` since the range last made progress.
    charged: u32,
    /// Invocations of the current range since it last made progress.
    invocations: u32,
}

impl BatchRetry {
    /// A batch of `len` records, none tried yet.
    pub(super) fn new(rules: RetryRules, len: usize) -> Self {
        Self {
            rules,
            ranges: (len > 0).then_some(0..len).into_iter().collect(),
            charged: 0,
            invocations: 0,
        }
    }

    /// What to do next, at `now`, for a batch whose record `index` arrived at `arrival(index)`;
    /// `None` once every record is settled or discarded. Record age is checked before each
    /// invocation (`docs/event-source-mapping.md` §2.7).
    pub(super) fn next(
        &mut self,
        now: SystemTime,
        arrival: impl Fn(usize) -> SystemTime,
    ) -> Option<Action> {
        let range = self.ranges.last()?.clone();
        if let Some(max_age) = self.rules.maximum_record_age {
            let expired = range
                .clone()
                .take_while(|&index| {
                    now.duration_since(arrival(index)).unwrap_or_default() > max_age
                })
                .count();
            if expired > 0 {
                let records = range.start..range.start + expired;
                // A record expired before any invocation is reported as invoked once.
                let invoke_count = self.invocations.max(1);
                self.advance(expired);
                return Some(Action::Discard(Discard {
                    records,
                    condition: DiscardCondition::RecordAgeExceeded,
                    invoke_count,
                }));
            }
        }
        Some(Action::Invoke(range))
    }

    /// Which retry the next invocation of the current range is, as `MaximumRetryAttempts`
    /// counts them (1 for the first), or `None` when no counted attempt has failed on it yet: a
    /// fresh range, a bisection's half, the rest after a partial response (§2.3, §2.4).
    pub(super) fn retry_number(&self) -> Option<u32> {
        (self.charged > 0).then_some(self.charged)
    }

    /// Takes in how the invocation of the current range went, and says what follows.
    pub(super) fn record(&mut self, result: InvocationResult) -> Next {
        let Some(range) = self.ranges.last().cloned() else {
            return Next::RetryAfterPause;
        };
        let function_failed = match result {
            // Errors before the function runs are not charged (§2.2).
            InvocationResult::NotInvoked => return Next::RetryAfterPause,
            InvocationResult::Returned { settled } if settled > 0 => {
                self.invocations += 1;
                let settled = settled.min(range.len());
                // Progress starts the remainder's retry budget afresh (§1.5).
                self.advance(settled);
                self.charged = 0;
                self.invocations = 0;
                return Next::Settle(range.start..range.start + settled);
            }
            InvocationResult::Returned { .. } => false,
            InvocationResult::FunctionError | InvocationResult::Timeout => true,
        };
        self.invocations += 1;
        if function_failed && self.rules.bisect_on_function_error && range.len() > 1 {
            // Splitting is not charged as a retry attempt (§2.4).
            let middle = range.start + range.len() / 2;
            self.ranges.pop();
            self.ranges.push(middle..range.end);
            self.ranges.push(range.start..middle);
            self.charged = 0;
            self.invocations = 0;
            return Next::Split;
        }
        self.charged += 1;
        // N retries after the first attempt (§2.3).
        if self
            .rules
            .maximum_retry_attempts
            .is_some_and(|max| self.charged > max)
        {
            let invoke_count = self.invocations;
            self.advance(range.len());
            self.charged = 0;
            self.invocations = 0;
            return Next::Discard(Discard {
                records: range,
                condition: DiscardCondition::RetryAttemptsExhausted,
                invoke_count,
            });
        }
        Next::RetryAfterPause
    }

    /// Moves the current range's start past `count` records, dropping the range once empty (a
    /// range taken from the stack starts with a fresh history).
    fn advance(&mut self, count: usize) {
        if let Some(range) = self.ranges.last_mut() {
            range.start += count;
            if range.start >= range.end {
                self.ranges.pop();
                self.charged = 0;
                self.invocations = 0;
            }
        }
    }
}

#[cfg(test)]
impl Next {
    /// The decision in a few words, for tests that compare sequences of them.
    pub(super) fn describe(&self) -> String {
        match self {
            Next::Settle(range) => format!("settle {range:?}"),
            Next::RetryAfterPause => "retry".to_owned(),
            Next::Split => "split".to_owned(),
            Next::Discard(Discard {
                records,
                condition,
                invoke_count,
            }) => format!("discard {records:?} {} {invoke_count}", condition.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DiscardCondition::*;
    use InvocationResult::*;

    const NOW: Duration = Duration::from_secs(1_000_000);

    fn rules(maximum_retry_attempts: Option<u32>, bisect: bool) -> RetryRules {
        RetryRules {
            maximum_retry_attempts,
            maximum_record_age: None,
            bisect_on_function_error: bisect,
        }
    }

    /// Runs a batch of `len` fresh records through `results`, one per invocation, and checks
    /// each action and what followed, written as "invoke 0..4" ("invoke 0..4 retry 2" for the
    /// second counted retry of those records), "retry", "settle 0..2",
    /// "split", "discard 0..4 RetryAttemptsExhausted 3", "age 0..1 1"; "done" once nothing is
    /// left.
    #[track_caller]
    fn check(
        rules: RetryRules,
        len: usize,
        ages_secs: &[u64],
        results: &[InvocationResult],
        expected: &[&str],
    ) {
        let mut batch = BatchRetry::new(rules, len);
        let now = SystemTime::UNIX_EPOCH + NOW;
        let arrival =
            |index: usize| now - Duration::from_secs(ages_secs.get(index).copied().unwrap_or(0));
        let mut seen = Vec::new();
        let mut results = results.iter();
        loop {
            match batch.next(now, arrival) {
                None => {
                    seen.push("done".to_owned());
                    break;
                }
                Some(Action::Discard(Discard {
                    records,
                    condition,
                    invoke_count,
                })) => {
                    assert_eq!(condition, RecordAgeExceeded);
                    seen.push(format!("age {records:?} {invoke_count}"));
                }
                Some(Action::Invoke(range)) => {
                    seen.push(match batch.retry_number() {
                        Some(number) => format!("invoke {range:?} retry {number}"),
                        None => format!("invoke {range:?}"),
                    });
                    let Some(&result) = results.next() else { break };
                    seen.push(batch.record(result).describe());
                }
            }
        }
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_successful_invocation_settles_the_batch() {
        // docs/event-source-mapping.md §1.1: a normal return settles the whole batch.
        check(
            rules(None, false),
            3,
            &[],
            &[Returned { settled: 3 }],
            &["invoke 0..3", "settle 0..3", "done"],
        );
    }

    #[test]
    fn an_empty_batch_has_nothing_to_do() {
        check(rules(None, false), 0, &[], &[], &["done"]);
    }

    #[test]
    fn a_failure_is_retried_until_it_succeeds_without_a_cap() {
        // §2.1: with MaximumRetryAttempts -1 a failed batch is retried until it succeeds.
        check(
            rules(None, false),
            2,
            &[],
            &[
                FunctionError,
                Timeout,
                Returned { settled: 0 },
                Returned { settled: 2 },
            ],
            &[
                "invoke 0..2",
                "retry",
                "invoke 0..2 retry 1",
                "retry",
                "invoke 0..2 retry 2",
                "retry",
                "invoke 0..2 retry 3",
                "settle 0..2",
                "done",
            ],
        );
    }

    #[test]
    fn maximum_retry_attempts_counts_retries_after_the_first_attempt() {
        // §2.3: N = 2 gives 3 invocations, then the batch is discarded (§2.6).
        check(
            rules(Some(2), false),
            2,
            &[],
            &[FunctionError, FunctionError, FunctionError],
            &[
                "invoke 0..2",
                "retry",
                "invoke 0..2 retry 1",
                "retry",
                "invoke 0..2 retry 2",
                "discard 0..2 RetryAttemptsExhausted 3",
                "done",
            ],
        );
    }

    #[test]
    fn zero_retry_attempts_discards_after_one_invocation() {
        // §2.3: N = 0 gives 1 invocation.
        check(
            rules(Some(0), false),
            1,
            &[],
            &[Timeout],
            &[
                "invoke 0..1",
                "discard 0..1 RetryAttemptsExhausted 1",
                "done",
            ],
        );
    }

    #[test]
    fn errors_before_the_function_runs_are_not_charged() {
        // §2.2: throttles and service errors do not count against MaximumRetryAttempts, nor
        // toward approximateInvokeCount.
        check(
            rules(Some(1), false),
            1,
            &[],
            &[
                NotInvoked,
                NotInvoked,
                NotInvoked,
                FunctionError,
                FunctionError,
            ],
            &[
                "invoke 0..1",
                "retry",
                "invoke 0..1",
                "retry",
                "invoke 0..1",
                "retry",
                "invoke 0..1",
                "retry",
                "invoke 0..1 retry 1",
                "discard 0..1 RetryAttemptsExhausted 2",
                "done",
            ],
        );
    }

    #[test]
    fn a_partial_response_settles_the_records_before_the_first_failure() {
        // §1.3: Lambda checkpoints in front of the lowest reported record and retries from it.
        check(
            rules(None, false),
            4,
            &[],
            &[Returned { settled: 2 }, Returned { settled: 2 }],
            &[
                "invoke 0..4",
                "settle 0..2",
                "invoke 2..4",
                "settle 2..4",
                "done",
            ],
        );
    }

    #[test]
    fn progress_starts_the_remainders_retry_budget_afresh() {
        // §1.5: 6 records, MaximumRetryAttempts 3, the last always named: after progress up to
        // it, 4 invocations of it and approximateInvokeCount 4.
        check(
            rules(Some(3), false),
            3,
            &[],
            &[
                FunctionError,
                FunctionError,
                Returned { settled: 2 },
                Returned { settled: 0 },
                Returned { settled: 0 },
                Returned { settled: 0 },
                Returned { settled: 0 },
            ],
            &[
                "invoke 0..3",
                "retry",
                "invoke 0..3 retry 1",
                "retry",
                "invoke 0..3 retry 2",
                "settle 0..2",
                "invoke 2..3",
                "retry",
                "invoke 2..3 retry 1",
                "retry",
                "invoke 2..3 retry 2",
                "retry",
                "invoke 2..3 retry 3",
                "discard 2..3 RetryAttemptsExhausted 4",
                "done",
            ],
        );
    }

    #[test]
    fn a_partial_response_naming_the_first_record_is_a_charged_failure() {
        // §1.5: it settles nothing and is charged like a function error.
        check(
            rules(Some(1), false),
            2,
            &[],
            &[Returned { settled: 0 }, Returned { settled: 0 }],
            &[
                "invoke 0..2",
                "retry",
                "invoke 0..2 retry 1",
                "discard 0..2 RetryAttemptsExhausted 2",
                "done",
            ],
        );
    }

    #[test]
    fn bisection_splits_a_function_error_in_halves_without_charging_it() {
        // §2.4: each half is retried on its own; the split is not a retry attempt.
        check(
            rules(Some(0), true),
            4,
            &[],
            &[
                FunctionError,
                Returned { settled: 2 },
                FunctionError,
                Returned { settled: 1 },
                FunctionError,
            ],
            &[
                "invoke 0..4",
                "split",
                "invoke 0..2",
                "settle 0..2",
                "invoke 2..4",
                "split",
                "invoke 2..3",
                "settle 2..3",
                "invoke 3..4",
                "discard 3..4 RetryAttemptsExhausted 1",
                "done",
            ],
        );
    }

    #[test]
    fn the_halves_of_a_bisection_start_their_retries_afresh() {
        // §2.4: a half that fails again is retried on its own budget; the split itself is no
        // retry, so the first invocation of each half is not one either.
        check(
            rules(Some(1), true),
            2,
            &[],
            &[
                FunctionError,
                FunctionError,
                FunctionError,
                Returned { settled: 1 },
            ],
            &[
                "invoke 0..2",
                "split",
                "invoke 0..1",
                "retry",
                "invoke 0..1 retry 1",
                "discard 0..1 RetryAttemptsExhausted 2",
                "invoke 1..2",
                "settle 1..2",
                "done",
            ],
        );
    }

    #[test]
    fn bisection_splits_timeouts_too() {
        // §2.4 and §1.4: a timeout is a function error.
        check(
            rules(None, true),
            2,
            &[],
            &[Timeout],
            &["invoke 0..2", "split", "invoke 0..1"],
        );
    }

    #[test]
    fn bisection_leaves_a_bad_response_whole() {
        // §1.6: bisection applies to function errors, not to a response that settles nothing.
        check(
            rules(Some(0), true),
            2,
            &[],
            &[Returned { settled: 0 }],
            &[
                "invoke 0..2",
                "discard 0..2 RetryAttemptsExhausted 1",
                "done",
            ],
        );
    }

    #[test]
    fn a_single_record_is_not_split() {
        // §2.4: a batch of one has no halves; its failure is charged.
        check(
            rules(Some(0), true),
            1,
            &[],
            &[FunctionError],
            &[
                "invoke 0..1",
                "discard 0..1 RetryAttemptsExhausted 1",
                "done",
            ],
        );
    }

    #[test]
    fn expired_records_are_split_off_and_the_rest_is_still_invoked() {
        // §2.7: records older than MaximumRecordAgeInSeconds are discarded with
        // RecordAgeExceeded before the invocation, reported as invoked once.
        let rules = RetryRules {
            maximum_record_age: Some(Duration::from_secs(60)),
            ..rules(None, false)
        };
        check(
            rules,
            4,
            &[120, 61, 30, 200],
            &[Returned { settled: 2 }],
            &["age 0..2 1", "invoke 2..4", "settle 2..4", "done"],
        );
    }

    #[test]
    fn a_record_that_ages_while_retried_is_discarded_with_its_invocations() {
        // §2.1, §2.7: a retried record is discarded once it passes the maximum age; the count
        // is the invocations it had.
        let rules = RetryRules {
            maximum_record_age: Some(Duration::from_secs(60)),
            ..rules(None, false)
        };
        let mut batch = BatchRetry::new(rules, 1);
        let arrived = SystemTime::UNIX_EPOCH + NOW;
        assert_eq!(batch.next(arrived, |_| arrived), Some(Action::Invoke(0..1)));
        assert_eq!(batch.record(FunctionError), Next::RetryAfterPause);
        assert_eq!(batch.next(arrived, |_| arrived), Some(Action::Invoke(0..1)));
        assert_eq!(batch.record(FunctionError), Next::RetryAfterPause);
        let later = arrived + Duration::from_secs(61);
        assert_eq!(
            batch.next(later, |_| arrived),
            Some(Action::Discard(Discard {
                records: 0..1,
                condition: RecordAgeExceeded,
                invoke_count: 2
            }))
        );
        assert_eq!(batch.next(later, |_| arrived), None);
    }

    #[test]
    fn a_record_exactly_at_the_maximum_age_is_still_invoked() {
        // §2.7: only records older than the maximum are discarded.
        let rules = RetryRules {
            maximum_record_age: Some(Duration::from_secs(60)),
            ..rules(None, false)
        };
        check(
            rules,
            1,
            &[60],
            &[Returned { settled: 1 }],
            &["invoke 0..1", "settle 0..1", "done"],
        );
    }
}
