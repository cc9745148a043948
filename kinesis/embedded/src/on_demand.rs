//! When an `ON_DEMAND` stream splits a shard, as a pure rule over the embedded Kinesis'
//! clock (docs/kinesis.md, "On-demand scaling").
//!
//! AWS documents that it "monitors traffic for each shard. When the incoming traffic exceeds
//! 500 KB/s per shard, it splits the shard within 15 minutes", evenly. It does not say over
//! what span it measures; here it is each whole minute of the clock: a shard whose writes in
//! one minute pass 500 KiB/s on average (30 MiB) is split the moment they do, which is when
//! that minute's average is certain to pass it.

/// The write rate past which a shard of an `ON_DEMAND` stream splits, in bytes a second.
pub(crate) const SPLIT_ABOVE_BYTES_PER_SECOND: u64 = 500 * 1024;
/// The span writes are averaged over: whole minutes of the clock.
pub(crate) const WINDOW_MS: u64 = 60_000;

/// One shard's writes in the current minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ShardWrites {
    window_start_ms: u64,
    bytes: u64,
}

impl ShardWrites {
    /// Counts `bytes` written at `now_ms`; true once this minute's writes pass the split
    /// rate (only the write that passes it answers true, so a shard is split once).
    pub(crate) fn record(&mut self, bytes: u64, now_ms: u64) -> bool {
        let window_start_ms = now_ms - now_ms % WINDOW_MS;
        if window_start_ms != self.window_start_ms {
            *self = Self {
                window_start_ms,
                bytes: 0,
            };
        }
        let threshold = SPLIT_ABOVE_BYTES_PER_SECOND * (WINDOW_MS / 1_000);
        let was_over = self.bytes > threshold;
        self.bytes = self.bytes.saturating_add(bytes);
        !was_over && self.bytes > threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THRESHOLD: u64 = 500 * 1024 * 60;

    #[test]
    fn a_shard_splits_when_a_minute_of_writes_passes_the_rate() {
        // (at, bytes, split due)
        let table: &[(u64, u64, bool)] = &[
            (60_000, THRESHOLD - 1, false),
            (60_500, 1, false),
            // One byte past 500 KiB/s over the minute.
            (119_999, 1, true),
            // Due once only.
            (119_999, 5_000, false),
            // A new minute starts from nothing.
            (120_000, THRESHOLD, false),
            (180_000, THRESHOLD + 1, true),
        ];
        let mut writes = ShardWrites::default();
        for (position, &(at_ms, bytes, due)) in table.iter().enumerate() {
            assert_eq!(writes.record(bytes, at_ms), due, "step {position}");
        }
    }

    #[test]
    fn a_steady_rate_below_the_threshold_never_splits() {
        let mut writes = ShardWrites::default();
        // 500 KiB every second for ten minutes: exactly the rate, never past it.
        assert!((0..600).all(|second| !writes.record(500 * 1024, second * 1_000)));
    }
}
