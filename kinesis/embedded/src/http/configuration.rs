//! The operations that change a stream's settings beside its shards: `UpdateMaxRecordSize`,
//! `EnableEnhancedMonitoring` and `DisableEnhancedMonitoring`, `StartStreamEncryption` and
//! `StopStreamEncryption`, `UpdateStreamWarmThroughput`. Each is stored and shown by
//! `DescribeStream(Summary)`; only the maximum record size changes what the stream does.

use serde::{Deserialize, Serialize};

use super::codec::Request;
use super::error::{Answer, ApiError};
use super::validation::{KEY_ID, STREAM_ARN, Violations};
use super::wire::{check_stream, named_stream, stream_names};
use crate::embedded::EmbeddedKinesis;
use crate::settings::{
    DEFAULT_MAX_RECORD_SIZE_KIB, MAX_MAX_RECORD_SIZE_KIB, MetricSet, RecordDistribution,
    ShardMetric,
};

/// The values of `MetricsName`, in the model's order.
const METRIC_NAMES: [&str; 8] = [
    "IncomingBytes",
    "IncomingRecords",
    "OutgoingBytes",
    "OutgoingRecords",
    "WriteProvisionedThroughputExceeded",
    "ReadProvisionedThroughputExceeded",
    "IteratorAgeMilliseconds",
    "ALL",
];

/// The values of `EncryptionType`.
const ENCRYPTION_TYPES: [&str; 2] = ["NONE", "KMS"];

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct UpdateMaxRecordSizeInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    max_record_size_in_ki_b: Option<i64>,
}

/// `UpdateMaxRecordSize`: by `StreamARN` only, as the API takes it; answers an empty body.
pub(super) fn update_max_record_size(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: UpdateMaxRecordSizeInput = request.parse()?;
    let mut violations = Violations::new();
    violations.text("StreamARN", input.stream_arn.as_deref(), STREAM_ARN);
    let kib = violations.required(input.max_record_size_in_ki_b, "MaxRecordSizeInKiB");
    violations.number(
        "MaxRecordSizeInKiB",
        kib,
        i64::from(DEFAULT_MAX_RECORD_SIZE_KIB),
        i64::from(MAX_MAX_RECORD_SIZE_KIB),
    );
    violations.finish()?;
    let arn = input.stream_arn.ok_or_else(|| {
        ApiError::invalid_argument("UpdateMaxRecordSize needs the StreamARN of the stream")
    })?;
    let kib = u32::try_from(kib.unwrap_or_default()).expect("checked against 1024..=10240");
    kinesis.update_max_record_size(&arn, kib)?;
    Ok(Vec::new())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct EnhancedMonitoringInput {
    stream_name: Option<String>,
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    shard_level_metrics: Option<Vec<String>>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct EnhancedMonitoringOutput {
    stream_name: String,
    #[serde(rename = "StreamARN")]
    stream_arn: String,
    current_shard_level_metrics: Vec<&'static str>,
    desired_shard_level_metrics: Vec<&'static str>,
}

/// `EnableEnhancedMonitoring` (`enable`) and `DisableEnhancedMonitoring`: the metrics named
/// (`ALL` for every one) are enabled or disabled, and the answer gives the metrics enabled
/// before and after. Nothing is measured.
pub(super) fn change_enhanced_monitoring(
    kinesis: &EmbeddedKinesis,
    request: Request<'_>,
    enable: bool,
) -> Answer {
    let input: EnhancedMonitoringInput = request.parse()?;
    let mut violations = Violations::new();
    check_stream(&mut violations, stream_names!(input));
    let names = violations.required(input.shard_level_metrics, "ShardLevelMetrics");
    violations.list_length("ShardLevelMetrics", names.as_ref().map(Vec::len), 1, 7);
    for (position, name) in names.iter().flatten().enumerate() {
        violations.one_of(
            &format!("ShardLevelMetrics.{position}"),
            Some(name),
            &METRIC_NAMES,
        );
    }
    violations.finish()?;
    let stream = named_stream(kinesis, stream_names!(input))?;
    let metrics = MetricSet::of(
        names
            .iter()
            .flatten()
            .filter_map(|name| ShardMetric::named(name))
            .flatten(),
    );
    let (before, after) = kinesis.change_enhanced_monitoring(stream, metrics, enable)?;
    let summary = kinesis.describe_stream_summary(stream)?;
    Ok(request.reply(&EnhancedMonitoringOutput {
        stream_name: summary.name,
        stream_arn: summary.arn,
        current_shard_level_metrics: before.shard_level_metrics(),
        desired_shard_level_metrics: after.shard_level_metrics(),
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StreamEncryptionInput {
    stream_name: Option<String>,
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    encryption_type: Option<String>,
    key_id: Option<String>,
}

/// `StartStreamEncryption` (`start`) and `StopStreamEncryption`: `EncryptionType` must be
/// `KMS` and a `KeyId` given to both, as the API asks. The key is kept and shown
/// (`EncryptionType` `KMS` and `KeyId` in `DescribeStream(Summary)`); nothing is encrypted and
/// no key is looked up.
pub(super) fn change_stream_encryption(
    kinesis: &EmbeddedKinesis,
    request: Request<'_>,
    start: bool,
) -> Answer {
    let input: StreamEncryptionInput = request.parse()?;
    let mut violations = Violations::new();
    check_stream(&mut violations, stream_names!(input));
    let kind = violations.required(input.encryption_type.as_deref(), "EncryptionType");
    violations.one_of("EncryptionType", kind, &ENCRYPTION_TYPES);
    let key_id = violations.required_text(input.key_id.as_deref(), "KeyId", KEY_ID);
    violations.finish()?;
    let stream = named_stream(kinesis, stream_names!(input))?;
    if kind != Some("KMS") {
        return Err(ApiError::invalid_argument(format!(
            "EncryptionType of stream {stream} must be KMS: it is the only type {} takes",
            if start {
                "StartStreamEncryption"
            } else {
                "StopStreamEncryption"
            }
        )));
    }
    let key_id = key_id.map(str::to_owned).filter(|_| start);
    kinesis.set_stream_encryption(stream, key_id)?;
    Ok(Vec::new())
}

/// The values of `RecordDistributionStrategy`.
pub(super) const DISTRIBUTIONS: [&str; 2] = ["AUTO", "USER_PARTITION_KEY"];

/// The strategy a checked `RecordDistributionStrategy` names.
pub(super) fn distribution(name: &str) -> RecordDistribution {
    if name == "AUTO" {
        RecordDistribution::Auto
    } else {
        RecordDistribution::UserPartitionKey
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct UpdateDistributionInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    record_distribution_strategy: Option<String>,
}

/// `UpdateStreamRecordDistributionStrategy`: by `StreamARN`, on `ON_DEMAND` streams only
/// (`InvalidArgumentException` otherwise); answers an empty body.
pub(super) fn update_record_distribution(
    kinesis: &EmbeddedKinesis,
    request: Request<'_>,
) -> Answer {
    let input: UpdateDistributionInput = request.parse()?;
    let mut violations = Violations::new();
    let arn = violations.required_text(input.stream_arn, "StreamARN", STREAM_ARN);
    let name = violations.required(
        input.record_distribution_strategy,
        "RecordDistributionStrategy",
    );
    violations.one_of(
        "RecordDistributionStrategy",
        name.as_deref(),
        &DISTRIBUTIONS,
    );
    violations.finish()?;
    let (arn, name) = (arn.unwrap_or_default(), name.unwrap_or_default());
    kinesis.set_record_distribution(&arn, distribution(&name))?;
    Ok(Vec::new())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct UpdateWarmThroughputInput {
    stream_name: Option<String>,
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    warm_throughput_mi_bps: Option<i64>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct UpdateWarmThroughputOutput {
    stream_name: String,
    #[serde(rename = "StreamARN")]
    stream_arn: String,
    warm_throughput: WireWarmThroughput,
}

/// `WarmThroughput` as `DescribeStreamSummary` and `UpdateStreamWarmThroughput` show it: the
/// target asked for, reached at once.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WireWarmThroughput {
    #[serde(rename = "TargetMiBps")]
    target_mibps: u32,
    #[serde(rename = "CurrentMiBps")]
    current_mibps: u32,
}

impl WireWarmThroughput {
    pub(super) fn of(mibps: u32) -> Self {
        Self {
            target_mibps: mibps,
            current_mibps: mibps,
        }
    }
}

/// `UpdateStreamWarmThroughput`: on `ON_DEMAND` streams only (`InvalidArgumentException`
/// otherwise); the value is kept and shown, the stream scales as it does without it.
pub(super) fn update_warm_throughput(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: UpdateWarmThroughputInput = request.parse()?;
    let mut violations = Violations::new();
    check_stream(&mut violations, stream_names!(input));
    let mibps = violations.required(input.warm_throughput_mi_bps, "WarmThroughputMiBps");
    violations.number("WarmThroughputMiBps", mibps, 0, i64::from(u32::MAX));
    violations.finish()?;
    let stream = named_stream(kinesis, stream_names!(input))?;
    let mibps = u32::try_from(mibps.unwrap_or_default()).expect("checked against u32::MAX");
    kinesis.update_stream_warm_throughput(stream, mibps)?;
    let summary = kinesis.describe_stream_summary(stream)?;
    Ok(request.reply(&UpdateWarmThroughputOutput {
        stream_name: summary.name,
        stream_arn: summary.arn,
        warm_throughput: WireWarmThroughput::of(mibps),
    }))
}
