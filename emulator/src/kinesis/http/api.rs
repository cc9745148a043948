//! The Kinesis operations this endpoint serves, each from a JSON request to a JSON answer.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use super::codec::Request;
use super::error::{ApiError, ErrorKind};
use super::{consumers, policies, records, shards, streams};
use crate::kinesis::EmbeddedKinesis;
use crate::kinesis::consumers::Registry;

/// The operations served, by their `X-Amz-Target` names.
pub(super) const OPERATIONS: &[&str] = &[
    "AddTagsToStream",
    "CreateStream",
    "DecreaseStreamRetentionPeriod",
    "DeleteResourcePolicy",
    "DeleteStream",
    "DeregisterStreamConsumer",
    "DescribeStream",
    "DescribeStreamConsumer",
    "DescribeStreamSummary",
    "GetRecords",
    "GetResourcePolicy",
    "GetShardIterator",
    "IncreaseStreamRetentionPeriod",
    "ListShards",
    "ListStreamConsumers",
    "ListStreams",
    "ListTagsForStream",
    "MergeShards",
    "PutRecord",
    "PutRecords",
    "PutResourcePolicy",
    "RegisterStreamConsumer",
    "RemoveTagsFromStream",
    "SplitShard",
    "SubscribeToShard",
    "UpdateShardCount",
    "UpdateStreamMode",
];

/// One stream's tags. A stream is known by its name and creation time, so that a stream
/// deleted and created again under the same name starts without tags.
pub(super) type TagKey = (String, SystemTime);

/// What the operations work on: the embedded Kinesis, and the stream tags it does not keep.
pub(super) struct Api {
    pub(super) kinesis: EmbeddedKinesis,
    tags: Mutex<HashMap<TagKey, BTreeMap<String, String>>>,
    /// Each stream's resource policy, kept by the same key as its tags.
    policies: Mutex<HashMap<TagKey, String>>,
    /// The streams' registered consumers and their subscriptions.
    consumers: Mutex<Registry<TagKey>>,
}

impl Api {
    pub(super) fn new(kinesis: EmbeddedKinesis) -> Self {
        Self {
            kinesis,
            tags: Mutex::default(),
            policies: Mutex::default(),
            consumers: Mutex::default(),
        }
    }

    pub(super) fn tags(&self) -> MutexGuard<'_, HashMap<TagKey, BTreeMap<String, String>>> {
        // Every change to the map is a single insert or removal: a panic elsewhere cannot
        // leave it half-changed.
        self.tags.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn policies(&self) -> MutexGuard<'_, HashMap<TagKey, String>> {
        // As for tags: each change is a single insert or removal.
        self.policies.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn consumers(&self) -> MutexGuard<'_, Registry<TagKey>> {
        // Each registry call finishes its change before it returns, and none panics midway.
        self.consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The key that tags and policies of `stream` (a name or ARN) are kept by: its name and
    /// creation time, so that a stream deleted and created again starts without either.
    pub(super) fn stream_key(&self, stream: &str) -> Result<TagKey, ApiError> {
        let summary = self.kinesis.describe_stream_summary(stream)?;
        Ok((summary.name, summary.created))
    }

    /// Runs `operation` on a request; the answer body, in the request's encoding, empty for
    /// operations that answer with nothing.
    pub(super) fn call(&self, operation: &str, request: Request<'_>) -> Result<Vec<u8>, ApiError> {
        match operation {
            "CreateStream" => streams::create_stream(self, request),
            "DeleteStream" => streams::delete_stream(self, request),
            "DescribeStream" => streams::describe_stream(self, request),
            "DescribeStreamSummary" => streams::describe_stream_summary(self, request),
            "ListStreams" => streams::list_streams(self, request),
            "UpdateStreamMode" => streams::update_stream_mode(self, request),
            "IncreaseStreamRetentionPeriod" => streams::change_retention(self, request, true),
            "DecreaseStreamRetentionPeriod" => streams::change_retention(self, request, false),
            "AddTagsToStream" => streams::add_tags(self, request),
            "RemoveTagsFromStream" => streams::remove_tags(self, request),
            "ListTagsForStream" => streams::list_tags(self, request),
            "ListShards" => shards::list_shards(self, request),
            "SplitShard" => shards::split_shard(self, request),
            "MergeShards" => shards::merge_shards(self, request),
            "UpdateShardCount" => shards::update_shard_count(self, request),
            "PutRecord" => records::put_record(self, request),
            "PutRecords" => records::put_records(self, request),
            "GetShardIterator" => records::get_shard_iterator(self, request),
            "GetRecords" => records::get_records(self, request),
            "PutResourcePolicy" => policies::put_resource_policy(self, request),
            "GetResourcePolicy" => policies::get_resource_policy(self, request),
            "DeleteResourcePolicy" => policies::delete_resource_policy(self, request),
            "RegisterStreamConsumer" => consumers::register(self, request),
            "DescribeStreamConsumer" => consumers::describe(self, request),
            "ListStreamConsumers" => consumers::list(self, request),
            "DeregisterStreamConsumer" => consumers::deregister(self, request),
            _ => Err(ApiError::new(
                ErrorKind::UnknownOperation,
                format!(
                    "Operation `{operation}` is not served by the embedded Kinesis; it serves {}",
                    OPERATIONS.join(", ")
                ),
            )),
        }
    }
}
