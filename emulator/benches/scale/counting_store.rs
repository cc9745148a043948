//! A lease store that counts each call by kind and hands it to the store it wraps: the scale
//! bench counts at the `LeaseStore` boundary, adding nothing to the product's path.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use kinesis_esm::lease::{Checkpoint, Lease, LeaseError, LeaseStore};

/// Where each kind of call is in [`Counts::snapshot`].
pub(crate) const SCANS: usize = 0;
pub(crate) const SCANNED_ITEMS: usize = 1;
pub(crate) const GETS: usize = 2;
pub(crate) const CREATES: usize = 3;
pub(crate) const TAKES: usize = 4;
pub(crate) const RENEWALS: usize = 5;
pub(crate) const CHECKPOINTS: usize = 6;
pub(crate) const OTHER_WRITES: usize = 7;

/// Calls to the lease store, by kind.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    /// `list_leases`: the shard sync's scan of the table (and, before `docs/scale.md`'s fix, a
    /// shard end's look for its merge child's other parent).
    scans: AtomicU64,
    /// Leases those scans returned: the items DynamoDB read.
    scanned_items: AtomicU64,
    gets: AtomicU64,
    creates: AtomicU64,
    takes: AtomicU64,
    renewals: AtomicU64,
    checkpoints: AtomicU64,
    /// Child shard ids written, gives-up (evictions) and deletions.
    other_writes: AtomicU64,
}

impl Counts {
    /// Every count, at the indices [`SCANS`] to [`OTHER_WRITES`].
    pub(crate) fn snapshot(&self) -> [u64; 8] {
        [
            &self.scans,
            &self.scanned_items,
            &self.gets,
            &self.creates,
            &self.takes,
            &self.renewals,
            &self.checkpoints,
            &self.other_writes,
        ]
        .map(|count| count.load(Ordering::Relaxed))
    }
}

/// A lease store that counts each call and hands it to `inner`.
pub(crate) struct CountingStore {
    inner: Arc<dyn LeaseStore>,
    counts: Arc<Counts>,
}

impl CountingStore {
    pub(crate) fn new(inner: Arc<dyn LeaseStore>, counts: &Arc<Counts>) -> Self {
        Self {
            inner,
            counts: Arc::clone(counts),
        }
    }
}

fn bump(count: &AtomicU64) {
    count.fetch_add(1, Ordering::Relaxed);
}

#[async_trait]
impl LeaseStore for CountingStore {
    async fn list_leases(&self) -> Result<Vec<Lease>, LeaseError> {
        bump(&self.counts.scans);
        let leases = self.inner.list_leases().await?;
        self.counts
            .scanned_items
            .fetch_add(leases.len() as u64, Ordering::Relaxed);
        Ok(leases)
    }

    async fn get_lease(&self, lease_key: &str) -> Result<Option<Lease>, LeaseError> {
        bump(&self.counts.gets);
        self.inner.get_lease(lease_key).await
    }

    async fn create_lease_if_absent(&self, lease: &Lease) -> Result<bool, LeaseError> {
        bump(&self.counts.creates);
        self.inner.create_lease_if_absent(lease).await
    }

    async fn take_lease(&self, lease: &Lease, owner: &str) -> Result<Lease, LeaseError> {
        bump(&self.counts.takes);
        self.inner.take_lease(lease, owner).await
    }

    async fn renew_lease(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        bump(&self.counts.renewals);
        self.inner.renew_lease(lease).await
    }

    async fn update_checkpoint(
        &self,
        lease: &Lease,
        checkpoint: Checkpoint,
    ) -> Result<Lease, LeaseError> {
        bump(&self.counts.checkpoints);
        self.inner.update_checkpoint(lease, checkpoint).await
    }

    async fn set_child_shard_ids(
        &self,
        lease: &Lease,
        child_shard_ids: &[String],
    ) -> Result<Lease, LeaseError> {
        bump(&self.counts.other_writes);
        self.inner.set_child_shard_ids(lease, child_shard_ids).await
    }

    async fn evict_lease(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        bump(&self.counts.other_writes);
        self.inner.evict_lease(lease).await
    }

    async fn delete_lease(&self, lease_key: &str) -> Result<(), LeaseError> {
        bump(&self.counts.other_writes);
        self.inner.delete_lease(lease_key).await
    }
}
