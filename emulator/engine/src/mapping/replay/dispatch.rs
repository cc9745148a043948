//! The registry of the readers running in this process, which replays are handed to (by
//! `MappingControl::replay`).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use tokio::sync::mpsc;

use super::rules::ReplayCommand;

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

    /// The channel of the reader of `shard_id` running in this process, if any.
    pub(in crate::mapping) fn sender(&self, shard_id: &str) -> Option<mpsc::Sender<ReplayCommand>> {
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
