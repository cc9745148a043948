//! The seam between the settlement engine and the streams a held record is published to: the
//! plan, and what sends an envelope (Kinesis through [`Publisher`](crate::publish::Publisher)
//! with the `publish` feature, anything in the adapter's unit tests).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::envelope::Envelope;
use super::plan::RetryPlan;

/// Sends an envelope to a stream under a partition key; the error is one sentence for the log.
pub(crate) trait SendEnvelope: Send + Sync {
    fn send<'a>(
        &'a self,
        stream: &'a str,
        partition_key: &'a str,
        envelope: &'a Envelope,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;
}

/// An adapter's retry plan and its sender, shared by every invocation.
#[derive(Clone)]
pub(crate) struct RetryRoute {
    pub(crate) plan: RetryPlan,
    pub(crate) sender: Arc<dyn SendEnvelope>,
}

impl fmt::Debug for RetryRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryRoute")
            .field("plan", &self.plan)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use lambda_runtime::Context;

    use super::*;
    use crate::settlement::{RecordOutcome, Republished};
    use crate::testing::TestEvent;
    use crate::{HandlerOutcome, KinesisAdapter, RecordMeta};

    /// Keeps what it was given; refuses everything when `refuse` is set.
    #[derive(Default)]
    struct Sent {
        envelopes: Mutex<Vec<(String, String, Envelope)>>,
        refuse: bool,
    }

    impl SendEnvelope for Sent {
        fn send<'a>(
            &'a self,
            stream: &'a str,
            partition_key: &'a str,
            envelope: &'a Envelope,
        ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
            Box::pin(async move {
                if self.refuse {
                    return Err("refused".to_owned());
                }
                self.envelopes.lock().expect("not poisoned").push((
                    stream.to_owned(),
                    partition_key.to_owned(),
                    envelope.clone(),
                ));
                Ok(())
            })
        }
    }

    fn route(sent: &Arc<Sent>) -> RetryRoute {
        RetryRoute {
            plan: RetryPlan {
                retry: Some(("shipments-retry".into(), 3)),
                dead_letter: Some("shipments-dlq".into()),
                delay: Duration::ZERO,
            },
            sender: Arc::clone(sent) as Arc<dyn SendEnvelope>,
        }
    }

    /// Holds odd numbers; says which attempt and origin it saw.
    async fn even_only(n: &u32, meta: &RecordMeta<'_>) -> HandlerOutcome {
        SEEN.lock().expect("not poisoned").push((
            *n,
            meta.retry_attempt(),
            meta.retry().map(|envelope| envelope.origin.stream.clone()),
        ));
        if n.is_multiple_of(2) {
            HandlerOutcome::ack()
        } else {
            HandlerOutcome::hold()
        }
    }

    static SEEN: Mutex<Vec<(u32, u32, Option<String>)>> = Mutex::new(Vec::new());

    #[tokio::test]
    async fn a_held_record_goes_to_the_retry_stream_and_the_records_behind_it_are_handled() {
        let sent = Arc::new(Sent::default());
        let adapter = KinesisAdapter::new(even_only).with_retry_route(route(&sent));
        let event = TestEvent::new()
            .stream("shipments")
            .json_keyed("a", &2)
            .json_keyed("b", &3)
            .json_keyed("c", &4);

        let settlement = adapter.settle(&event, &Context::default()).await;

        assert_eq!(settlement.summary(), "ack retry ack");
        assert_eq!(settlement.cut(), None, "the shard moves past the batch");
        assert_eq!(
            settlement.outcome(1),
            &RecordOutcome::Republished(Republished {
                stream: "shipments-retry".into(),
                attempt: 1,
                dead_letter: false
            })
        );
        let envelopes = sent.envelopes.lock().expect("not poisoned");
        let (stream, key, envelope) = &envelopes[0];
        assert_eq!((stream.as_str(), key.as_str()), ("shipments-retry", "b"));
        assert_eq!(envelope.attempt, 1);
        assert_eq!(envelope.data, b"3");
        assert_eq!(envelope.reason, "the handler held it");
        assert_eq!(envelope.origin.stream, "shipments");
        assert_eq!(envelope.origin.sequence_number, event.sequence_number(1));
        assert_eq!(envelope.origin.partition_key, "b");
    }

    #[tokio::test]
    async fn a_keyless_held_record_is_sent_under_its_sequence_number_and_keeps_no_key() {
        async fn hold(_: &u32) -> HandlerOutcome {
            HandlerOutcome::hold()
        }
        let sent = Arc::new(Sent::default());
        let adapter = KinesisAdapter::new(hold).with_retry_route(route(&sent));
        let event = TestEvent::new().json_keyed("", &3);

        let settlement = adapter.settle(&event, &Context::default()).await;

        assert_eq!(settlement.summary(), "retry");
        let envelopes = sent.envelopes.lock().expect("not poisoned");
        let (_, key, envelope) = &envelopes[0];
        // Kinesis refuses an empty key outside an `AUTO` stream; the envelope says there was none.
        assert_eq!(key, event.sequence_number(0));
        assert_eq!(envelope.origin.partition_key, "");
    }

    #[tokio::test]
    async fn a_retried_record_is_unwrapped_and_goes_on_until_the_dead_letter_stream() {
        let sent = Arc::new(Sent::default());
        let adapter = KinesisAdapter::new(even_only).with_retry_route(route(&sent));
        let first = TestEvent::new().stream("shipments").json_keyed("k", &7);
        adapter.settle(&first, &Context::default()).await;
        // Each envelope published comes back through the retry stream.
        let mut words = Vec::new();
        for _ in 0..3 {
            let (_, _, envelope) = sent
                .envelopes
                .lock()
                .expect("not poisoned")
                .last()
                .cloned()
                .expect("published");
            let retry = TestEvent::new()
                .stream("shipments-retry")
                .bytes_keyed("k", envelope.to_vec());
            words.push(adapter.settle(&retry, &Context::default()).await.summary());
        }

        assert_eq!(words, vec!["retry", "retry", "dead-letter"]);
        let envelopes = sent.envelopes.lock().expect("not poisoned");
        let hops: Vec<(&str, u32)> = envelopes
            .iter()
            .map(|(stream, _, envelope)| (stream.as_str(), envelope.attempt))
            .collect();
        assert_eq!(
            hops,
            vec![
                ("shipments-retry", 1),
                ("shipments-retry", 2),
                ("shipments-retry", 3),
                ("shipments-dlq", 3)
            ]
        );
        assert!(
            envelopes
                .iter()
                .all(|(_, _, envelope)| envelope.data == b"7"
                    && envelope.origin.stream == "shipments"
                    && envelope.origin.sequence_number == first.sequence_number(0))
        );
        let seen: Vec<(u32, u32, Option<String>)> = SEEN
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|(n, ..)| *n == 7)
            .cloned()
            .collect();
        let origin = Some("shipments".to_owned());
        assert_eq!(
            seen,
            vec![
                (7, 0, None),
                (7, 1, origin.clone()),
                (7, 2, origin.clone()),
                (7, 3, origin)
            ]
        );
    }

    #[tokio::test]
    async fn a_publish_that_fails_holds_the_record_as_without_a_retry_stream() {
        let sent = Arc::new(Sent {
            refuse: true,
            ..Sent::default()
        });
        let adapter = KinesisAdapter::new(even_only).with_retry_route(route(&sent));
        let event = TestEvent::new()
            .stream("shipments")
            .json_keyed("a", &1)
            .json_keyed("b", &2);

        let settlement = adapter.settle(&event, &Context::default()).await;

        assert_eq!(settlement.summary(), "hold skip");
        assert_eq!(settlement.cut(), Some(event.cut_at(0)));
    }

    #[tokio::test]
    async fn a_retry_stream_record_that_is_no_envelope_is_named_undecodable() {
        let sent = Arc::new(Sent::default());
        let adapter = KinesisAdapter::new(even_only).with_retry_route(route(&sent));
        let event = TestEvent::new().stream("shipments-retry").json(&4);

        let settlement = adapter.settle(&event, &Context::default()).await;

        let RecordOutcome::Dropped(crate::settlement::DropReason::Undecodable(rejection)) =
            settlement.outcome(0)
        else {
            panic!("{:?}", settlement.outcome(0));
        };
        assert!(
            rejection
                .to_string()
                .contains("read from the retry stream, but not a lambda-kinesis retry envelope"),
            "{rejection}"
        );
        assert!(sent.envelopes.lock().expect("not poisoned").is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_waits_for_its_time_before_the_handler_sees_it() {
        let sent = Arc::new(Sent::default());
        let adapter = KinesisAdapter::new(even_only).with_retry_route(route(&sent));
        let mut envelope = route(&sent).plan.envelope(
            super::super::Hop::Retry {
                stream: "shipments-retry",
                attempt: 1,
            },
            crate::retry::Origin {
                stream: "shipments".into(),
                shard_id: "shardId-000000000000".into(),
                sequence_number: "1".into(),
                sub_sequence_number: 0,
                partition_key: "k".into(),
                arrival_millis: 0,
            },
            b"8".to_vec(),
            String::new(),
            std::time::SystemTime::now(),
        );
        let due = std::time::SystemTime::now() + Duration::from_secs(60);
        envelope.retry_at_millis = Some(crate::retry::millis_since_epoch(due));
        let event = TestEvent::new()
            .stream("shipments-retry")
            .bytes_keyed("k", envelope.to_vec());
        let started = tokio::time::Instant::now();

        let settlement = adapter.settle(&event, &Context::default()).await;

        assert_eq!(settlement.summary(), "ack");
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_secs(59) && waited <= Duration::from_secs(61),
            "{waited:?}"
        );
    }
}
