//! The state directory of `run --state-dir DIR`: the embedded Kinesis and the memory lease store,
//! kept on disk so that a restarted run finds its streams, records and checkpoints again.
//!
//! Everything lives in one [redb](https://www.redb.org) database, `DIR/state.redb`, with three
//! tables: `meta` (the format version), `kinesis_journal` (the embedded Kinesis' changes, in the
//! order they were applied; see [`embedded_kinesis::Journal`]) and `leases` (each lease by key, as
//! JSON). Each change is one write transaction committed with `fsync` before the call that made
//! it returns: a `PutRecords` that answered and a checkpoint write that returned survive a
//! `kill -9`. Reads never touch the file: the state is loaded once, at start, and served from
//! memory.
//!
//! A directory written by another format version, or holding anything else, is refused with an
//! error that says so; it is never reset.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{Database, ReadableDatabase as _, ReadableTable as _, TableDefinition};

use embedded_kinesis::{EmbeddedKinesis, Journal, JournalError};
use esm_engine::lease::{Lease, LeaseError, LeaseKeeper, MemoryLeaseStore};

/// The format of the state this version writes. Any change to the tables or to how a change or
/// a lease is encoded must raise it.
pub const FORMAT_VERSION: u64 = 1;
/// The database's file name inside the state directory.
pub const DATABASE_FILE: &str = "state.redb";

const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const FORMAT_KEY: &str = "format_version";
const KINESIS_JOURNAL: TableDefinition<u64, &[u8]> = TableDefinition::new("kinesis_journal");
const LEASES: TableDefinition<&str, &[u8]> = TableDefinition::new("leases");

/// Why a state directory cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The directory holds other files and no state database: it is not a state directory.
    #[error(
        "state directory {dir} holds {found} but no {DATABASE_FILE}: it is not a kinesis-esm \
         state directory (choose an empty or new directory)"
    )]
    NotAStateDirectory {
        /// The directory.
        dir: PathBuf,
        /// One of the files it holds.
        found: String,
    },
    /// The database was written by a version with another format.
    #[error(
        "{path} holds state of format version {found}; this kinesis-esm reads version \
         {FORMAT_VERSION} only. Run the kinesis-esm that wrote it, or choose another \
         --state-dir (nothing was changed)"
    )]
    IncompatibleFormat {
        /// The database file.
        path: PathBuf,
        /// The version it records (0 when it records none).
        found: u64,
    },
    /// The state could not be read or written.
    #[error("{path}: {message}")]
    Storage {
        /// The database file or directory.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// An open state directory. Cloning is cheap: clones share the database.
#[derive(Clone)]
pub struct StateDir {
    db: Arc<Database>,
    path: PathBuf,
}

impl fmt::Debug for StateDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateDir")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl StateDir {
    /// Opens the state directory `dir`, creating it (and its database) when it does not exist.
    pub fn open(dir: &Path) -> Result<Self, StateError> {
        let path = dir.join(DATABASE_FILE);
        let storage = |path: &Path, message: String| StateError::Storage {
            path: path.to_owned(),
            message,
        };
        std::fs::create_dir_all(dir).map_err(|error| storage(dir, error.to_string()))?;
        if !path.exists() {
            let other = std::fs::read_dir(dir)
                .map_err(|error| storage(dir, error.to_string()))?
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .next();
            if let Some(found) = other {
                return Err(StateError::NotAStateDirectory {
                    dir: dir.to_owned(),
                    found,
                });
            }
        }
        let db = Database::create(&path).map_err(|error| {
            let message = match error {
                redb::DatabaseError::DatabaseAlreadyOpen => {
                    "another kinesis-esm uses this state directory".to_owned()
                }
                other => format!("not a kinesis-esm state database ({other})"),
            };
            storage(&path, message)
        })?;
        let state = Self {
            db: Arc::new(db),
            path,
        };
        state.check_format()?;
        Ok(state)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn storage(&self, error: impl fmt::Display) -> StateError {
        StateError::Storage {
            path: self.path.clone(),
            message: error.to_string(),
        }
    }

    /// Writes the format version into a new database, or checks the one an older run wrote.
    fn check_format(&self) -> Result<(), StateError> {
        let txn = self.db.begin_write().map_err(|e| self.storage(e))?;
        {
            let has_tables = txn.list_tables().map_err(|e| self.storage(e))?.count() > 0;
            let mut meta = txn.open_table(META).map_err(|e| self.storage(e))?;
            let found = meta
                .get(FORMAT_KEY)
                .map_err(|e| self.storage(e))?
                .map(|version| version.value());
            match found {
                Some(FORMAT_VERSION) => {}
                Some(found) => {
                    return Err(StateError::IncompatibleFormat {
                        path: self.path.clone(),
                        found,
                    });
                }
                None if has_tables => {
                    return Err(StateError::IncompatibleFormat {
                        path: self.path.clone(),
                        found: 0,
                    });
                }
                None => {
                    meta.insert(FORMAT_KEY, FORMAT_VERSION)
                        .map_err(|e| self.storage(e))?;
                }
            }
            txn.open_table(KINESIS_JOURNAL)
                .map_err(|e| self.storage(e))?;
            txn.open_table(LEASES).map_err(|e| self.storage(e))?;
        }
        txn.commit().map_err(|e| self.storage(e))
    }

    /// An embedded Kinesis that keeps its changes here, with every stream, shard and record an
    /// earlier run kept.
    pub fn embedded_kinesis(
        &self,
        builder: embedded_kinesis::EmbeddedKinesisBuilder,
    ) -> Result<EmbeddedKinesis, StateError> {
        let changes = self.kinesis_changes()?;
        let kinesis = builder
            .journal(Arc::new(KinesisJournal {
                state: self.clone(),
            }))
            .build();
        kinesis
            .restore(changes.iter().map(Vec::as_slice))
            .map_err(|e| self.storage(e))?;
        Ok(kinesis)
    }

    fn kinesis_changes(&self) -> Result<Vec<Vec<u8>>, StateError> {
        let txn = self.db.begin_read().map_err(|e| self.storage(e))?;
        let table = txn
            .open_table(KINESIS_JOURNAL)
            .map_err(|e| self.storage(e))?;
        table
            .iter()
            .map_err(|e| self.storage(e))?
            .map(|entry| {
                entry
                    .map(|(_, change)| change.value().to_vec())
                    .map_err(|e| self.storage(e))
            })
            .collect()
    }

    /// A memory lease store that keeps every lease here, holding the leases an earlier run
    /// kept.
    pub fn lease_store(&self) -> Result<MemoryLeaseStore, StateError> {
        let txn = self.db.begin_read().map_err(|e| self.storage(e))?;
        let table = txn.open_table(LEASES).map_err(|e| self.storage(e))?;
        let mut leases = Vec::new();
        for entry in table.iter().map_err(|e| self.storage(e))? {
            let (key, value) = entry.map_err(|e| self.storage(e))?;
            let lease: Lease = serde_json::from_slice(value.value()).map_err(|error| {
                self.storage(format!("lease {} cannot be read: {error}", key.value()))
            })?;
            leases.push(lease);
        }
        Ok(MemoryLeaseStore::kept(
            Arc::new(LeaseTable {
                state: self.clone(),
            }),
            leases,
        ))
    }
}

/// The embedded Kinesis' journal in the state database: one transaction per change.
#[derive(Debug)]
struct KinesisJournal {
    state: StateDir,
}

impl Journal for KinesisJournal {
    fn is_enabled(&self) -> bool {
        true
    }

    fn append(&self, change: &[u8]) -> Result<(), JournalError> {
        let failed = |error: &dyn fmt::Display| {
            JournalError(format!("{}: {error}", self.state.path.display()))
        };
        let txn = self.state.db.begin_write().map_err(|e| failed(&e))?;
        {
            let mut table = txn.open_table(KINESIS_JOURNAL).map_err(|e| failed(&e))?;
            // The write transaction is exclusive, so the next position is free.
            let next = table
                .last()
                .map_err(|e| failed(&e))?
                .map_or(0, |(position, _)| position.value() + 1);
            table.insert(next, change).map_err(|e| failed(&e))?;
        }
        txn.commit().map_err(|e| failed(&e))
    }
}

/// The memory lease store's leases in the state database: one transaction per write.
#[derive(Debug)]
struct LeaseTable {
    state: StateDir,
}

impl LeaseTable {
    fn write(
        &self,
        change: impl FnOnce(&mut redb::Table<'_, &str, &[u8]>) -> Result<(), redb::StorageError>,
    ) -> Result<(), LeaseError> {
        let failed = |error: &dyn fmt::Display| LeaseError::Unavailable {
            message: format!("{}: {error}", self.state.path.display()),
        };
        let txn = self.state.db.begin_write().map_err(|e| failed(&e))?;
        {
            let mut table = txn.open_table(LEASES).map_err(|e| failed(&e))?;
            change(&mut table).map_err(|e| failed(&e))?;
        }
        txn.commit().map_err(|e| failed(&e))
    }
}

impl LeaseKeeper for LeaseTable {
    fn save(&self, lease: &Lease) -> Result<(), LeaseError> {
        let json = serde_json::to_vec(lease).expect("a lease is plain data");
        self.write(|table| {
            table
                .insert(lease.lease_key.as_str(), json.as_slice())
                .map(drop)
        })
    }

    fn remove(&self, lease_key: &str) -> Result<(), LeaseError> {
        self.write(|table| table.remove(lease_key).map(drop))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use embedded_kinesis::PutRecordsEntry;
    use esm_engine::lease::{Checkpoint, LeaseStore as _};
    use kinesis_source::IteratorPosition;

    /// A new directory under the system's temporary folder, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("kinesis-esm-{name}-{}", uuid::Uuid::new_v4()));
            Self(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn kinesis_in(dir: &Path) -> EmbeddedKinesis {
        StateDir::open(dir)
            .unwrap()
            .embedded_kinesis(EmbeddedKinesis::builder())
            .unwrap()
    }

    fn every_record(kinesis: &EmbeddedKinesis, stream: &str) -> Vec<(String, String, Vec<u8>)> {
        let mut records = Vec::new();
        for shard in kinesis.list_shards(stream).unwrap() {
            let mut iterator = Some(
                kinesis
                    .get_shard_iterator(stream, &shard.shard_id, &IteratorPosition::TrimHorizon)
                    .unwrap(),
            );
            while let Some(current) = iterator {
                let read = kinesis.get_records(&current, 10_000).unwrap();
                if read.records.is_empty() && read.next_shard_iterator.is_some() {
                    break;
                }
                records.extend(read.records.into_iter().map(|record| {
                    (
                        shard.shard_id.clone(),
                        record.sequence_number.to_string(),
                        record.data.to_vec(),
                    )
                }));
                iterator = read.next_shard_iterator;
            }
        }
        records
    }

    #[test]
    fn a_reopened_state_directory_holds_the_same_streams_shards_and_records() {
        let dir = TempDir::new("reopen");
        let (before, shards_before, created) = {
            let kinesis = kinesis_in(&dir.0);
            kinesis.create_stream("orders", 2).unwrap();
            kinesis.create_stream("gone", 1).unwrap();
            let batch = (0..50)
                .map(|n| PutRecordsEntry::new(format!("key-{n}"), format!("{{\"n\":{n}}}")))
                .collect();
            kinesis.put_records("orders", batch).unwrap();
            kinesis
                .split_shard(
                    "orders",
                    "shardId-000000000000",
                    &(1_u128 << 126).to_string(),
                )
                .unwrap();
            kinesis
                .put_record("orders", PutRecordsEntry::new("after", "x"))
                .unwrap();
            kinesis
                .update_shard_count("orders", 2, embedded_kinesis::ScalingType::UniformScaling)
                .unwrap();
            kinesis.delete_stream("gone").unwrap();
            (
                every_record(&kinesis, "orders"),
                kinesis.list_shards("orders").unwrap(),
                kinesis.describe_stream_summary("orders").unwrap().created,
            )
        };
        assert_eq!(before.len(), 51);

        let kinesis = kinesis_in(&dir.0);
        assert_eq!(kinesis.list_streams(), ["orders"]);
        assert_eq!(kinesis.list_shards("orders").unwrap(), shards_before);
        assert_eq!(every_record(&kinesis, "orders"), before);
        assert_eq!(
            kinesis.describe_stream_summary("orders").unwrap().created,
            created
        );
        // Sequence numbers go on growing after a restart.
        let next = kinesis
            .put_record("orders", PutRecordsEntry::new("later", "y"))
            .unwrap();
        assert!(before.iter().all(|(_, sequence_number, _)| {
            sequence_number
                .parse::<kinesis_source::sequence::SequenceNumber>()
                .unwrap()
                < next.sequence_number
        }));
        // A stream created again under a deleted one's name has a later creation time.
        kinesis.create_stream("gone", 1).unwrap();
    }

    #[tokio::test]
    async fn a_reopened_state_directory_holds_the_leases_as_last_written() {
        let dir = TempDir::new("leases");
        let written = {
            let store = StateDir::open(&dir.0).unwrap().lease_store().unwrap();
            let lease = Lease::new("k", "shardId-000000000000", Checkpoint::TrimHorizon);
            store.create_lease_if_absent(&lease).await.unwrap();
            let gone = Lease::new("gone", "shardId-000000000001", Checkpoint::TrimHorizon);
            store.create_lease_if_absent(&gone).await.unwrap();
            store.delete_lease("gone").await.unwrap();
            let held = store.take_lease(&lease, "worker").await.unwrap();
            store
                .update_checkpoint(&held, Checkpoint::SequenceNumber("4959".parse().unwrap()))
                .await
                .unwrap()
        };
        let store = StateDir::open(&dir.0).unwrap().lease_store().unwrap();
        assert_eq!(
            store.list_leases().await.unwrap(),
            std::slice::from_ref(&written)
        );
        // The counter still fences: a writer holding the lease as it was before cannot write.
        let stale = Lease {
            lease_counter: written.lease_counter - 1,
            ..written.clone()
        };
        assert!(matches!(
            store.renew_lease(&stale).await,
            Err(LeaseError::LeaseLost { .. })
        ));
        store.renew_lease(&written).await.unwrap();
    }

    #[test]
    fn a_directory_of_another_format_or_content_is_refused_and_left_alone() {
        let dir = TempDir::new("format");
        drop(StateDir::open(&dir.0).unwrap());
        {
            let db = Database::create(dir.0.join(DATABASE_FILE)).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(META)
                .unwrap()
                .insert(FORMAT_KEY, 99)
                .unwrap();
            txn.commit().unwrap();
        }
        let error = StateDir::open(&dir.0).unwrap_err();
        assert!(
            matches!(error, StateError::IncompatibleFormat { found: 99, .. }),
            "{error}"
        );
        assert!(error.to_string().contains("format version 99"), "{error}");
        // Refusing changed nothing.
        let db = Database::create(dir.0.join(DATABASE_FILE)).unwrap();
        let txn = db.begin_read().unwrap();
        assert_eq!(
            txn.open_table(META)
                .unwrap()
                .get(FORMAT_KEY)
                .unwrap()
                .unwrap()
                .value(),
            99
        );
        drop(txn);
        drop(db);

        let other = TempDir::new("other");
        std::fs::create_dir_all(&other.0).unwrap();
        std::fs::write(other.0.join("notes.txt"), "mine").unwrap();
        let error = StateDir::open(&other.0).unwrap_err();
        assert!(
            matches!(&error, StateError::NotAStateDirectory { found, .. } if found == "notes.txt"),
            "{error}"
        );

        let garbage = TempDir::new("garbage");
        std::fs::create_dir_all(&garbage.0).unwrap();
        std::fs::write(garbage.0.join(DATABASE_FILE), "not a database at all").unwrap();
        let error = StateDir::open(&garbage.0).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("not a kinesis-esm state database"),
            "{error}"
        );
    }

    #[test]
    fn a_second_opener_is_told_the_directory_is_in_use() {
        let dir = TempDir::new("in-use");
        let _first = StateDir::open(&dir.0).unwrap();
        let error = StateDir::open(&dir.0).unwrap_err();
        assert!(
            error.to_string().contains("another kinesis-esm uses"),
            "{error}"
        );
    }
}
