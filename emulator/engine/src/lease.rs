//! Leases and checkpoints: one record per shard, in the vocabulary of the KCL lease table.
//!
//! Every write that changes a lease is conditional on the `lease_counter` the writer last saw,
//! as DynamoDB conditional writes are: an instance whose lease was taken (the counter moved on)
//! can never move the checkpoint again. [`MemoryLeaseStore`] keeps leases in memory and starts
//! empty, unless a [`LeaseKeeper`] (the state directory, `run --state-dir`) keeps them on disk
//! too; the DynamoDB store keeps them in a table that outlives the process.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use kinesis_source::sequence::SequenceNumber;

/// Where a shard's consumer stands: the last record it settled, or a sentinel.
///
/// A checkpoint at a sequence number means "every record up to and including this one is
/// settled": a consumer resumes *after* it (`AFTER_SEQUENCE_NUMBER`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Checkpoint {
    /// Nothing settled yet; start at the oldest record. Child shards start here.
    TrimHorizon,
    /// Nothing settled yet; start after the newest record.
    Latest,
    /// Nothing settled yet; start at the mapping's starting timestamp.
    AtTimestamp,
    /// Every record up to and including this one is settled.
    SequenceNumber(SequenceNumber),
    /// The shard is closed and every record of it is settled: its children may start.
    ShardEnd,
}

impl Checkpoint {
    /// The KCL's text for the checkpoint: a sequence number or a sentinel name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::TrimHorizon => "TRIM_HORIZON",
            Self::Latest => "LATEST",
            Self::AtTimestamp => "AT_TIMESTAMP",
            Self::ShardEnd => "SHARD_END",
            Self::SequenceNumber(sequence_number) => sequence_number.as_str(),
        }
    }

    /// Whether nothing has been settled yet (a sentinel other than `SHARD_END`).
    pub fn is_initial(&self) -> bool {
        matches!(self, Self::TrimHorizon | Self::Latest | Self::AtTimestamp)
    }
}

impl serde::Serialize for Checkpoint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Checkpoint {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Checkpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Text that is neither a sequence number nor a checkpoint sentinel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a checkpoint (a sequence number, TRIM_HORIZON, LATEST, AT_TIMESTAMP or SHARD_END)"
)]
pub struct InvalidCheckpoint(pub String);

impl FromStr for Checkpoint {
    type Err = InvalidCheckpoint;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text {
            "TRIM_HORIZON" => Self::TrimHorizon,
            "LATEST" => Self::Latest,
            "AT_TIMESTAMP" => Self::AtTimestamp,
            "SHARD_END" => Self::ShardEnd,
            digits => Self::SequenceNumber(
                digits
                    .parse()
                    .map_err(|_| InvalidCheckpoint(text.to_owned()))?,
            ),
        })
    }
}

/// One shard's lease: who processes it and how far it got. Field names follow the KCL lease
/// table (`leaseKey`, `leaseOwner`, `leaseCounter`, `checkpoint`, `parentShardId`, ...).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The lease's key: `<account>:<stream>:<stream creation epoch seconds>:<shard id>`, the KCL's
    /// multi-stream form, so a stream created again under the same name gets new leases.
    pub lease_key: String,
    /// The shard's id.
    pub shard_id: String,
    /// The worker holding the lease, if any.
    pub lease_owner: Option<String>,
    /// The lease's version: every write adds one. A writer names the counter it last saw, and
    /// the write fails if the lease has moved on since (fencing).
    pub lease_counter: u64,
    /// Where the shard's consumer stands.
    pub checkpoint: Checkpoint,
    /// The KPL sub-record index of the checkpoint (always 0 here: records are not aggregated).
    pub checkpoint_sub_sequence_number: u64,
    /// How many times the lease changed hands since the last checkpoint.
    pub owner_switches_since_checkpoint: u64,
    /// The shard's parents (one after a split, two after a merge).
    pub parent_shard_ids: Vec<String>,
    /// The shard's children, written when it reaches its end.
    pub child_shard_ids: Vec<String>,
    /// The shard's first hash key, as a decimal string.
    pub starting_hash_key: Option<String>,
    /// The shard's last hash key, as a decimal string.
    pub ending_hash_key: Option<String>,
}

impl Lease {
    /// A new, unowned lease for a shard, at `checkpoint`.
    pub fn new(
        lease_key: impl Into<String>,
        shard_id: impl Into<String>,
        checkpoint: Checkpoint,
    ) -> Self {
        Self {
            lease_key: lease_key.into(),
            shard_id: shard_id.into(),
            lease_owner: None,
            lease_counter: 0,
            checkpoint,
            checkpoint_sub_sequence_number: 0,
            owner_switches_since_checkpoint: 0,
            parent_shard_ids: Vec::new(),
            child_shard_ids: Vec::new(),
            starting_hash_key: None,
            ending_hash_key: None,
        }
    }
}

/// Why a lease operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseError {
    /// The lease changed since this writer last saw it (another worker took or renewed it, or it
    /// was deleted): this writer no longer holds it and must stop processing its shard.
    #[error("lease {lease_key} was lost: its counter is no longer {expected_counter}")]
    LeaseLost {
        /// The lease's key.
        lease_key: String,
        /// The counter the writer expected.
        expected_counter: u64,
    },
    /// The store refused or failed the call (throttled, unavailable); it may succeed later.
    #[error("the lease store failed: {message}")]
    Unavailable {
        /// What went wrong.
        message: String,
    },
    /// The store holds something that is not a lease (a bad checkpoint, a missing attribute).
    #[error("lease {lease_key} is malformed: {message}")]
    Malformed {
        /// The lease's key.
        lease_key: String,
        /// What is wrong with it.
        message: String,
    },
}

/// A table of leases with conditional writes.
///
/// Each write names the lease as the writer last saw it and succeeds only if its
/// `lease_counter` is unchanged in the store; it returns the lease as now stored (counter plus
/// one). A write against a changed or missing lease fails with [`LeaseError::LeaseLost`].
#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// Every lease in the table.
    async fn list_leases(&self) -> Result<Vec<Lease>, LeaseError>;

    /// The lease with this key, if any.
    async fn get_lease(&self, lease_key: &str) -> Result<Option<Lease>, LeaseError>;

    /// Stores `lease` unless a lease with its key exists. Returns whether it was created.
    async fn create_lease_if_absent(&self, lease: &Lease) -> Result<bool, LeaseError>;

    /// Takes `lease` (as last seen) for `owner`: sets the owner, adds one to the counter, and
    /// counts an owner switch if the owner changes.
    async fn take_lease(&self, lease: &Lease, owner: &str) -> Result<Lease, LeaseError>;

    /// Renews a held lease: adds one to the counter, so other workers see it is alive.
    async fn renew_lease(&self, lease: &Lease) -> Result<Lease, LeaseError>;

    /// Moves a held lease's checkpoint and resets its owner switches.
    async fn update_checkpoint(
        &self,
        lease: &Lease,
        checkpoint: Checkpoint,
    ) -> Result<Lease, LeaseError>;

    /// Records a shard's children on its lease, at its end.
    async fn set_child_shard_ids(
        &self,
        lease: &Lease,
        child_shard_ids: &[String],
    ) -> Result<Lease, LeaseError>;

    /// Gives a held lease up: removes the owner, so another worker may take it at once.
    async fn evict_lease(&self, lease: &Lease) -> Result<Lease, LeaseError>;

    /// Deletes a lease (a finished parent whose children have started).
    async fn delete_lease(&self, lease_key: &str) -> Result<(), LeaseError>;
}

/// Keeps a [`MemoryLeaseStore`]'s leases somewhere that outlives the process.
///
/// The store calls it under its lock, before it changes the lease in memory, and fails the
/// write if it fails: when a write returns `Ok`, the keeper has the lease as written.
pub trait LeaseKeeper: Send + Sync + fmt::Debug {
    /// Keeps `lease` (new or changed) under its key.
    fn save(&self, lease: &Lease) -> Result<(), LeaseError>;
    /// Forgets the lease with this key.
    fn remove(&self, lease_key: &str) -> Result<(), LeaseError>;
}

/// Leases in memory: the default store. It starts empty, so a restarted emulator opens each shard
/// where the mapping's `StartingPosition` says; [`MemoryLeaseStore::kept`] makes one whose
/// leases a [`LeaseKeeper`] keeps, so that a restarted emulator resumes at its checkpoints.
#[derive(Debug, Default)]
pub struct MemoryLeaseStore {
    leases: Mutex<BTreeMap<String, Lease>>,
    keeper: Option<Arc<dyn LeaseKeeper>>,
}

impl MemoryLeaseStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding `leases` (what `keeper` kept before), that has `keeper` keep every
    /// write from now on.
    pub fn kept(keeper: Arc<dyn LeaseKeeper>, leases: Vec<Lease>) -> Self {
        Self {
            leases: Mutex::new(
                leases
                    .into_iter()
                    .map(|lease| (lease.lease_key.clone(), lease))
                    .collect(),
            ),
            keeper: Some(keeper),
        }
    }

    /// Applies `change` to the stored lease if its counter is still `seen.lease_counter`.
    fn update(&self, seen: &Lease, change: impl FnOnce(&mut Lease)) -> Result<Lease, LeaseError> {
        let mut leases = self.leases.lock().expect("the lease map is never poisoned");
        let lost = || LeaseError::LeaseLost {
            lease_key: seen.lease_key.clone(),
            expected_counter: seen.lease_counter,
        };
        let stored = leases.get_mut(&seen.lease_key).ok_or_else(lost)?;
        if stored.lease_counter != seen.lease_counter {
            return Err(lost());
        }
        let mut changed = stored.clone();
        change(&mut changed);
        changed.lease_counter += 1;
        if let Some(keeper) = &self.keeper {
            keeper.save(&changed)?;
        }
        *stored = changed.clone();
        Ok(changed)
    }
}

#[async_trait]
impl LeaseStore for MemoryLeaseStore {
    async fn list_leases(&self) -> Result<Vec<Lease>, LeaseError> {
        let leases = self.leases.lock().expect("the lease map is never poisoned");
        Ok(leases.values().cloned().collect())
    }

    async fn get_lease(&self, lease_key: &str) -> Result<Option<Lease>, LeaseError> {
        let leases = self.leases.lock().expect("the lease map is never poisoned");
        Ok(leases.get(lease_key).cloned())
    }

    async fn create_lease_if_absent(&self, lease: &Lease) -> Result<bool, LeaseError> {
        let mut leases = self.leases.lock().expect("the lease map is never poisoned");
        if leases.contains_key(&lease.lease_key) {
            return Ok(false);
        }
        if let Some(keeper) = &self.keeper {
            keeper.save(lease)?;
        }
        leases.insert(lease.lease_key.clone(), lease.clone());
        Ok(true)
    }

    async fn take_lease(&self, lease: &Lease, owner: &str) -> Result<Lease, LeaseError> {
        self.update(lease, |stored| {
            if stored.lease_owner.as_deref() != Some(owner) {
                stored.owner_switches_since_checkpoint += 1;
            }
            stored.lease_owner = Some(owner.to_owned());
        })
    }

    async fn renew_lease(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.update(lease, |_| {})
    }

    async fn update_checkpoint(
        &self,
        lease: &Lease,
        checkpoint: Checkpoint,
    ) -> Result<Lease, LeaseError> {
        self.update(lease, |stored| {
            stored.checkpoint = checkpoint;
            stored.owner_switches_since_checkpoint = 0;
        })
    }

    async fn set_child_shard_ids(
        &self,
        lease: &Lease,
        child_shard_ids: &[String],
    ) -> Result<Lease, LeaseError> {
        self.update(lease, |stored| {
            stored.child_shard_ids = child_shard_ids.to_vec()
        })
    }

    async fn evict_lease(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.update(lease, |stored| stored.lease_owner = None)
    }

    async fn delete_lease(&self, lease_key: &str) -> Result<(), LeaseError> {
        let mut leases = self.leases.lock().expect("the lease map is never poisoned");
        if let Some(keeper) = &self.keeper {
            keeper.remove(lease_key)?;
        }
        leases.remove(lease_key);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sequence(digits: &str) -> Checkpoint {
        Checkpoint::SequenceNumber(digits.parse().unwrap())
    }

    #[tokio::test]
    async fn a_taken_lease_fences_its_former_owner() {
        let store = MemoryLeaseStore::new();
        let lease = Lease::new("k", "shardId-000000000000", Checkpoint::TrimHorizon);
        assert!(store.create_lease_if_absent(&lease).await.unwrap());
        assert!(!store.create_lease_if_absent(&lease).await.unwrap());

        let held_by_a = store.take_lease(&lease, "a").await.unwrap();
        let held_by_b = store.take_lease(&held_by_a, "b").await.unwrap();
        assert_eq!(held_by_b.owner_switches_since_checkpoint, 2);

        let error = store
            .update_checkpoint(&held_by_a, sequence("5"))
            .await
            .unwrap_err();
        assert_eq!(
            error,
            LeaseError::LeaseLost {
                lease_key: "k".into(),
                expected_counter: held_by_a.lease_counter
            }
        );
        let moved = store
            .update_checkpoint(&held_by_b, sequence("5"))
            .await
            .unwrap();
        assert_eq!(moved.checkpoint, sequence("5"));
        assert_eq!(moved.owner_switches_since_checkpoint, 0);
        assert_eq!(store.get_lease("k").await.unwrap(), Some(moved));
    }

    #[tokio::test]
    async fn a_deleted_lease_cannot_be_written() {
        let store = MemoryLeaseStore::new();
        let lease = Lease::new("k", "s", Checkpoint::TrimHorizon);
        store.create_lease_if_absent(&lease).await.unwrap();
        store.delete_lease("k").await.unwrap();
        assert!(matches!(
            store.renew_lease(&lease).await,
            Err(LeaseError::LeaseLost { .. })
        ));
        assert!(store.list_leases().await.unwrap().is_empty());
    }

    #[test]
    fn checkpoints_read_and_write_the_kcl_text() {
        for text in [
            "TRIM_HORIZON",
            "LATEST",
            "AT_TIMESTAMP",
            "SHARD_END",
            "4959",
        ] {
            assert_eq!(text.parse::<Checkpoint>().unwrap().as_str(), text);
        }
        assert!("SHARD-END".parse::<Checkpoint>().is_err());
    }
}
