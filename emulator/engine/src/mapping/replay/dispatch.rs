//! Handing a replay to the readers that hold the shards' leases: the registry of running
//! readers and [`RunningMapping::replay`].

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, oneshot};

use super::{ReplayCommand, ReplayError, ReplayFrom, ReplayOutcome, check_timestamp, closed_shard};
use crate::lease::Checkpoint;
use crate::mapping::{MappingControl, MappingStatus, ShardPhase};

/// How long a request waits for a reader's answer: a reader applies a replay between batches,
/// and a batch whose record is held retries until it settles.
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// The readers running in this process, by shard, each with the channel it takes replays on.
#[derive(Default)]
pub(in crate::mapping) struct ReplayRegistry {
    readers: Mutex<HashMap<String, (u64, mpsc::Sender<ReplayCommand>)>>,
    next_id: std::sync::atomic::AtomicU64,
}

/// A reader's registration: the channel it reads, and its id (a reader that took the same
/// shard again later registers anew, and the old one's going must not remove it).
pub(in crate::mapping) struct Registration {
    pub(in crate::mapping) id: u64,
    pub(in crate::mapping) replays: mpsc::Receiver<ReplayCommand>,
}

impl ReplayRegistry {
    pub(in crate::mapping) fn register(&self, shard_id: &str) -> Registration {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (sender, replays) = mpsc::channel(4);
        self.readers().insert(shard_id.to_owned(), (id, sender));
        Registration { id, replays }
    }

    pub(in crate::mapping) fn unregister(&self, shard_id: &str, id: u64) {
        let mut readers = self.readers();
        if readers.get(shard_id).is_some_and(|(held, _)| *held == id) {
            readers.remove(shard_id);
        }
    }

    fn sender(&self, shard_id: &str) -> Option<mpsc::Sender<ReplayCommand>> {
        self.readers()
            .get(shard_id)
            .map(|(_, sender)| sender.clone())
    }

    fn readers(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (u64, mpsc::Sender<ReplayCommand>)>> {
        self.readers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a replay of a mapping did: the shards read again, and those passed over (with why).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReplayReport {
    /// The shards whose checkpoint moved.
    pub replayed: Vec<ReplayOutcome>,
    /// Shards not replayed, each with a sentence saying why (read to their end, read by
    /// another instance).
    pub passed_over: Vec<String>,
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
