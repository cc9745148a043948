//! Retry and dead-letter streams: the envelope a held record travels in, and the rules that
//! route it, with no I/O (`docs/retry-streams.md`).
//!
//! With [`KinesisAdapter::retry_stream`](crate::KinesisAdapter::retry_stream) (cargo feature
//! `publish`), a record the handler holds is published to the retry stream in an [`Envelope`]
//! and counts as settled, so its shard moves on. The same function, mapped to the retry stream,
//! unwraps the envelope: the handler sees the same `T`, and [`RecordMeta::retry`](crate::RecordMeta::retry)
//! tells the attempt and the origin. Held again past the cap, the record goes to the
//! dead-letter stream, in the same envelope.
//!
//! The envelope is JSON (one object, camelCase keys, times in milliseconds since the epoch):
//!
//! ```json
//! {"lambdaKinesisEnvelope":1,"attempt":2,"reason":"the handler held it",
//!  "heldAtMillis":1764740000000,"retryAtMillis":1764740005000,
//!  "origin":{"stream":"shipments","shardId":"shardId-000000000000",
//!            "sequenceNumber":"4959...","subSequenceNumber":0,"partitionKey":"shipment-7",
//!            "arrivalMillis":1764739990000},
//!  "data":"eyJpZCI6N30="}
//! ```

#[cfg(feature = "publish")]
pub(crate) mod kinesis;
pub(crate) mod route;

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::env::EnvError;

/// The envelope format's version, written in `lambdaKinesisEnvelope`. A reader refuses any other.
pub const ENVELOPE_VERSION: u32 = 1;

/// Where a record first arrived: its stream, shard, position, key and arrival time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    /// The stream's name.
    pub stream: String,
    /// The shard it was read from.
    pub shard_id: String,
    /// Its sequence number in that shard.
    pub sequence_number: String,
    /// Its position in a KPL aggregate (0 for a plain record).
    #[serde(default)]
    pub sub_sequence_number: u64,
    /// The partition key its producer gave it; the retry and dead-letter records keep it.
    pub partition_key: String,
    /// When Kinesis accepted it, in milliseconds since the epoch.
    pub arrival_millis: i64,
}

/// A held record on its way to the retry or the dead-letter stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// Always [`ENVELOPE_VERSION`].
    pub lambda_kinesis_envelope: u32,
    /// How many times the record has been sent to the retry stream, this time included (1 for
    /// the first retry). In the dead-letter stream, the retries it had.
    pub attempt: u32,
    /// Why it was held the last time, in words (the handler's error, a panic's message, ...).
    pub reason: String,
    /// When it was held the last time, in milliseconds since the epoch.
    pub held_at_millis: i64,
    /// Not to be handled before this time (milliseconds since the epoch), when the adapter has a
    /// retry delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at_millis: Option<i64>,
    /// Where the record first arrived.
    pub origin: Origin,
    /// The record's data, as its producer wrote it (base64 in the JSON).
    #[serde(with = "base64_bytes")]
    pub data: Vec<u8>,
}

/// Why bytes are not an envelope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnvelopeError {
    /// Not JSON of the envelope's shape.
    #[error("not a lambda-kinesis retry envelope: {0}")]
    Malformed(String),
    /// An envelope of another format version.
    #[error(
        "a retry envelope of format version {found}; this release reads version {ENVELOPE_VERSION}"
    )]
    Version {
        /// The version it has.
        found: u32,
    },
}

impl Envelope {
    /// Reads an envelope from a record's data.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, EnvelopeError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Version {
            lambda_kinesis_envelope: u32,
        }
        let version: Version = serde_json::from_slice(bytes)
            .map_err(|error| EnvelopeError::Malformed(error.to_string()))?;
        if version.lambda_kinesis_envelope != ENVELOPE_VERSION {
            return Err(EnvelopeError::Version {
                found: version.lambda_kinesis_envelope,
            });
        }
        serde_json::from_slice(bytes).map_err(|error| EnvelopeError::Malformed(error.to_string()))
    }

    /// The envelope as a record's data.
    pub fn to_vec(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an envelope serializes")
    }
}

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

/// How long a record of the retry stream must still wait at `now` before it is handled.
pub fn wait_before_retry(envelope: &Envelope, now: SystemTime) -> Duration {
    let Some(retry_at) = envelope.retry_at_millis else {
        return Duration::ZERO;
    };
    let left = retry_at.saturating_sub(millis_since_epoch(now));
    Duration::from_millis(u64::try_from(left).unwrap_or(0))
}

/// The stream name of a Kinesis stream ARN (`arn:aws:kinesis:REGION:ACCOUNT:stream/NAME`), or
/// the text itself when it is no such ARN.
pub fn stream_name_of_arn(arn: &str) -> &str {
    arn.split_once(":stream/")
        .map_or(arn, |(_, name)| name.split('/').next().unwrap_or(name))
}

/// Milliseconds since the epoch (negative before it).
pub fn millis_since_epoch(time: SystemTime) -> i64 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(retry: Option<u32>, dead_letter: bool) -> RetryPlan {
        RetryPlan {
            retry: retry.map(|cap| ("shipments-retry".to_owned(), cap)),
            dead_letter: dead_letter.then(|| "shipments-dlq".to_owned()),
            delay: Duration::ZERO,
        }
    }

    fn origin() -> Origin {
        Origin {
            stream: "shipments".into(),
            shard_id: "shardId-000000000000".into(),
            sequence_number: "49590338271490256608559692538361571095921575989136588802".into(),
            sub_sequence_number: 0,
            partition_key: "shipment-7".into(),
            arrival_millis: 1_764_739_990_000,
        }
    }

    #[test]
    fn a_held_record_goes_to_the_retry_stream_until_the_cap_then_to_the_dead_letter_stream() {
        let plan = plan(Some(3), true);
        let hops: Vec<Option<Hop<'_>>> = (0..5).map(|retries| plan.next_hop(retries)).collect();
        let retry = |attempt| {
            Some(Hop::Retry {
                stream: "shipments-retry",
                attempt,
            })
        };
        let dead = |attempts| {
            Some(Hop::DeadLetter {
                stream: "shipments-dlq",
                attempts,
            })
        };
        assert_eq!(hops, vec![retry(1), retry(2), retry(3), dead(3), dead(4)]);
    }

    #[test]
    fn without_a_dead_letter_stream_a_record_past_the_cap_stays_held() {
        let plan = plan(Some(1), false);
        assert!(matches!(
            plan.next_hop(0),
            Some(Hop::Retry { attempt: 1, .. })
        ));
        assert_eq!(plan.next_hop(1), None);
        assert_eq!(
            RetryPlan::default().next_hop(0),
            None,
            "no plan: held as today"
        );
    }

    #[test]
    fn a_dead_letter_stream_alone_takes_a_record_at_its_first_hold() {
        let plan = plan(None, true);
        assert_eq!(
            plan.next_hop(0),
            Some(Hop::DeadLetter {
                stream: "shipments-dlq",
                attempts: 0
            })
        );
        assert!(!plan.unwraps("shipments-dlq"));
    }

    #[test]
    fn only_the_retry_stream_s_records_are_unwrapped() {
        let plan = plan(Some(3), true);
        assert!(plan.unwraps("shipments-retry"));
        assert!(!plan.unwraps("shipments"));
        assert!(!plan.unwraps("shipments-dlq"));
    }

    #[test]
    fn an_envelope_reads_back_as_written_with_its_data_in_base64() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_740_000_000);
        let plan = RetryPlan {
            delay: Duration::from_secs(5),
            ..plan(Some(3), true)
        };
        let hop = plan.next_hop(1).expect("a retry");
        let envelope = plan.envelope(
            hop,
            origin(),
            br#"{"id":7}"#.to_vec(),
            "the handler held it".into(),
            now,
        );
        assert_eq!(envelope.attempt, 2);
        assert_eq!(envelope.retry_at_millis, Some(1_764_740_005_000));
        let text = String::from_utf8(envelope.to_vec()).expect("JSON text");
        assert!(
            text.starts_with(r#"{"lambdaKinesisEnvelope":1,"attempt":2,"#),
            "{text}"
        );
        assert!(text.contains(r#""data":"eyJpZCI6N30=""#), "{text}");
        assert!(text.contains(r#""partitionKey":"shipment-7""#), "{text}");
        assert_eq!(Envelope::from_slice(text.as_bytes()), Ok(envelope));
    }

    #[test]
    fn a_dead_letter_envelope_counts_the_retries_and_has_no_retry_time() {
        let plan = RetryPlan {
            delay: Duration::from_secs(5),
            ..plan(Some(3), true)
        };
        let hop = plan.next_hop(3).expect("the dead-letter stream");
        let envelope = plan.envelope(hop, origin(), vec![1, 2], "x".into(), SystemTime::now());
        assert_eq!((envelope.attempt, envelope.retry_at_millis), (3, None));
    }

    #[test]
    fn other_data_and_other_versions_are_refused_by_name() {
        assert!(matches!(
            Envelope::from_slice(br#"{"id":7}"#),
            Err(EnvelopeError::Malformed(_))
        ));
        let mut envelope = plan(Some(1), false).envelope(
            Hop::Retry {
                stream: "r",
                attempt: 1,
            },
            origin(),
            vec![],
            String::new(),
            SystemTime::now(),
        );
        envelope.lambda_kinesis_envelope = 2;
        let error = Envelope::from_slice(&envelope.to_vec()).expect_err("version 2");
        assert_eq!(
            error.to_string(),
            "a retry envelope of format version 2; this release reads version 1"
        );
    }

    #[test]
    fn a_retry_waits_until_its_time_and_not_after() {
        let envelope = Envelope {
            retry_at_millis: Some(10_000),
            ..plan(Some(1), false).envelope(
                Hop::Retry {
                    stream: "r",
                    attempt: 1,
                },
                origin(),
                vec![],
                String::new(),
                SystemTime::UNIX_EPOCH,
            )
        };
        let at = |millis| SystemTime::UNIX_EPOCH + Duration::from_millis(millis);
        assert_eq!(
            wait_before_retry(&envelope, at(7_500)),
            Duration::from_millis(2_500)
        );
        assert_eq!(wait_before_retry(&envelope, at(10_000)), Duration::ZERO);
        assert_eq!(wait_before_retry(&envelope, at(12_000)), Duration::ZERO);
    }

    #[test]
    fn a_stream_arn_names_its_stream() {
        assert_eq!(
            stream_name_of_arn("arn:aws:kinesis:us-east-1:123456789012:stream/shipments-retry"),
            "shipments-retry"
        );
        assert_eq!(stream_name_of_arn("shipments"), "shipments");
    }
}
