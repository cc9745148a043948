//! The embedded Kinesis' throughput: AWS's per-shard and per-call limits under `--throttle`
//! ([`EmbeddedKinesisBuilder::throttle`](super::EmbeddedKinesisBuilder::throttle)), and the
//! `ON_DEMAND` streams, whose hot shards split (docs/kinesis.md, "Throughput limits" and
//! "On-demand scaling").
//!
//! The rules are pure ([`super::throttle`], [`super::on_demand`]); this module keeps their
//! state per shard and applies them to the operations that count: writes, the reads of
//! standard consumers, `GetShardIterator`, `ListShards` and `DescribeStream(Summary)`.
//! Enhanced fan-out reads through [`EmbeddedKinesis::get_records`] and is exempt from the
//! shared read limits, as on AWS.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::journal::Change;
use super::on_demand::ShardWrites;
use super::stream::{Stream, shard_id};
use super::throttle::{
    Bucket, DESCRIBE_STREAM_CALLS_PER_SECOND, DESCRIBE_STREAM_SUMMARY_CALLS_PER_SECOND,
    LIST_SHARDS_CALLS_PER_SECOND, ShardLimits,
};
use super::{EmbeddedKinesis, PutRecordOutput};
use kinesis_source::{GetRecordsOutput, IteratorPosition, SourceError};

/// A stream, told apart from earlier and later ones of the same name.
type StreamKey = (Arc<str>, u64);

/// Why one record of a `PutRecords` call was not written: its shard's write limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThroughputExceeded {
    /// The shard the record would have gone to.
    pub shard_id: String,
    /// The `ErrorMessage` AWS writes: `Rate exceeded for shard ... in stream ... under account ...`.
    pub message: String,
}

/// One record's outcome in [`EmbeddedKinesis::put_records_each`].
pub type PutRecordsResult = Result<PutRecordOutput, ThroughputExceeded>;

/// The control-plane calls whose rate AWS limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiCall {
    /// `ListShards`: 1,000 calls a second per stream.
    ListShards,
    /// `DescribeStream`: 10 calls a second per account.
    DescribeStream,
    /// `DescribeStreamSummary`: 20 calls a second per account.
    DescribeStreamSummary,
}

/// Throughput state: per-shard limits and call rates (only when throttling), and the
/// `ON_DEMAND` streams with their shards' writes.
#[derive(Debug)]
pub(crate) struct Throughput {
    pub(super) throttle: bool,
    account_id: String,
    shards: Mutex<HashMap<(StreamKey, u32), ShardLimits>>,
    list_shards: Mutex<HashMap<StreamKey, Bucket>>,
    describe_stream: Mutex<Option<Bucket>>,
    describe_stream_summary: Mutex<Option<Bucket>>,
    pub(super) on_demand: Mutex<HashMap<StreamKey, HashMap<u32, ShardWrites>>>,
}

/// Every change to these maps is one insert, removal or bucket update: a panic elsewhere
/// cannot leave one half-changed.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn key_of(stream: &Stream) -> StreamKey {
    (stream.name.clone(), stream.generation)
}

impl Throughput {
    pub(crate) fn new(throttle: bool, account_id: String) -> Self {
        Self {
            throttle,
            account_id,
            shards: Mutex::default(),
            list_shards: Mutex::default(),
            describe_stream: Mutex::default(),
            describe_stream_summary: Mutex::default(),
            on_demand: Mutex::default(),
        }
    }

    /// AWS's message for a shard's write (and `GetShardIterator`) limit.
    pub(super) fn shard_rate_message(&self, stream: &str, shard_index: u32) -> String {
        format!(
            "Rate exceeded for shard {} in stream {stream} under account {}.",
            shard_id(shard_index),
            self.account_id
        )
    }

    /// Applies `rule` to the limits of one shard, made on its first use.
    fn with_shard<T>(
        &self,
        key: &StreamKey,
        shard_index: u32,
        now_ms: u64,
        rule: impl FnOnce(&mut ShardLimits) -> T,
    ) -> T {
        let mut shards = lock(&self.shards);
        let limits = shards
            .entry((key.clone(), shard_index))
            .or_insert_with(|| ShardLimits::new(now_ms));
        rule(limits)
    }

    /// Which records (going to `shards`, of `sizes` bytes) the shards' write limits admit, in
    /// order. Once a shard refuses a record, it refuses the call's later records too, so that
    /// what fails on a shard is the tail of what the call sent it: a producer that sends the
    /// failed records again keeps each shard's order. With `all_or_nothing`, either all are
    /// admitted and charged or none is charged.
    pub(super) fn admit_writes(
        &self,
        key: &StreamKey,
        shards: &[u32],
        sizes: &[u64],
        now_ms: u64,
        all_or_nothing: bool,
    ) -> Vec<bool> {
        let mut limits = lock(&self.shards);
        // Each shard's limits as this call leaves them, and whether it refused a record yet.
        let mut trial: HashMap<u32, (ShardLimits, bool)> = HashMap::new();
        let admitted: Vec<bool> = shards
            .iter()
            .zip(sizes)
            .map(|(&shard, &size)| {
                let (shard_limits, refused) = trial.entry(shard).or_insert_with(|| {
                    let current = limits.get(&(key.clone(), shard)).copied();
                    (current.unwrap_or_else(|| ShardLimits::new(now_ms)), false)
                });
                *refused = *refused || !shard_limits.admit_write(size, now_ms);
                !*refused
            })
            .collect();
        if !all_or_nothing || admitted.iter().all(|&admitted| admitted) {
            for (shard, (shard_limits, _)) in trial {
                limits.insert((key.clone(), shard), shard_limits);
            }
        }
        admitted
    }

    /// Sets a stream's mode in memory alone; whether it changed.
    pub(super) fn mark_on_demand(&self, key: StreamKey, on_demand: bool) -> bool {
        let mut streams = lock(&self.on_demand);
        if on_demand {
            if streams.contains_key(&key) {
                return false;
            }
            streams.insert(key, HashMap::new());
            true
        } else {
            streams.remove(&key).is_some()
        }
    }

    pub(super) fn is_on_demand(&self, key: &StreamKey) -> bool {
        lock(&self.on_demand).contains_key(key)
    }

    /// Counts written bytes against the shards of an `ON_DEMAND` stream; the shards due to
    /// split.
    pub(super) fn note_writes(
        &self,
        key: &StreamKey,
        shards: &[u32],
        sizes: &[u64],
        now_ms: u64,
    ) -> Vec<u32> {
        let mut on_demand = lock(&self.on_demand);
        let Some(writes) = on_demand.get_mut(key) else {
            return Vec::new();
        };
        let mut due = Vec::new();
        for (&shard, &size) in shards.iter().zip(sizes) {
            if writes.entry(shard).or_default().record(size, now_ms) {
                due.push(shard);
            }
        }
        due
    }

    /// Forgets a stream that is gone.
    pub(crate) fn forget(&self, name: &str, generation: u64) {
        let key: StreamKey = (name.into(), generation);
        lock(&self.shards).retain(|(stream, _), _| *stream != key);
        lock(&self.list_shards).remove(&key);
        lock(&self.on_demand).remove(&key);
    }
}

impl EmbeddedKinesis {
    /// Whether `--throttle` applies AWS's throughput limits.
    pub fn throttles(&self) -> bool {
        self.inner.throughput.throttle
    }

    /// `UpdateStreamMode` and `CreateStream`'s `StreamModeDetails`, as far as the embedded
    /// Kinesis keeps them: an `ON_DEMAND` stream splits a shard whose writes pass 500 KiB/s
    /// over a minute of its clock; back in `PROVISIONED` it keeps its shards as they are.
    ///
    /// A change of mode is kept by the journal (`--state-dir`) before it is made; asking for
    /// the mode the stream has changes and keeps nothing (a template's `ON_DEMAND` stream is
    /// asked for at every start).
    pub fn set_on_demand(&self, stream: &str, on_demand: bool) -> Result<(), SourceError> {
        let found = self.stream(stream)?;
        let key = key_of(&found);
        // The mode's lock is held across the journal's write, so that two switches of one
        // stream are kept in the order they are made.
        let mut streams = lock(&self.inner.throughput.on_demand);
        if streams.contains_key(&key) == on_demand {
            return Ok(());
        }
        let journal = &self.inner.journal;
        if journal.is_enabled() {
            let change = Change::StreamMode {
                stream: found.name.to_string(),
                generation: found.generation,
                on_demand,
            };
            journal
                .append(&change.encode())
                .map_err(|error| super::not_kept("UpdateStreamMode", &found.name, &error))?;
        }
        if on_demand {
            streams.insert(key, HashMap::new());
        } else {
            streams.remove(&key);
        }
        Ok(())
    }

    /// Whether the stream is `ON_DEMAND`.
    pub fn is_on_demand(&self, stream: &str) -> Result<bool, SourceError> {
        let key = key_of(&*self.stream(stream)?);
        Ok(self.inner.throughput.is_on_demand(&key))
    }

    /// Under `--throttle`, refuses a control-plane call past AWS's rate for it
    /// (`LimitExceededException`, as AWS answers these).
    pub fn admit_api_call(&self, call: ApiCall, stream: &str) -> Result<(), SourceError> {
        let throughput = &self.inner.throughput;
        if !throughput.throttle {
            return Ok(());
        }
        let (_, now_ms) = self.now();
        let admitted = match call {
            ApiCall::ListShards => {
                let key = key_of(&*self.stream(stream)?);
                lock(&throughput.list_shards)
                    .entry(key)
                    .or_insert_with(|| Bucket::full(LIST_SHARDS_CALLS_PER_SECOND, now_ms))
                    .try_take(1, now_ms)
            }
            ApiCall::DescribeStream | ApiCall::DescribeStreamSummary => {
                let (bucket, rate) = if call == ApiCall::DescribeStream {
                    (
                        &throughput.describe_stream,
                        DESCRIBE_STREAM_CALLS_PER_SECOND,
                    )
                } else {
                    (
                        &throughput.describe_stream_summary,
                        DESCRIBE_STREAM_SUMMARY_CALLS_PER_SECOND,
                    )
                };
                lock(bucket)
                    .get_or_insert_with(|| Bucket::full(rate, now_ms))
                    .try_take(1, now_ms)
            }
        };
        if admitted {
            Ok(())
        } else {
            Err(SourceError::LimitExceeded {
                message: format!(
                    "Rate exceeded for stream {} under account {}.",
                    self.stream_name(stream)?,
                    throughput.account_id
                ),
            })
        }
    }

    /// `GetShardIterator` as a client calls it: under `--throttle`, at most 5 calls a second
    /// per shard (`ProvisionedThroughputExceededException` past that).
    pub fn get_shard_iterator_limited(
        &self,
        stream: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<String, SourceError> {
        let found = self.stream(stream)?;
        let (_, now_ms) = self.now();
        let token = found.iterator(shard_id, position, now_ms)?;
        let throughput = &self.inner.throughput;
        if throughput.throttle
            && !throughput.with_shard(&key_of(&found), token.shard_index, now_ms, |limits| {
                limits.admit_iterator(now_ms)
            })
        {
            return Err(SourceError::Throttled {
                message: throughput.shard_rate_message(&found.name, token.shard_index),
            });
        }
        Ok(token.encode())
    }

    /// `GetRecords` as a standard consumer calls it: under `--throttle`, within the shard's
    /// read limits shared by all such consumers (5 calls and 2 MiB a second; a call that
    /// returned `b` bytes keeps the next ones out for `b / 2 MiB` seconds), else
    /// `ProvisionedThroughputExceededException` and no records. Otherwise as
    /// [`get_records`](Self::get_records).
    pub fn get_records_limited(
        &self,
        shard_iterator: &str,
        limit: usize,
    ) -> Result<GetRecordsOutput, SourceError> {
        let (token, stream, now_ms) = self.iterator_stream(shard_iterator, limit)?;
        let throughput = &self.inner.throughput;
        if !throughput.throttle {
            return stream.read(&token, limit, now_ms);
        }
        let key = key_of(&stream);
        if !throughput.with_shard(&key, token.shard_index, now_ms, |limits| {
            limits.admit_read(now_ms)
        }) {
            return Err(SourceError::Throttled {
                message: format!(
                    "Rate exceeded for Shard - {}/{}/{}",
                    throughput.account_id,
                    stream.name,
                    shard_id(token.shard_index)
                ),
            });
        }
        let output = stream.read(&token, limit, now_ms)?;
        let bytes = output
            .records
            .iter()
            .map(|record| (record.data.len() + record.partition_key.len()) as u64)
            .sum();
        throughput.with_shard(&key, token.shard_index, now_ms, |limits| {
            limits.charge_read(bytes, now_ms);
        });
        Ok(output)
    }

    /// Splits a hot shard of an `ON_DEMAND` stream in two even halves, through `SplitShard`'s
    /// own code, so lineage and the journal are as for any split. A split the stream cannot
    /// take now (still `UPDATING`, the account's shard limit) is let go: the shard splits once
    /// a later minute of writes passes the rate again.
    pub(super) fn split_hot_shard(&self, stream: &Stream, shard_index: u32) {
        let (_, now_ms) = self.now();
        let id = shard_id(shard_index);
        let Some(shard) = stream
            .list_shards(now_ms)
            .into_iter()
            .find(|shard| shard.shard_id == id && shard.ending_sequence_number.is_none())
        else {
            return;
        };
        let range = shard.hash_key_range;
        if range.ending_hash_key == range.starting_hash_key {
            return;
        }
        let middle =
            range.starting_hash_key + (range.ending_hash_key - range.starting_hash_key) / 2 + 1;
        if let Err(error) = self.split_shard(&stream.name, &id, &middle.to_string()) {
            tracing::debug!(
                stream = %stream.name,
                shard = %id,
                %error,
                "an ON_DEMAND stream's hot shard could not split now"
            );
        }
    }
}

#[cfg(test)]
mod tests;
