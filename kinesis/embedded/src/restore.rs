//! Restoring an embedded Kinesis from its journal (`--state-dir`): each kept change is applied
//! again, in order, to a new and empty Kinesis.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, SystemTime};

use super::journal::Change;
use super::stream::{self, Stream};
use super::throughput;
use crate::embedded::EmbeddedKinesis;
use crate::entries::PutRecordsEntry;
use crate::journal::NoJournal;
use kinesis_source::SourceError;

impl EmbeddedKinesis {
    /// Applies the changes a [`Journal`](crate::journal::Journal) kept, oldest first, to this (new, empty)
    /// Kinesis: the streams, shards, records and sequence numbers come back as they were. Nothing
    /// is written to the journal meanwhile. Returns how many changes were applied.
    ///
    /// A change that cannot be read or applied fails the whole restore: the journal was written
    /// by something else, and carrying on would silently lose or reorder records.
    pub fn restore<'a>(
        &self,
        changes: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<usize, RestoreError> {
        let mut applied = 0;
        for (position, bytes) in changes.into_iter().enumerate() {
            let broken = |reason: String| RestoreError { position, reason };
            let change = Change::decode(bytes).map_err(broken)?;
            self.replay(change)
                .map_err(|error| broken(error.to_string()))?;
            applied += 1;
        }
        Ok(applied)
    }

    /// Applies one kept change through the code that made it. A change of a stream that was
    /// deleted (or created again) meanwhile was made on a stream nobody can read any more: it
    /// is skipped, as the deletion dropped it.
    fn replay(&self, change: Change) -> Result<(), SourceError> {
        let Some((name, generation)) = change.stream_and_generation() else {
            if let Change::Account { commitment } = change {
                *self.commitment() = commitment;
            }
            return Ok(());
        };
        match (self.current(name, generation), change) {
            (Some(stream), change) => self.replay_on(&stream, change),
            (
                None,
                Change::CreateStream {
                    name,
                    created,
                    generation,
                    shard_count,
                    retention,
                    on_demand,
                },
            ) => {
                let creation = (created, generation, shard_count, retention);
                self.replay_creation(&name, creation, on_demand)
            }
            (None, _) => Ok(()),
        }
    }

    /// Applies a change made to `stream`, which exists as the change found it.
    fn replay_on(&self, stream: &Stream, change: Change) -> Result<(), SourceError> {
        let (no_journal, budget) = (&NoJournal, &self.inner.budget);
        match change {
            Change::CreateStream { name, .. } => Err(created_twice(&name)),
            Change::DeleteStream { name, .. } => {
                // The stream's tags go with it, as `DeleteStream` drops them.
                let key = (stream.name.to_string(), stream.created);
                self.attachments().tags().remove(&key);
                self.remove_stream(&name, no_journal)
            }
            Change::StreamMode { on_demand, .. } => {
                let key = throughput::key_of(stream);
                self.inner.throughput.mark_on_demand(key, on_demand);
                Ok(())
            }
            Change::Put {
                now_ms, records, ..
            } => {
                let (hash_keys, entries): (Vec<u128>, Vec<PutRecordsEntry>) =
                    records.into_iter().unzip();
                stream.append(entries, &hash_keys, now_ms, no_journal)?;
                Ok(())
            }
            Change::Split {
                now_ms,
                shard_id,
                new_starting_hash_key,
                ..
            } => stream.split(&shard_id, new_starting_hash_key, budget, now_ms, no_journal),
            Change::Merge {
                now_ms,
                shard_id,
                adjacent_shard_id,
                ..
            } => stream.merge(&shard_id, &adjacent_shard_id, budget, now_ms, no_journal),
            Change::Scale {
                now_ms,
                target_shard_count,
                ..
            } => stream
                .scale_uniformly(target_shard_count, budget, now_ms, no_journal)
                .map(drop),
            Change::Retention {
                hours, increase, ..
            } => stream.change_retention(hours, increase, no_journal),
            Change::Settings { settings, .. } => {
                *stream.settings() = settings;
                Ok(())
            }
            Change::Tags { tags, .. } => {
                let key = (stream.name.to_string(), stream.created);
                let mut kept = self.attachments().tags();
                if tags.is_empty() {
                    kept.remove(&key);
                } else {
                    kept.insert(key, tags);
                }
                Ok(())
            }
            Change::Account { .. } => Ok(()),
        }
    }

    /// The stream `name` if it is still the one of `generation`.
    fn current(&self, name: &str, generation: u64) -> Option<Arc<Stream>> {
        self.streams()
            .get(name)
            .filter(|stream| stream.generation == generation)
            .cloned()
    }

    /// Creates a stream again as it was created, with its creation time and generation, so
    /// that its sequence numbers and ARN come back the same.
    fn replay_creation(
        &self,
        name: &str,
        (created, generation, shard_count, retention): (SystemTime, u64, u32, Duration),
        on_demand: bool,
    ) -> Result<(), SourceError> {
        let mut streams = self.streams_mut();
        if streams.contains_key(name) {
            return Err(created_twice(name));
        }
        self.inner.budget.reserve(stream::at(shard_count))?;
        self.inner
            .creations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), created);
        self.inner
            .generations
            .fetch_max(generation + 1, Ordering::Relaxed);
        self.insert_stream(
            &mut streams,
            name,
            created,
            generation,
            shard_count,
            retention,
        );
        if on_demand {
            self.inner
                .throughput
                .mark_on_demand(throughput::key_of(&streams[name]), true);
        }
        Ok(())
    }
}

/// A journal that creates a stream whose name is taken was not written by this Kinesis.
fn created_twice(name: &str) -> SourceError {
    SourceError::ResourceInUse {
        message: format!("stream {name} is created twice"),
    }
}

/// A journal that [`EmbeddedKinesis::restore`] could not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("change {position} of the journal cannot be applied: {reason}")]
pub struct RestoreError {
    /// Which change (0 for the oldest).
    pub position: usize,
    /// Why not.
    pub reason: String,
}
