//! A running mapping's status (its shards' statuses) and the events it tells observers.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::shard_status::{ShardChange, ShardPhase, ShardStatus};
use crate::invoke::{EnvironmentInFlight, Invoker};
use crate::lease::Checkpoint;
use crate::mapping::metrics::EventCounts;
use kinesis_source::sequence::SequenceNumber;

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
    /// The mapping's on-failure destination (`DestinationConfig.OnFailure.Destination`: a
    /// resource's logical id or an ARN), if it has one.
    #[serde(default)]
    pub on_failure_destination: Option<String>,
    /// Where each record of `on_failure` was delivered (a file, a message, an object), in order.
    #[serde(default)]
    pub on_failure_deliveries: Vec<String>,
    /// Why the last delivery to the on-failure destination failed, while its shard waits to try
    /// again.
    #[serde(default)]
    pub destination_error: Option<String>,
    /// The last error the mapping met outside a batch (listing shards, leases), if it persists.
    pub last_error: Option<String>,
    /// Whether the coordinator has listed the shards and started their readers at least once,
    /// and knows of every lease another worker holds whether that worker still renews it (a
    /// lease left by a worker that died is taken once the failover time has passed).
    pub synced: bool,
    /// Whether the mapping counts Lambda's event-count metrics (`MetricsConfig`).
    #[serde(default)]
    pub event_count_metrics: bool,
    /// For a function on Lambda Managed Instances, its execution environments running when the
    /// status was read, each with its invocations in flight. The mapping never fills it: the
    /// function's invoker knows, and whoever serves the status asks it
    /// ([`MappingStatus::with_environments`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environments: Vec<EnvironmentInFlight>,
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
            total.undecodable += shard.undecodable;
            total.discarded += shard.discarded;
            total.filtered += shard.filtered;
            total.invocations += shard.invocations;
            total.retries += shard.retries;
            total.splits += shard.splits;
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

impl MappingEvent {
    /// What observers are told of `change` to shard `shard_id`, if it is one they hear of. Made
    /// only when someone observes: the invoked records' list costs a copy per record.
    pub(in crate::mapping) fn of(shard_id: &str, change: &ShardChange<'_>) -> Option<Self> {
        let shard_id = shard_id.to_owned();
        Some(match change {
            ShardChange::Started { checkpoint } => Self::ShardStarted {
                shard_id,
                checkpoint: checkpoint.clone(),
            },
            // A window's final invocation carries no record: nothing to observe of it.
            ShardChange::Invoked { records } if !records.is_empty() => Self::Invoked {
                shard_id,
                records: records
                    .iter()
                    .map(|record| {
                        let key = Arc::clone(&record.partition_key);
                        (record.sequence_number.clone(), key)
                    })
                    .collect(),
            },
            ShardChange::Checkpointed { checkpoint, .. } => Self::Checkpointed {
                shard_id,
                checkpoint: checkpoint.clone(),
            },
            ShardChange::Discarded { record, .. } => Self::Discarded {
                shard_id,
                record: Arc::clone(record),
            },
            ShardChange::ReadToEnd { child_shard_ids } => Self::ShardEnded {
                shard_id,
                child_shard_ids: child_shard_ids.clone(),
            },
            _ => return None,
        })
    }
}

impl MappingStatus {
    /// The status with the environments `invoker` runs now, each with its invocations in
    /// flight (none unless the function is on Lambda Managed Instances).
    #[must_use]
    pub fn with_environments(mut self, invoker: &dyn Invoker) -> Self {
        self.environments = invoker.environments_in_flight();
        self
    }

    /// The mapping's event counts, the sum over its shards (Lambda's metrics are per mapping);
    /// `None` unless its `MetricsConfig` asks for them.
    pub fn event_counts(&self) -> Option<EventCounts> {
        if !self.event_count_metrics {
            return None;
        }
        let mut total = EventCounts::default();
        for counts in self
            .shards
            .values()
            .filter_map(|shard| shard.metrics.event_counts.as_ref())
        {
            total.add(counts);
        }
        Some(total)
    }
}
