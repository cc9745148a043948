//! Pauses between attempts at a call that failed for a passing reason.
//!
//! The AWS backends do not retry by themselves (the SDKs' own retries are off, see
//! [`crate::aws::connection`]): they report each failure with its kind, and the caller decides.
//! This module gives callers the pauses. Two kinds of failure are kept apart, as rskafka's backoff
//! does:
//!
//! - an **error** (a 5xx answer, a dropped connection, a server that went away): the pause grows
//!   from [`BackoffConfig::initial`] towards [`BackoffConfig::max`], with "decorrelated jitter"
//!   (each pause drawn between `initial` and `base` times the previous one), so that many shard
//!   readers failing at once do not retry in step;
//! - a **throttle** (Kinesis' `ProvisionedThroughputExceededException`): Kinesis refuses reads on
//!   the shard for the next second, so the pause is at least [`BackoffConfig::throttle_floor`]
//!   whatever the error pauses have reached, again with jitter.
//!
//! The randomness is injectable ([`Backoff::with_random`]), so tests get exact pauses.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use crate::lease::LeaseError;
use kinesis_source::SourceError;

/// Why a call is worth trying again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryKind {
    /// The service failed or could not be reached.
    Error,
    /// The service refused the call for now because of its rate limits.
    Throttled,
}

/// Tells which failures are worth trying again, and how.
pub trait Retryable {
    /// `Some` when the same call may succeed after a pause; `None` when trying again is pointless
    /// (the caller must do something else first, such as getting a new shard iterator).
    fn retry_kind(&self) -> Option<RetryKind>;
}

impl Retryable for SourceError {
    fn retry_kind(&self) -> Option<RetryKind> {
        match self {
            Self::Throttled { .. } => Some(RetryKind::Throttled),
            Self::Service { .. } | Self::ResourceInUse { .. } => Some(RetryKind::Error),
            _ => None,
        }
    }
}

impl Retryable for LeaseError {
    fn retry_kind(&self) -> Option<RetryKind> {
        match self {
            Self::Unavailable { .. } => Some(RetryKind::Error),
            _ => None,
        }
    }
}

/// How pauses grow.
#[derive(Debug, Clone, PartialEq)]
pub struct BackoffConfig {
    /// The shortest pause after an error.
    pub initial: Duration,
    /// The longest pause.
    pub max: Duration,
    /// How much a pause may grow over the previous one (at least 1).
    pub base: f64,
    /// The shortest pause after a throttle.
    pub throttle_floor: Duration,
    /// How long [`Backoff::retry`] keeps trying, counting only its pauses; `None`: for ever.
    pub deadline: Option<Duration>,
}

impl Default for BackoffConfig {
    /// 100 ms growing three-fold up to 10 s; 1 s at least after a throttle (`docs/kinesis.md` §2:
    /// a throttled shard refuses reads for the next second); no deadline.
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(10),
            base: 3.0,
            throttle_floor: Duration::from_secs(1),
            deadline: None,
        }
    }
}

/// A failure that [`Backoff::retry`] gave up on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetryError<E> {
    /// The failure is not worth trying again.
    #[error(transparent)]
    Permanent(E),
    /// The deadline passed; this is the last failure seen.
    #[error("gave up after {attempts} attempts in {waited:?}: {last}")]
    DeadlineExceeded {
        /// The last failure.
        last: E,
        /// How many calls were made.
        attempts: u32,
        /// How long was spent pausing.
        waited: Duration,
    },
}

impl<E> RetryError<E> {
    /// The failure itself, whichever way retrying ended.
    pub fn into_inner(self) -> E {
        match self {
            Self::Permanent(error) | Self::DeadlineExceeded { last: error, .. } => error,
        }
    }
}

/// The pauses of one series of attempts. Reset it (or make a new one) after a success.
pub struct Backoff {
    config: BackoffConfig,
    /// The previous error pause, in seconds; the next is drawn above `initial` and below `base`
    /// times this.
    previous_error_pause: f64,
    waited: Duration,
    /// Returns numbers in `[0, 1)`.
    random: Box<dyn FnMut() -> f64 + Send>,
}

impl fmt::Debug for Backoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backoff")
            .field("config", &self.config)
            .field("previous_error_pause", &self.previous_error_pause)
            .field("waited", &self.waited)
            .finish_non_exhaustive()
    }
}

impl Backoff {
    /// Pauses drawn with a fast non-cryptographic generator.
    pub fn new(config: BackoffConfig) -> Self {
        Self::with_random(config, fastrand::f64)
    }

    /// Pauses drawn with `random`, which must return numbers in `[0, 1)`; tests pass a fixed
    /// sequence.
    pub fn with_random(
        config: BackoffConfig,
        random: impl FnMut() -> f64 + Send + 'static,
    ) -> Self {
        let initial = config.initial.as_secs_f64();
        Self {
            config,
            previous_error_pause: initial,
            waited: Duration::ZERO,
            random: Box::new(random),
        }
    }

    /// Starts over, as after a success.
    pub fn reset(&mut self) {
        self.previous_error_pause = self.config.initial.as_secs_f64();
        self.waited = Duration::ZERO;
    }

    /// How long pauses have lasted since the start or the last reset.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// The pause to take after a failure of this kind, counted as taken.
    pub fn next_pause(&mut self, kind: RetryKind) -> Duration {
        let random = (self.random)().clamp(0.0, 1.0);
        let initial = self.config.initial.as_secs_f64();
        let max = self.config.max.as_secs_f64().max(initial);
        let pause = match kind {
            RetryKind::Error => {
                // Decorrelated jitter: anywhere between the initial pause and `base` times the
                // previous one, so the pauses grow on average but never move in lockstep.
                let upper = (self.previous_error_pause * self.config.base.max(1.0)).min(max);
                let pause = initial + (upper - initial).max(0.0) * random;
                self.previous_error_pause = pause.max(initial);
                pause
            }
            RetryKind::Throttled => {
                // Kinesis refuses the shard for a whole second after a throttle: pausing less is
                // pointless. Up to half again on top spreads the readers out.
                let floor = self.config.throttle_floor.as_secs_f64().min(max);
                (floor * (1.0 + 0.5 * random)).min(max.max(floor))
            }
        };
        let pause = Duration::from_secs_f64(pause);
        self.waited += pause;
        pause
    }

    /// Calls `attempt` until it succeeds, pausing after each failure that [`Retryable`] calls
    /// passing, until the deadline (if any) has passed.
    pub async fn retry<T, E, F, Fut>(&mut self, mut attempt: F) -> Result<T, RetryError<E>>
    where
        E: Retryable + fmt::Display,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let error = match attempt().await {
                Ok(value) => {
                    self.reset();
                    return Ok(value);
                }
                Err(error) => error,
            };
            let Some(kind) = error.retry_kind() else {
                return Err(RetryError::Permanent(error));
            };
            if self
                .config
                .deadline
                .is_some_and(|deadline| self.waited >= deadline)
            {
                return Err(RetryError::DeadlineExceeded {
                    last: error,
                    attempts,
                    waited: self.waited,
                });
            }
            let pause = self.next_pause(kind);
            tracing::debug!(%error, ?kind, ?pause, attempts, "retrying after a pause");
            tokio::time::sleep(pause).await;
        }
    }

    /// The one pause-and-retry loop: calls `attempt` until it succeeds, or until `failed` (given
    /// each failure and the time paused so far) gives up with the error to return, pausing as
    /// the kind it answers says between attempts. A pause ends early when `stopped` resolves,
    /// with the error it resolves to.
    pub async fn retry_until_stopped<T, E, R, F, Fut, S, StopFut>(
        &mut self,
        mut attempt: F,
        mut failed: impl FnMut(E, Duration) -> Result<RetryKind, R>,
        mut stopped: S,
    ) -> Result<T, R>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        S: FnMut() -> StopFut,
        StopFut: Future<Output = R>,
    {
        loop {
            let error = match attempt().await {
                Ok(value) => {
                    self.reset();
                    return Ok(value);
                }
                Err(error) => error,
            };
            let kind = failed(error, self.waited)?;
            let pause = self.next_pause(kind);
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                stop = stopped() => return Err(stop),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    fn config() -> BackoffConfig {
        BackoffConfig {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(2),
            base: 3.0,
            throttle_floor: Duration::from_secs(1),
            deadline: None,
        }
    }

    /// A generator that returns the given numbers, over and over.
    fn fixed(numbers: &'static [f64]) -> impl FnMut() -> f64 + Send + 'static {
        let mut next = numbers.iter().copied().cycle();
        move || next.next().unwrap()
    }

    #[track_caller]
    fn check_pauses(random: &'static [f64], kinds: &[RetryKind], expected_millis: &[u64]) {
        let mut backoff = Backoff::with_random(config(), fixed(random));
        let pauses: Vec<u64> = kinds
            .iter()
            .map(|&kind| backoff.next_pause(kind).as_millis() as u64)
            .collect();
        assert_eq!(pauses, expected_millis);
    }

    #[test]
    fn error_pauses_grow_by_the_base_at_most_and_stop_at_the_max() {
        use RetryKind::Error;
        // With the top of the range each time: 100 → 300 → 900 → 2000 (the max) → 2000.
        check_pauses(&[0.999_999], &[Error; 5], &[299, 899, 1999, 1999, 1999]);
        // With the bottom of the range, the pause stays at the initial one.
        check_pauses(&[0.0], &[Error; 3], &[100, 100, 100]);
        // Half way: 100 + (300 - 100) / 2 = 200, then 100 + (600 - 100) / 2 = 350.
        check_pauses(&[0.5], &[Error; 2], &[200, 350]);
    }

    #[test]
    fn throttle_pauses_never_go_below_the_floor() {
        use RetryKind::{Error, Throttled};
        check_pauses(&[0.0], &[Throttled, Error, Throttled], &[1000, 100, 1000]);
        check_pauses(&[0.5], &[Throttled], &[1250]);
        // A throttle does not make later error pauses grow.
        check_pauses(&[0.999_999], &[Throttled, Error], &[1499, 299]);
    }

    #[test]
    fn reset_starts_over() {
        let mut backoff = Backoff::with_random(config(), fixed(&[0.999_999]));
        backoff.next_pause(RetryKind::Error);
        backoff.next_pause(RetryKind::Error);
        assert!(backoff.waited() > Duration::from_millis(1000));
        backoff.reset();
        assert_eq!(backoff.waited(), Duration::ZERO);
        assert_eq!(
            backoff.next_pause(RetryKind::Error).as_millis(),
            299,
            "the first pause after a reset grows from the initial one"
        );
    }

    fn service_error() -> SourceError {
        SourceError::Service {
            message: "HTTP 500".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retry_goes_on_through_passing_failures() {
        let calls = Arc::new(AtomicU32::new(0));
        let mut backoff = Backoff::with_random(config(), fixed(&[0.0]));
        let started = tokio::time::Instant::now();
        let result = backoff
            .retry(|| {
                let calls = calls.clone();
                async move {
                    match calls.fetch_add(1, Ordering::SeqCst) {
                        0 => Err(service_error()),
                        1 => Err(SourceError::Throttled {
                            message: "slow down".into(),
                        }),
                        _ => Ok("records"),
                    }
                }
            })
            .await;
        assert_eq!(result, Ok("records"));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        // 100 ms after the error, 1 s after the throttle (time is paused, so this is exact).
        assert_eq!(started.elapsed(), Duration::from_millis(1100));
        assert_eq!(backoff.waited(), Duration::ZERO, "a success resets");
    }

    #[tokio::test(start_paused = true)]
    async fn retry_until_stopped_goes_on_until_success_and_gives_up_when_told() {
        let mut backoff = Backoff::new(config());
        let mut calls = 0;
        let result: Result<u32, &str> = backoff
            .retry_until_stopped(
                || {
                    calls += 1;
                    let call = calls;
                    async move { if call < 3 { Err("passing") } else { Ok(call) } }
                },
                |_, _| Ok(RetryKind::Error),
                std::future::pending,
            )
            .await;
        assert_eq!(result, Ok(3));
        let result: Result<(), &str> = backoff
            .retry_until_stopped(
                || async { Err("permanent") },
                |error, _| Err(error),
                std::future::pending,
            )
            .await;
        assert_eq!(result, Err("permanent"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_ends_the_pause_of_retry_until_stopped() {
        let mut backoff = Backoff::new(config());
        let started = tokio::time::Instant::now();
        let result: Result<(), &str> = backoff
            .retry_until_stopped(
                || async { Err("passing") },
                |_, _| Ok(RetryKind::Throttled),
                || async { "stopped" },
            )
            .await;
        assert_eq!(result, Err("stopped"));
        assert_eq!(started.elapsed(), Duration::ZERO, "no pause was taken");
    }

    #[tokio::test(start_paused = true)]
    async fn retry_stops_at_a_permanent_failure() {
        let mut backoff = Backoff::new(config());
        let result: Result<(), _> = backoff
            .retry(|| async { Err(SourceError::ExpiredIterator) })
            .await;
        assert_eq!(
            result,
            Err(RetryError::Permanent(SourceError::ExpiredIterator))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retry_gives_up_at_the_deadline() {
        let mut backoff = Backoff::with_random(
            BackoffConfig {
                deadline: Some(Duration::from_millis(250)),
                ..config()
            },
            fixed(&[0.0]),
        );
        let result: Result<(), _> = backoff
            .retry(|| async {
                Err(LeaseError::Unavailable {
                    message: "connection refused".into(),
                })
            })
            .await;
        // Pauses of 100 ms: after three (300 ms ≥ 250 ms) the fourth failure ends it.
        assert_eq!(
            result,
            Err(RetryError::DeadlineExceeded {
                last: LeaseError::Unavailable {
                    message: "connection refused".into()
                },
                attempts: 4,
                waited: Duration::from_millis(300),
            })
        );
    }
}
