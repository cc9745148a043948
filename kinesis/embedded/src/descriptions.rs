//! A stream and its shards as `DescribeStreamSummary` and `ListShards` describe them.

use std::time::{Duration, SystemTime};

use crate::status::StreamStatus;

/// A stream as `DescribeStreamSummary` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSummary {
    /// The stream's name.
    pub name: String,
    /// The stream's ARN: `arn:aws:kinesis:<region>:<account>:stream/<name>`.
    pub arn: String,
    /// The stream's state.
    pub status: StreamStatus,
    /// When the stream was created.
    pub created: SystemTime,
    /// How long the stream keeps records (`RetentionPeriodHours`).
    pub retention_period: Duration,
    /// How many shards are open.
    pub open_shard_count: usize,
}

/// When a shard opened and when it closed: what `ListShards`' time filters (`AT_TIMESTAMP`,
/// `FROM_TIMESTAMP`, `AT_TRIM_HORIZON`) look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardLifetime {
    /// When the shard opened: with its stream, or the moment its parents closed.
    pub opened: SystemTime,
    /// When the shard closed (by a split or merge); `None` while it is open.
    pub closed: Option<SystemTime>,
}
