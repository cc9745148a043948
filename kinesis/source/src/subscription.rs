//! Enhanced fan-out's seam: `SubscribeToShard` subscriptions and the events they push.

use async_trait::async_trait;

use crate::error::SourceError;
use crate::records::{IteratorPosition, Record};
use crate::sequence::SequenceNumber;
use crate::stream::ChildShard;

/// One `SubscribeToShardEvent`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShardEvent {
    /// The records pushed, in shard order; often none (a heartbeat).
    pub records: Vec<Record>,
    /// Where the next subscription resumes (`AFTER_SEQUENCE_NUMBER`); `None` at the shard's
    /// end, or before anything was read at `LATEST`.
    pub continuation_sequence_number: Option<SequenceNumber>,
    /// How far behind the shard's newest record the event is.
    pub millis_behind_latest: u64,
    /// At the end of a closed shard: the shards that took over its hash keys.
    pub child_shards: Vec<ChildShard>,
}

impl ShardEvent {
    /// Whether the event ends its shard: Kinesis sends no continuation there, and the children.
    pub fn ends_shard(&self) -> bool {
        self.continuation_sequence_number.is_none() && !self.child_shards.is_empty()
    }
}

/// Opens `SubscribeToShard` subscriptions: the embedded Kinesis in process, or any Kinesis
/// through `aws-sdk-kinesis`.
#[async_trait]
pub trait ShardSubscriber: Send + Sync {
    /// Subscribes `consumer_arn` to `shard_id` from `position`.
    async fn subscribe(
        &self,
        consumer_arn: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<Box<dyn Subscription>, SourceError>;
}

/// One open subscription.
#[async_trait]
pub trait Subscription: Send {
    /// The next event; `Ok(None)` once the subscription is over (its lifetime ended, a newer
    /// one replaced it, the endpoint stopped).
    async fn next_event(&mut self) -> Result<Option<ShardEvent>, SourceError>;
}
