//! The operations that change a stream's shards, as the API takes them: `SplitShard`,
//! `MergeShards` and `UpdateShardCount`. Each is a change to an `ACTIVE` stream (which then
//! shows `UPDATING` for the status delay); the work is done under the stream's lock by
//! `stream/reshard.rs`.

use std::str::FromStr;

use super::{EmbeddedKinesis, hash_key};
use kinesis_source::SourceError;

/// How `UpdateShardCount` scales (`ScalingType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalingType {
    /// `UNIFORM_SCALING`: the new shards split the hash key space evenly.
    UniformScaling,
}

impl FromStr for ScalingType {
    type Err = SourceError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "UNIFORM_SCALING" => Ok(Self::UniformScaling),
            _ => Err(SourceError::InvalidArgument {
                message: format!("ScalingType `{text}` is not one of [UNIFORM_SCALING]"),
            }),
        }
    }
}

/// What `UpdateShardCount` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateShardCountOutput {
    /// The stream's name.
    pub stream_name: String,
    /// The stream's ARN.
    pub stream_arn: String,
    /// How many shards were open before.
    pub current_shard_count: u32,
    /// How many shards are open now.
    pub target_shard_count: u32,
}

impl EmbeddedKinesis {
    /// `SplitShard`: closes an open shard and opens two children with `ParentShardId` = it,
    /// one for its hash keys below `new_starting_hash_key` (decimal text) and one for the rest.
    /// The key must lie above the shard's starting hash key and within its range.
    ///
    /// Errors: `InvalidArgument` for a key that is not a hash key or not inside the range,
    /// `ResourceInUse` for a closed shard, `LimitExceeded` past the account's shard limit.
    pub fn split_shard(
        &self,
        stream: &str,
        shard_to_split: &str,
        new_starting_hash_key: &str,
    ) -> Result<(), SourceError> {
        self.update(stream, |stream| {
            let new_starting_hash_key =
                hash_key::parse(new_starting_hash_key, "NewStartingHashKey")?;
            stream.split(
                shard_to_split,
                new_starting_hash_key,
                &self.inner.budget,
                self.now().1,
                &*self.inner.journal,
            )
        })
    }

    /// `MergeShards`: closes two open shards with adjacent hash key ranges and opens one child
    /// covering both, with `ParentShardId` = `shard_to_merge` and `AdjacentParentShardId` =
    /// `adjacent_shard_to_merge`.
    ///
    /// Errors: `InvalidArgument` for shards that are not adjacent (or the same shard twice),
    /// `ResourceInUse` for a closed shard.
    pub fn merge_shards(
        &self,
        stream: &str,
        shard_to_merge: &str,
        adjacent_shard_to_merge: &str,
    ) -> Result<(), SourceError> {
        self.update(stream, |stream| {
            stream.merge(
                shard_to_merge,
                adjacent_shard_to_merge,
                &self.inner.budget,
                self.now().1,
                &*self.inner.journal,
            )
        })
    }

    /// `UpdateShardCount`: leaves `target_shard_count` open shards that split the hash key
    /// space evenly, as a stream created with that many shards has.
    ///
    /// It works as Kinesis does, by splits and merges of single shards, so every new shard has
    /// real parents (`ParentShardId`, and `AdjacentParentShardId` for merges): first each open
    /// shard that straddles a boundary of the even layout is split at it, then the open shards
    /// within each even range are merged pairwise from the left until one covers it. Short-lived
    /// shards appear on the way (they are closed at once and readable to their end), as they
    /// do in Kinesis.
    ///
    /// Errors (Kinesis' default limits): `LimitExceeded` for more than double or below half the
    /// open shard count, more than 10,000 shards, or past the account's shard limit;
    /// `InvalidArgument` for a target of 0. Kinesis' limit of 10 scalings a day is not modelled.
    pub fn update_shard_count(
        &self,
        stream: &str,
        target_shard_count: u32,
        scaling_type: ScalingType,
    ) -> Result<UpdateShardCountOutput, SourceError> {
        let ScalingType::UniformScaling = scaling_type;
        self.update(stream, |stream| {
            let current_shard_count = stream.scale_uniformly(
                target_shard_count,
                &self.inner.budget,
                self.now().1,
                &*self.inner.journal,
            )?;
            Ok(UpdateShardCountOutput {
                stream_name: stream.name.to_string(),
                stream_arn: stream.arn.clone(),
                current_shard_count,
                target_shard_count,
            })
        })
    }
}
