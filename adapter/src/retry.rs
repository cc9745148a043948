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

mod envelope;
#[cfg(feature = "publish")]
pub(crate) mod kinesis;
mod plan;
pub(crate) mod route;

use std::time::{Duration, SystemTime};

pub use envelope::{ENVELOPE_VERSION, Envelope, EnvelopeError, Origin, millis_since_epoch};
pub use plan::{
    DEAD_LETTER_STREAM_VARIABLE, DEFAULT_MAX_RETRIES, Hop, MAX_RETRIES_VARIABLE,
    RETRY_DELAY_SECONDS_VARIABLE, RETRY_STREAM_VARIABLE, RetryPlan,
};

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

    /// The envelope of a first retry, with no data and no reason, written at `now`.
    fn first_retry(now: SystemTime) -> Envelope {
        plan(Some(1), false).envelope(
            Hop::Retry {
                stream: "r",
                attempt: 1,
            },
            origin(),
            vec![],
            String::new(),
            now,
        )
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
        let mut envelope = first_retry(SystemTime::now());
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
            ..first_retry(SystemTime::UNIX_EPOCH)
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
