//! Where idempotency records live: the [`Store`] seam, and the in-memory store.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::SystemTime;

use crate::record::{IdempotencyRecord, may_take};

/// What taking a key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Take {
    /// The key is this invocation's: the in-progress item is written.
    Taken,
    /// The key is not free: the item that kept it, read in the same request.
    Held(IdempotencyRecord),
}

/// A store failed; the text says which request, on which key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{operation}{} failed: {message}", for_key(.id))]
pub struct StoreError {
    /// The request that failed, such as "DynamoDB PutItem on table idempotency".
    pub operation: String,
    /// The key it was for; empty for a request about the table itself.
    pub id: String,
    /// What the store said.
    pub message: String,
}

/// " for idempotency key K", or nothing for a request about the table itself.
fn for_key(id: &str) -> String {
    if id.is_empty() {
        String::new()
    } else {
        format!(" for idempotency key {id}")
    }
}

/// A store of idempotency records: one item per key.
///
/// Taking a key is one conditional write that returns the item in the way when it fails, so a
/// duplicate costs one request (see `docs/idempotency.md`).
pub trait Store: Send + Sync + 'static {
    /// Writes `record` (in progress) if [`may_take`] allows it at `now`; otherwise returns the item
    /// that holds the key.
    fn take(
        &self,
        record: &IdempotencyRecord,
        now: SystemTime,
    ) -> impl Future<Output = Result<Take, StoreError>> + Send;

    /// Stores the completed `record`, replacing the in-progress item.
    fn complete(
        &self,
        record: &IdempotencyRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the item of `id`, so that the next delivery runs the handler again.
    fn release(&self, id: &str) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Records in this process's memory: for unit tests and the testing kit, where a test needs
/// the wrapper's behaviour without a server. It forgets everything when the process ends, so it
/// protects nothing across execution environments.
#[derive(Debug, Default)]
pub struct MemoryStore {
    items: Mutex<HashMap<String, IdempotencyRecord>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The item of `id`, if any: for tests.
    pub fn get(&self, id: &str) -> Option<IdempotencyRecord> {
        self.lock().get(id).cloned()
    }

    /// Writes `record` as it stands, as another invocation would have: for tests.
    pub fn put(&self, record: IdempotencyRecord) {
        self.lock().insert(record.id.clone(), record);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, IdempotencyRecord>> {
        // A panic while the lock is held cannot leave a map half-written: every write is one insert.
        self.items
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Store for MemoryStore {
    async fn take(&self, record: &IdempotencyRecord, now: SystemTime) -> Result<Take, StoreError> {
        let mut items = self.lock();
        let existing = items.get(&record.id);
        if !may_take(existing, now) {
            let existing = existing.cloned().expect("only an item keeps a key");
            return Ok(Take::Held(existing));
        }
        items.insert(record.id.clone(), record.clone());
        Ok(Take::Taken)
    }

    async fn complete(&self, record: &IdempotencyRecord) -> Result<(), StoreError> {
        self.lock().insert(record.id.clone(), record.clone());
        Ok(())
    }

    async fn release(&self, id: &str) -> Result<(), StoreError> {
        self.lock().remove(id);
        Ok(())
    }
}

impl<S: Store> Store for std::sync::Arc<S> {
    fn take(
        &self,
        record: &IdempotencyRecord,
        now: SystemTime,
    ) -> impl Future<Output = Result<Take, StoreError>> + Send {
        (**self).take(record, now)
    }

    fn complete(
        &self,
        record: &IdempotencyRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).complete(record)
    }

    fn release(&self, id: &str) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).release(id)
    }
}
