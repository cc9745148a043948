//! The embedded Kinesis' throughput: AWS's per-shard and per-call limits under `--throttle`
//! ([`EmbeddedKinesisBuilder::throttle`](crate::embedded::EmbeddedKinesisBuilder::throttle)), and the
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

use super::on_demand::ShardWrites;
use super::stream::{Stream, shard_id};
use super::throttle::{Bucket, ShardLimits};
use crate::entries::PutRecordOutput;

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

/// One record's outcome in [`EmbeddedKinesis::put_records_each`](crate::EmbeddedKinesis::put_records_each).
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
    pub(crate) throttle: bool,
    pub(crate) account_id: String,
    pub(crate) shards: Mutex<HashMap<(StreamKey, u32), ShardLimits>>,
    pub(crate) list_shards: Mutex<HashMap<StreamKey, Bucket>>,
    pub(crate) describe_stream: Mutex<Option<Bucket>>,
    pub(crate) describe_stream_summary: Mutex<Option<Bucket>>,
    pub(crate) on_demand: Mutex<HashMap<StreamKey, HashMap<u32, ShardWrites>>>,
}

/// Every change to these maps is one insert, removal or bucket update: a panic elsewhere
/// cannot leave one half-changed.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
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
    pub(crate) fn with_shard<T>(
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

#[cfg(test)]
mod tests;
