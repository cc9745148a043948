//! The invocation record Lambda sends to a Kinesis mapping's on-failure destination when it
//! discards a batch, with Lambda's field names (`docs/event-source-mapping.md` §5).

use serde::Serialize;

/// The record of one discarded batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct OnFailureRecord {
    #[serde(rename = "requestContext")]
    pub(super) request_context: RequestContext,
    /// Present when the batch reached the function; absent for `RecordAgeExceeded` discards of
    /// records that were never invoked.
    #[serde(rename = "responseContext", skip_serializing_if = "Option::is_none")]
    pub(super) response_context: Option<ResponseContext>,
    /// Always `"1.0"`.
    pub(super) version: &'static str,
    /// When the batch was discarded: ISO 8601 UTC with milliseconds.
    pub(super) timestamp: String,
    #[serde(rename = "KinesisBatchInfo")]
    pub(super) kinesis_batch_info: KinesisBatchInfo,
}

/// Which invocation failed, and why the batch was discarded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RequestContext {
    pub(super) request_id: String,
    pub(super) function_arn: String,
    /// `RetryAttemptsExhausted` or `RecordAgeExceeded`.
    pub(super) condition: &'static str,
    /// Invocations of the batch, counting the first.
    pub(super) approximate_invoke_count: u32,
}

/// How the last invocation of the batch answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResponseContext {
    pub(super) status_code: u16,
    pub(super) executed_version: &'static str,
    /// `"Unhandled"` for a function error or timeout, `null` when the function returned.
    pub(super) function_error: Option<&'static str>,
}

/// The discarded records, by position: the destination receives no record data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct KinesisBatchInfo {
    pub(super) shard_id: String,
    pub(super) start_sequence_number: String,
    pub(super) end_sequence_number: String,
    pub(super) approximate_arrival_of_first_record: String,
    pub(super) approximate_arrival_of_last_record: String,
    pub(super) batch_size: usize,
    pub(super) stream_arn: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_has_lambdas_field_names() {
        // docs/event-source-mapping.md §5: the shape AWS sends (a recorded example).
        let record = OnFailureRecord {
            request_context: RequestContext {
                request_id: "c9b8fa9f-5a7f-4d7b-a4a3-1f0b6c8a2e11".to_owned(),
                function_arn: "arn:aws:lambda:us-east-1:123456789012:function:f".to_owned(),
                condition: "RetryAttemptsExhausted",
                approximate_invoke_count: 4,
            },
            response_context: Some(ResponseContext {
                status_code: 200,
                executed_version: "$LATEST",
                function_error: None,
            }),
            version: "1.0",
            timestamp: "2019-11-14T00:38:06.021Z".to_owned(),
            kinesis_batch_info: KinesisBatchInfo {
                shard_id: "shardId-000000000001".to_owned(),
                start_sequence_number: "1".to_owned(),
                end_sequence_number: "2".to_owned(),
                approximate_arrival_of_first_record: "2019-11-14T00:38:04.835Z".to_owned(),
                approximate_arrival_of_last_record: "2019-11-14T00:38:05.580Z".to_owned(),
                batch_size: 2,
                stream_arn: "arn:aws:kinesis:us-east-1:123456789012:stream/s".to_owned(),
            },
        };
        let expected = serde_json::json!({
            "requestContext": {
                "requestId": "c9b8fa9f-5a7f-4d7b-a4a3-1f0b6c8a2e11",
                "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:f",
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": 4,
            },
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": null},
            "version": "1.0",
            "timestamp": "2019-11-14T00:38:06.021Z",
            "KinesisBatchInfo": {
                "shardId": "shardId-000000000001",
                "startSequenceNumber": "1",
                "endSequenceNumber": "2",
                "approximateArrivalOfFirstRecord": "2019-11-14T00:38:04.835Z",
                "approximateArrivalOfLastRecord": "2019-11-14T00:38:05.580Z",
                "batchSize": 2,
                "streamArn": "arn:aws:kinesis:us-east-1:123456789012:stream/s",
            },
        });
        assert_eq!(
            serde_json::to_value(&record).expect("serializable"),
            expected
        );
        let age_exceeded = OnFailureRecord {
            response_context: None,
            ..record
        };
        let value = serde_json::to_value(&age_exceeded).expect("serializable");
        assert!(value.get("responseContext").is_none(), "{value}");
    }
}
