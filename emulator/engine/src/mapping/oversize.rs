//! The rule for an event no invocation can carry (`docs/event-source-mapping.md` §4.5): Lambda's
//! synchronous payload is 6 MB, and a stream whose `MaxRecordSizeInKiB` is above about 4.4 MiB
//! holds records whose event alone is larger. AWS documents nothing for this case; the
//! emulator's rule is that such an event counts as a failed invocation the function never saw,
//! so the mapping's retries, `BisectBatchOnFunctionError`, `MaximumRetryAttempts`,
//! `MaximumRecordAgeInSeconds` and on-failure destination settle it as any failed batch. It is
//! never skipped silently, and a shard that keeps retrying it says why at every attempt.

use kinesis_source::sequence::SequenceNumber;

use crate::invoke::{InvokeOutcome, LambdaError};

/// Lambda's synchronous invocation payload limit: batches are cut to it, and an event over it is
/// never sent.
pub(super) const MAX_PAYLOAD_BYTES: usize = 6 * 1024 * 1024;

/// An event over the payload limit: what the batch held, and how large its event was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct OversizeEvent<'a> {
    /// The batch's first and last records (the same record for a batch of one).
    pub(super) first: &'a SequenceNumber,
    pub(super) last: &'a SequenceNumber,
    /// How many records the event held.
    pub(super) records: usize,
    /// The event's size in bytes.
    pub(super) bytes: usize,
    /// The limit it is over.
    pub(super) limit: usize,
}

impl<'a> OversizeEvent<'a> {
    /// The event of `records` records from `first` to `last` (in shard order), `bytes` long,
    /// if it is over `limit`; `None` when the function may be invoked with it.
    pub(super) fn check(
        (first, last): (&'a SequenceNumber, &'a SequenceNumber),
        records: usize,
        bytes: usize,
        limit: usize,
    ) -> Option<Self> {
        (bytes > limit).then_some(Self {
            first,
            last,
            records,
            bytes,
            limit,
        })
    }

    /// What the records were, for a message: the record, or the first and last of several.
    pub(super) fn records_named(&self) -> String {
        if self.records == 1 {
            format!("record {}", self.first)
        } else {
            let (first, last, count) = (self.first, self.last, self.records);
            format!("the {count} records {first} to {last}")
        }
    }

    /// The failed invocation the mapping counts instead of invoking: Lambda's `Invoke` error
    /// for a request over its limit, with a message that names the records and the size.
    pub(super) fn outcome(&self) -> InvokeOutcome {
        InvokeOutcome::FunctionError {
            error_type: LambdaError::RequestTooLarge.into(),
            message: format!(
                "the event of {} is {} bytes, over Lambda's synchronous payload limit of {} \
                 bytes: the function was not invoked, and the batch counts as failed",
                self.records_named(),
                self.bytes,
                self.limit
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sequence(n: u32) -> SequenceNumber {
        SequenceNumber::from_valid(format!("4959{n:010}"))
    }

    /// `(records, event bytes, limit)` and the message of the failed invocation, if any.
    #[track_caller]
    fn check(records: u32, bytes: usize, limit: usize, expected: Option<&str>) {
        let (first, last) = (sequence(1), sequence(records));
        let message =
            OversizeEvent::check((&first, &last), records as usize, bytes, limit).map(|oversize| {
                match oversize.outcome() {
                    InvokeOutcome::FunctionError {
                        error_type,
                        message,
                    } => {
                        assert_eq!(error_type.as_str(), "RequestTooLargeException");
                        message
                    }
                    other => panic!("an oversize event is a function error, not {other:?}"),
                }
            });
        assert_eq!(message.as_deref(), expected);
    }

    #[test]
    fn an_event_within_the_limit_is_invoked() {
        check(1, 100, 100, None);
        check(3, 99, 100, None);
    }

    #[test]
    fn a_single_record_over_the_limit_is_a_failed_invocation_that_names_it() {
        check(
            1,
            101,
            100,
            Some(
                "the event of record 49590000000001 is 101 bytes, over Lambda's synchronous \
                 payload limit of 100 bytes: the function was not invoked, and the batch counts \
                 as failed",
            ),
        );
    }

    #[test]
    fn several_records_over_the_limit_name_the_first_and_last() {
        check(
            3,
            7_000_000,
            6_291_456,
            Some(
                "the event of the 3 records 49590000000001 to 49590000000003 is 7000000 bytes, \
                 over Lambda's synchronous payload limit of 6291456 bytes: the function was not \
                 invoked, and the batch counts as failed",
            ),
        );
    }
}
