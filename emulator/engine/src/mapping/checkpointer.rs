//! A shard's lease as its reader holds it: checkpoint writes, conditional on still holding it,
//! and renewals (`docs/lease-table.md`).

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{Mutex, watch};

use super::reader_exit::ReaderExit;
use super::reader_exit::stop_signal;
use crate::backoff::RetryKind;
use crate::lease::{Checkpoint, Lease, LeaseError};
use crate::mapping::shared::Shared;
use crate::mapping::status::Settled;
use crate::mapping::status::ShardChange;

/// A shard's lease as its reader holds it, and the writes that keep it: checkpoints, conditional
/// on still holding it, and renewals.
#[derive(Clone)]
pub(super) struct Checkpointer {
    pub(super) shared: Arc<Shared>,
    pub(super) shard_id: String,
    pub(super) lease: Arc<Mutex<Lease>>,
    /// When the last lease write that succeeded (the take, a checkpoint, a renewal) was sent.
    pub(super) confirmed_at: Arc<std::sync::Mutex<Instant>>,
    pub(super) stopping: watch::Receiver<bool>,
    pub(super) lease_lost_signal: watch::Sender<bool>,
}

impl Checkpointer {
    /// Whether no other worker can have taken the lease as expired: a write of it succeeded less
    /// than half the failover time ago (another worker waits the whole failover time without
    /// seeing one). A worker below its fair share may still steal it (`balance`); the next write
    /// here then fails, so an invocation started meanwhile only repeats records, never loses one.
    pub(super) fn lease_is_certainly_held(&self) -> bool {
        let confirmed_at = *self.confirmed_at.lock().unwrap();
        confirmed_at.elapsed() < self.shared.options.failover_time / 2
    }

    fn confirm(&self, sent: Instant) {
        *self.confirmed_at.lock().unwrap() = sent;
    }

    /// Writes `checkpoint`, retrying while the store is unavailable, and once it is written
    /// records it in the shard's status together with what it `settled`. A lost lease raises the
    /// reader's lease-lost signal; a stopping mapping ends the retries.
    pub(super) async fn write(
        self,
        checkpoint: Checkpoint,
        settled: Settled,
    ) -> Result<(), ReaderExit> {
        let attempt = || async {
            let mut lease = self.lease.lock().await;
            let sent = Instant::now();
            let updated = self
                .shared
                .leases
                .update_checkpoint(&lease, checkpoint.clone())
                .await?;
            *lease = updated;
            self.confirm(sent);
            Ok(())
        };
        let failed = |error, _| match error {
            LeaseError::LeaseLost { .. } => {
                tracing::warn!(shard_id = %self.shard_id, "the lease was taken by another worker: this reader stops");
                let _ = self.lease_lost_signal.send(true);
                Err(ReaderExit::LeaseLost)
            }
            error => {
                tracing::warn!(shard_id = %self.shard_id, %error, "writing the checkpoint failed; trying again");
                Ok(RetryKind::Error)
            }
        };
        let stopped = stop_signal(&self.stopping, &self.lease_lost_signal.subscribe());
        self.shared
            .retry_backoff()
            .retry_until_stopped(attempt, failed, stopped)
            .await?;
        self.shared.update_shard(
            &self.shard_id,
            ShardChange::Checkpointed {
                checkpoint,
                settled,
            },
        );
        Ok(())
    }
}

/// Renews the lease every third of the failover time, as the KCL does, until the lease is lost.
pub(super) async fn renew(checkpointer: Checkpointer) {
    let period = checkpointer.shared.options.failover_time / 3;
    loop {
        tokio::time::sleep(period).await;
        let mut lease = checkpointer.lease.lock().await;
        let sent = Instant::now();
        match checkpointer.shared.leases.renew_lease(&lease).await {
            Ok(renewed) => {
                *lease = renewed;
                checkpointer.confirm(sent);
            }
            Err(LeaseError::LeaseLost { .. }) => {
                tracing::warn!(shard_id = %lease.shard_id, "the lease was lost: its reader stops");
                let _ = checkpointer.lease_lost_signal.send(true);
                return;
            }
            Err(error) => {
                tracing::warn!(shard_id = %lease.shard_id, %error, "renewing the lease failed")
            }
        }
    }
}
