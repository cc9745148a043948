//! How fast each shard is read: the least time between two `GetRecords` calls, and the
//! byte rate a shard rests to stay under (`docs/kinesis.md` §2).

use std::time::Duration;

use tokio::time::Instant;

/// How fast one shard may be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadPacing {
    /// The least time between two `GetRecords` calls on one shard.
    pub min_interval: Duration,
    /// The read rate to stay under, in bytes per second per shard; `None`: unlimited.
    pub bytes_per_second: Option<u64>,
}

impl ReadPacing {
    /// Kinesis' own limits: 5 calls/s and 2 MiB/s per shard.
    pub const KINESIS_LIMITS: Self = Self {
        min_interval: Duration::from_millis(200),
        bytes_per_second: Some(2 * 1024 * 1024),
    };

    /// No pacing at all, for servers without limits.
    pub const UNLIMITED: Self = Self {
        min_interval: Duration::ZERO,
        bytes_per_second: None,
    };
}

impl Default for ReadPacing {
    fn default() -> Self {
        Self::KINESIS_LIMITS
    }
}

/// When a shard may be read next.
#[derive(Debug, Clone, Copy)]
pub(super) struct ShardPacer {
    next_read: Instant,
}

impl ShardPacer {
    /// Books the next read slot at or after `now`: returns how long to wait for it.
    pub(super) fn book(&mut self, now: Instant, pacing: &ReadPacing) -> Duration {
        let start = self.next_read.max(now);
        self.next_read = start + pacing.min_interval;
        start - now
    }

    /// Accounts for a read that started at `started` and returned `bytes`: the shard rests
    /// until the bytes fit the rate.
    pub(super) fn record_read(&mut self, started: Instant, bytes: usize, pacing: &ReadPacing) {
        if let Some(rate) = pacing.bytes_per_second.filter(|&rate| rate > 0) {
            let rest = Duration::from_secs_f64(bytes as f64 / rate as f64);
            self.next_read = self.next_read.max(started + rest);
        }
    }
}

impl From<Instant> for ShardPacer {
    /// A shard that may be read from `now` on.
    fn from(now: Instant) -> Self {
        Self { next_read: now }
    }
}
