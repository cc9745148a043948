//! A running mapping as the control endpoint sees it (`kinesis-esm replay`, `/readyz`): a
//! handle that outlives no task and stops nothing.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{oneshot, watch};

use crate::lease::Checkpoint;
use crate::mapping::coordinator::RunningMapping;
use crate::mapping::replay::{
    ReplayCommand, ReplayError, ReplayFrom, ReplayReport, check_timestamp, closed_shard,
};
use crate::mapping::shared::Shared;
use crate::mapping::status::{MappingStatus, ShardPhase};

/// A lease key no lease has: reading it asks the lease store whether it answers, without
/// reading the whole table.
const READINESS_PROBE_KEY: &str = "kinesis-esm:readiness-probe";

/// How long a replay request waits for a reader's answer: a reader applies a replay between
/// batches, and a batch whose record is held retries until it settles.
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// A handle on a running mapping for the control endpoint: its function and stream, replays,
/// and whether its stream and lease store answer.
#[derive(Clone)]
pub struct MappingControl {
    pub(super) shared: Arc<Shared>,
    pub(super) status: watch::Receiver<MappingStatus>,
}

impl RunningMapping {
    /// A handle for the control endpoint.
    pub fn control(&self) -> MappingControl {
        MappingControl {
            shared: Arc::clone(&self.shared),
            status: self.status.clone(),
        }
    }
}

impl MappingControl {
    /// The mapped function's name.
    pub fn function_name(&self) -> &str {
        &self.shared.config.function_name
    }

    /// The stream's name.
    pub fn stream_name(&self) -> &str {
        &self.shared.config.stream_name
    }

    /// Whether the mapping has seen a lease of a shard of this id.
    pub fn has_shard(&self, shard_id: &str) -> bool {
        self.status.borrow().shards.contains_key(shard_id)
    }

    /// Whether the mapping can work now: its stream answers `DescribeStream` and its lease
    /// store answers a read. The error is a sentence naming what does not answer.
    pub async fn check_ready(&self) -> Result<(), String> {
        let stream = self.stream_name();
        let function = self.function_name();
        self.shared
            .source
            .describe_stream(stream)
            .await
            .map_err(|error| {
                format!("{function} <- {stream}: the stream does not answer: {error}")
            })?;
        self.shared
            .leases
            .get_lease(READINESS_PROBE_KEY)
            .await
            .map_err(|error| {
                format!("{function} <- {stream}: the lease store does not answer: {error}")
            })?;
        Ok(())
    }
}

impl MappingControl {
    /// Reads `shard_id` (every shard this instance reads, when `None`) again from `from`: each
    /// shard's reader, which holds its lease, moves the checkpoint back with a fenced
    /// checkpoint write and reads on from there (`mapping::replay`).
    pub async fn replay(
        &self,
        shard_id: Option<&str>,
        from: ReplayFrom,
    ) -> Result<ReplayReport, ReplayError> {
        if let ReplayFrom::Timestamp(at) = &from {
            check_timestamp(*at, SystemTime::now())?;
        }
        let status = self.status.borrow().clone();
        let one_shard = shard_id.is_some();
        let targets: Vec<String> = match shard_id {
            Some(shard_id) => vec![shard_id.to_owned()],
            None => status.shards.keys().cloned().collect(),
        };
        let mut report = ReplayReport::default();
        for shard_id in targets {
            if !status.shards.contains_key(&shard_id) {
                return Err(ReplayError(format!(
                    "stream {} has no shard {shard_id} (its shards: {})",
                    status.stream_name,
                    status.shards.keys().cloned().collect::<Vec<_>>().join(", ")
                )));
            }
            let Some(sender) = self.shared.replay_registry.sender(&shard_id) else {
                let why = not_read_here(&status, &shard_id);
                if one_shard {
                    return Err(why);
                }
                report.passed_over.push(why.0);
                continue;
            };
            let (answer, answered) = oneshot::channel();
            let command = ReplayCommand {
                from: from.clone(),
                answer,
            };
            if sender.send(command).await.is_err() {
                return Err(ReplayError(format!(
                    "shard {shard_id}: its reader stopped before it took the replay; try again"
                )));
            }
            match tokio::time::timeout(ANSWER_WAIT, answered).await {
                Ok(Ok(Ok(outcome))) => report.replayed.push(outcome),
                Ok(Ok(Err(refused))) if one_shard => return Err(refused),
                Ok(Ok(Err(refused))) => report.passed_over.push(refused.0),
                Ok(Err(_)) => {
                    return Err(ReplayError(format!(
                        "shard {shard_id}: its reader stopped (the lease was lost, or the run \
                         stops) before it moved the checkpoint"
                    )));
                }
                Err(_) => {
                    return Err(ReplayError(format!(
                        "shard {shard_id}: its reader has not come to the replay within {}s: a \
                         batch is still in flight (a held record retrying?); it applies the \
                         replay once that batch settles",
                        ANSWER_WAIT.as_secs()
                    )));
                }
            }
        }
        Ok(report)
    }
}

/// Why this instance does not replay `shard_id`: read to its end, or read elsewhere.
fn not_read_here(status: &MappingStatus, shard_id: &str) -> ReplayError {
    let Some(shard) = status.shards.get(shard_id) else {
        return ReplayError(format!(
            "stream {} has no shard {shard_id}",
            status.stream_name
        ));
    };
    if shard.checkpoint == Some(Checkpoint::ShardEnd) || shard.phase == ShardPhase::Ended {
        let children: Vec<String> = status
            .shards
            .values()
            .filter(|child| {
                child
                    .parent_shard_ids
                    .iter()
                    .any(|parent| parent == shard_id)
            })
            .map(|child| child.shard_id.clone())
            .collect();
        return closed_shard(shard_id, &children);
    }
    let why = match (&shard.phase, &shard.lease_owner) {
        (ShardPhase::WaitingOnParents, _) => {
            "it waits for its parents to be read to their end".to_owned()
        }
        (_, Some(owner)) => format!("its lease is held by worker {owner}"),
        _ => "no reader of this instance holds its lease yet".to_owned(),
    };
    ReplayError(format!(
        "shard {shard_id} is not read by this instance: {why}; replay it where it is read"
    ))
}
