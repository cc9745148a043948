//! Pauses between tries: exponential, capped, with jitter.

use std::time::Duration;

/// Exponential backoff with "equal jitter": each pause is half the current step plus a random
/// part of the other half, so retrying readers do not move in lockstep.
///
/// The random source is injectable ([`Backoff::with_rng`]) so that tests are repeatable.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    step: Duration,
    rng: fastrand::Rng,
}

impl Backoff {
    /// Pauses that start at `initial` and double up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self::with_rng(initial, max, fastrand::Rng::new())
    }

    /// The same, drawing jitter from `rng`.
    pub fn with_rng(initial: Duration, max: Duration, rng: fastrand::Rng) -> Self {
        Self {
            initial,
            max: max.max(initial),
            step: initial,
            rng,
        }
    }

    /// The next pause; each call doubles the step until it reaches the maximum.
    pub fn next_delay(&mut self) -> Duration {
        let step = self.step;
        self.step = (self.step * 2).min(self.max);
        let half = step / 2;
        let jitter_nanos = self
            .rng
            .u64(0..=half.as_nanos().min(u128::from(u64::MAX)) as u64);
        half + Duration::from_nanos(jitter_nanos)
    }

    /// Starts again from the initial pause, after a success.
    pub fn reset(&mut self) {
        self.step = self.initial;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_with_bounded_jitter() {
        let mut backoff = Backoff::with_rng(
            Duration::from_millis(100),
            Duration::from_millis(400),
            fastrand::Rng::with_seed(7),
        );
        let steps = [100, 200, 400, 400, 400];
        for step in steps {
            let delay = backoff.next_delay();
            let step = Duration::from_millis(step);
            assert!(
                delay >= step / 2 && delay <= step,
                "{delay:?} within [{:?}, {step:?}]",
                step / 2
            );
        }
        backoff.reset();
        assert!(backoff.next_delay() <= Duration::from_millis(100));
    }

    #[test]
    fn the_same_seed_gives_the_same_pauses() {
        let pauses = |seed| {
            let mut backoff = Backoff::with_rng(
                Duration::from_millis(10),
                Duration::from_secs(1),
                fastrand::Rng::with_seed(seed),
            );
            (0..5).map(|_| backoff.next_delay()).collect::<Vec<_>>()
        };
        assert_eq!(pauses(1), pauses(1));
        assert_ne!(pauses(1), pauses(2));
    }
}
