//! `AWS::Kinesis::Stream` resources: the streams the embedded Kinesis creates.

use std::time::Duration;

use serde_yaml_ng::Mapping;

use super::error::{Problem, Section};
use super::fields::{Fault, Fields};
use super::intrinsic::{Resolver, render};

/// The shards an on-demand stream starts with: AWS sizes a new on-demand stream for 4 MiB/s of
/// writes, which is 4 shards of 1 MiB/s each. Locally nothing scales it afterwards.
pub const ON_DEMAND_SHARD_COUNT: u32 = 4;

/// The most shards one stream may have here: the default shard quota of an account in the
/// largest regions. More shards than this needs a quota increase on AWS as well.
pub const MAX_SHARD_COUNT: u32 = 500;

/// How a stream's capacity is managed (`StreamModeDetails.StreamMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMode {
    /// A fixed number of shards (`PROVISIONED`, the default).
    Provisioned,
    /// AWS scales the shards (`ON_DEMAND`); the embedded Kinesis splits a hot shard as AWS
    /// documents (docs/kinesis.md, "On-demand scaling"), another Kinesis scales as it does.
    OnDemand,
}

/// An `AWS::Kinesis::Stream` resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamResource {
    /// The resource's logical id.
    pub logical_id: String,
    /// The stream's name: `Name`, or the logical id.
    pub name: String,
    /// The number of shards: `ShardCount` (1 when absent), or [`ON_DEMAND_SHARD_COUNT`].
    pub shard_count: u32,
    /// How long records stay readable (`RetentionPeriodHours`, 24 hours when absent).
    pub retention: Duration,
    /// The capacity mode.
    pub mode: StreamMode,
    /// `MaxRecordSizeInKiB`: the largest record the stream takes (1024, 1 MiB, when absent).
    pub max_record_size_kib: u32,
    /// `RecordDistributionStrategy: AUTO`: records spread evenly over the shards, partition keys
    /// optional (`ON_DEMAND` streams only).
    pub auto_distribution: bool,
}

const PROPERTIES: &[&str] = &[
    "Name",
    "ShardCount",
    "RetentionPeriodHours",
    "StreamModeDetails",
    "MaxRecordSizeInKiB",
    "RecordDistributionStrategy",
    // These change nothing a consumer can observe locally: encryption at rest, tags, metrics
    // and pre-warmed on-demand capacity.
    "StreamEncryption",
    "Tags",
    "DesiredShardLevelMetrics",
    "WarmThroughputMiBps",
];

/// Reads one stream. Its name is `Name`, or the logical id when `Name` is absent: CloudFormation
/// would generate `<stack>-<logical id>-<random suffix>`, which no local run can predict, and
/// the logical id is the stable part of that name.
pub(super) fn read(
    logical_id: &str,
    properties: &Mapping,
    resolver: &Resolver<'_>,
) -> Result<StreamResource, Fault> {
    let fields = Fields::new(properties, Section::Resource(logical_id.to_owned()), None);
    fields.check_names(PROPERTIES)?;

    let name = match fields.text(resolver, "Name")? {
        Some(name) => {
            if !is_stream_name(&name) {
                return Err(
                    fields.not_allowed("Name", "1 to 128 characters among a-z, A-Z, 0-9, _ . -")
                );
            }
            name
        }
        None => logical_id.to_owned(),
    };

    let mode_details = fields.nested("StreamModeDetails")?;
    mode_details.check_names(&["StreamMode"])?;
    let mode = match mode_details.text(resolver, "StreamMode")?.as_deref() {
        None if fields.get("StreamModeDetails").is_some() => {
            return Err(mode_details.missing("StreamMode", ""));
        }
        None | Some("PROVISIONED") => StreamMode::Provisioned,
        Some("ON_DEMAND") => StreamMode::OnDemand,
        Some(_) => return Err(mode_details.not_allowed("StreamMode", "ON_DEMAND, PROVISIONED")),
    };

    let shard_count = fields.integer(resolver, "ShardCount", 1..=i64::from(MAX_SHARD_COUNT))?;
    let shard_count = match (mode, shard_count) {
        (StreamMode::OnDemand, Some(_)) => {
            let value = fields.get("ShardCount").map_or_else(String::new, render);
            return Err(fields.fault(
                "ShardCount",
                Problem::Conflict {
                    value,
                    reason: "cannot be set on an ON_DEMAND stream".to_owned(),
                },
            ));
        }
        (StreamMode::OnDemand, None) => ON_DEMAND_SHARD_COUNT,
        (StreamMode::Provisioned, count) => count.map_or(1, |count| count as u32),
    };

    let retention_hours = fields
        .integer(resolver, "RetentionPeriodHours", 24..=8760)?
        .unwrap_or(24);

    let max_record_size_kib = fields
        .integer(resolver, "MaxRecordSizeInKiB", 1024..=10240)?
        .map_or(1024, |kib| kib as u32);
    let auto_distribution = auto_distribution(&fields, resolver, mode)?;

    Ok(StreamResource {
        logical_id: logical_id.to_owned(),
        name,
        shard_count,
        retention: Duration::from_secs(retention_hours as u64 * 3600),
        mode,
        max_record_size_kib,
        auto_distribution,
    })
}

/// Whether `RecordDistributionStrategy` is `AUTO`, which Kinesis takes on `ON_DEMAND` streams
/// only.
fn auto_distribution(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
    mode: StreamMode,
) -> Result<bool, Fault> {
    let strategy = fields.text(resolver, "RecordDistributionStrategy")?;
    match (strategy.as_deref(), mode) {
        (None | Some("USER_PARTITION_KEY"), _) => Ok(false),
        (Some("AUTO"), StreamMode::OnDemand) => Ok(true),
        (Some("AUTO"), StreamMode::Provisioned) => Err(fields.fault(
            "RecordDistributionStrategy",
            Problem::Conflict {
                value: "AUTO".to_owned(),
                reason: "applies to ON_DEMAND streams only (StreamModeDetails: {StreamMode: \
                         ON_DEMAND})"
                    .to_owned(),
            },
        )),
        (Some(_), _) => {
            Err(fields.not_allowed("RecordDistributionStrategy", "USER_PARTITION_KEY, AUTO"))
        }
    }
}

/// Whether Kinesis accepts this stream name.
pub(super) fn is_stream_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-'))
}
