//! The embedded Kinesis' calls under AWS's throughput limits (`--throttle`): reads, iterators,
//! writes and API calls admitted by [`crate::throughput`]'s state, and hot on-demand shards split.

use std::collections::HashMap;

use crate::embedded::EmbeddedKinesis;
use crate::journal::Change;
use crate::stream::{Stream, shard_id};
use crate::throttle::{
    Bucket, DESCRIBE_STREAM_CALLS_PER_SECOND, DESCRIBE_STREAM_SUMMARY_CALLS_PER_SECOND,
    LIST_SHARDS_CALLS_PER_SECOND,
};
use crate::throughput::{ApiCall, key_of, lock};
use kinesis_source::{GetRecordsOutput, IteratorPosition, SourceError};

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
            journal.append(&change.encode()).map_err(|error| {
                crate::embedded::not_kept("UpdateStreamMode", &found.name, &error)
            })?;
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
