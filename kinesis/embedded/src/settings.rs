//! What a stream is set to beside its shards and records, and the rules of changing it: its
//! maximum record size (`MaxRecordSizeInKiB`), its enhanced monitoring (the shard-level metrics
//! named, none of them computed), its server-side encryption (the KMS key named, nothing
//! encrypted) and its warm throughput. Pure rules with no I/O; `stream_settings.rs` applies them
//! to a stream and keeps each change in the journal.

use std::fmt;

use kinesis_source::SourceError;

/// The smallest `MaxRecordSizeInKiB`, and every stream's until it is changed (1 MiB).
pub const DEFAULT_MAX_RECORD_SIZE_KIB: u32 = 1024;
/// The largest `MaxRecordSizeInKiB` (10 MiB).
pub const MAX_MAX_RECORD_SIZE_KIB: u32 = 10240;
/// The most bytes one `PutRecords` call may carry to a stream whose records may exceed 1 MiB
/// (10 MiB, data and partition keys together).
pub const MAX_LARGE_PUT_RECORDS_BYTES: usize = 10 * 1024 * 1024;

/// A shard-level metric of enhanced monitoring, in the API model's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ShardMetric {
    IncomingBytes,
    IncomingRecords,
    OutgoingBytes,
    OutgoingRecords,
    WriteProvisionedThroughputExceeded,
    ReadProvisionedThroughputExceeded,
    IteratorAgeMilliseconds,
}

impl ShardMetric {
    /// Every metric: what `ALL` stands for.
    pub(crate) const EVERY: [Self; 7] = [
        Self::IncomingBytes,
        Self::IncomingRecords,
        Self::OutgoingBytes,
        Self::OutgoingRecords,
        Self::WriteProvisionedThroughputExceeded,
        Self::ReadProvisionedThroughputExceeded,
        Self::IteratorAgeMilliseconds,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::IncomingBytes => "IncomingBytes",
            Self::IncomingRecords => "IncomingRecords",
            Self::OutgoingBytes => "OutgoingBytes",
            Self::OutgoingRecords => "OutgoingRecords",
            Self::WriteProvisionedThroughputExceeded => "WriteProvisionedThroughputExceeded",
            Self::ReadProvisionedThroughputExceeded => "ReadProvisionedThroughputExceeded",
            Self::IteratorAgeMilliseconds => "IteratorAgeMilliseconds",
        }
    }

    /// The metrics a `ShardLevelMetrics` entry names: one, or every one for `ALL`; `None` for
    /// a name the model does not know.
    pub(crate) fn named(name: &str) -> Option<Vec<Self>> {
        if name == "ALL" {
            return Some(Self::EVERY.to_vec());
        }
        Self::EVERY
            .into_iter()
            .find(|metric| metric.as_str() == name)
            .map(|metric| vec![metric])
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// How a stream places records on its shards (`RecordDistributionStrategy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RecordDistribution {
    /// `USER_PARTITION_KEY` (the default): by the MD5 of each record's partition key, or its
    /// explicit hash key; every record needs a partition key.
    #[default]
    UserPartitionKey,
    /// `AUTO`: spread evenly over the open shards; partition keys are optional and, like
    /// explicit hash keys, play no part in where a record goes.
    Auto,
}

impl RecordDistribution {
    /// The strategy's name, as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserPartitionKey => "USER_PARTITION_KEY",
            Self::Auto => "AUTO",
        }
    }
}

/// The golden ratio as a fraction of 2^128: successive multiples of it, taken modulo 2^128,
/// fall as evenly over the hash key space as any sequence can (a Weyl sequence).
const GOLDEN_RATIO_HASH_KEY: u128 = 0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835;

/// The hash key of the `n`-th record an `AUTO` stream places: the records spread evenly over
/// any shards that tile the hash key space, in proportion to their ranges.
pub(crate) fn spread_hash_key(n: u64) -> u128 {
    u128::from(n)
        .wrapping_add(1)
        .wrapping_mul(GOLDEN_RATIO_HASH_KEY)
}

/// A set of shard-level metrics, kept in the model's order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MetricSet(u8);

impl MetricSet {
    pub(crate) fn of(metrics: impl IntoIterator<Item = ShardMetric>) -> Self {
        Self(
            metrics
                .into_iter()
                .fold(0, |bits, metric| bits | metric.bit()),
        )
    }

    pub(crate) fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    pub(crate) fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    pub(crate) fn metrics(self) -> impl Iterator<Item = ShardMetric> {
        ShardMetric::EVERY
            .into_iter()
            .filter(move |metric| self.0 & metric.bit() != 0)
    }

    pub(crate) fn bits(self) -> u8 {
        self.0
    }

    /// The set `bits` encode, or `None` if they name a metric that does not exist.
    pub(crate) fn from_bits(bits: u8) -> Option<Self> {
        let every = Self::of(ShardMetric::EVERY).0;
        (bits & !every == 0).then_some(Self(bits))
    }
}

/// A stream's settings, as `DescribeStreamSummary` shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSettings {
    /// `MaxRecordSizeInKiB`: the largest record (data plus partition key) the stream takes.
    pub max_record_size_kib: u32,
    pub(crate) enhanced_metrics: MetricSet,
    /// The KMS key the stream is encrypted with (`EncryptionType` `KMS`), if any.
    pub encryption_key_id: Option<String>,
    /// The warm throughput asked for, in MiB/s, if any (on-demand streams only).
    pub warm_throughput_mibps: Option<u32>,
    /// How records are placed on the shards (on-demand streams only may be `AUTO`).
    pub record_distribution: RecordDistribution,
}

impl Default for StreamSettings {
    fn default() -> Self {
        Self {
            max_record_size_kib: DEFAULT_MAX_RECORD_SIZE_KIB,
            enhanced_metrics: MetricSet::default(),
            encryption_key_id: None,
            warm_throughput_mibps: None,
            record_distribution: RecordDistribution::UserPartitionKey,
        }
    }
}

impl StreamSettings {
    /// The most bytes (data plus partition key) one record may hold.
    pub fn max_record_bytes(&self) -> usize {
        self.max_record_size_kib as usize * 1024
    }

    /// The most bytes (data plus partition keys) one `PutRecords` call may carry: 5 MiB, or
    /// 10 MiB once the stream takes records over 1 MiB.
    pub fn max_put_records_bytes(&self) -> usize {
        if self.max_record_size_kib > DEFAULT_MAX_RECORD_SIZE_KIB {
            MAX_LARGE_PUT_RECORDS_BYTES
        } else {
            crate::limits::MAX_PUT_RECORDS_BYTES
        }
    }

    /// The names of the shard-level metrics enabled, in the model's order.
    pub fn shard_level_metrics(&self) -> Vec<&'static str> {
        self.enhanced_metrics
            .metrics()
            .map(ShardMetric::as_str)
            .collect()
    }
}

/// One change of a stream's settings, as the API asks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SettingChange {
    /// `UpdateMaxRecordSize` (or `CreateStream`'s `MaxRecordSizeInKiB`).
    MaxRecordSize(u32),
    /// `EnableEnhancedMonitoring`.
    EnableMetrics(MetricSet),
    /// `DisableEnhancedMonitoring`.
    DisableMetrics(MetricSet),
    /// `StartStreamEncryption` with this key.
    StartEncryption(String),
    /// `StopStreamEncryption`.
    StopEncryption,
    /// `UpdateStreamWarmThroughput` (or `CreateStream`'s `WarmThroughputMiBps`).
    WarmThroughput(u32),
    /// `UpdateStreamRecordDistributionStrategy` (or `CreateStream`'s
    /// `RecordDistributionStrategy`).
    Distribution(RecordDistribution),
}

/// Why a setting cannot change: the message of an `InvalidArgumentException`, naming the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused(pub(crate) String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Refused> for SourceError {
    fn from(Refused(message): Refused) -> Self {
        SourceError::InvalidArgument { message }
    }
}

/// What the stream is, as far as the rules of its settings care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StreamFacts<'a> {
    /// `stream <name> under account <id>`, for messages.
    pub(crate) described: &'a str,
    pub(crate) on_demand: bool,
}

impl StreamSettings {
    /// The settings after `change`, or why the change is refused. The ranges of the API model
    /// (`MaxRecordSizeInKiB` 1024-10240) are checked before, as validation; these are the rules
    /// that need the stream.
    pub(crate) fn changed(
        &self,
        change: &SettingChange,
        stream: StreamFacts<'_>,
    ) -> Result<Self, Refused> {
        let mut next = self.clone();
        match change {
            SettingChange::MaxRecordSize(kib) => {
                if !(DEFAULT_MAX_RECORD_SIZE_KIB..=MAX_MAX_RECORD_SIZE_KIB).contains(kib) {
                    return Err(Refused(format!(
                        "MaxRecordSizeInKiB {kib} of {} must be between \
                         {DEFAULT_MAX_RECORD_SIZE_KIB} and {MAX_MAX_RECORD_SIZE_KIB}",
                        stream.described
                    )));
                }
                next.max_record_size_kib = *kib;
            }
            SettingChange::EnableMetrics(metrics) => {
                next.enhanced_metrics = self.enhanced_metrics.with(*metrics);
            }
            SettingChange::DisableMetrics(metrics) => {
                next.enhanced_metrics = self.enhanced_metrics.without(*metrics);
            }
            SettingChange::StartEncryption(key_id) => {
                next.encryption_key_id = Some(key_id.clone());
            }
            SettingChange::StopEncryption => next.encryption_key_id = None,
            SettingChange::WarmThroughput(mibps) => {
                if !stream.on_demand {
                    return Err(Refused(format!(
                        "Warm throughput applies to ON_DEMAND streams; {} is PROVISIONED",
                        stream.described
                    )));
                }
                next.warm_throughput_mibps = Some(*mibps);
            }
            SettingChange::Distribution(distribution) => {
                if !stream.on_demand {
                    return Err(Refused(format!(
                        "RecordDistributionStrategy applies to ON_DEMAND streams; {} is \
                         PROVISIONED",
                        stream.described
                    )));
                }
                next.record_distribution = *distribution;
            }
        }
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROVISIONED: StreamFacts<'static> = StreamFacts {
        described: "stream s under account 000000000000",
        on_demand: false,
    };
    const ON_DEMAND: StreamFacts<'static> = StreamFacts {
        on_demand: true,
        ..PROVISIONED
    };

    #[track_caller]
    fn check(
        change: SettingChange,
        stream: StreamFacts<'_>,
        expected: Result<StreamSettings, &str>,
    ) {
        let changed = StreamSettings::default().changed(&change, stream);
        match expected {
            Ok(settings) => assert_eq!(changed, Ok(settings), "{change:?}"),
            Err(part) => {
                let Refused(message) = changed.expect_err("refused");
                assert!(message.contains(part), "`{message}` should say `{part}`");
                assert!(message.contains("stream s"), "`{message}` names the stream");
            }
        }
    }

    #[test]
    fn the_max_record_size_is_1_to_10_mib() {
        let sized = |kib| StreamSettings {
            max_record_size_kib: kib,
            ..StreamSettings::default()
        };
        check(
            SettingChange::MaxRecordSize(1024),
            PROVISIONED,
            Ok(sized(1024)),
        );
        check(
            SettingChange::MaxRecordSize(10240),
            ON_DEMAND,
            Ok(sized(10240)),
        );
        check(
            SettingChange::MaxRecordSize(1023),
            PROVISIONED,
            Err("between 1024 and 10240"),
        );
        check(
            SettingChange::MaxRecordSize(10241),
            PROVISIONED,
            Err("between 1024 and 10240"),
        );
    }

    #[test]
    fn records_and_put_records_calls_grow_with_the_max_record_size() {
        let mut settings = StreamSettings::default();
        assert_eq!(settings.max_record_bytes(), crate::limits::MAX_RECORD_BYTES);
        assert_eq!(settings.max_put_records_bytes(), 5 * 1024 * 1024);
        settings.max_record_size_kib = 1025;
        assert_eq!(settings.max_record_bytes(), 1025 * 1024);
        assert_eq!(settings.max_put_records_bytes(), 10 * 1024 * 1024);
        settings.max_record_size_kib = MAX_MAX_RECORD_SIZE_KIB;
        assert_eq!(settings.max_record_bytes(), 10 * 1024 * 1024);
    }

    #[test]
    fn metrics_are_enabled_and_disabled_by_name_or_all() {
        let named = |name| MetricSet::of(ShardMetric::named(name).unwrap());
        let settings = StreamSettings::default()
            .changed(
                &SettingChange::EnableMetrics(named("OutgoingBytes")),
                PROVISIONED,
            )
            .unwrap()
            .changed(
                &SettingChange::EnableMetrics(named("IncomingBytes")),
                PROVISIONED,
            )
            .unwrap();
        assert_eq!(
            settings.shard_level_metrics(),
            ["IncomingBytes", "OutgoingBytes"]
        );
        let all = settings
            .changed(&SettingChange::EnableMetrics(named("ALL")), PROVISIONED)
            .unwrap();
        assert_eq!(all.shard_level_metrics().len(), 7);
        let fewer = all
            .changed(
                &SettingChange::DisableMetrics(named("IncomingBytes")),
                PROVISIONED,
            )
            .unwrap();
        assert_eq!(fewer.shard_level_metrics().len(), 6);
        let none = fewer
            .changed(&SettingChange::DisableMetrics(named("ALL")), PROVISIONED)
            .unwrap();
        assert!(none.shard_level_metrics().is_empty());
        assert_eq!(ShardMetric::named("Incoming"), None);
    }

    #[test]
    fn metric_sets_read_back_from_their_bits_and_refuse_unknown_ones() {
        let set = MetricSet::of([
            ShardMetric::IteratorAgeMilliseconds,
            ShardMetric::IncomingBytes,
        ]);
        assert_eq!(MetricSet::from_bits(set.bits()), Some(set));
        assert_eq!(MetricSet::from_bits(0x80), None);
    }

    #[test]
    fn encryption_keeps_its_key_until_stopped() {
        let started = StreamSettings::default()
            .changed(
                &SettingChange::StartEncryption("alias/aws/kinesis".into()),
                PROVISIONED,
            )
            .unwrap();
        assert_eq!(
            started.encryption_key_id.as_deref(),
            Some("alias/aws/kinesis")
        );
        let stopped = started
            .changed(&SettingChange::StopEncryption, PROVISIONED)
            .unwrap();
        assert_eq!(stopped.encryption_key_id, None);
    }

    #[test]
    fn auto_distribution_is_for_on_demand_streams() {
        let auto = StreamSettings {
            record_distribution: RecordDistribution::Auto,
            ..StreamSettings::default()
        };
        let change = SettingChange::Distribution(RecordDistribution::Auto);
        check(change.clone(), ON_DEMAND, Ok(auto));
        check(change, PROVISIONED, Err("ON_DEMAND"));
    }

    #[test]
    fn auto_spreads_records_evenly_over_the_shards() {
        // Four shards of equal ranges, as CreateStream makes them.
        let quarter = |hash_key: u128| (hash_key >> 126) as usize;
        let mut counts = [0_u32; 4];
        for n in 0..1_000 {
            counts[quarter(spread_hash_key(n))] += 1;
        }
        assert!(
            counts.iter().all(|&count| (245..=255).contains(&count)),
            "{counts:?}"
        );
        // Consecutive records never land on the same shard twice in a row here.
        let shards: Vec<usize> = (0..8).map(|n| quarter(spread_hash_key(n))).collect();
        assert!(
            shards.windows(2).all(|pair| pair[0] != pair[1]),
            "{shards:?}"
        );
    }

    #[test]
    fn warm_throughput_is_for_on_demand_streams() {
        let warm = StreamSettings {
            warm_throughput_mibps: Some(100),
            ..StreamSettings::default()
        };
        check(SettingChange::WarmThroughput(100), ON_DEMAND, Ok(warm));
        check(
            SettingChange::WarmThroughput(100),
            PROVISIONED,
            Err("ON_DEMAND"),
        );
    }
}
