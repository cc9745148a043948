//! Resuming at a checkpoint that no record of the shard backs: never a silent skip.
//!
//! A checkpoint at sequence number `C` means "every record up to `C` is settled", and a reader
//! resumes after it. That is only right if `C` names a record of *this* shard. A checkpoint can
//! outlive its records: the embedded Kinesis without `--state-dir` starts fresh streams on every
//! run, while a lease table keeps the checkpoints; a stream created again within the same second
//! gets the same lease keys (they hold the creation time in whole seconds, as the KCL's do). The
//! new stream's sequence numbers start low again, so every record below `C` would be skipped
//! without a word.
//!
//! The rule (see `docs/checkpoints.md`): before resuming after `C`, the reader looks at the
//! shard's first record at or after `C` (`AT_SEQUENCE_NUMBER`). If there is one, `C` is backed and
//! the reader resumes after it. If there is none, no record of the shard at or after `C` exists,
//! so every record the shard still holds lies below `C`: those can only be records that `C` never
//! covered (a record is trimmed only after every older one, so a trimmed checkpoint leaves no
//! older record behind). The reader then reads the shard from its oldest record, and warns when
//! such records exist, naming the stream, the shard, the checkpoint and the oldest record.

use crate::lease::Lease;
use kinesis_source::IteratorPosition;
use kinesis_source::sequence::SequenceNumber;

/// The leases of a stream of the same account and name but another creation time (the third
/// part of `account:stream:created:shard`): an older stream's checkpoints, which the reader of
/// this stream never resumes at. They are reported, never passed over silently
/// (`docs/checkpoints.md`). Returns each lease with the creation time its key holds.
pub(super) fn leases_of_another_creation<'a>(
    leases: &'a [Lease],
    account: &str,
    stream: &str,
    created: &str,
) -> Vec<(&'a Lease, &'a str)> {
    leases
        .iter()
        .filter_map(|lease| {
            let mut parts = lease.lease_key.splitn(4, ':');
            let (Some(key_account), Some(key_stream), Some(key_created), Some(_shard)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return None;
            };
            (key_account == account && key_stream == stream && key_created != created)
                .then_some((lease, key_created))
        })
        .collect()
}

/// Where a reader whose checkpoint is `checkpoint` starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Resume {
    /// The shard holds the checkpoint's record (or later ones): resume after it.
    AfterCheckpoint,
    /// The shard holds no record at or after the checkpoint but older ones, from `oldest` on:
    /// they were never covered by the checkpoint, so read from the oldest. Worth a warning.
    OldestBelowCheckpoint {
        /// The oldest record the shard holds.
        oldest: SequenceNumber,
    },
    /// The shard holds no record at all: read from the oldest, so that records with numbers
    /// below the checkpoint, if any come, are read too.
    EmptyShard,
}

impl Resume {
    /// The decision, from the first record at or after the checkpoint and the shard's oldest
    /// record.
    pub(super) fn decide(
        at_or_after_checkpoint: Option<&SequenceNumber>,
        oldest: Option<&SequenceNumber>,
    ) -> Self {
        match (at_or_after_checkpoint, oldest) {
            (Some(_), _) => Self::AfterCheckpoint,
            (None, Some(oldest)) => Self::OldestBelowCheckpoint {
                oldest: oldest.clone(),
            },
            (None, None) => Self::EmptyShard,
        }
    }

    /// The iterator position the reader starts at.
    pub(super) fn position(&self, checkpoint: &SequenceNumber) -> IteratorPosition {
        match self {
            Self::AfterCheckpoint => IteratorPosition::AfterSequenceNumber(checkpoint.clone()),
            Self::OldestBelowCheckpoint { .. } | Self::EmptyShard => IteratorPosition::TrimHorizon,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_of_the_same_stream_name_created_at_another_time_are_found() {
        let lease = |key: &str| {
            Lease::new(
                key,
                key.rsplit(':').next().unwrap(),
                crate::lease::Checkpoint::TrimHorizon,
            )
        };
        let leases = [
            lease("123456789012:shipments:1700000000:shardId-000000000000"),
            lease("123456789012:shipments:1800000000:shardId-000000000000"),
            lease("123456789012:shipments:1800000000:shardId-000000000001"),
            lease("123456789012:shipments-eu:1700000000:shardId-000000000000"),
            lease("999999999999:shipments:1700000000:shardId-000000000000"),
            lease("not-a-kcl-key"),
        ];
        let found: Vec<(&str, &str)> =
            leases_of_another_creation(&leases, "123456789012", "shipments", "1800000000")
                .into_iter()
                .map(|(lease, created)| (lease.lease_key.as_str(), created))
                .collect();
        assert_eq!(
            found,
            [(
                "123456789012:shipments:1700000000:shardId-000000000000",
                "1700000000"
            )]
        );
    }

    fn number(digits: &str) -> SequenceNumber {
        digits.parse().unwrap()
    }

    #[track_caller]
    fn check(at: Option<&str>, oldest: Option<&str>, expected: Resume, position: IteratorPosition) {
        let checkpoint = number("500");
        let at = at.map(number);
        let oldest = oldest.map(number);
        let resume = Resume::decide(at.as_ref(), oldest.as_ref());
        assert_eq!(resume, expected);
        assert_eq!(resume.position(&checkpoint), position);
    }

    #[test]
    fn a_checkpoint_the_shard_backs_resumes_after_it() {
        check(
            Some("500"),
            Some("1"),
            Resume::AfterCheckpoint,
            IteratorPosition::AfterSequenceNumber(number("500")),
        );
        // Its own record trimmed, later ones held.
        check(
            Some("600"),
            Some("600"),
            Resume::AfterCheckpoint,
            IteratorPosition::AfterSequenceNumber(number("500")),
        );
    }

    #[test]
    fn a_checkpoint_beyond_every_record_reads_the_shard_from_its_oldest() {
        check(
            None,
            Some("3"),
            Resume::OldestBelowCheckpoint {
                oldest: number("3"),
            },
            IteratorPosition::TrimHorizon,
        );
        check(
            None,
            None,
            Resume::EmptyShard,
            IteratorPosition::TrimHorizon,
        );
    }
}
