//! One interception wrapper for every seam of kinesis-esm a test wants to watch or hold:
//! [`Intercepted`] passes every call to the implementation it wraps and runs its hooks around
//! the calls tests intercept, so a test writes only the hooks it needs.
//!
//! - [`ShardSource`]: hooks around `get_records` ([`SourceHooks`]).
//! - [`Invoker`]: hooks around `invoke` ([`InvokerHooks`]).
//! - [`LeaseStore`]: hooks around every write ([`LeaseHooks`], the write named by
//!   [`LeaseChange`]); reads pass through.
//!
//! The wrapper derefs to its hooks, so what a hook keeps (counts, channels, gates) is read
//! through the wrapper the mapping was given.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use kinesis_esm::invoke::{Invocation, InvokeError, InvokeOutcome, Invoker};
use kinesis_esm::lease::{Checkpoint, Lease, LeaseError, LeaseStore};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::{
    GetRecordsOutput, IteratorPosition, Shard, ShardSource, SourceError, StreamDescription,
};

/// `inner` with `hooks` run around the calls they intercept.
pub struct Intercepted<I: ?Sized, H> {
    inner: Arc<I>,
    hooks: H,
}

impl<I: ?Sized, H> Intercepted<I, H> {
    /// Passes every call to `inner`, running `hooks` around the intercepted ones.
    pub fn new(inner: Arc<I>, hooks: H) -> Self {
        Self { inner, hooks }
    }
}

impl<I: ?Sized, H> Deref for Intercepted<I, H> {
    type Target = H;

    fn deref(&self) -> &H {
        &self.hooks
    }
}

/// What runs around a [`ShardSource`]'s `get_records`. Both hooks do nothing unless written.
pub trait SourceHooks: Send + Sync {
    /// Runs as the call is handed to the inner source.
    fn before_get_records(&self) {}

    /// Runs with the inner source's answer, before it is returned.
    fn after_get_records(&self, output: &Result<GetRecordsOutput, SourceError>) {
        let _ = output;
    }
}

#[async_trait]
impl<I, H> ShardSource for Intercepted<I, H>
where
    I: ShardSource + ?Sized,
    H: SourceHooks,
{
    async fn describe_stream(&self, stream: &str) -> Result<StreamDescription, SourceError> {
        self.inner.describe_stream(stream).await
    }

    async fn list_shards(&self, stream: &str) -> Result<Vec<Shard>, SourceError> {
        self.inner.list_shards(stream).await
    }

    async fn shard_iterator(
        &self,
        stream: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<String, SourceError> {
        self.inner.shard_iterator(stream, shard_id, position).await
    }

    async fn get_records(
        &self,
        shard_iterator: &str,
        limit: usize,
    ) -> Result<GetRecordsOutput, SourceError> {
        self.hooks.before_get_records();
        let output = self.inner.get_records(shard_iterator, limit).await;
        self.hooks.after_get_records(&output);
        output
    }

    async fn wait_for_records(
        &self,
        stream: &str,
        shard_id: &str,
        after: Option<&SequenceNumber>,
        timeout: Duration,
    ) {
        self.inner
            .wait_for_records(stream, shard_id, after, timeout)
            .await;
    }

    fn pushes_records(&self) -> bool {
        self.inner.pushes_records()
    }

    async fn release_shard(&self, stream: &str, shard_id: &str) {
        self.inner.release_shard(stream, shard_id).await;
    }
}

/// What runs around an [`Invoker`]'s `invoke`. `before_invoke` returns a note (an instant, a
/// count) that `after_invoke` receives with the answer.
pub trait InvokerHooks: Send + Sync {
    /// What `before_invoke` hands to `after_invoke`; `()` when nothing.
    type Note: Default + Send;

    /// Runs as the invocation is handed to the inner invoker.
    fn before_invoke(&self, invocation: &Invocation) -> Self::Note {
        let _ = invocation;
        Self::Note::default()
    }

    /// Runs with the inner invoker's answer, before it is returned.
    fn after_invoke(&self, note: Self::Note, outcome: &Result<InvokeOutcome, InvokeError>) {
        let _ = (note, outcome);
    }
}

#[async_trait]
impl<I, H> Invoker for Intercepted<I, H>
where
    I: Invoker + ?Sized,
    H: InvokerHooks,
{
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeOutcome, InvokeError> {
        let note = self.hooks.before_invoke(&invocation);
        let outcome = self.inner.invoke(invocation).await;
        self.hooks.after_invoke(note, &outcome);
        outcome
    }

    async fn shutdown(&self) {
        self.inner.shutdown().await;
    }
}

/// A write to a [`LeaseStore`], as [`LeaseHooks`] see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseChange {
    /// `create_lease_if_absent`.
    Create,
    /// `take_lease` by this owner.
    Take(String),
    /// `renew_lease`.
    Renew,
    /// `update_checkpoint` to this checkpoint.
    Checkpoint(Checkpoint),
    /// `set_child_shard_ids`.
    ChildShardIds(Vec<String>),
    /// `evict_lease`.
    Evict,
    /// `delete_lease`.
    Delete,
}

/// What runs around each write to a [`LeaseStore`]. `before_write` may wait (to hold a write
/// until a test lets it through) and returns a note that `after_write` receives.
#[async_trait]
pub trait LeaseHooks: Send + Sync {
    /// What `before_write` hands to `after_write`; `()` when nothing.
    type Note: Default + Send;

    /// Runs before the write to `lease_key` is handed to the inner store.
    async fn before_write(&self, lease_key: &str, change: &LeaseChange) -> Self::Note {
        let _ = (lease_key, change);
        Self::Note::default()
    }

    /// Runs with the inner store's answer (`None` when the write succeeded), before it is
    /// returned.
    fn after_write(
        &self,
        note: Self::Note,
        lease_key: &str,
        change: LeaseChange,
        error: Option<&LeaseError>,
    ) {
        let _ = (note, lease_key, change, error);
    }
}

impl<I: LeaseStore + ?Sized, H: LeaseHooks> Intercepted<I, H> {
    /// Runs `write` on the inner store between the hooks.
    async fn write<T: Send>(
        &self,
        lease_key: &str,
        change: LeaseChange,
        write: impl Future<Output = Result<T, LeaseError>> + Send,
    ) -> Result<T, LeaseError> {
        let note = self.hooks.before_write(lease_key, &change).await;
        let result = write.await;
        self.hooks
            .after_write(note, lease_key, change, result.as_ref().err());
        result
    }
}

#[async_trait]
impl<I, H> LeaseStore for Intercepted<I, H>
where
    I: LeaseStore + ?Sized,
    H: LeaseHooks,
{
    async fn list_leases(&self) -> Result<Vec<Lease>, LeaseError> {
        self.inner.list_leases().await
    }

    async fn get_lease(&self, lease_key: &str) -> Result<Option<Lease>, LeaseError> {
        self.inner.get_lease(lease_key).await
    }

    async fn create_lease_if_absent(&self, lease: &Lease) -> Result<bool, LeaseError> {
        let write = self.inner.create_lease_if_absent(lease);
        self.write(&lease.lease_key, LeaseChange::Create, write)
            .await
    }

    async fn take_lease(&self, lease: &Lease, owner: &str) -> Result<Lease, LeaseError> {
        let change = LeaseChange::Take(owner.to_owned());
        let write = self.inner.take_lease(lease, owner);
        self.write(&lease.lease_key, change, write).await
    }

    async fn renew_lease(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let write = self.inner.renew_lease(lease);
        self.write(&lease.lease_key, LeaseChange::Renew, write)
            .await
    }

    async fn update_checkpoint(
        &self,
        lease: &Lease,
        checkpoint: Checkpoint,
    ) -> Result<Lease, LeaseError> {
        let change = LeaseChange::Checkpoint(checkpoint.clone());
        let write = self.inner.update_checkpoint(lease, checkpoint);
        self.write(&lease.lease_key, change, write).await
    }

    async fn set_child_shard_ids(
        &self,
        lease: &Lease,
        child_shard_ids: &[String],
    ) -> Result<Lease, LeaseError> {
        let change = LeaseChange::ChildShardIds(child_shard_ids.to_vec());
        let write = self.inner.set_child_shard_ids(lease, child_shard_ids);
        self.write(&lease.lease_key, change, write).await
    }

    async fn evict_lease(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let write = self.inner.evict_lease(lease);
        self.write(&lease.lease_key, LeaseChange::Evict, write)
            .await
    }

    async fn delete_lease(&self, lease_key: &str) -> Result<(), LeaseError> {
        let write = self.inner.delete_lease(lease_key);
        self.write(lease_key, LeaseChange::Delete, write).await
    }
}
