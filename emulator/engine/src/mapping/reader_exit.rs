//! Why a shard reader stops, and the signal that stops its pauses early: what its coordinator,
//! checkpointer and status hear of it.

use std::future::Future;

use tokio::sync::watch;

/// Why a reader stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReaderExit {
    /// The shard was read to its end and checkpointed at `SHARD_END`.
    Ended,
    /// Another worker took the lease.
    LeaseLost,
    /// The mapping is stopping.
    Stopped,
    /// The shard or its stream no longer exists.
    ShardGone,
}

/// What ends a reader's pause early: the mapping stopping, or the lease lost.
pub(crate) fn stop_signal(
    stopping: &watch::Receiver<bool>,
    lease_lost: &watch::Receiver<bool>,
) -> impl FnMut() -> std::pin::Pin<Box<dyn Future<Output = ReaderExit> + Send>> + use<> {
    let (stopping, lease_lost) = (stopping.clone(), lease_lost.clone());
    move || {
        let (mut stopping, mut lease_lost) = (stopping.clone(), lease_lost.clone());
        Box::pin(async move {
            tokio::select! {
                biased;
                _ = stopping.wait_for(|stop| *stop) => ReaderExit::Stopped,
                _ = lease_lost.wait_for(|lost| *lost) => ReaderExit::LeaseLost,
            }
        })
    }
}
