//! AWS's throughput limits as pure rules: token buckets over milliseconds of the embedded
//! Kinesis' clock ([`crate::clock::Clock`]), with no I/O and no clock of their own. The numbers and
//! where they come from are in docs/kinesis.md, "Throughput limits (`--throttle`)".
//!
//! [`super::throughput`] keeps one [`ShardLimits`] per shard and asks these rules; only
//! `--throttle` (`EmbeddedKinesisBuilder::throttle`) turns them on.

/// Bytes (data plus partition key) one shard takes in per second.
pub(crate) const WRITE_BYTES_PER_SECOND: u64 = 1024 * 1024;
/// Records one shard takes in per second.
pub(crate) const WRITE_RECORDS_PER_SECOND: u64 = 1_000;
/// `GetRecords` calls one shard answers per second, shared by its standard consumers.
pub(crate) const READ_CALLS_PER_SECOND: u64 = 5;
/// Bytes one shard returns per second across its standard consumers.
pub(crate) const READ_BYTES_PER_SECOND: u64 = 2 * 1024 * 1024;
/// `GetShardIterator` calls one open shard answers per second.
pub(crate) const ITERATOR_CALLS_PER_SECOND: u64 = 5;
/// `ListShards` calls one stream answers per second.
pub(crate) const LIST_SHARDS_CALLS_PER_SECOND: u64 = 1_000;
/// `DescribeStream` calls the account answers per second.
pub(crate) const DESCRIBE_STREAM_CALLS_PER_SECOND: u64 = 10;
/// `DescribeStreamSummary` calls the account answers per second.
pub(crate) const DESCRIBE_STREAM_SUMMARY_CALLS_PER_SECOND: u64 = 20;

/// A token bucket that holds one second's worth of its rate and refills continuously. Tokens
/// are counted in thousandths so that a refill over whole milliseconds loses nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bucket {
    per_second: u64,
    milli_tokens: u64,
    at_ms: u64,
}

impl Bucket {
    /// A full bucket at `now_ms`: a burst of one second's worth is allowed at once.
    pub(crate) fn full(per_second: u64, now_ms: u64) -> Self {
        Self {
            per_second,
            milli_tokens: per_second.saturating_mul(1_000),
            at_ms: now_ms,
        }
    }

    /// Adds what the time since the last refill earned. A clock set back earns nothing (and
    /// is not held against the bucket): the bucket waits until the clock passes its time again.
    fn refill(&mut self, now_ms: u64) {
        if now_ms <= self.at_ms {
            return;
        }
        let earned = (now_ms - self.at_ms).saturating_mul(self.per_second);
        self.milli_tokens = self
            .milli_tokens
            .saturating_add(earned)
            .min(self.per_second.saturating_mul(1_000));
        self.at_ms = now_ms;
    }

    /// Whether `tokens` are there at `now_ms`, taking nothing.
    fn holds(&mut self, tokens: u64, now_ms: u64) -> bool {
        self.refill(now_ms);
        self.milli_tokens >= tokens.saturating_mul(1_000)
    }

    fn take(&mut self, tokens: u64) {
        self.milli_tokens -= tokens.saturating_mul(1_000);
    }

    /// Owes `tokens` beyond an empty bucket: it earns nothing until its rate has paid them.
    fn owe(&mut self, tokens: u64) {
        let millis = tokens
            .saturating_mul(1_000)
            .div_ceil(self.per_second.max(1));
        self.at_ms = self.at_ms.saturating_add(millis);
    }

    /// Takes `tokens` if they are there at `now_ms`.
    pub(crate) fn try_take(&mut self, tokens: u64, now_ms: u64) -> bool {
        let holds = self.holds(tokens, now_ms);
        if holds {
            self.take(tokens);
        }
        holds
    }
}

/// One shard's limits: writes, `GetRecords` calls and bytes, `GetShardIterator` calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShardLimits {
    write_bytes: Bucket,
    write_records: Bucket,
    read_calls: Bucket,
    /// Reads are refused until then: a `GetRecords` that returned `b` bytes takes the shard's
    /// read budget for `b / 2 MiB` seconds (10 MiB: the next 5 seconds, as AWS documents).
    reads_blocked_until_ms: u64,
    iterator_calls: Bucket,
}

impl ShardLimits {
    /// A shard with its whole budget, as at its first call.
    pub(crate) fn new(now_ms: u64) -> Self {
        Self {
            write_bytes: Bucket::full(WRITE_BYTES_PER_SECOND, now_ms),
            write_records: Bucket::full(WRITE_RECORDS_PER_SECOND, now_ms),
            read_calls: Bucket::full(READ_CALLS_PER_SECOND, now_ms),
            reads_blocked_until_ms: 0,
            iterator_calls: Bucket::full(ITERATOR_CALLS_PER_SECOND, now_ms),
        }
    }

    /// Admits one record of `bytes` (data plus partition key) if both write budgets hold it,
    /// and charges them; a refused record charges nothing.
    ///
    /// A record larger than the byte budget ever holds (a large record, AWS's burst) is
    /// admitted when the budget is full: it empties the budget, and the bytes beyond it block
    /// the shard's writes until the shard's rate has paid for them.
    pub(crate) fn admit_write(&mut self, bytes: u64, now_ms: u64) -> bool {
        let budget = WRITE_BYTES_PER_SECOND.min(bytes);
        let fits = self.write_bytes.holds(budget, now_ms) && self.write_records.holds(1, now_ms);
        if fits {
            self.write_bytes.take(budget);
            self.write_bytes.owe(bytes - budget);
            self.write_records.take(1);
        }
        fits
    }

    /// Admits one `GetRecords` call: refused while an earlier call's bytes are being paid
    /// for, or past 5 calls a second.
    pub(crate) fn admit_read(&mut self, now_ms: u64) -> bool {
        now_ms >= self.reads_blocked_until_ms && self.read_calls.try_take(1, now_ms)
    }

    /// Charges the bytes an admitted `GetRecords` call returned.
    pub(crate) fn charge_read(&mut self, bytes: u64, now_ms: u64) {
        if bytes == 0 {
            return;
        }
        let millis = bytes.saturating_mul(1_000).div_ceil(READ_BYTES_PER_SECOND);
        self.reads_blocked_until_ms = self
            .reads_blocked_until_ms
            .max(now_ms)
            .saturating_add(millis);
    }

    /// Admits one `GetShardIterator` call.
    pub(crate) fn admit_iterator(&mut self, now_ms: u64) -> bool {
        self.iterator_calls.try_take(1, now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    /// Steps of a table: at `at_ms`, the call, and whether it is admitted.
    enum Call {
        Write(u64),
        Read,
        ReadReturning(u64),
        Iterator,
    }

    #[track_caller]
    fn check(steps: &[(u64, Call, bool)]) {
        let mut limits = ShardLimits::new(0);
        for (position, (at_ms, call, expected)) in steps.iter().enumerate() {
            let admitted = match call {
                Call::Write(bytes) => limits.admit_write(*bytes, *at_ms),
                Call::Read => limits.admit_read(*at_ms),
                Call::ReadReturning(bytes) => {
                    let admitted = limits.admit_read(*at_ms);
                    if admitted {
                        limits.charge_read(*bytes, *at_ms);
                    }
                    admitted
                }
                Call::Iterator => limits.admit_iterator(*at_ms),
            };
            assert_eq!(admitted, *expected, "step {position} at {at_ms} ms");
        }
    }

    #[test]
    fn writes_take_one_mebibyte_a_second_and_refill_continuously() {
        use Call::Write;
        check(&[
            (0, Write(MIB / 2), true),
            (0, Write(MIB / 2), true),
            // The bucket is empty: one byte more is refused, and refusing charges nothing.
            (0, Write(1), false),
            // Half a second earns half a mebibyte.
            (500, Write(MIB / 2 + 1), false),
            (500, Write(MIB / 2), true),
            // A whole record of 1 MiB fits a full bucket, never more than one second's worth.
            (5_000, Write(MIB), true),
            (5_000, Write(1), false),
        ]);
    }

    #[test]
    fn a_record_over_a_mebibyte_bursts_then_is_paid_for() {
        use Call::Write;
        check(&[
            // A 4 MiB record needs the whole budget: a part of it used is not enough.
            (0, Write(1), true),
            (0, Write(4 * MIB), false),
            // Full again a second later: the record passes, owing 3 MiB, three seconds.
            (1_000, Write(4 * MIB), true),
            (1_001, Write(1), false),
            (3_999, Write(1), false),
            // Paid for, then the budget refills as usual: half a second earns half a MiB.
            (4_500, Write(MIB / 2 + 1), false),
            (4_500, Write(MIB / 2), true),
        ]);
    }

    #[test]
    fn writes_take_a_thousand_records_a_second() {
        let mut limits = ShardLimits::new(0);
        let admitted = (0..1_200).filter(|_| limits.admit_write(10, 0)).count();
        assert_eq!(admitted, 1_000);
        // 1 ms earns one record.
        assert!(limits.admit_write(10, 1));
        assert!(!limits.admit_write(10, 1));
    }

    #[test]
    fn reads_take_five_calls_a_second() {
        use Call::Read;
        check(&[
            (0, Read, true),
            (0, Read, true),
            (0, Read, true),
            (0, Read, true),
            (0, Read, true),
            (0, Read, false),
            (199, Read, false),
            (200, Read, true),
            (200, Read, false),
        ]);
    }

    #[test]
    fn a_large_read_blocks_the_shard_while_its_bytes_are_paid_for() {
        use Call::ReadReturning;
        check(&[
            // 10 MiB at 2 MiB/s: refused for the next 5 seconds, as AWS documents.
            (0, ReadReturning(10 * MIB), true),
            (1, ReadReturning(0), false),
            (4_999, ReadReturning(0), false),
            (5_000, ReadReturning(MIB), true),
            // 1 MiB takes half a second of the budget.
            (5_499, ReadReturning(0), false),
            (5_500, ReadReturning(0), true),
        ]);
    }

    #[test]
    fn iterators_take_five_calls_a_second() {
        use Call::Iterator;
        let mut steps: Vec<(u64, Call, bool)> = (0..5).map(|_| (0, Iterator, true)).collect();
        steps.push((0, Iterator, false));
        steps.push((1_000, Iterator, true));
        check(&steps);
    }

    #[test]
    fn a_clock_set_back_earns_nothing() {
        let mut bucket = Bucket::full(5, 10_000);
        assert!((0..5).all(|_| bucket.try_take(1, 10_000)));
        assert!(!bucket.try_take(1, 2_000));
        assert!(!bucket.try_take(1, 10_199));
        assert!(bucket.try_take(1, 10_200));
    }
}
