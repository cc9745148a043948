//! The end of a closed shard: its children's leases, then `SHARD_END` (`docs/resharding.md`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::shard_reader::ShardReader;
use crate::backoff::RetryKind;
use crate::lease::{Checkpoint, Lease, LeaseError, LeaseStore};
use crate::mapping::coordinator::lease_key;
use crate::mapping::lineage;
use crate::mapping::reader_exit::ReaderExit;
use crate::mapping::reader_exit::stop_signal;
use crate::mapping::status::ShardChange;
use kinesis_source::{ChildShard, StreamDescription};

impl ShardReader {
    /// Finishes a closed shard read to its end: creates its children's leases, records them,
    /// and checkpoints `SHARD_END`, which lets the children start.
    pub(super) async fn end_shard(&mut self) -> ReaderExit {
        if let Err(exit) = self.finish_checkpoint().await {
            return exit;
        }
        let children = std::mem::take(&mut self.children);
        if let Err(exit) = self.wait_for_merge_parents(&children).await {
            return exit;
        }
        for child in &children {
            let mut lease = Lease::new(
                lease_key(&self.stream, &child.shard_id),
                &child.shard_id,
                Checkpoint::TrimHorizon,
            );
            lease.parent_shard_ids.clone_from(&child.parent_shards);
            lease.starting_hash_key = Some(child.hash_key_range.starting_hash_key.to_string());
            lease.ending_hash_key = Some(child.hash_key_range.ending_hash_key.to_string());
            let write = |leases: Arc<dyn LeaseStore>| {
                let lease = lease.clone();
                async move { leases.create_lease_if_absent(&lease).await.map(drop) }
            };
            if let Err(exit) = self.lease_write(write).await {
                return exit;
            }
        }
        let child_shard_ids: Vec<String> = children
            .iter()
            .map(|child| child.shard_id.clone())
            .collect();
        if !child_shard_ids.is_empty() {
            let lease = Arc::clone(&self.checkpointer.lease);
            let ids = child_shard_ids.clone();
            let write = |leases: Arc<dyn LeaseStore>| {
                let lease = Arc::clone(&lease);
                let ids = ids.clone();
                async move {
                    let mut lease = lease.lock().await;
                    *lease = leases.set_child_shard_ids(&lease, &ids).await?;
                    Ok(())
                }
            };
            let result = self.lease_write(write).await;
            if let Err(exit) = result {
                return exit;
            }
        }
        if let Err(exit) = self.checkpoint(Checkpoint::ShardEnd).await {
            return exit;
        }
        tracing::info!(shard_id = %self.shard.shard_id, children = ?child_shard_ids, "shard read to its end: SHARD_END");
        let shard_id = self.shard_id().to_owned();
        self.shared
            .update_shard(&shard_id, ShardChange::ReadToEnd { child_shard_ids });
        ReaderExit::Ended
    }

    /// Waits until the other parent of each merge child has a lease, so that the child's lease
    /// never exists before its parents' (`docs/resharding.md`).
    async fn wait_for_merge_parents(&mut self, children: &[ChildShard]) -> Result<(), ReaderExit> {
        let mut stopping = self.stopping.clone();
        for child in children {
            loop {
                let read = other_parents_leases(
                    self.shared.leases.as_ref(),
                    &self.stream,
                    self.shard_id(),
                    child,
                );
                let missing = match read.await {
                    Ok(leases) => lineage::merge_parent_without_lease(
                        self.shard_id(),
                        &child.parent_shards,
                        &leases,
                    )
                    .map(str::to_owned),
                    Err(error) => Some(format!("(reading its lease failed: {error})")),
                };
                let Some(missing) = missing else { break };
                tracing::debug!(
                    shard_id = %self.shard.shard_id,
                    child = %child.shard_id,
                    "the merge's other parent {missing} has no lease yet: waiting for it"
                );
                tokio::select! {
                    () = tokio::time::sleep(self.shared.options.poll_interval) => {}
                    _ = stopping.wait_for(|stop| *stop) => return Err(ReaderExit::Stopped),
                }
            }
        }
        Ok(())
    }

    /// Runs a lease-store write until it succeeds, pausing after failures the store may recover
    /// from; a lost lease stops the reader.
    async fn lease_write<F, Fut>(&mut self, write: F) -> Result<(), ReaderExit>
    where
        F: Fn(Arc<dyn LeaseStore>) -> Fut + Send + Sync,
        Fut: std::future::Future<Output = Result<(), LeaseError>> + Send,
    {
        let shard_id = &self.shard.shard_id;
        let lease_lost_signal = &self.checkpointer.lease_lost_signal;
        let failed = |error, _| match error {
            LeaseError::LeaseLost { .. } => {
                let _ = lease_lost_signal.send(true);
                Err(ReaderExit::LeaseLost)
            }
            error => {
                tracing::warn!(%shard_id, %error, "a lease write failed; trying again");
                Ok(RetryKind::Error)
            }
        };
        let stopped = stop_signal(&self.stopping, &self.lease_lost);
        self.shared
            .retry_backoff()
            .retry_until_stopped(|| write(Arc::clone(&self.shared.leases)), failed, stopped)
            .await
    }
}

/// The leases of `child`'s parents other than `ending`, by shard id, each read by its key: a
/// split's child has none to read. (A scan of the whole table per child, when every shard of a
/// stream ends, was work in the square of the shard count: `docs/scale.md`.)
async fn other_parents_leases(
    leases: &dyn LeaseStore,
    stream: &StreamDescription,
    ending: &str,
    child: &ChildShard,
) -> Result<BTreeMap<String, Lease>, LeaseError> {
    let mut found = BTreeMap::new();
    for parent in &child.parent_shards {
        if parent == ending {
            continue;
        }
        if let Some(lease) = leases.get_lease(&lease_key(stream, parent)).await? {
            found.insert(parent.clone(), lease);
        }
    }
    Ok(found)
}
