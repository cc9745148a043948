//! Lambda's event source mapping metrics, counted from the same shard changes the status is a
//! fold of: the `EventCount` group (`MetricsConfig: {Metrics: [EventCount]}`) and `IteratorAge`
//! (`docs/event-source-mapping.md`, "Metrics", gives the rules and AWS's definitions).

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::policy::InvocationResult;

/// The `EventCount` group of metrics, as Lambda counts them for a Kinesis mapping. Records are
/// Kinesis records (a KPL aggregate is one), and a record delivered again is counted again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EventCounts {
    /// `PolledEventCount`: records read from the shard.
    pub polled: u64,
    /// `FilteredOutEventCount`: records read that no filter of `FilterCriteria` matched.
    pub filtered_out: u64,
    /// `InvokedEventCount`: records of invocations that reached the function, every attempt.
    pub invoked: u64,
    /// `FailedInvokeEventCount`: records of invocations that failed: the function was not
    /// reached, returned an error, timed out, or answered with a failure (a non-empty
    /// `batchItemFailures`, or a response Lambda cannot read).
    pub failed_invoke: u64,
    /// `DroppedEventCount`: records discarded (retries exhausted, or too old) with no on-failure
    /// destination to receive their record.
    pub dropped: u64,
    /// `OnFailureDestinationDeliveredEventCount`: records discarded whose record went to the
    /// on-failure destination.
    pub on_failure_destination_delivered: u64,
}

impl EventCounts {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &EventCounts) {
        self.polled += other.polled;
        self.filtered_out += other.filtered_out;
        self.invoked += other.invoked;
        self.failed_invoke += other.failed_invoke;
        self.dropped += other.dropped;
        self.on_failure_destination_delivered += other.on_failure_destination_delivered;
    }

    /// Each count with Lambda's metric name, in the order AWS's documentation lists them.
    pub fn named(&self) -> [(&'static str, u64); 6] {
        [
            ("PolledEventCount", self.polled),
            ("FilteredOutEventCount", self.filtered_out),
            ("InvokedEventCount", self.invoked),
            ("FailedInvokeEventCount", self.failed_invoke),
            ("DroppedEventCount", self.dropped),
            (
                "OnFailureDestinationDeliveredEventCount",
                self.on_failure_destination_delivered,
            ),
        ]
    }
}

/// One shard's metrics.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ShardMetrics {
    /// The event counts; `None` unless the mapping's `MetricsConfig` asks for `EventCount`, as
    /// Lambda emits none without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_counts: Option<EventCounts>,
    /// `IteratorAge` of the last invocation that ended: how old its batch's last record was
    /// when the batch was sent, in milliseconds. `None` before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterator_age_millis: Option<u64>,
}

/// How an invocation ended, as the metrics tell endings apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InvocationEnd {
    /// The function settled every record of the batch.
    Handled,
    /// The function was reached and failed the batch, or part of it.
    Failed,
    /// The batch never reached the function.
    NotInvoked,
}

impl InvocationEnd {
    /// How an invocation of `records` records that came to `result` ended.
    pub(super) fn of(result: InvocationResult, records: usize) -> Self {
        match result {
            InvocationResult::NotInvoked => Self::NotInvoked,
            InvocationResult::Returned { settled } if settled >= records => Self::Handled,
            InvocationResult::Returned { .. }
            | InvocationResult::FunctionError
            | InvocationResult::Timeout => Self::Failed,
        }
    }
}

/// `IteratorAge`: how long before `sent_at` the batch's last record reached the stream, in
/// milliseconds (0 for a record stamped after it, as clocks may disagree).
pub(super) fn iterator_age_millis(sent_at: SystemTime, last_arrival: SystemTime) -> u64 {
    sent_at
        .duration_since(last_arrival)
        .map_or(0, |age| u64::try_from(age.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use crate::mapping::status::{MappingStatus, ShardChange};
    use std::time::Duration;

    use super::*;

    fn read(read: usize, filtered: usize) -> ShardChange<'static> {
        ShardChange::Read {
            read,
            filtered,
            millis_behind_latest: 0,
        }
    }

    fn ended(records: u64, end: InvocationEnd) -> ShardChange<'static> {
        ended_at_age(records, end, 5)
    }

    fn ended_at_age(
        records: u64,
        end: InvocationEnd,
        iterator_age_millis: u64,
    ) -> ShardChange<'static> {
        let sequence_number: kinesis_source::sequence::SequenceNumber = "9".parse().unwrap();
        ShardChange::InvocationEnded {
            end,
            iterator_age_millis,
            invocation: crate::mapping::status::RecentInvocation {
                first: sequence_number.clone(),
                last: sequence_number,
                records,
                at_epoch_millis: 0,
                duration_micros: 1,
                verdict: crate::mapping::status::InvocationVerdict::AllAcked { dropped: 0 },
                discarded: false,
            },
        }
    }

    fn discarded(records: u64, to_destination: bool) -> ShardChange<'static> {
        ShardChange::Discarded {
            range: crate::mapping::status::DiscardedRange {
                first: "9".parse().expect("a sequence number"),
                last: "9".parse().expect("a sequence number"),
                records,
                condition: "RetryAttemptsExhausted".to_owned(),
            },
            to_destination,
            record: std::sync::Arc::new(serde_json::json!({})),
        }
    }

    /// The counts after `changes`, with the event counts on.
    fn counts(changes: impl IntoIterator<Item = ShardChange<'static>>) -> EventCounts {
        let mut metrics = ShardMetrics::new(true);
        for change in changes {
            metrics.count(&change);
        }
        metrics.event_counts.expect("event counts are on")
    }

    #[test]
    fn polled_counts_every_record_read_and_filtered_out_those_no_filter_matched() {
        // L-MET: PolledEventCount is what was read, an empty poll adds 0; FilteredOutEventCount
        // is what the filter criteria removed.
        let counts = counts([read(10, 2), read(0, 0), read(3, 3)]);
        assert_eq!((counts.polled, counts.filtered_out), (13, 5));
        assert_eq!(counts.invoked, 0, "reading invokes nothing");
    }

    #[test]
    fn invoked_counts_every_attempt_and_failed_invoke_the_failed_ones() {
        // L-MET: InvokedEventCount counts retried events again; FailedInvokeEventCount counts
        // the events of failed invocations, and with partial batch responses every event of a
        // response with a non-empty batchItemFailures.
        let counts = counts([
            ended(8, InvocationEnd::Failed),
            ended(8, InvocationEnd::Failed),
            ended(8, InvocationEnd::Handled),
        ]);
        assert_eq!((counts.invoked, counts.failed_invoke), (24, 16));
    }

    #[test]
    fn a_batch_that_never_reached_the_function_is_a_failed_invoke_not_an_invoked_one() {
        // L-MET: FailedInvokeEventCount covers invocations that failed for network or
        // permission reasons; those events did not invoke the function.
        let counts = counts([ended(4, InvocationEnd::NotInvoked)]);
        assert_eq!((counts.invoked, counts.failed_invoke), (0, 4));
    }

    #[test]
    fn a_discarded_batch_is_dropped_or_delivered_to_the_destination() {
        // L-MET: DroppedEventCount excludes records sent to the on-failure destination, which
        // OnFailureDestinationDeliveredEventCount counts.
        let counts = counts([discarded(3, false), discarded(2, true), discarded(1, true)]);
        assert_eq!(
            (counts.dropped, counts.on_failure_destination_delivered),
            (3, 3)
        );
    }

    #[test]
    fn records_the_function_settles_count_nowhere_but_invoked() {
        // A record the handler dropped (the lambda-kinesis extension) is a success to Lambda.
        let counts = counts([
            read(2, 0),
            ended(2, InvocationEnd::Handled),
            ShardChange::Invoked { records: &[] },
            ShardChange::CaughtUp,
        ]);
        assert_eq!(
            counts,
            EventCounts {
                polled: 2,
                invoked: 2,
                ..EventCounts::default()
            }
        );
    }

    #[test]
    fn without_metrics_config_nothing_is_counted_but_the_iterator_age_is_kept() {
        // L-MET: the event-count metrics are opt-in; IteratorAge is a function metric.
        let mut metrics = ShardMetrics::new(false);
        for change in [
            read(3, 1),
            ended(2, InvocationEnd::Failed),
            discarded(2, false),
        ] {
            metrics.count(&change);
        }
        assert_eq!(
            metrics,
            ShardMetrics {
                event_counts: None,
                iterator_age_millis: Some(5),
            }
        );
    }

    #[test]
    fn the_iterator_age_is_that_of_the_last_invocation() {
        let mut metrics = ShardMetrics::new(true);
        assert_eq!(metrics.iterator_age_millis, None);
        for age in [40, 7] {
            metrics.count(&ended_at_age(1, InvocationEnd::Handled, age));
        }
        assert_eq!(metrics.iterator_age_millis, Some(7));
    }

    #[test]
    fn the_iterator_age_is_the_last_records_age_when_sent() {
        let arrival = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let sent = arrival + Duration::from_millis(1_250);
        assert_eq!(iterator_age_millis(sent, arrival), 1_250);
        assert_eq!(iterator_age_millis(arrival, sent), 0, "a clock behind");
    }

    #[test]
    fn an_invocation_ends_failed_unless_the_function_settled_every_record() {
        let of = InvocationEnd::of;
        assert_eq!(
            of(InvocationResult::Returned { settled: 5 }, 5),
            InvocationEnd::Handled
        );
        assert_eq!(
            of(InvocationResult::Returned { settled: 2 }, 5),
            InvocationEnd::Failed
        );
        assert_eq!(
            of(InvocationResult::Returned { settled: 0 }, 5),
            InvocationEnd::Failed
        );
        assert_eq!(
            of(InvocationResult::FunctionError, 5),
            InvocationEnd::Failed
        );
        assert_eq!(of(InvocationResult::Timeout, 5), InvocationEnd::Failed);
        assert_eq!(
            of(InvocationResult::NotInvoked, 5),
            InvocationEnd::NotInvoked
        );
    }

    #[test]
    fn a_mappings_counts_are_its_shards_summed_and_none_without_metrics_config() {
        let mut status = MappingStatus::default();
        for (shard_id, polled) in [("shardId-000000000000", 3), ("shardId-000000000001", 4)] {
            let mut shard = super::super::ShardStatus {
                shard_id: shard_id.to_owned(),
                metrics: ShardMetrics::new(true),
                ..Default::default()
            };
            shard.metrics.count(&read(polled, 1));
            status.shards.insert(shard_id.to_owned(), shard);
        }
        assert_eq!(status.event_counts(), None);
        status.event_count_metrics = true;
        let counts = status.event_counts().expect("counts");
        assert_eq!((counts.polled, counts.filtered_out), (7, 2));
    }
}
