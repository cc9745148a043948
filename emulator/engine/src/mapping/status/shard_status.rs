//! One shard's status, and the changes the coordinator and the reader report to it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::recent::{RecentInvocation, RecentInvocations};
use crate::lease::Checkpoint;
use crate::mapping::metrics::{EventCounts, InvocationEnd, ShardMetrics};
use crate::mapping::reader_exit::ReaderExit;
use crate::mapping::replay::Replayed;
use crate::response::DropCounts;
use kinesis_source::Record;
use kinesis_source::sequence::SequenceNumber;

/// Where a shard's reader stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardPhase {
    /// Not started: a parent has not reached `SHARD_END` yet.
    #[default]
    WaitingOnParents,
    /// Being read; a batch may be in flight.
    Reading,
    /// Read up to the newest record, with every record read settled.
    CaughtUp,
    /// Blocked on a held record, which it keeps retrying.
    Held,
    /// Closed, read to its end, checkpointed at `SHARD_END`.
    Ended,
    /// Held by another worker, or this worker lost its lease.
    NotOwned,
    /// The mapping stopped reading it.
    Stopped,
}

impl ShardPhase {
    /// The phase as the summary prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WaitingOnParents => "waiting on parents",
            Self::Reading => "reading",
            Self::CaughtUp => "caught up",
            Self::Held => "held",
            Self::Ended => "ended",
            Self::NotOwned => "not owned",
            Self::Stopped => "stopped",
        }
    }
}

/// A record the shard is blocked on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldRecord {
    /// The held record's sequence number.
    pub sequence_number: SequenceNumber,
    /// How many invocations have failed on it so far.
    pub failed_deliveries: u32,
    /// Why the last one failed.
    pub reason: String,
    /// Whether a retry cap (`MaximumRetryAttempts`) applies: the batch is then discarded once its
    /// retries run out, so the shard is only waiting, not stuck.
    pub retries_capped: bool,
    /// The retry the shard is pausing for, while it pauses.
    #[serde(default)]
    pub next_retry: Option<NextRetry>,
}

/// The retry a held shard pauses for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextRetry {
    /// Which retry of the held records it is, as `MaximumRetryAttempts` counts them: 1 for the
    /// first. 0 when it is not counted: the last invocation never reached the function, and no
    /// counted attempt failed on these records yet.
    pub number: u32,
    /// `MaximumRetryAttempts`; `None` for -1 (no limit).
    pub limit: Option<u32>,
    /// When it starts, in milliseconds since the Unix epoch.
    pub at_epoch_millis: i64,
}

/// The last batch a shard discarded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscardedRange {
    /// Its first record.
    pub first: SequenceNumber,
    /// Its last record.
    pub last: SequenceNumber,
    /// How many records it held.
    pub records: u64,
    /// Why it was discarded, as the on-failure record's `condition` says it
    /// (`RetryAttemptsExhausted`, `RecordAgeExceeded`).
    pub condition: String,
}

/// One shard's status.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ShardStatus {
    /// The shard's id.
    pub shard_id: String,
    /// Its parents.
    pub parent_shard_ids: Vec<String>,
    /// Where its reader stands.
    pub phase: ShardPhase,
    /// Its checkpoint, as last written.
    pub checkpoint: Option<Checkpoint>,
    /// The worker holding its lease, as last seen.
    pub lease_owner: Option<String>,
    /// Deliveries: records delivered to the function, counting every redelivery (a record
    /// delivered 3 times is 3 deliveries of 1 record).
    pub delivered: u64,
    /// Records settled as handled (including drops the function did not report as such).
    pub acked: u64,
    /// Records the handler dropped (the `lambda-kinesis` response extension).
    pub dropped: u64,
    /// Records the function dropped because it could not decode them (the `lambda-kinesis`
    /// response extension): apart from `dropped`, as they point at a producer, not a handler.
    pub undecodable: u64,
    /// Records the mapping discarded: retries exhausted or too old (sent to the on-failure
    /// destination).
    pub discarded: u64,
    /// Records no filter of `FilterCriteria` matched: read, never delivered, passed by the
    /// checkpoint.
    #[serde(default)]
    pub filtered: u64,
    /// Invocations of the function.
    pub invocations: u64,
    /// Retries counted against `MaximumRetryAttempts`: invocations that reached the function
    /// with records whose last counted attempt failed (a function error, a timeout, or an answer
    /// that settled nothing). Not counted: the halves of a bisection, the rest of a batch after
    /// a partial response (each starts with its retries afresh), and trying again after an
    /// invocation that never reached the function (`docs/event-source-mapping.md` §2).
    pub retries: u64,
    /// Batches split in halves by `BisectBatchOnFunctionError`.
    #[serde(default)]
    pub splits: u64,
    /// The last batch discarded, if any.
    #[serde(default)]
    pub last_discarded: Option<DiscardedRange>,
    /// The record the shard is blocked on, if any.
    pub held: Option<HeldRecord>,
    /// Records read from the shard and not settled yet.
    pub unsettled: u64,
    /// How far behind the newest record the last read ended.
    pub millis_behind_latest: u64,
    /// Lambda's metrics of the shard: the event counts (with `MetricsConfig`) and `IteratorAge`.
    #[serde(default)]
    pub metrics: ShardMetrics,
    /// The newest invocations, oldest first: batch range, size, duration, verdict.
    #[serde(default)]
    pub recent_invocations: RecentInvocations,
    /// The last replay (`kinesis-esm replay`), if any.
    #[serde(default)]
    pub replayed: Option<Replayed>,
}

/// Something that happens in a shard's life: the one vocabulary of a mapping's coordinator and
/// readers. They report each through `Shared::update_shard`; [`ShardStatus::apply`] is the one
/// place that turns them into the status, and `MappingEvent::of` the one place that tells
/// observers of them. A change borrows what only observers read (the invoked records), so that
/// the hot path copies nothing when nobody observes.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::mapping) enum ShardChange<'a> {
    /// The coordinator read the shard's lease.
    LeaseSeen {
        parent_shard_ids: Vec<String>,
        checkpoint: Checkpoint,
        lease_owner: Option<String>,
    },
    /// A parent has not reached `SHARD_END` yet.
    WaitingOnParents,
    /// Another worker holds the lease (or may still).
    NotOwned,
    /// This worker took the lease.
    Taken { worker_id: String },
    /// The reader starts at this checkpoint.
    Started { checkpoint: Checkpoint },
    /// A read returned `read` records, `filtered` of them removed by `FilterCriteria`.
    Read {
        read: usize,
        filtered: usize,
        millis_behind_latest: u64,
    },
    /// Every record read is settled and the shard holds nothing more for now.
    CaughtUp,
    /// The function was invoked with these records (none for a window's final invocation).
    Invoked { records: &'a [Record] },
    /// An invocation that retried held records reached the function (a counted retry).
    Retried,
    /// A failed batch was split in halves (`BisectBatchOnFunctionError`).
    Split,
    /// The shard pauses before this retry of its held records.
    WaitingToRetry(NextRetry),
    /// An invocation failed: the shard is held on `sequence_number`.
    Failed {
        sequence_number: SequenceNumber,
        reason: String,
        retries_capped: bool,
    },
    /// A checkpoint was written, settling what `settled` says.
    Checkpointed {
        checkpoint: Checkpoint,
        settled: Settled,
    },
    /// An invocation ended so (`invocation` says of which batch, how long it took and what
    /// its answer did); its batch's last record was `iterator_age_millis` old when it was sent.
    InvocationEnded {
        end: InvocationEnd,
        iterator_age_millis: u64,
        invocation: RecentInvocation,
    },
    /// These records were discarded (their checkpoint is written already), their on-failure
    /// `record` sent to the destination if `to_destination`.
    Discarded {
        range: DiscardedRange,
        to_destination: bool,
        record: Arc<Value>,
    },
    /// The shard was read to its end and its `SHARD_END` checkpoint written: its children may
    /// start. The status learns it from `Finished`; observers are told here, with the children.
    ReadToEnd { child_shard_ids: Vec<String> },
    /// The reader stopped, for this reason.
    Finished(ReaderExit),
    /// A replay moved the checkpoint back (written already): the records read and not settled
    /// are dropped from the reader's buffer, to be read again, and a held record is no longer
    /// held.
    Replayed(Replayed),
}

/// What a checkpoint write settles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::mapping) enum Settled {
    /// Nothing delivered (records the filters removed, `SHARD_END`, a discard's checkpoint).
    Nothing,
    /// `records` records up to `last`, which the function handled; `dropped` of them it
    /// reported as dropped.
    Handled {
        records: u64,
        dropped: DropCounts,
        last: SequenceNumber,
    },
}

impl ShardStatus {
    /// Applies one change.
    pub(in crate::mapping) fn apply(&mut self, change: ShardChange<'_>) {
        self.metrics.count(&change);
        match change {
            ShardChange::LeaseSeen {
                parent_shard_ids,
                checkpoint,
                lease_owner,
            } => self.apply_lease_seen(parent_shard_ids, checkpoint, lease_owner),
            ShardChange::WaitingOnParents => self.phase = ShardPhase::WaitingOnParents,
            ShardChange::NotOwned => self.phase = ShardPhase::NotOwned,
            ShardChange::Taken { worker_id } => {
                self.phase = ShardPhase::Reading;
                self.lease_owner = Some(worker_id);
            }
            ShardChange::Started { checkpoint } => {
                self.phase = ShardPhase::Reading;
                self.checkpoint = Some(checkpoint);
            }
            ShardChange::Read {
                read,
                filtered,
                millis_behind_latest,
            } => self.apply_read(read, filtered, millis_behind_latest),
            ShardChange::CaughtUp => {
                if self.held.is_none() {
                    self.phase = ShardPhase::CaughtUp;
                }
            }
            ShardChange::Invoked { records } => self.apply_invoked(records.len() as u64),
            ShardChange::Retried => self.retries += 1,
            ShardChange::Split => self.splits += 1,
            ShardChange::WaitingToRetry(next_retry) => {
                if let Some(held) = &mut self.held {
                    held.next_retry = Some(next_retry);
                }
            }
            ShardChange::Failed {
                sequence_number,
                reason,
                retries_capped,
            } => self.apply_failed(sequence_number, reason, retries_capped),
            ShardChange::Checkpointed {
                checkpoint,
                settled,
            } => self.apply_checkpointed(checkpoint, settled),
            ShardChange::InvocationEnded { invocation, .. } => {
                self.recent_invocations.push(invocation);
            }
            ShardChange::Replayed(replayed) => self.apply_replayed(replayed),
            ShardChange::Discarded { range, .. } => self.apply_discarded(range),
            ShardChange::Finished(exit) => self.apply_finished(exit),
            ShardChange::ReadToEnd { .. } => {}
        }
    }

    /// The coordinator read the shard's lease: a lease at `SHARD_END` says the shard ended.
    fn apply_lease_seen(
        &mut self,
        parent_shard_ids: Vec<String>,
        checkpoint: Checkpoint,
        lease_owner: Option<String>,
    ) {
        self.parent_shard_ids = parent_shard_ids;
        if checkpoint == Checkpoint::ShardEnd {
            self.phase = ShardPhase::Ended;
        }
        self.checkpoint = Some(checkpoint);
        self.lease_owner = lease_owner;
    }

    /// A read took in `read` records, `filtered` of them removed by `FilterCriteria`.
    fn apply_read(&mut self, read: usize, filtered: usize, millis_behind_latest: u64) {
        self.unsettled += (read - filtered) as u64;
        self.filtered += filtered as u64;
        self.millis_behind_latest = millis_behind_latest;
        if read > 0 {
            self.reading();
        }
    }

    /// The function was invoked with `records` records: a held record's pause is over.
    fn apply_invoked(&mut self, records: u64) {
        self.delivered += records;
        self.invocations += 1;
        if let Some(held) = &mut self.held {
            held.next_retry = None;
        }
        self.reading();
    }

    /// An invocation failed on `sequence_number`: the shard is held on it, counting the failures
    /// in a row on the same record.
    fn apply_failed(
        &mut self,
        sequence_number: SequenceNumber,
        reason: String,
        retries_capped: bool,
    ) {
        let failed_deliveries = match &self.held {
            Some(held) if held.sequence_number == sequence_number => held.failed_deliveries + 1,
            _ => 1,
        };
        self.phase = ShardPhase::Held;
        self.held = Some(HeldRecord {
            sequence_number,
            failed_deliveries,
            reason,
            retries_capped,
            next_retry: None,
        });
    }

    /// A checkpoint was written: what it settles is acked or dropped, and releases a hold.
    fn apply_checkpointed(&mut self, checkpoint: Checkpoint, settled: Settled) {
        self.checkpoint = Some(checkpoint);
        if let Settled::Handled {
            records,
            dropped,
            last,
        } = settled
        {
            self.acked += records - dropped.total();
            self.dropped += dropped.dropped;
            self.undecodable += dropped.undecodable;
            self.unsettled = self.unsettled.saturating_sub(records);
            self.release_held_up_to(&last);
        }
    }

    /// A replay moved the checkpoint back: nothing read is unsettled or held any more.
    fn apply_replayed(&mut self, replayed: Replayed) {
        self.unsettled = 0;
        self.held = None;
        self.checkpoint = Some(replayed.checkpoint.clone());
        self.phase = ShardPhase::Reading;
        self.replayed = Some(replayed);
    }

    /// Records were discarded: counted, marked in the recent invocations, a hold released.
    fn apply_discarded(&mut self, range: DiscardedRange) {
        self.recent_invocations
            .mark_discarded(&range.first, &range.last);
        self.discarded += range.records;
        self.unsettled = self.unsettled.saturating_sub(range.records);
        self.release_held_up_to(&range.last);
        self.last_discarded = Some(range);
    }

    /// The reader stopped for `exit`.
    fn apply_finished(&mut self, exit: ReaderExit) {
        self.phase = match exit {
            ReaderExit::Ended => ShardPhase::Ended,
            ReaderExit::LeaseLost => ShardPhase::NotOwned,
            // A shard that was caught up or held when the mapping stopped is reported so.
            ReaderExit::Stopped
                if matches!(self.phase, ShardPhase::CaughtUp | ShardPhase::Held) =>
            {
                self.phase
            }
            ReaderExit::Stopped | ReaderExit::ShardGone => ShardPhase::Stopped,
        };
    }

    /// Whether `change` would leave this status exactly as it is: the changes an idle shard
    /// repeats (an empty read at the same lag, caught up again, its lease seen unchanged by the
    /// shard sync, still not owned). The mapping tells its status' watchers of no such change
    /// (`Shared::update_shard`): an idle shard reports two a second, and a watcher woken by
    /// each one reads every shard (`MappingStatus::is_idle`, the page's snapshot), work that
    /// grew with the square of the shard count (`docs/scale.md`).
    pub(in crate::mapping) fn unchanged_by(&self, change: &ShardChange<'_>) -> bool {
        match change {
            ShardChange::Read {
                read: 0,
                filtered: 0,
                millis_behind_latest,
            } => *millis_behind_latest == self.millis_behind_latest,
            ShardChange::CaughtUp => self.held.is_some() || self.phase == ShardPhase::CaughtUp,
            ShardChange::LeaseSeen {
                parent_shard_ids,
                checkpoint,
                lease_owner,
            } => {
                self.parent_shard_ids == *parent_shard_ids
                    && self.checkpoint.as_ref() == Some(checkpoint)
                    && self.lease_owner == *lease_owner
                    && (*checkpoint != Checkpoint::ShardEnd || self.phase == ShardPhase::Ended)
            }
            ShardChange::NotOwned => self.phase == ShardPhase::NotOwned,
            ShardChange::WaitingOnParents => self.phase == ShardPhase::WaitingOnParents,
            ShardChange::ReadToEnd { .. } => true,
            _ => false,
        }
    }

    /// A shard not held on a record is reading.
    fn reading(&mut self) {
        if self.held.is_none() {
            self.phase = ShardPhase::Reading;
        }
    }

    /// Releases the hold once the held record is settled or discarded.
    fn release_held_up_to(&mut self, last: &SequenceNumber) {
        if self
            .held
            .as_ref()
            .is_some_and(|held| &held.sequence_number <= last)
        {
            self.held = None;
            self.phase = ShardPhase::Reading;
        }
    }
}

impl ShardMetrics {
    /// A shard's metrics before anything happened, counting events if `event_counts`.
    pub(in crate::mapping) fn new(event_counts: bool) -> Self {
        Self {
            event_counts: event_counts.then(EventCounts::default),
            iterator_age_millis: None,
        }
    }

    /// Counts what `change` tells.
    pub(in crate::mapping) fn count(&mut self, change: &ShardChange<'_>) {
        if let ShardChange::InvocationEnded {
            iterator_age_millis,
            ..
        } = change
        {
            self.iterator_age_millis = Some(*iterator_age_millis);
        }
        let Some(counts) = &mut self.event_counts else {
            return;
        };
        match change {
            ShardChange::Read { read, filtered, .. } => {
                counts.polled += *read as u64;
                counts.filtered_out += *filtered as u64;
            }
            ShardChange::InvocationEnded {
                end, invocation, ..
            } => {
                let records = invocation.records;
                match end {
                    InvocationEnd::Handled => counts.invoked += records,
                    InvocationEnd::Failed => {
                        counts.invoked += records;
                        counts.failed_invoke += records;
                    }
                    InvocationEnd::NotInvoked => counts.failed_invoke += records,
                }
            }
            ShardChange::Discarded {
                range,
                to_destination: true,
                ..
            } => counts.on_failure_destination_delivered += range.records,
            ShardChange::Discarded { range, .. } => counts.dropped += range.records,
            _ => {}
        }
    }
}
