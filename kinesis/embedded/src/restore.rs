//! Restoring an embedded Kinesis from its journal (`--state-dir`): each kept change is applied
//! again, in order, to a new and empty Kinesis.

use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use super::journal::Change;
use super::{EmbeddedKinesis, NoJournal, PutRecordsEntry, stream, throughput};
use kinesis_source::SourceError;

impl EmbeddedKinesis {
    /// Applies the changes a [`Journal`](super::Journal) kept, oldest first, to this (new, empty)
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

    fn replay(&self, change: Change) -> Result<(), SourceError> {
        // A change of a stream that was deleted (or created again) meanwhile was made on a
        // stream nobody can read any more: it is skipped, as the deletion dropped it.
        let current = |name: &str, generation: u64| {
            self.streams()
                .get(name)
                .filter(|stream| stream.generation == generation)
                .cloned()
        };
        let no_journal = &NoJournal;
        match change {
            Change::CreateStream {
                name,
                created,
                generation,
                shard_count,
                retention,
                on_demand,
            } => {
                let mut streams = self.streams_mut();
                if streams.contains_key(&name) {
                    return Err(SourceError::ResourceInUse {
                        message: format!("stream {name} is created twice"),
                    });
                }
                self.inner.budget.reserve(stream::at(shard_count))?;
                self.inner
                    .creations
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(name.clone(), created);
                self.inner
                    .generations
                    .fetch_max(generation + 1, Ordering::Relaxed);
                self.insert_stream(
                    &mut streams,
                    &name,
                    created,
                    generation,
                    shard_count,
                    retention,
                );
                if on_demand {
                    self.inner
                        .throughput
                        .mark_on_demand(throughput::key_of(&streams[&name]), true);
                }
            }
            Change::StreamMode {
                stream,
                generation,
                on_demand,
            } => {
                if let Some(stream) = current(&stream, generation) {
                    self.inner
                        .throughput
                        .mark_on_demand(throughput::key_of(&stream), on_demand);
                }
            }
            Change::DeleteStream { name, generation } => {
                if current(&name, generation).is_some() {
                    self.remove_stream(&name, no_journal)?;
                }
            }
            Change::Put {
                stream,
                generation,
                now_ms,
                records,
            } => {
                if let Some(stream) = current(&stream, generation) {
                    let (hash_keys, entries): (Vec<u128>, Vec<PutRecordsEntry>) =
                        records.into_iter().unzip();
                    stream.append(entries, &hash_keys, now_ms, no_journal)?;
                }
            }
            Change::Split {
                stream,
                generation,
                now_ms,
                shard_id,
                new_starting_hash_key,
            } => {
                if let Some(stream) = current(&stream, generation) {
                    stream.split(
                        &shard_id,
                        new_starting_hash_key,
                        &self.inner.budget,
                        now_ms,
                        no_journal,
                    )?;
                }
            }
            Change::Merge {
                stream,
                generation,
                now_ms,
                shard_id,
                adjacent_shard_id,
            } => {
                if let Some(stream) = current(&stream, generation) {
                    stream.merge(
                        &shard_id,
                        &adjacent_shard_id,
                        &self.inner.budget,
                        now_ms,
                        no_journal,
                    )?;
                }
            }
            Change::Scale {
                stream,
                generation,
                now_ms,
                target_shard_count,
            } => {
                if let Some(stream) = current(&stream, generation) {
                    stream.scale_uniformly(
                        target_shard_count,
                        &self.inner.budget,
                        now_ms,
                        no_journal,
                    )?;
                }
            }
            Change::Retention {
                stream,
                generation,
                hours,
                increase,
            } => {
                if let Some(stream) = current(&stream, generation) {
                    stream.change_retention(hours, increase, no_journal)?;
                }
            }
        }
        Ok(())
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
