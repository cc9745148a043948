//! The Kinesis operations this endpoint serves, each from a JSON request to a JSON answer.

use super::codec::Request;
use super::error::{Answer, ApiError, ErrorKind};
use super::{account_settings, configuration, consumers, policies, records, shards, streams, tags};
use crate::embedded::EmbeddedKinesis;

/// The operations served, by their `X-Amz-Target` names.
pub(super) const OPERATIONS: &[&str] = &[
    "AddTagsToStream",
    "CreateStream",
    "DecreaseStreamRetentionPeriod",
    "DeleteResourcePolicy",
    "DeleteStream",
    "DeregisterStreamConsumer",
    "DescribeAccountSettings",
    "DescribeLimits",
    "DescribeStream",
    "DescribeStreamConsumer",
    "DescribeStreamSummary",
    "DisableEnhancedMonitoring",
    "EnableEnhancedMonitoring",
    "GetRecords",
    "GetResourcePolicy",
    "GetShardIterator",
    "IncreaseStreamRetentionPeriod",
    "ListShards",
    "ListStreamConsumers",
    "ListStreams",
    "ListTagsForResource",
    "ListTagsForStream",
    "MergeShards",
    "PutRecord",
    "PutRecords",
    "PutResourcePolicy",
    "RegisterStreamConsumer",
    "RemoveTagsFromStream",
    "SplitShard",
    "StartStreamEncryption",
    "StopStreamEncryption",
    "SubscribeToShard",
    "TagResource",
    "UntagResource",
    "UpdateAccountSettings",
    "UpdateMaxRecordSize",
    "UpdateShardCount",
    "UpdateStreamMode",
    "UpdateStreamRecordDistributionStrategy",
    "UpdateStreamWarmThroughput",
];

/// Operations of the Kinesis API that the embedded Kinesis does not emulate on purpose:
/// channels deliver a stream to S3, which a local stream has nowhere to do.
const NOT_EMULATED: &[&str] = &[
    "CreateChannel",
    "DeleteChannel",
    "DescribeChannel",
    "ListChannels",
    "UpdateChannel",
];

/// The `UnknownOperationException` of an operation not served, saying whether it is one of
/// Kinesis' that the embedded Kinesis leaves out.
fn unknown_operation(operation: &str) -> ApiError {
    let served = OPERATIONS.join(", ");
    let message = if NOT_EMULATED.contains(&operation) {
        format!(
            "Operation `{operation}` is a Kinesis channel operation, which the embedded Kinesis \
             does not emulate (nor queues): it serves {served}"
        )
    } else {
        format!("Operation `{operation}` is not served by the embedded Kinesis; it serves {served}")
    };
    ApiError::new(ErrorKind::UnknownOperation, message)
}

/// Runs `operation` on a request; the answer body, in the request's encoding, empty for
/// operations that answer with nothing.
pub(super) fn call(kinesis: &EmbeddedKinesis, operation: &str, request: Request<'_>) -> Answer {
    match operation {
        "CreateStream" => streams::create_stream(kinesis, request),
        "DeleteStream" => streams::delete_stream(kinesis, request),
        "DescribeStream" => streams::describe_stream(kinesis, request),
        "DescribeStreamSummary" => streams::describe_stream_summary(kinesis, request),
        "ListStreams" => streams::list_streams(kinesis, request),
        "UpdateStreamMode" => streams::update_stream_mode(kinesis, request),
        "IncreaseStreamRetentionPeriod" => streams::change_retention(kinesis, request, true),
        "DecreaseStreamRetentionPeriod" => streams::change_retention(kinesis, request, false),
        "AddTagsToStream" => streams::add_tags(kinesis, request),
        "RemoveTagsFromStream" => streams::remove_tags(kinesis, request),
        "ListTagsForStream" => streams::list_tags(kinesis, request),
        "ListShards" => shards::list_shards(kinesis, request),
        "SplitShard" => shards::split_shard(kinesis, request),
        "MergeShards" => shards::merge_shards(kinesis, request),
        "UpdateShardCount" => shards::update_shard_count(kinesis, request),
        "PutRecord" => records::put_record(kinesis, request),
        "PutRecords" => records::put_records(kinesis, request),
        "GetShardIterator" => records::get_shard_iterator(kinesis, request),
        "GetRecords" => records::get_records(kinesis, request),
        "PutResourcePolicy" => policies::put_resource_policy(kinesis, request),
        "GetResourcePolicy" => policies::get_resource_policy(kinesis, request),
        "DeleteResourcePolicy" => policies::delete_resource_policy(kinesis, request),
        "RegisterStreamConsumer" => consumers::register(kinesis, request),
        "DescribeStreamConsumer" => consumers::describe(kinesis, request),
        "ListStreamConsumers" => consumers::list(kinesis, request),
        "DeregisterStreamConsumer" => consumers::deregister(kinesis, request),
        "UpdateMaxRecordSize" => configuration::update_max_record_size(kinesis, request),
        "EnableEnhancedMonitoring" => {
            configuration::change_enhanced_monitoring(kinesis, request, true)
        }
        "DisableEnhancedMonitoring" => {
            configuration::change_enhanced_monitoring(kinesis, request, false)
        }
        "StartStreamEncryption" => configuration::change_stream_encryption(kinesis, request, true),
        "StopStreamEncryption" => configuration::change_stream_encryption(kinesis, request, false),
        "UpdateStreamWarmThroughput" => configuration::update_warm_throughput(kinesis, request),
        "UpdateStreamRecordDistributionStrategy" => {
            configuration::update_record_distribution(kinesis, request)
        }
        "TagResource" => tags::tag_resource(kinesis, request),
        "UntagResource" => tags::untag_resource(kinesis, request),
        "ListTagsForResource" => tags::list_tags_for_resource(kinesis, request),
        "DescribeLimits" => account_settings::describe_limits(kinesis, request),
        "DescribeAccountSettings" => account_settings::describe_account_settings(kinesis, request),
        "UpdateAccountSettings" => account_settings::update_account_settings(kinesis, request),
        _ => Err(unknown_operation(operation)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_are_named_as_not_emulated_and_other_names_as_unknown() {
        let channel = unknown_operation("CreateChannel");
        assert_eq!(channel.kind, ErrorKind::UnknownOperation);
        assert!(
            channel
                .message
                .contains("channel operation, which the embedded Kinesis does not emulate"),
            "{}",
            channel.message
        );
        let other = unknown_operation("Frobnicate");
        assert!(
            other.message.contains("`Frobnicate` is not served"),
            "{}",
            other.message
        );
        assert!(
            other.message.contains("UpdateMaxRecordSize"),
            "{}",
            other.message
        );
    }
}
