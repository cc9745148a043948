//! Stream operations: create, delete, describe, list, retention and tags.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::codec::{Request, WireTime};
use super::configuration::{DISTRIBUTIONS, WireWarmThroughput, distribution};
use super::error::{Answer, ApiError};
use super::tags::{MAX_TAGS_PER_RESOURCE as MAX_TAGS_PER_STREAM, STREAM_TAG_SYMBOLS, check_tags};
use super::validation::{STREAM_ARN, STREAM_NAME, Violations};
use super::wire::{
    WireShard, check_name, count_in, normalized_shard_id, required, stream_names, stream_of,
};
use crate::attachments::StreamKey;
use crate::descriptions::StreamSummary;
use crate::embedded::EmbeddedKinesis;
use crate::settings::{
    DEFAULT_MAX_RECORD_SIZE_KIB, MAX_MAX_RECORD_SIZE_KIB, RecordDistribution, SettingChange,
    StreamSettings,
};
use crate::throughput::ApiCall;

/// The most tags one `AddTagsToStream` call may add.
const MAX_TAGS_PER_CALL: usize = 10;
/// How many shards `DescribeStream` returns at most, and by default.
const DESCRIBE_STREAM_PAGE: usize = 100;
/// How many streams `ListStreams` returns at most, and by default.
const LIST_STREAMS_PAGE: usize = 100;

/// `StreamModeDetails`: `PROVISIONED` or `ON_DEMAND`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StreamModeDetails {
    stream_mode: Option<String>,
}

/// The values of `StreamMode`.
const STREAM_MODES: [&str; 2] = ["PROVISIONED", "ON_DEMAND"];
/// The shards an `ON_DEMAND` stream starts with (docs/kinesis.md, "Capacity modes").
const ON_DEMAND_SHARDS: u32 = 4;

impl StreamModeDetails {
    /// The mode of a stream, as the embedded Kinesis keeps it.
    fn of(kinesis: &EmbeddedKinesis, stream: &str) -> Self {
        let mode = if kinesis.is_on_demand(stream).unwrap_or(false) {
            "ON_DEMAND"
        } else {
            "PROVISIONED"
        };
        Self {
            stream_mode: Some(mode.to_owned()),
        }
    }
}

/// `EnhancedMetrics`: the shard-level metrics enabled (named only: nothing is measured).
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct EnhancedMetrics {
    shard_level_metrics: Vec<&'static str>,
}

/// `EnhancedMonitoring`, a list of one entry, as Kinesis answers it.
fn enhanced_monitoring(settings: &StreamSettings) -> [EnhancedMetrics; 1] {
    [EnhancedMetrics {
        shard_level_metrics: settings.shard_level_metrics(),
    }]
}

/// `EncryptionType`: `KMS` once a key is set, else `NONE`.
fn encryption_type(settings: &StreamSettings) -> &'static str {
    if settings.encryption_key_id.is_some() {
        "KMS"
    } else {
        "NONE"
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CreateStreamInput {
    stream_name: Option<String>,
    shard_count: Option<i64>,
    stream_mode_details: Option<StreamModeDetails>,
    tags: Option<BTreeMap<String, String>>,
    warm_throughput_mi_bps: Option<i64>,
    max_record_size_in_ki_b: Option<i64>,
    record_distribution_strategy: Option<String>,
}

/// `CreateStream`: `ACTIVE` when the call returns. Without a `ShardCount` (or with
/// `StreamMode` `ON_DEMAND`) the stream is `ON_DEMAND` with 4 shards, as Kinesis makes it.
pub(super) fn create_stream(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: CreateStreamInput = request.parse()?;
    let mut violations = Violations::new();
    let name = violations.required_text(input.stream_name, "StreamName", STREAM_NAME);
    violations.number("ShardCount", input.shard_count, 1, i64::from(u32::MAX));
    violations.number(
        "MaxRecordSizeInKiB",
        input.max_record_size_in_ki_b,
        i64::from(DEFAULT_MAX_RECORD_SIZE_KIB),
        i64::from(MAX_MAX_RECORD_SIZE_KIB),
    );
    violations.number(
        "WarmThroughputMiBps",
        input.warm_throughput_mi_bps,
        0,
        i64::from(u32::MAX),
    );
    let mode = input
        .stream_mode_details
        .and_then(|details| details.stream_mode);
    violations.one_of(
        "StreamModeDetails.StreamMode",
        mode.as_deref(),
        &STREAM_MODES,
    );
    let strategy = input.record_distribution_strategy.as_deref();
    violations.one_of("RecordDistributionStrategy", strategy, &DISTRIBUTIONS);
    violations.finish()?;
    let name = name.unwrap_or_default();
    let on_demand = is_on_demand(&name, mode.as_deref(), input.shard_count)?;
    if !on_demand {
        check_on_demand_only(&name, input.warm_throughput_mi_bps, strategy)?;
    }
    let tags = input.tags.unwrap_or_default();
    check_tags(
        &format!("stream {name}"),
        STREAM_TAG_SYMBOLS,
        &BTreeMap::new(),
        &tags,
    )?;

    let shard_count = match input.shard_count {
        Some(count) => u32::try_from(count).expect("checked against u32::MAX"),
        None => ON_DEMAND_SHARDS,
    };
    if on_demand {
        kinesis.create_on_demand_stream(&name, shard_count)?;
    } else {
        kinesis.create_stream(&name, shard_count)?;
    }
    kinesis.change_stream_tags(&name, "CreateStream", |kept| {
        kept.extend(tags);
        Ok::<_, ApiError>(())
    })?;
    let asked = (
        input.max_record_size_in_ki_b,
        input.warm_throughput_mi_bps,
        strategy,
    );
    set_at_creation(kinesis, &name, on_demand, asked)?;
    Ok(Vec::new())
}

/// Sets on a stream just created what `CreateStream` asked beside its shards: its maximum
/// record size, warm throughput and record distribution, each checked before the creation.
fn set_at_creation(
    kinesis: &EmbeddedKinesis,
    name: &str,
    on_demand: bool,
    (kib, warm, strategy): (Option<i64>, Option<i64>, Option<&str>),
) -> Result<(), ApiError> {
    let kib = kib.map(|kib| kib as u32);
    if let Some(kib) = kib.filter(|&kib| kib != DEFAULT_MAX_RECORD_SIZE_KIB) {
        kinesis.set_at_creation(name, &SettingChange::MaxRecordSize(kib))?;
    }
    let warm = warm.map(|mibps| mibps as u32);
    if let Some(mibps) = warm.filter(|_| on_demand) {
        kinesis.set_at_creation(name, &SettingChange::WarmThroughput(mibps))?;
    }
    if let Some(auto) = strategy
        .map(distribution)
        .filter(|&d| d == RecordDistribution::Auto)
    {
        kinesis.set_at_creation(name, &SettingChange::Distribution(auto))?;
    }
    Ok(())
}

/// Whether `CreateStream` makes an `ON_DEMAND` stream: asked so, or given no `ShardCount`. A
/// `ShardCount` must come with `PROVISIONED` only.
fn is_on_demand(
    name: &str,
    mode: Option<&str>,
    shard_count: Option<i64>,
) -> Result<bool, ApiError> {
    Ok(match (mode, shard_count) {
        (Some("ON_DEMAND"), Some(_)) => {
            return Err(ApiError::invalid_argument(format!(
                "Stream {name} is ON_DEMAND: its shards are Kinesis' to choose, so it takes no \
                 ShardCount"
            )));
        }
        (Some("PROVISIONED"), None) => {
            return Err(ApiError::invalid_argument(format!(
                "Stream {name} is PROVISIONED: give its ShardCount"
            )));
        }
        (Some("ON_DEMAND"), None) | (None, None) => true,
        _ => false,
    })
}

/// Refuses, before a `PROVISIONED` stream is created, what only `ON_DEMAND` streams take: a
/// warm throughput, or the `AUTO` record distribution.
fn check_on_demand_only(
    name: &str,
    warm_throughput: Option<i64>,
    strategy: Option<&str>,
) -> Result<(), ApiError> {
    let asked = if warm_throughput.is_some_and(|warm| warm != 0) {
        "WarmThroughputMiBps"
    } else if strategy == Some("AUTO") {
        "RecordDistributionStrategy AUTO"
    } else {
        return Ok(());
    };
    Err(ApiError::invalid_argument(format!(
        "{asked} applies to ON_DEMAND streams; stream {name} is PROVISIONED"
    )))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct UpdateStreamModeInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    stream_mode_details: Option<StreamModeDetails>,
}

/// `UpdateStreamMode`: switches a stream between `PROVISIONED` and `ON_DEMAND`; its shards
/// stay as they are.
pub(super) fn update_stream_mode(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: UpdateStreamModeInput = request.parse()?;
    let mut violations = Violations::new();
    let arn = violations.required_text(input.stream_arn, "StreamARN", STREAM_ARN);
    let details = violations.required(input.stream_mode_details, "StreamModeDetails");
    let mode = details.and_then(|details| {
        violations.required(details.stream_mode, "StreamModeDetails.StreamMode")
    });
    violations.one_of(
        "StreamModeDetails.StreamMode",
        mode.as_deref(),
        &STREAM_MODES,
    );
    violations.finish()?;
    let arn = arn.unwrap_or_default();
    kinesis.begin_update(&arn)?;
    kinesis.set_on_demand(&arn, mode.as_deref() == Some("ON_DEMAND"))?;
    Ok(Vec::new())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StreamInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    stream_name: Option<String>,
}

/// `DeleteStream`: gone when the call returns, with its tags.
pub(super) fn delete_stream(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: StreamInput = request.parse()?;
    let stream = stream_of(kinesis, stream_names!(input))?;
    let key = tag_key(kinesis, stream)?;
    kinesis.delete_stream(stream)?;
    kinesis.attachments().tags().remove(&key);
    kinesis.attachments().policies().remove(&key);
    Ok(Vec::new())
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct DescribeStreamSummaryOutput {
    stream_description_summary: WireStreamSummary,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireStreamSummary {
    stream_name: String,
    #[serde(rename = "StreamARN")]
    stream_arn: String,
    stream_status: &'static str,
    stream_mode_details: StreamModeDetails,
    retention_period_hours: u64,
    stream_creation_timestamp: WireTime,
    enhanced_monitoring: [EnhancedMetrics; 1],
    encryption_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_id: Option<String>,
    open_shard_count: usize,
    consumer_count: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    warm_throughput: Option<WireWarmThroughput>,
    #[serde(rename = "MaxRecordSizeInKiB")]
    max_record_size_in_kib: u32,
    record_distribution_strategy: &'static str,
}

/// `DescribeStreamSummary`.
pub(super) fn describe_stream_summary(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: StreamInput = request.parse()?;
    let stream = stream_of(kinesis, stream_names!(input))?;
    kinesis.admit_api_call(ApiCall::DescribeStreamSummary, stream)?;
    let summary = kinesis.describe_stream_summary(stream)?;
    let settings = kinesis.stream_settings(stream)?;
    Ok(request.reply(&DescribeStreamSummaryOutput {
        stream_description_summary: WireStreamSummary {
            stream_status: summary.status.as_str(),
            stream_mode_details: StreamModeDetails::of(kinesis, &summary.name),
            retention_period_hours: retention_hours(&summary),
            stream_creation_timestamp: WireTime(summary.created),
            enhanced_monitoring: enhanced_monitoring(&settings),
            encryption_type: encryption_type(&settings),
            key_id: settings.encryption_key_id.clone(),
            open_shard_count: summary.open_shard_count,
            consumer_count: 0,
            warm_throughput: settings.warm_throughput_mibps.map(WireWarmThroughput::of),
            max_record_size_in_kib: settings.max_record_size_kib,
            record_distribution_strategy: settings.record_distribution.as_str(),
            stream_name: summary.name,
            stream_arn: summary.arn,
        },
    }))
}

/// The retention period in whole hours. A period set shorter than an hour through the
/// builder shows as 0.
fn retention_hours(summary: &StreamSummary) -> u64 {
    summary.retention_period.as_secs() / 3600
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DescribeStreamInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    stream_name: Option<String>,
    limit: Option<i64>,
    exclusive_start_shard_id: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct DescribeStreamOutput<'a> {
    stream_description: WireStreamDescription<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireStreamDescription<'a> {
    stream_name: String,
    #[serde(rename = "StreamARN")]
    stream_arn: String,
    stream_status: &'static str,
    stream_mode_details: StreamModeDetails,
    shards: Vec<WireShard<'a>>,
    has_more_shards: bool,
    retention_period_hours: u64,
    stream_creation_timestamp: WireTime,
    enhanced_monitoring: [EnhancedMetrics; 1],
    encryption_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_id: Option<String>,
}

/// `DescribeStream`: the stream and a page of its shards (at most 100), in order of creation.
pub(super) fn describe_stream(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: DescribeStreamInput = request.parse()?;
    let stream = stream_of(kinesis, stream_names!(input))?;
    let page = match input.limit {
        Some(limit) => count_in(limit, 1..=10_000, "Limit")?.min(DESCRIBE_STREAM_PAGE),
        None => DESCRIBE_STREAM_PAGE,
    };
    if let Some(start) = &input.exclusive_start_shard_id {
        check_name(start, "ExclusiveStartShardId")?;
    }
    kinesis.admit_api_call(ApiCall::DescribeStream, stream)?;
    let summary = kinesis.describe_stream_summary(stream)?;
    let shards = kinesis.list_shards(stream)?;
    let settings = kinesis.stream_settings(stream)?;
    // Read by its number, as `GetShardIterator` reads a shard id.
    let start = input
        .exclusive_start_shard_id
        .as_deref()
        .map(normalized_shard_id);
    // Shard ids are `shardId-` and twelve digits, so text order is creation order.
    let after_start: Vec<_> = shards
        .iter()
        .filter(|shard| {
            start
                .as_deref()
                .is_none_or(|start| shard.shard_id.as_str() > start)
        })
        .collect();
    let has_more_shards = after_start.len() > page;
    Ok(request.reply(&DescribeStreamOutput {
        stream_description: WireStreamDescription {
            stream_status: summary.status.as_str(),
            stream_mode_details: StreamModeDetails::of(kinesis, &summary.name),
            shards: after_start
                .into_iter()
                .take(page)
                .map(WireShard::from)
                .collect(),
            has_more_shards,
            retention_period_hours: retention_hours(&summary),
            stream_creation_timestamp: WireTime(summary.created),
            enhanced_monitoring: enhanced_monitoring(&settings),
            encryption_type: encryption_type(&settings),
            key_id: settings.encryption_key_id,
            stream_name: summary.name,
            stream_arn: summary.arn,
        },
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListStreamsInput {
    limit: Option<i64>,
    exclusive_start_stream_name: Option<String>,
    next_token: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct ListStreamsOutput {
    stream_names: Vec<String>,
    has_more_streams: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_token: Option<String>,
    stream_summaries: Vec<WireListedStream>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireListedStream {
    stream_name: String,
    #[serde(rename = "StreamARN")]
    stream_arn: String,
    stream_status: &'static str,
    stream_mode_details: StreamModeDetails,
    stream_creation_timestamp: WireTime,
}

/// `ListStreams`: names in alphabetical order, at most 100 a page. The `NextToken` holds the
/// last name returned.
pub(super) fn list_streams(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: ListStreamsInput = request.parse()?;
    let page = match input.limit {
        Some(limit) => count_in(limit, 1..=10_000, "Limit")?.min(LIST_STREAMS_PAGE),
        None => LIST_STREAMS_PAGE,
    };
    let after = match &input.next_token {
        Some(token) => Some(decode_stream_token(token)?),
        None => input.exclusive_start_stream_name,
    };
    let mut summaries: Vec<StreamSummary> = kinesis
        .list_streams()
        .into_iter()
        .filter(|name| after.as_deref().is_none_or(|after| name.as_str() > after))
        // A stream deleted since it was listed is left out.
        .filter_map(|name| kinesis.describe_stream_summary(&name).ok())
        .take(page + 1)
        .collect();
    let has_more_streams = summaries.len() > page;
    summaries.truncate(page);
    let next_token = has_more_streams
        .then(|| summaries.last())
        .flatten()
        .map(|last| URL_SAFE_NO_PAD.encode(&last.name));
    Ok(request.reply(&ListStreamsOutput {
        stream_names: summaries
            .iter()
            .map(|summary| summary.name.clone())
            .collect(),
        has_more_streams,
        next_token,
        stream_summaries: summaries
            .into_iter()
            .map(|summary| WireListedStream {
                stream_status: summary.status.as_str(),
                stream_mode_details: StreamModeDetails::of(kinesis, &summary.name),
                stream_creation_timestamp: WireTime(summary.created),
                stream_name: summary.name,
                stream_arn: summary.arn,
            })
            .collect(),
    }))
}

fn decode_stream_token(token: &str) -> Result<String, ApiError> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| {
            ApiError::invalid_argument(format!("NextToken `{token}` was not issued by ListStreams"))
        })
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RetentionInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    stream_name: Option<String>,
    retention_period_hours: Option<i64>,
}

/// `IncreaseStreamRetentionPeriod` (`increase`) and `DecreaseStreamRetentionPeriod`.
pub(super) fn change_retention(
    kinesis: &EmbeddedKinesis,
    request: Request<'_>,
    increase: bool,
) -> Answer {
    let input: RetentionInput = request.parse()?;
    let stream = stream_of(kinesis, stream_names!(input))?;
    let hours = required(input.retention_period_hours, "RetentionPeriodHours")?;
    let hours = u32::try_from(hours).map_err(|_| {
        ApiError::invalid_argument(format!(
            "RetentionPeriodHours {hours} of stream {stream} is out of range"
        ))
    })?;
    if increase {
        kinesis.increase_stream_retention_period(stream, hours)?;
    } else {
        kinesis.decrease_stream_retention_period(stream, hours)?;
    }
    Ok(Vec::new())
}

/// Where a stream's tags are kept: its name and creation time.
fn tag_key(kinesis: &EmbeddedKinesis, stream: &str) -> Result<StreamKey, ApiError> {
    Ok(kinesis.stream_key(stream)?)
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AddTagsInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    stream_name: Option<String>,
    tags: Option<BTreeMap<String, String>>,
}

/// `AddTagsToStream`: adds tags, replacing the values of keys the stream has already.
pub(super) fn add_tags(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: AddTagsInput = request.parse()?;
    let stream = stream_of(kinesis, stream_names!(input))?;
    let added = required(input.tags, "Tags")?;
    if added.len() > MAX_TAGS_PER_CALL {
        return Err(ApiError::invalid_argument(format!(
            "AddTagsToStream on stream {stream} gives {} tags; one call adds at most \
             {MAX_TAGS_PER_CALL}",
            added.len()
        )));
    }
    kinesis.change_stream_tags(stream, "AddTagsToStream", |existing| {
        let described = format!("stream {stream}");
        check_tags(&described, STREAM_TAG_SYMBOLS, existing, &added)?;
        existing.extend(added);
        Ok::<_, ApiError>(())
    })?;
    Ok(Vec::new())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RemoveTagsInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    stream_name: Option<String>,
    tag_keys: Option<Vec<String>>,
}

/// `RemoveTagsFromStream`: keys the stream does not have are ignored.
pub(super) fn remove_tags(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: RemoveTagsInput = request.parse()?;
    let stream = stream_of(kinesis, stream_names!(input))?;
    let removed = required(input.tag_keys, "StreamKeys")?;
    kinesis.change_stream_tags(stream, "RemoveTagsFromStream", |existing| {
        for tag_key in &removed {
            existing.remove(tag_key);
        }
        Ok::<_, ApiError>(())
    })?;
    Ok(Vec::new())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListTagsInput {
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    stream_name: Option<String>,
    exclusive_start_tag_key: Option<String>,
    limit: Option<i64>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct ListTagsOutput {
    tags: Vec<WireTag>,
    has_more_tags: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireTag {
    key: String,
    value: String,
}

/// `ListTagsForStream`: tags in key order, after `ExclusiveStartStreamKey`.
pub(super) fn list_tags(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: ListTagsInput = request.parse()?;
    let stream = stream_of(kinesis, stream_names!(input))?;
    let limit = match input.limit {
        Some(limit) => count_in(limit, 1..=50, "Limit")?,
        None => MAX_TAGS_PER_STREAM,
    };
    let key = tag_key(kinesis, stream)?;
    let tags = kinesis.attachments().tags();
    let after: Vec<(&String, &String)> = tags
        .get(&key)
        .into_iter()
        .flatten()
        .filter(|(tag_key, _)| {
            input
                .exclusive_start_tag_key
                .as_deref()
                .is_none_or(|start| tag_key.as_str() > start)
        })
        .collect();
    Ok(request.reply(&ListTagsOutput {
        has_more_tags: after.len() > limit,
        tags: after
            .into_iter()
            .take(limit)
            .map(|(key, value)| WireTag {
                key: key.clone(),
                value: value.clone(),
            })
            .collect(),
    }))
}
