//! How changes fold into a shard's status: what holds and releases a shard, what is
//! counted, when it is idle.

use std::collections::BTreeMap;

use super::*;
use crate::lease::Checkpoint;
use crate::mapping::metrics::{InvocationEnd, ShardMetrics};
use crate::mapping::reader_exit::ReaderExit;
use crate::response::DropCounts;
use kinesis_source::Record;
use kinesis_source::sequence::SequenceNumber;
use std::sync::Arc;

/// A mapping of one shard in `phase`, blocked (if `held`) after that many failed deliveries,
/// under a retry cap or not.
#[track_caller]
fn check_idle(phase: ShardPhase, held: Option<(u32, bool)>, expected: bool) {
    let shard = ShardStatus {
        shard_id: "shardId-000000000000".to_owned(),
        phase,
        held: held.map(|(failed_deliveries, retries_capped)| HeldRecord {
            sequence_number: "1".parse().expect("a sequence number"),
            failed_deliveries,
            reason: "held".to_owned(),
            retries_capped,
            next_retry: None,
        }),
        ..ShardStatus::default()
    };
    let status = MappingStatus {
        shards: BTreeMap::from([(shard.shard_id.clone(), shard)]),
        synced: true,
        ..MappingStatus::default()
    };
    assert_eq!(status.is_idle(), expected, "{phase:?}, held {held:?}");
}

#[test]
fn a_held_shard_is_idle_once_retried_unless_a_retry_cap_will_discard_its_batch() {
    check_idle(ShardPhase::CaughtUp, None, true);
    check_idle(ShardPhase::Reading, None, false);
    check_idle(ShardPhase::Held, Some((1, false)), false);
    check_idle(ShardPhase::Held, Some((2, false)), true);
    check_idle(ShardPhase::Held, Some((2, true)), false);
    check_idle(ShardPhase::Held, Some((10, true)), false);
}

fn sequence_number(text: &str) -> SequenceNumber {
    text.parse().expect("a sequence number")
}

fn failed(at: &str) -> ShardChange<'static> {
    ShardChange::Failed {
        sequence_number: sequence_number(at),
        reason: "function error".to_owned(),
        retries_capped: false,
    }
}

/// An invocation with `count` records, kept for the test's whole run.
fn invoked(count: usize) -> ShardChange<'static> {
    let records = (0..count)
        .map(|index| Record {
            sequence_number: sequence_number(&(index + 1).to_string()),
            partition_key: Arc::from("key"),
            data: bytes::Bytes::new(),
            approximate_arrival: std::time::UNIX_EPOCH,
        })
        .collect::<Vec<_>>();
    ShardChange::Invoked {
        records: records.leak(),
    }
}

fn handled(records: u64, dropped: u64, last: &str) -> ShardChange<'static> {
    settled(
        records,
        DropCounts {
            dropped,
            undecodable: 0,
        },
        last,
    )
}

fn settled(records: u64, dropped: DropCounts, last: &str) -> ShardChange<'static> {
    ShardChange::Checkpointed {
        checkpoint: Checkpoint::SequenceNumber(sequence_number(last)),
        settled: Settled::Handled {
            records,
            dropped,
            last: sequence_number(last),
        },
    }
}

/// Folds `changes` into a fresh shard status and returns it.
fn fold(changes: impl IntoIterator<Item = ShardChange<'static>>) -> ShardStatus {
    let mut status = ShardStatus::default();
    for change in changes {
        status.apply(change);
    }
    status
}

#[test]
fn a_change_said_to_leave_the_status_unchanged_leaves_it_unchanged() {
    let lease_seen = |checkpoint: Checkpoint, owner: &str| ShardChange::LeaseSeen {
        parent_shard_ids: vec!["shardId-000000000000".to_owned()],
        checkpoint,
        lease_owner: Some(owner.to_owned()),
    };
    let empty_read = |millis_behind_latest| ShardChange::Read {
        read: 0,
        filtered: 0,
        millis_behind_latest,
    };
    let at_10 = Checkpoint::SequenceNumber(sequence_number("10"));
    let changes = [
        empty_read(0),
        empty_read(5),
        ShardChange::Read {
            read: 2,
            filtered: 1,
            millis_behind_latest: 0,
        },
        ShardChange::CaughtUp,
        lease_seen(at_10.clone(), "me"),
        lease_seen(at_10.clone(), "other"),
        lease_seen(Checkpoint::ShardEnd, "me"),
        ShardChange::NotOwned,
        ShardChange::WaitingOnParents,
        invoked(1),
        failed("10"),
        handled(1, 0, "10"),
        ShardChange::Finished(ReaderExit::Ended),
    ];
    // Statuses reached by every pair of changes, from a fresh and from a metered shard.
    let mut statuses = vec![ShardStatus::default()];
    for first in &changes {
        for second in &changes {
            let mut status = ShardStatus {
                metrics: ShardMetrics::new(true),
                ..ShardStatus::default()
            };
            status.apply(first.clone());
            status.apply(second.clone());
            statuses.push(status);
        }
    }
    let mut unchanged = 0;
    for status in &statuses {
        for change in &changes {
            if status.unchanged_by(change) {
                unchanged += 1;
                let mut applied = status.clone();
                applied.apply(change.clone());
                assert_eq!(&applied, status, "{change:?} changed {status:?}");
            }
        }
    }
    assert!(unchanged > 0, "some change leaves some status unchanged");
    // An idle shard's repeated changes are the ones that change nothing.
    let idle = fold([
        lease_seen(at_10.clone(), "me"),
        ShardChange::Started {
            checkpoint: at_10.clone(),
        },
        empty_read(0),
        ShardChange::CaughtUp,
    ]);
    for change in [
        empty_read(0),
        ShardChange::CaughtUp,
        lease_seen(at_10.clone(), "me"),
    ] {
        assert!(idle.unchanged_by(&change), "{change:?}");
    }
    for change in [
        empty_read(3),
        lease_seen(at_10, "other"),
        lease_seen(Checkpoint::ShardEnd, "me"),
        ShardChange::NotOwned,
    ] {
        assert!(!idle.unchanged_by(&change), "{change:?}");
    }
}

#[test]
fn a_read_counts_what_it_kept_and_what_the_filters_removed() {
    let status = fold([ShardChange::Read {
        read: 5,
        filtered: 2,
        millis_behind_latest: 7,
    }]);
    assert_eq!(
        (
            status.unsettled,
            status.filtered,
            status.millis_behind_latest
        ),
        (3, 2, 7)
    );
    assert_eq!(status.phase, ShardPhase::Reading);
}

#[test]
fn a_failure_holds_the_shard_and_counts_failed_deliveries_of_the_same_record() {
    let status = fold([failed("10"), failed("10")]);
    assert_eq!(status.phase, ShardPhase::Held);
    assert_eq!(
        status.held.as_ref().map(|held| held.failed_deliveries),
        Some(2)
    );
    let status = fold([failed("10"), failed("12")]);
    assert_eq!(
        status.held.as_ref().map(|held| held.failed_deliveries),
        Some(1)
    );
}

#[test]
fn a_held_shard_stays_held_while_it_reads_invokes_or_catches_up() {
    let status = fold([
        failed("10"),
        ShardChange::Read {
            read: 1,
            filtered: 0,
            millis_behind_latest: 0,
        },
        invoked(1),
        ShardChange::CaughtUp,
    ]);
    assert_eq!(status.phase, ShardPhase::Held);
    assert_eq!((status.delivered, status.invocations), (1, 1));
}

#[test]
fn retries_and_splits_are_counted_apart_from_deliveries() {
    let status = fold([
        invoked(4),
        ShardChange::Split,
        invoked(2),
        failed("10"),
        invoked(2),
        ShardChange::Retried,
    ]);
    assert_eq!(
        (
            status.delivered,
            status.invocations,
            status.retries,
            status.splits
        ),
        (8, 3, 1, 1)
    );
}

#[test]
fn a_held_shard_shows_the_retry_it_waits_for_until_it_is_invoked() {
    let next_retry = NextRetry {
        number: 2,
        limit: Some(5),
        at_epoch_millis: 1_000,
    };
    let waiting = fold([
        failed("10"),
        ShardChange::WaitingToRetry(next_retry.clone()),
    ]);
    assert_eq!(
        waiting
            .held
            .as_ref()
            .and_then(|held| held.next_retry.clone()),
        Some(next_retry.clone())
    );
    let retrying = fold([
        failed("10"),
        ShardChange::WaitingToRetry(next_retry.clone()),
        invoked(1),
    ]);
    assert_eq!(
        retrying.held.as_ref().map(|held| held.next_retry.clone()),
        Some(None)
    );
    let not_held = fold([ShardChange::WaitingToRetry(next_retry)]);
    assert_eq!(not_held.held, None, "only a held shard waits for a retry");
}

#[test]
fn settling_or_discarding_the_held_record_releases_the_shard() {
    let read = ShardChange::Read {
        read: 4,
        filtered: 0,
        millis_behind_latest: 0,
    };
    let status = fold([read.clone(), failed("10"), handled(2, 1, "9")]);
    assert_eq!(
        status.phase,
        ShardPhase::Held,
        "a checkpoint below the held record"
    );
    assert_eq!((status.acked, status.dropped, status.unsettled), (1, 1, 2));
    let undecodable = DropCounts {
        dropped: 1,
        undecodable: 2,
    };
    let status = fold([read.clone(), settled(4, undecodable, "10")]);
    assert_eq!(
        (status.acked, status.dropped, status.undecodable),
        (1, 1, 2),
        "undecodable records are counted apart from the handler's drops"
    );
    let status = fold([read.clone(), failed("10"), handled(4, 0, "10")]);
    assert_eq!(
        (status.phase, status.held.is_none()),
        (ShardPhase::Reading, true)
    );
    let status = fold([
        read,
        failed("10"),
        ShardChange::Discarded {
            range: DiscardedRange {
                first: sequence_number("10"),
                last: sequence_number("11"),
                records: 4,
                condition: "RetryAttemptsExhausted".to_owned(),
            },
            to_destination: false,
            record: Arc::new(serde_json::json!({})),
        },
    ]);
    assert_eq!(
        (status.phase, status.discarded, status.unsettled),
        (ShardPhase::Reading, 4, 0)
    );
    assert_eq!(
        status.last_discarded.map(|range| (range.first, range.last)),
        Some((sequence_number("10"), sequence_number("11")))
    );
}

#[test]
fn a_stopped_reader_keeps_reporting_caught_up_or_held() {
    let check = |before: ShardChange<'static>, exit, expected| {
        let status = fold([
            ShardChange::Started {
                checkpoint: Checkpoint::TrimHorizon,
            },
            before,
            ShardChange::Finished(exit),
        ]);
        assert_eq!(status.phase, expected, "{exit:?}");
    };
    check(
        ShardChange::CaughtUp,
        ReaderExit::Stopped,
        ShardPhase::CaughtUp,
    );
    check(failed("1"), ReaderExit::Stopped, ShardPhase::Held);
    check(invoked(1), ReaderExit::Stopped, ShardPhase::Stopped);
    check(ShardChange::CaughtUp, ReaderExit::Ended, ShardPhase::Ended);
    check(
        ShardChange::CaughtUp,
        ReaderExit::LeaseLost,
        ShardPhase::NotOwned,
    );
    check(
        ShardChange::CaughtUp,
        ReaderExit::ShardGone,
        ShardPhase::Stopped,
    );
}

fn invocation_ended(first: &str, last: &str, verdict: InvocationVerdict) -> ShardChange<'static> {
    let end = match verdict {
        InvocationVerdict::AllAcked { .. } => InvocationEnd::Handled,
        InvocationVerdict::NotInvoked => InvocationEnd::NotInvoked,
        _ => InvocationEnd::Failed,
    };
    ShardChange::InvocationEnded {
        end,
        iterator_age_millis: 3,
        invocation: RecentInvocation {
            first: sequence_number(first),
            last: sequence_number(last),
            records: 4,
            at_epoch_millis: 1_000,
            duration_micros: 1_500,
            verdict,
            discarded: false,
        },
    }
}

#[test]
fn each_invocation_ending_is_kept_with_its_verdict_and_a_discard_marks_it() {
    let held_at_12 = InvocationVerdict::HeldAt {
        sequence_number: sequence_number("12"),
        settled: 2,
    };
    let timeout = InvocationVerdict::Timeout;
    let status = fold([
        ShardChange::Read {
            read: 4,
            filtered: 0,
            millis_behind_latest: 0,
        },
        invoked(4),
        invocation_ended("10", "13", held_at_12.clone()),
        failed("12"),
        invoked(2),
        invocation_ended("12", "13", timeout.clone()),
        ShardChange::Discarded {
            range: DiscardedRange {
                first: sequence_number("12"),
                last: sequence_number("13"),
                records: 2,
                condition: "RetryAttemptsExhausted".to_owned(),
            },
            to_destination: true,
            record: Arc::new(serde_json::json!({})),
        },
    ]);
    let kept: Vec<(&str, &InvocationVerdict, bool)> = status
        .recent_invocations
        .iter()
        .map(|invocation| {
            (
                invocation.first.as_str(),
                &invocation.verdict,
                invocation.discarded,
            )
        })
        .collect();
    assert_eq!(
        kept,
        [("10", &held_at_12, false), ("12", &timeout, true)],
        "one entry per invocation, the discarded one marked"
    );
    assert_eq!(status.invocations, 2);
    assert_eq!(status.metrics.iterator_age_millis, Some(3));
}

#[test]
fn a_shard_keeps_only_its_newest_invocations() {
    let status = fold((1..=30).map(|n| {
        let n = n.to_string();
        invocation_ended(&n, &n, InvocationVerdict::AllAcked { dropped: 0 })
    }));
    assert_eq!(status.recent_invocations.len(), RECENT_INVOCATIONS_KEPT);
    assert_eq!(
        status
            .recent_invocations
            .iter()
            .next_back()
            .map(|invocation| invocation.first.as_str()),
        Some("30")
    );
}

#[test]
fn a_lease_at_shard_end_is_ended() {
    let status = fold([ShardChange::LeaseSeen {
        parent_shard_ids: vec!["shardId-000000000000".to_owned()],
        checkpoint: Checkpoint::ShardEnd,
        lease_owner: None,
    }]);
    assert_eq!(status.phase, ShardPhase::Ended);
    assert_eq!(status.checkpoint, Some(Checkpoint::ShardEnd));
}
