//! Kinesis' limits, as the embedded Kinesis enforces them, and its defaults.

use std::time::Duration;

/// The most bytes one record may hold: its data plus its partition key (1 MiB), on a stream
/// whose `MaxRecordSizeInKiB` is the default; see [`crate::StreamSettings::max_record_bytes`].
pub const MAX_RECORD_BYTES: usize = 1024 * 1024;
/// The most records one `PutRecords` call may carry.
pub const MAX_PUT_RECORDS_ENTRIES: usize = 500;
/// The most bytes one `PutRecords` call may carry, data and partition keys together (5 MiB),
/// to a stream whose `MaxRecordSizeInKiB` is the default; see
/// [`crate::StreamSettings::max_put_records_bytes`].
pub const MAX_PUT_RECORDS_BYTES: usize = 5 * 1024 * 1024;
/// The longest partition key, in Unicode characters.
pub const MAX_PARTITION_KEY_CHARS: usize = 256;
/// The largest `Limit` of one `GetRecords` call, and its default.
pub const MAX_GET_RECORDS_LIMIT: usize = 10_000;
/// The most bytes (data plus partition keys) one `GetRecords` call returns (10 MiB).
pub const MAX_GET_RECORDS_BYTES: usize = 10 * 1024 * 1024;
/// The shortest retention period `IncreaseStreamRetentionPeriod` and
/// `DecreaseStreamRetentionPeriod` accept.
pub const MIN_RETENTION_HOURS: u32 = 24;
/// The longest retention period (365 days).
pub const MAX_RETENTION_HOURS: u32 = 8760;
/// The most shards `UpdateShardCount` scales one stream to.
pub const MAX_SHARDS_PER_STREAM: u32 = 10_000;
/// How long a stream keeps records unless configured otherwise.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// How long a shard iterator stays valid after it is issued.
pub const DEFAULT_ITERATOR_TTL: Duration = Duration::from_secs(5 * 60);
/// How long a `SubscribeToShard` subscription lasts unless configured otherwise (the API
/// reference of `SubscribeToShard`: "the subscription expires after 5 minutes").
pub const DEFAULT_SUBSCRIPTION_LIFETIME: Duration = Duration::from_secs(5 * 60);
/// How many open shards the account may hold across all streams unless configured otherwise.
pub const DEFAULT_SHARD_LIMIT: usize = 500;
/// How many `ON_DEMAND` streams an account may hold, as `DescribeLimits` tells it (the
/// developer guide's quotas: 50 by default). Shown, not enforced.
pub const ON_DEMAND_STREAM_LIMIT: usize = 50;
