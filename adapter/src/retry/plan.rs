//! The retry and dead-letter streams of an adapter, as the environment names them, and where a
//! held record goes next.

use std::time::{Duration, SystemTime};

use super::envelope::{ENVELOPE_VERSION, Envelope, Origin, millis_since_epoch};
use crate::env::EnvError;

/// Where a held record goes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop<'a> {
    /// To the retry stream, as its `attempt`-th retry.
    Retry {
        /// The stream.
        stream: &'a str,
        /// The attempt it will be.
        attempt: u32,
    },
    /// To the dead-letter stream, after `attempts` retries.
    DeadLetter {
        /// The stream.
        stream: &'a str,
        /// The retries it had.
        attempts: u32,
    },
}

/// The retry and dead-letter streams of an adapter, and its cap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetryPlan {
    /// The retry stream, and how many times a record may go to it.
    pub retry: Option<(String, u32)>,
    /// The dead-letter stream.
    pub dead_letter: Option<String>,
    /// How long a record waits in the retry stream before it is handled again.
    pub delay: Duration,
}

/// The variable that names the retry stream ([`RetryPlan::from_env`]).
pub const RETRY_STREAM_VARIABLE: &str = "RETRY_STREAM";
/// The variable that caps the retries ([`RetryPlan::from_env`]); 3 when unset.
pub const MAX_RETRIES_VARIABLE: &str = "MAX_RETRIES";
/// The variable that names the dead-letter stream ([`RetryPlan::from_env`]).
pub const DEAD_LETTER_STREAM_VARIABLE: &str = "DEAD_LETTER_STREAM";
/// The variable that delays retries, in whole seconds ([`RetryPlan::from_env`]); 0 when unset.
pub const RETRY_DELAY_SECONDS_VARIABLE: &str = "RETRY_DELAY_SECONDS";
/// The cap of retries when [`MAX_RETRIES_VARIABLE`] is unset.
pub const DEFAULT_MAX_RETRIES: u32 = 3;

impl RetryPlan {
    /// The plan the process' environment names: the retry stream in `RETRY_STREAM` (at most
    /// `MAX_RETRIES` times, 3 when unset), the dead-letter stream in `DEAD_LETTER_STREAM`, and
    /// the delay in `RETRY_DELAY_SECONDS` (0 when unset). An unset or empty variable names no
    /// stream; with neither stream named, the plan routes nothing and
    /// [`KinesisAdapter::retry_plan`](crate::KinesisAdapter::retry_plan) leaves the adapter as
    /// without it. A number that does not read is an [`EnvError`] naming the variable.
    ///
    /// ```no_run
    /// use lambda_kinesis::retry::RetryPlan;
    ///
    /// # fn main() -> Result<(), lambda_kinesis::env::EnvError> {
    /// let plan = RetryPlan::from_env()?; // then `adapter.retry_plan(plan)`, feature `publish`
    /// if !plan.routes() {
    ///     println!("no retry or dead-letter stream: held records hold their shard");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_env() -> Result<Self, EnvError> {
        Self::from_lookup(crate::env::process)
    }

    /// The plan the variables `lookup` gives name, read as [`from_env`](Self::from_env) reads
    /// the process' environment.
    ///
    /// ```
    /// use lambda_kinesis::retry::RetryPlan;
    ///
    /// let plan = RetryPlan::from_lookup(|name| match name {
    ///     "RETRY_STREAM" => Some("shipments-retry".to_owned()),
    ///     "DEAD_LETTER_STREAM" => Some("shipments-dlq".to_owned()),
    ///     _ => None,
    /// })
    /// .unwrap();
    /// assert_eq!(plan.retry, Some(("shipments-retry".to_owned(), 3)));
    /// assert_eq!(plan.dead_letter.as_deref(), Some("shipments-dlq"));
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let value = |variable| crate::env::value(&lookup, variable);
        let max_retries = match value(MAX_RETRIES_VARIABLE) {
            None => DEFAULT_MAX_RETRIES,
            Some(text) => text.parse::<u32>().map_err(|_| {
                EnvError::new(
                    MAX_RETRIES_VARIABLE,
                    &text,
                    format!("a number of retries (0 to {})", u32::MAX),
                )
            })?,
        };
        let delay = match value(RETRY_DELAY_SECONDS_VARIABLE) {
            None => Duration::ZERO,
            Some(text) => text.parse::<u64>().map(Duration::from_secs).map_err(|_| {
                EnvError::new(
                    RETRY_DELAY_SECONDS_VARIABLE,
                    &text,
                    "a whole number of seconds",
                )
            })?,
        };
        Ok(Self {
            retry: value(RETRY_STREAM_VARIABLE).map(|stream| (stream, max_retries)),
            dead_letter: value(DEAD_LETTER_STREAM_VARIABLE),
            delay,
        })
    }

    /// Whether the plan names a stream: without one, it routes nothing.
    pub fn routes(&self) -> bool {
        self.retry.is_some() || self.dead_letter.is_some()
    }

    /// Where a record held after `retries_so_far` retries goes: to the retry stream while under
    /// the cap, then to the dead-letter stream; `None` (it stays held, as without a plan) when
    /// neither is left.
    pub fn next_hop(&self, retries_so_far: u32) -> Option<Hop<'_>> {
        match (&self.retry, &self.dead_letter) {
            (Some((stream, cap)), _) if retries_so_far < *cap => Some(Hop::Retry {
                stream,
                attempt: retries_so_far + 1,
            }),
            (_, Some(stream)) => Some(Hop::DeadLetter {
                stream,
                attempts: retries_so_far,
            }),
            _ => None,
        }
    }

    /// Whether records read from `stream` are envelopes to unwrap: those of the retry stream.
    pub fn unwraps(&self, stream: &str) -> bool {
        self.retry
            .as_ref()
            .is_some_and(|(retry, _)| retry == stream)
    }

    /// The envelope for a record held after `retries_so_far` retries (with `origin` and `data`
    /// its first arrival's), going on `hop`, held at `now`.
    pub fn envelope(
        &self,
        hop: Hop<'_>,
        origin: Origin,
        data: Vec<u8>,
        reason: String,
        now: SystemTime,
    ) -> Envelope {
        let held_at_millis = millis_since_epoch(now);
        let (attempt, retry_at_millis) = match hop {
            Hop::Retry { attempt, .. } => {
                let delay = i64::try_from(self.delay.as_millis()).unwrap_or(i64::MAX);
                let retry_at =
                    (!self.delay.is_zero()).then(|| held_at_millis.saturating_add(delay));
                (attempt, retry_at)
            }
            Hop::DeadLetter { attempts, .. } => (attempts, None),
        };
        Envelope {
            lambda_kinesis_envelope: ENVELOPE_VERSION,
            attempt,
            reason,
            held_at_millis,
            retry_at_millis,
            origin,
            data,
        }
    }
}
