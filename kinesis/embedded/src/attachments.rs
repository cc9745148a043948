//! What Kinesis keeps beside a stream's records: its tags, its resource policy and its
//! registered consumers (and their tags, by their ARNs). Each is kept by the stream's name and
//! creation time, so that a stream deleted and created again under the same name starts without
//! any of them. A stream's tags
//! are journaled (`stream_tags.rs`); policies, consumers and consumers' tags are not: a
//! restarted `--state-dir` run starts without them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use crate::consumer_registry::Registry;

/// The key a stream's attachments are kept by: its name and creation time.
pub(crate) type StreamKey = (String, SystemTime);

/// Every stream's tags, policy and consumers, each behind its own lock.
#[derive(Default)]
pub(crate) struct Attachments {
    tags: Mutex<HashMap<StreamKey, BTreeMap<String, String>>>,
    /// Each consumer's tags, by its ARN (which holds its creation time).
    consumer_tags: Mutex<HashMap<String, BTreeMap<String, String>>>,
    policies: Mutex<HashMap<StreamKey, String>>,
    consumers: Mutex<Registry<StreamKey>>,
}

impl Attachments {
    pub(crate) fn tags(&self) -> MutexGuard<'_, HashMap<StreamKey, BTreeMap<String, String>>> {
        // Every change to the map is a single insert or removal: a panic elsewhere cannot
        // leave it half-changed.
        self.tags.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn consumer_tags(
        &self,
    ) -> MutexGuard<'_, HashMap<String, BTreeMap<String, String>>> {
        // As for a stream's tags: each change is a single insert or removal.
        self.consumer_tags
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn policies(&self) -> MutexGuard<'_, HashMap<StreamKey, String>> {
        // As for tags: each change is a single insert or removal.
        self.policies.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn consumers(&self) -> MutexGuard<'_, Registry<StreamKey>> {
        // Each registry call finishes its change before it returns, and none panics midway.
        self.consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
