//! A shard's recent invocations: one entry per invocation (its batch's range, size, duration and
//! what the answer did to it), the newest [`RECENT_INVOCATIONS_KEPT`] kept in a ring that
//! allocates once, when it first fills. `ShardStatus::apply` adds to it as the shard's
//! invocations end.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::invoke::ErrorType;
use kinesis_source::sequence::SequenceNumber;

/// How many invocations a shard's status keeps: enough to see a retry loop or a run of
/// partial answers, few enough that a status snapshot (the page's, `kinesis-esm status`') stays
/// small with many shards.
pub const RECENT_INVOCATIONS_KEPT: usize = 20;

/// What an invocation's answer did to its batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InvocationVerdict {
    /// The function settled every record; `dropped` of them it reported as dropped.
    AllAcked {
        /// Records the function reported as dropped (the `lambda-kinesis` extension).
        dropped: u64,
    },
    /// The function named `sequence_number` in `batchItemFailures`: the `settled` records
    /// before it are settled, it and the records behind it come again.
    HeldAt {
        /// The first record named (the lowest, as Lambda takes it).
        sequence_number: SequenceNumber,
        /// Records settled in front of it.
        settled: u64,
    },
    /// The answer could not be read as a batch response: the whole batch comes again.
    BadResponse,
    /// The function returned an error (or its process crashed).
    FunctionError {
        /// The error's type, as the function reported it (`errorType`).
        error_type: ErrorType,
    },
    /// The function ran past its timeout.
    Timeout,
    /// The invocation never reached the function (unreachable, throttled): nothing charged.
    NotInvoked,
}

impl InvocationVerdict {
    /// The verdict of an answer the function returned for a batch of `batch` (sequence
    /// numbers, in order): unreadable (`bad_response`), or settling the first `settled` records,
    /// `dropped` of them reported as dropped.
    pub(in crate::mapping) fn of_answer(
        bad_response: bool,
        batch: &[SequenceNumber],
        settled: usize,
        dropped: u64,
    ) -> Self {
        match batch.get(settled) {
            _ if bad_response => Self::BadResponse,
            None => Self::AllAcked { dropped },
            Some(held) => Self::HeldAt {
                sequence_number: held.clone(),
                settled: settled as u64,
            },
        }
    }

    /// The verdict's kind, as the JSON's `kind` spells it (the page styles rows by it).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::AllAcked { .. } => "all_acked",
            Self::HeldAt { .. } => "held_at",
            Self::BadResponse => "bad_response",
            Self::FunctionError { .. } => "function_error",
            Self::Timeout => "timeout",
            Self::NotInvoked => "not_invoked",
        }
    }
}

/// One invocation of a shard's function, as its status keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentInvocation {
    /// The batch's first record.
    pub first: SequenceNumber,
    /// The batch's last record.
    pub last: SequenceNumber,
    /// How many records the batch held.
    pub records: u64,
    /// When the event was sent, in milliseconds since the Unix epoch.
    pub at_epoch_millis: i64,
    /// How long the invoker took to answer, in microseconds.
    pub duration_micros: u64,
    /// What the answer did to the batch.
    pub verdict: InvocationVerdict,
    /// Whether the mapping discarded records of this batch after this invocation (retries used
    /// up, or too old): they went to the on-failure destination, if there is one.
    #[serde(default)]
    pub discarded: bool,
}

impl RecentInvocation {
    /// Whether the batch holds a record of the range `first..=last`.
    fn overlaps(&self, first: &SequenceNumber, last: &SequenceNumber) -> bool {
        &self.first <= last && first <= &self.last
    }
}

/// A shard's newest invocations, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RecentInvocations(VecDeque<RecentInvocation>);

impl RecentInvocations {
    /// Keeps `invocation`, forgetting the oldest once [`RECENT_INVOCATIONS_KEPT`] are kept.
    pub fn push(&mut self, invocation: RecentInvocation) {
        if self.0.len() == RECENT_INVOCATIONS_KEPT {
            self.0.pop_front();
        } else if self.0.capacity() == 0 {
            // The one allocation: a shard that is invoked at all soon fills its ring.
            self.0.reserve_exact(RECENT_INVOCATIONS_KEPT);
        }
        self.0.push_back(invocation);
    }

    /// Marks the newest invocation whose batch holds a record of `first..=last` as discarded
    /// after: the discard follows the invocation that used the retries up (or comes before the
    /// next one, for records too old), and with `ParallelizationFactor` above 1 other lanes'
    /// invocations may have ended in between.
    pub(in crate::mapping) fn mark_discarded(
        &mut self,
        first: &SequenceNumber,
        last: &SequenceNumber,
    ) {
        if let Some(invocation) = self
            .0
            .iter_mut()
            .rev()
            .find(|invocation| invocation.overlaps(first, last))
        {
            invocation.discarded = true;
        }
    }

    /// The invocations kept, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &RecentInvocation> + ExactSizeIterator {
        self.0.iter()
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sequence_number(n: u64) -> SequenceNumber {
        n.to_string().parse().expect("a sequence number")
    }

    fn invocation(first: u64, last: u64) -> RecentInvocation {
        RecentInvocation {
            first: sequence_number(first),
            last: sequence_number(last),
            records: last - first + 1,
            at_epoch_millis: 1_000,
            duration_micros: 250,
            verdict: InvocationVerdict::AllAcked { dropped: 0 },
            discarded: false,
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_and_allocates_once() {
        let mut recent = RecentInvocations::default();
        assert_eq!(
            recent.0.capacity(),
            0,
            "a shard never invoked allocates nothing"
        );
        recent.push(invocation(1, 1));
        let capacity = recent.0.capacity();
        assert!(capacity >= RECENT_INVOCATIONS_KEPT);
        for n in 2..=50 {
            recent.push(invocation(n, n));
        }
        assert_eq!(recent.len(), RECENT_INVOCATIONS_KEPT);
        assert_eq!(recent.0.capacity(), capacity, "no allocation once full");
        let firsts: Vec<u64> = recent
            .iter()
            .map(|invocation| invocation.first.as_str().parse().unwrap())
            .collect();
        assert_eq!(firsts, (31..=50).collect::<Vec<_>>(), "oldest first");
    }

    #[test]
    fn a_discard_marks_the_newest_invocation_of_its_records() {
        let mut recent = RecentInvocations::default();
        recent.push(invocation(10, 14));
        recent.push(invocation(10, 14));
        // Another lane's batch ends before the discard is reported.
        recent.push(invocation(20, 22));
        recent.mark_discarded(&sequence_number(12), &sequence_number(14));
        let marked: Vec<bool> = recent
            .iter()
            .map(|invocation| invocation.discarded)
            .collect();
        assert_eq!(marked, [false, true, false]);
        // Records no kept invocation holds mark nothing.
        recent.mark_discarded(&sequence_number(30), &sequence_number(31));
        assert_eq!(recent.iter().filter(|i| i.discarded).count(), 1);
    }

    #[test]
    fn an_answer_settles_all_or_holds_at_the_first_record_it_did_not_settle() {
        let batch: Vec<SequenceNumber> = (10..15).map(sequence_number).collect();
        assert_eq!(
            InvocationVerdict::of_answer(false, &batch, 5, 1),
            InvocationVerdict::AllAcked { dropped: 1 }
        );
        assert_eq!(
            InvocationVerdict::of_answer(false, &batch, 2, 0),
            InvocationVerdict::HeldAt {
                sequence_number: sequence_number(12),
                settled: 2
            }
        );
        assert_eq!(
            InvocationVerdict::of_answer(false, &batch, 0, 0),
            InvocationVerdict::HeldAt {
                sequence_number: sequence_number(10),
                settled: 0
            }
        );
        assert_eq!(
            InvocationVerdict::of_answer(true, &batch, 0, 0),
            InvocationVerdict::BadResponse
        );
    }

    #[test]
    fn verdicts_serialize_with_their_kind() {
        let held = InvocationVerdict::HeldAt {
            sequence_number: sequence_number(12),
            settled: 2,
        };
        assert_eq!(
            serde_json::to_value(&held).unwrap(),
            serde_json::json!({"kind": "held_at", "sequence_number": "12", "settled": 2})
        );
        for verdict in [
            held,
            InvocationVerdict::AllAcked { dropped: 1 },
            InvocationVerdict::BadResponse,
            InvocationVerdict::FunctionError {
                error_type: ErrorType::new("Panic"),
            },
            InvocationVerdict::Timeout,
            InvocationVerdict::NotInvoked,
        ] {
            let json = serde_json::to_value(&verdict).unwrap();
            assert_eq!(json["kind"], verdict.kind());
            assert_eq!(
                serde_json::from_value::<InvocationVerdict>(json).unwrap(),
                verdict
            );
        }
    }
}
