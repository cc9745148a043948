//! What a destination takes (a discarded batch) and how a delivery fails.

use std::time::SystemTime;

use async_trait::async_trait;

/// A discarded batch, as a destination needs it.
#[derive(Debug, Clone)]
pub struct FailedBatch {
    /// The invocation record (`docs/event-source-mapping.md` §5), as JSON.
    pub record: serde_json::Value,
    /// The event the batch's records make, as the function received it: S3's `payload`.
    pub event: String,
    /// The mapping's UUID, the first part of an S3 object's key after `aws/lambda/`.
    pub mapping_uuid: String,
    /// The shard the records come from.
    pub shard_id: String,
    /// When the batch was discarded: the record's `timestamp`.
    pub discarded_at: SystemTime,
}

/// A delivery that failed: one sentence naming the destination and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DeliveryError(pub String);

/// A destination for the records of discarded batches.
#[async_trait]
pub trait Destination: Send + Sync {
    /// Delivers `batch`'s record, returning where it went (a file, a message id, an object key).
    async fn deliver(&self, batch: &FailedBatch) -> Result<String, DeliveryError>;

    /// What the destination is, for messages: "SQS queue failures at http://127.0.0.1:5000".
    fn describe(&self) -> String;
}
