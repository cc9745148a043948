//! What the page's forms ask for: a record to publish, shards to split or merge.

use async_trait::async_trait;

/// A change to a stream's shards the page asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reshard {
    /// Splits an open shard at the middle of its hash key range.
    Split {
        /// The shard.
        shard: String,
    },
    /// Merges two adjacent open shards.
    Merge {
        /// The shard.
        shard: String,
        /// The shard next to it.
        adjacent_shard: String,
    },
}

/// What the page's forms do: `run` implements it with the code the `put` and `reshard` commands
/// run. An error is a sentence for the user.
#[async_trait]
pub trait PageActions: Send + Sync {
    /// Publishes one record; says where it landed.
    async fn put(&self, stream: &str, partition_key: &str, data: Vec<u8>)
    -> anyhow::Result<String>;

    /// Splits or merges shards of `stream`.
    async fn reshard(&self, stream: &str, change: Reshard) -> anyhow::Result<()>;
}
