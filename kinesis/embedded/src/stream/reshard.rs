//! The operations that change a stream's shards: splitting, merging and scaling. Each closes its
//! parents and opens their children under the stream's one lock, so a reader sees the old shards
//! or the new ones, never half a reshard.

use super::{ShardBudget, ShardState, Stream, StreamState, at};
use crate::MAX_SHARDS_PER_STREAM;
use crate::hash_key;
use crate::journal::{Change, Journal};
use kinesis_source::{HashKeyRange, SourceError};

impl Stream {
    /// Closes `parents` and returns the counter their children start at.
    fn close(state: &mut StreamState, parents: &[u32], now_ms: u64) -> u64 {
        let ending_counter = state.next_counter;
        for &parent in parents {
            let shard = &mut state.shards[at(parent)];
            shard.ending_counter = Some(ending_counter);
            shard.closed_ms = Some(now_ms);
            shard.signal.send_modify(|()| ());
        }
        state.next_counter = ending_counter + 1;
        state.next_counter
    }

    fn add_shard(
        state: &mut StreamState,
        parents: (Option<u32>, Option<u32>),
        range: HashKeyRange,
        starting_counter: u64,
    ) -> u32 {
        let index = u32::try_from(state.shards.len()).expect("shard counts are limited");
        state
            .shards
            .push(ShardState::new(index, parents, range, starting_counter));
        index
    }

    fn open_position(state: &StreamState, index: u32) -> usize {
        state
            .open
            .iter()
            .position(|&open| open == index)
            .expect("an open shard is in the open list")
    }

    /// Splits open shard `index` at `new_starting_hash_key`, known to lie strictly inside it.
    fn split_at(state: &mut StreamState, index: u32, new_starting_hash_key: u128, now_ms: u64) {
        let range = state.shards[at(index)].range;
        let starting_counter = Self::close(state, &[index], now_ms);
        let lower = Self::add_shard(
            state,
            (Some(index), None),
            HashKeyRange {
                starting_hash_key: range.starting_hash_key,
                ending_hash_key: new_starting_hash_key - 1,
            },
            starting_counter,
        );
        let upper = Self::add_shard(
            state,
            (Some(index), None),
            HashKeyRange {
                starting_hash_key: new_starting_hash_key,
                ending_hash_key: range.ending_hash_key,
            },
            starting_counter,
        );
        state.shards[at(index)].children = vec![lower, upper];
        let position = Self::open_position(state, index);
        state.open.splice(position..=position, [lower, upper]);
    }

    /// Merges open shards `parent` and `adjacent`, known to be adjacent, into one child whose
    /// `ParentShardId` is `parent` and `AdjacentParentShardId` is `adjacent`.
    fn merge_pair(state: &mut StreamState, parent: u32, adjacent: u32, now_ms: u64) {
        let (first, second) = (
            state.shards[at(parent)].range,
            state.shards[at(adjacent)].range,
        );
        let range = HashKeyRange {
            starting_hash_key: first.starting_hash_key.min(second.starting_hash_key),
            ending_hash_key: first.ending_hash_key.max(second.ending_hash_key),
        };
        let starting_counter = Self::close(state, &[parent, adjacent], now_ms);
        let child = Self::add_shard(
            state,
            (Some(parent), Some(adjacent)),
            range,
            starting_counter,
        );
        state.shards[at(parent)].children = vec![child];
        state.shards[at(adjacent)].children = vec![child];
        let lower = if first.starting_hash_key < second.starting_hash_key {
            parent
        } else {
            adjacent
        };
        let position = Self::open_position(state, lower);
        state.open.splice(position..=position + 1, [child]);
    }

    /// `SplitShard`.
    pub(crate) fn split(
        &self,
        shard_to_split: &str,
        new_starting_hash_key: u128,
        budget: &ShardBudget,
        now_ms: u64,
        journal: &dyn Journal,
    ) -> Result<(), SourceError> {
        let mut state = self.lock();
        let index = self.find_open_shard(&state, shard_to_split, now_ms)?;
        let range = state.shards[at(index)].range;
        if new_starting_hash_key <= range.starting_hash_key
            || new_starting_hash_key > range.ending_hash_key
        {
            return Err(SourceError::InvalidArgument {
                message: format!(
                    "NewStartingHashKey {new_starting_hash_key} used in SplitShard on shard \
                     {shard_to_split} in {} must lie above the shard's starting hash key and \
                     within its range [{}, {}]",
                    self.described(),
                    range.starting_hash_key,
                    range.ending_hash_key
                ),
            });
        }
        budget.reserve(1)?;
        let kept = self.keep(journal, "SplitShard", || Change::Split {
            stream: self.name.to_string(),
            generation: self.generation,
            now_ms,
            shard_id: shard_to_split.to_owned(),
            new_starting_hash_key,
        });
        if let Err(error) = kept {
            budget.release(1);
            return Err(error);
        }
        Self::split_at(&mut state, index, new_starting_hash_key, now_ms);
        Ok(())
    }

    /// `MergeShards`.
    pub(crate) fn merge(
        &self,
        shard_to_merge: &str,
        adjacent_shard_to_merge: &str,
        budget: &ShardBudget,
        now_ms: u64,
        journal: &dyn Journal,
    ) -> Result<(), SourceError> {
        let mut state = self.lock();
        let parent = self.find_open_shard(&state, shard_to_merge, now_ms)?;
        let adjacent = self.find_open_shard(&state, adjacent_shard_to_merge, now_ms)?;
        let (first, second) = (
            state.shards[at(parent)].range,
            state.shards[at(adjacent)].range,
        );
        let touches = |low: HashKeyRange, high: HashKeyRange| {
            low.ending_hash_key.checked_add(1) == Some(high.starting_hash_key)
        };
        if !touches(first, second) && !touches(second, first) {
            return Err(SourceError::InvalidArgument {
                message: format!(
                    "Shards {shard_to_merge} and {adjacent_shard_to_merge} in {} are not an \
                     adjacent pair of shards eligible for merging",
                    self.described()
                ),
            });
        }
        self.keep(journal, "MergeShards", || Change::Merge {
            stream: self.name.to_string(),
            generation: self.generation,
            now_ms,
            shard_id: shard_to_merge.to_owned(),
            adjacent_shard_id: adjacent_shard_to_merge.to_owned(),
        })?;
        Self::merge_pair(&mut state, parent, adjacent, now_ms);
        budget.release(1);
        Ok(())
    }

    /// `UpdateShardCount` with uniform scaling, done as Kinesis does it: by splits and merges
    /// of single shards, so every new shard has real parents. First every open shard that
    /// straddles a boundary of the target layout is split there; then the open shards inside
    /// each target range are merged pairwise, left to right, until one covers it. Short-lived
    /// shards appear on the way, as they do in Kinesis. Returns the open shard count before.
    pub(crate) fn scale_uniformly(
        &self,
        target_shard_count: u32,
        budget: &ShardBudget,
        now_ms: u64,
        journal: &dyn Journal,
    ) -> Result<u32, SourceError> {
        let mut state = self.lock();
        let current = u32::try_from(state.open.len()).expect("shard counts are limited");
        let refuse = |message: String| Err(SourceError::LimitExceeded { message });
        if target_shard_count == 0 {
            return Err(SourceError::InvalidArgument {
                message: format!(
                    "TargetShardCount for {} must be at least 1",
                    self.described()
                ),
            });
        }
        if u64::from(target_shard_count) > 2 * u64::from(current) {
            return refuse(format!(
                "UpdateShardCount cannot scale {} from {current} to {target_shard_count} open \
                 shards: more than double the current count",
                self.described()
            ));
        }
        if 2 * u64::from(target_shard_count) < u64::from(current) {
            return refuse(format!(
                "UpdateShardCount cannot scale {} from {current} to {target_shard_count} open \
                 shards: below half the current count",
                self.described()
            ));
        }
        if target_shard_count > MAX_SHARDS_PER_STREAM {
            return refuse(format!(
                "UpdateShardCount cannot scale {} to {target_shard_count} shards: the limit is \
                 {MAX_SHARDS_PER_STREAM} shards per stream",
                self.described()
            ));
        }
        if target_shard_count > current {
            budget.reserve(at(target_shard_count - current))?;
        }
        let kept = self.keep(journal, "UpdateShardCount", || Change::Scale {
            stream: self.name.to_string(),
            generation: self.generation,
            now_ms,
            target_shard_count,
        });
        if let Err(error) = kept {
            if target_shard_count > current {
                budget.release(at(target_shard_count - current));
            }
            return Err(error);
        }
        if target_shard_count < current {
            budget.release(at(current - target_shard_count));
        }

        let targets = hash_key::uniform_ranges(target_shard_count);
        for target in &targets[1..] {
            let boundary = target.starting_hash_key;
            let position = state
                .open
                .partition_point(|&open| state.shards[at(open)].range.ending_hash_key < boundary);
            let straddling = state.open[position];
            if state.shards[at(straddling)].range.starting_hash_key != boundary {
                Self::split_at(&mut state, straddling, boundary, now_ms);
            }
        }
        for target in &targets {
            loop {
                let position = state.open.partition_point(|&open| {
                    state.shards[at(open)].range.starting_hash_key < target.starting_hash_key
                });
                let first = state.open[position];
                if state.shards[at(first)].range.ending_hash_key == target.ending_hash_key {
                    break;
                }
                let second = state.open[position + 1];
                Self::merge_pair(&mut state, first, second, now_ms);
            }
        }
        Ok(current)
    }
}
