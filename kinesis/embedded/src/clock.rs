//! The embedded Kinesis' sense of time: arrival timestamps, retention and iterator expiry.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// Tells the embedded Kinesis what time it is.
///
/// Arrival timestamps, the trim horizon and iterator expiry all read this clock, so a test that
/// swaps in a [`ManualClock`] can age records and iterators without waiting. It does not drive
/// [`kinesis_source::ShardSource::wait_for_records`] timeouts, which run on tokio's timer.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The system's wall clock: the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that stands still until told to move. Clones share the same time, so a test keeps
/// one handle and gives another to the embedded Kinesis.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<SystemTime>>,
}

impl ManualClock {
    /// A clock showing `now`.
    pub fn new(now: SystemTime) -> Self {
        Self {
            now: Arc::new(Mutex::new(now)),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        // The guarded value is a plain time that no panic can leave half-written.
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }

    /// Sets the clock to `now`, which may lie in the past.
    pub fn set(&self, now: SystemTime) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = now;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Milliseconds since the Unix epoch, rounded down; times before the epoch count as 0.
pub(crate) fn millis_floor(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| saturate(since.as_millis()))
}

/// Milliseconds since the Unix epoch, rounded up: the first whole millisecond at or after `time`.
pub(crate) fn millis_ceil(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| {
            let floor = saturate(since.as_millis());
            if since.subsec_nanos() % 1_000_000 == 0 {
                floor
            } else {
                floor.saturating_add(1)
            }
        })
}

/// The time `millis` milliseconds after the Unix epoch.
pub(crate) fn from_millis(millis: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(millis)
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn duration_millis(duration: Duration) -> u64 {
    saturate(duration.as_millis())
}

fn saturate(millis: u128) -> u64 {
    u64::try_from(millis).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_round_as_named() {
        let exact = SystemTime::UNIX_EPOCH + Duration::from_millis(1_500);
        assert_eq!((millis_floor(exact), millis_ceil(exact)), (1_500, 1_500));
        let between = exact + Duration::from_micros(1);
        assert_eq!(
            (millis_floor(between), millis_ceil(between)),
            (1_500, 1_501)
        );
        assert_eq!(from_millis(1_500), exact);
    }

    #[test]
    fn manual_clock_clones_share_one_time() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let clock = ManualClock::new(start);
        let handle = clock.clone();
        handle.advance(Duration::from_secs(5));
        assert_eq!(clock.now(), start + Duration::from_secs(5));
        handle.set(start);
        assert_eq!(clock.now(), start);
    }
}
