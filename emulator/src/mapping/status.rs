//! What a running mapping reports: per shard, its phase, its counters and its checkpoint.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lease::Checkpoint;
use crate::sequence::SequenceNumber;

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
    /// Records delivered to the function, counting every redelivery.
    pub delivered: u64,
    /// Records settled as handled (including drops the function did not report as such).
    pub acked: u64,
    /// Records the function reported as dropped (the `lambda-kinesis` response extension).
    pub dropped: u64,
    /// Records the mapping discarded: retries exhausted or too old (sent to the on-failure
    /// destination).
    pub discarded: u64,
    /// Records no filter of `FilterCriteria` matched: read, never delivered, passed by the
    /// checkpoint.
    #[serde(default)]
    pub filtered: u64,
    /// Invocations of the function.
    pub invocations: u64,
    /// Invocations that delivered a record again.
    pub retries: u64,
    /// The record the shard is blocked on, if any.
    pub held: Option<HeldRecord>,
    /// Records read from the shard and not settled yet.
    pub unsettled: u64,
    /// How far behind the newest record the last read ended.
    pub millis_behind_latest: u64,
}

/// A running mapping's status, as `kinesis-esm status` reads it from a running emulator.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MappingStatus {
    /// The function's name.
    pub function_name: String,
    /// The stream's name.
    pub stream_name: String,
    /// Every shard the mapping knows, by id.
    pub shards: BTreeMap<String, ShardStatus>,
    /// The records of discarded batches, as Lambda would send them to the on-failure destination.
    pub on_failure: Vec<Arc<Value>>,
    /// The last error the mapping met outside a batch (listing shards, leases), if it persists.
    pub last_error: Option<String>,
    /// Whether the coordinator has listed the shards and started their readers at least once,
    /// and knows of every lease another worker holds whether that worker still renews it (a
    /// lease left by a worker that died is taken once the failover time has passed).
    pub synced: bool,
}

impl MappingStatus {
    /// Whether there is nothing left to do until new records arrive: every shard is caught up,
    /// ended, or blocked on a held record that has been retried at least once with no retry cap
    /// (or waits behind such a shard). A held record under a retry cap is not idle: its batch
    /// is still to be discarded, after which the shard moves on.
    pub fn is_idle(&self) -> bool {
        self.synced
            && self.shards.values().all(|shard| match shard.phase {
                ShardPhase::CaughtUp
                | ShardPhase::Ended
                | ShardPhase::NotOwned
                | ShardPhase::Stopped => true,
                ShardPhase::Held => shard
                    .held
                    .as_ref()
                    .is_some_and(|held| !held.retries_capped && held.failed_deliveries >= 2),
                ShardPhase::Reading => false,
                // A child is only idle if a parent will not end soon.
                ShardPhase::WaitingOnParents => shard.parent_shard_ids.iter().any(|parent| {
                    self.shards
                        .get(parent)
                        .is_some_and(|parent| parent.phase != ShardPhase::Ended)
                }),
            })
    }

    /// The totals over every shard.
    pub fn totals(&self) -> ShardStatus {
        let mut total = ShardStatus::default();
        for shard in self.shards.values() {
            total.delivered += shard.delivered;
            total.acked += shard.acked;
            total.dropped += shard.dropped;
            total.discarded += shard.discarded;
            total.filtered += shard.filtered;
            total.invocations += shard.invocations;
            total.retries += shard.retries;
            total.unsettled += shard.unsettled;
        }
        total
    }
}

/// Something a mapping did, for observers (tests, live progress).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MappingEvent {
    /// A shard's reader started at this checkpoint.
    ShardStarted {
        /// The shard.
        shard_id: String,
        /// Where it starts.
        checkpoint: Checkpoint,
    },
    /// The function was invoked with these records.
    Invoked {
        /// The shard.
        shard_id: String,
        /// The records, in order: sequence number and partition key.
        records: Vec<(SequenceNumber, Arc<str>)>,
    },
    /// A checkpoint was written.
    Checkpointed {
        /// The shard.
        shard_id: String,
        /// The new checkpoint.
        checkpoint: Checkpoint,
    },
    /// A batch was discarded; the record is what the on-failure destination receives.
    Discarded {
        /// The shard.
        shard_id: String,
        /// The invocation record.
        record: Arc<Value>,
    },
    /// The shard reached `SHARD_END`.
    ShardEnded {
        /// The shard.
        shard_id: String,
        /// Its children.
        child_shard_ids: Vec<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
