use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::*;

#[test]
fn a_function_that_never_initialised_is_named_with_its_count_and_last_failure() {
    let failures = |environments| NeverInitialised {
        environments,
        last_failure: "Shipping.MissingCarrier: CARRIER_URL is not set".to_owned(),
    };
    assert_eq!(
        never_initialised_line("ShippingFunction", &failures(11)),
        "ShippingFunction never initialised: all 11 of its execution environments failed \
         before taking an invocation, so none of its records reached the handler; the last \
         failure: Shipping.MissingCarrier: CARRIER_URL is not set"
    );
    assert!(
        never_initialised_line("F", &failures(1)).contains("its 1 execution environment failed")
    );
}

#[test]
fn a_managed_instances_function_says_its_environments_and_their_most_invocations() {
    let used = SharedEnvironments {
        started: 2,
        most_in_flight: 4,
        concurrency: 4,
    };
    assert_eq!(
        shared_environments_line("ShippingFunction", &used),
        "ShippingFunction on Managed Instances: 2 execution environments started, at most 4 \
         invocations at once in one (of 4 allowed)"
    );
    let one = SharedEnvironments {
        started: 1,
        most_in_flight: 1,
        concurrency: 16,
    };
    assert!(
        shared_environments_line("F", &one)
            .contains("1 execution environment started, at most 1 invocation at once")
    );
}
use esm_engine::lease::Checkpoint;
use esm_engine::mapping::{DiscardedRange, HeldRecord, InvocationVerdict, RecentInvocation};
use kinesis_source::sequence::SequenceNumber;

/// An embedded Kinesis sequence number: `49`, stream tag, counter (34 digits), shard index.
fn embedded(counter: u64, shard: u32) -> String {
    format!("49{:010}{counter:034}{shard:010}", 1_764_650_000_u64)
}

fn sequence_number(text: &str) -> SequenceNumber {
    text.parse().expect("a sequence number")
}

#[test]
fn what_comes_again_after_a_held_record_agrees_with_its_count() {
    assert_eq!(again_text(0), "it comes again");
    assert_eq!(again_text(1), "it and the record behind it come again");
    assert_eq!(again_text(3), "it and the 3 records behind it come again");
}

#[test]
fn one_failed_delivery_is_said_in_the_singular() {
    let shard = ShardStatus {
        shard_id: "shardId-000000000000".to_owned(),
        unsettled: 2,
        held: Some(HeldRecord {
            sequence_number: sequence_number(&embedded(20, 0)),
            failed_deliveries: 1,
            reason: "the function held it".to_owned(),
            retries_capped: true,
            next_retry: None,
        }),
        ..ShardStatus::default()
    };
    let text = render(&mapping(vec![shard], None));
    assert!(
        text.contains(&format!(
            "held at {} after 1 failed delivery (the function held it); it and the record \
             behind it come again",
            embedded(20, 0)
        )),
        "{text}"
    );
}

#[test]
fn the_wait_for_a_retry_names_the_retry_and_the_limit() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let at = |millis_from_now: i64| millis_since_epoch(now) + millis_from_now;
    let wait = |number, limit, millis| {
        retry_wait(
            &NextRetry {
                number,
                limit,
                at_epoch_millis: at(millis),
            },
            now,
        )
    };
    assert_eq!(wait(3, Some(5), 24_200), "retry 3 of 5, next in 25 s");
    assert_eq!(
        wait(3, None, 25_000),
        "retry 3, next in 25 s, no retry limit"
    );
    assert_eq!(wait(1, Some(1), 2_500), "retry 1 of 1, next in 2.5 s");
    assert_eq!(wait(0, Some(5), 400), "next try in 0.4 s, not a retry");
    assert_eq!(wait(2, Some(5), -300), "retry 2 of 5, next in 0.0 s");
}

/// A mapping of the shards given, each with its records' fates.
fn mapping(shards: Vec<ShardStatus>, destination: Option<&str>) -> MappingStatus {
    MappingStatus {
        function_name: "ShippingFunction".to_owned(),
        stream_name: "shipments".to_owned(),
        shards: shards
            .into_iter()
            .map(|shard| (shard.shard_id.clone(), shard))
            .collect::<BTreeMap<_, _>>(),
        on_failure: vec![Arc::new(serde_json::json!({}))],
        on_failure_destination: destination.map(str::to_owned),
        ..MappingStatus::default()
    }
}

/// The README's main command: 12 records, 5 acked, 1 dropped, 6 discarded after 5 retries.
fn main_command_shard() -> ShardStatus {
    ShardStatus {
        shard_id: "shardId-000000000000".to_owned(),
        phase: ShardPhase::CaughtUp,
        checkpoint: Some(Checkpoint::SequenceNumber(sequence_number(&embedded(
            11, 0,
        )))),
        delivered: 48,
        acked: 5,
        dropped: 1,
        discarded: 6,
        invocations: 7,
        retries: 5,
        last_discarded: Some(DiscardedRange {
            first: sequence_number(&embedded(6, 0)),
            last: sequence_number(&embedded(11, 0)),
            records: 6,
            condition: "RetryAttemptsExhausted".to_owned(),
        }),
        ..ShardStatus::default()
    }
}

#[test]
fn the_summary_counts_records_apart_from_deliveries() {
    let text = render(&mapping(vec![main_command_shard()], Some("Queue")));
    assert_eq!(
        text,
        "ShippingFunction <- stream shipments\n\
         \x20 shard                 state      records  acked  dropped  discarded  held  deliveries  invocations  retries  splits  checkpoint\n\
         \x20 shardId-000000000000  caught up       12      5        1          6     0          48            7        5       0  4917…110000000000\n\
         \x20 12 records: 5 acked, 1 dropped, 6 discarded, 0 held; 48 deliveries in 7 invocations, 5 retries, 0 splits\n\
         \x20 6 records in 1 batch discarded and sent to the on-failure destination Queue\n"
    );
}

#[test]
fn undecodable_records_are_counted_apart_where_there_are_any() {
    let shard = ShardStatus {
        dropped: 0,
        undecodable: 1,
        ..main_command_shard()
    };
    let text = render(&mapping(vec![shard.clone()], Some("Queue")));
    assert!(
        text.contains(
            "  shard                 state      records  acked  dropped  undecodable  discarded  held"
        ),
        "{text}"
    );
    assert!(
        text.contains("12 records: 5 acked, 0 dropped, 1 undecodable, 6 discarded, 0 held;"),
        "{text}"
    );
    let line = progress_line("ShippingFunction", &shard, SystemTime::UNIX_EPOCH);
    assert!(
        line.contains("acked 5  dropped 0  undecodable 1  discarded 6"),
        "{line}"
    );
}

#[test]
fn the_summary_names_where_each_record_went() {
    let mut status = mapping(vec![main_command_shard()], Some("Queue"));
    status.on_failure_deliveries =
        vec![".kinesis-esm/destinations/shardId-000000000000/2026-12-02T16.50.00-u.json".into()];
    let text = render(&status);
    assert!(
        text.ends_with(
            "  6 records in 1 batch discarded and sent to the on-failure destination Queue\n\
             \x20   -> .kinesis-esm/destinations/shardId-000000000000/2026-12-02T16.50.00-u.json\n"
        ),
        "{text}"
    );
    status.destination_error = Some("the SQS queue Queue: nothing answers".into());
    assert!(
        render(&status)
            .contains("  on-failure destination failing: the SQS queue Queue: nothing answers\n"),
        "{text}"
    );
}

#[test]
fn the_records_of_every_shard_add_up_in_the_totals() {
    let held = ShardStatus {
        shard_id: "shardId-000000000001".to_owned(),
        phase: ShardPhase::Held,
        acked: 3,
        filtered: 2,
        unsettled: 4,
        delivered: 10,
        invocations: 4,
        retries: 2,
        splits: 1,
        held: Some(HeldRecord {
            sequence_number: sequence_number(&embedded(20, 1)),
            failed_deliveries: 3,
            reason: "function error Panic: boom".to_owned(),
            retries_capped: false,
            next_retry: None,
        }),
        ..ShardStatus::default()
    };
    let status = mapping(vec![main_command_shard(), held.clone()], None);
    assert_eq!(RecordCounts::of(&held).read(), 3 + 2 + 4);
    assert_eq!(
        totals_line(&status),
        "21 records: 8 acked, 1 dropped, 6 discarded, 2 filtered out, 4 held; 58 deliveries \
         in 11 invocations, 7 retries, 1 split"
    );
    let text = render(&status);
    assert!(text.contains("  filtered  held  "), "{text}");
    assert!(
        text.contains(&format!(
            "shardId-000000000001: held at {} after 3 failed deliveries (function error \
             Panic: boom); it and the 3 records behind it come again",
            embedded(20, 1)
        )),
        "{text}"
    );
    assert!(
        text.contains("6 records in 1 batch discarded (no on-failure destination)"),
        "{text}"
    );
    assert!(!text.contains("sent to"), "{text}");
}

#[test]
fn nothing_discarded_says_nothing_of_discards() {
    let shard = ShardStatus {
        shard_id: "shardId-000000000000".to_owned(),
        acked: 2,
        ..ShardStatus::default()
    };
    let mut status = mapping(vec![shard], Some("Queue"));
    status.on_failure.clear();
    assert_eq!(discards_note(&status), None);
    assert!(!render(&status).contains("on-failure"));
}

#[test]
fn the_status_tree_shows_the_retry_awaited_and_the_last_discarded_range() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(5_000);
    let mut shard = main_command_shard();
    shard.phase = ShardPhase::Held;
    shard.held = Some(HeldRecord {
        sequence_number: sequence_number(&embedded(12, 0)),
        failed_deliveries: 3,
        reason: "the function reported it in batchItemFailures".to_owned(),
        retries_capped: true,
        next_retry: Some(NextRetry {
            number: 3,
            limit: Some(5),
            at_epoch_millis: millis_since_epoch(now) + 25_000,
        }),
    });
    let tree = render_tree(&[mapping(vec![shard.clone()], Some("Queue"))], now);
    assert_eq!(
        tree,
        format!(
            "ShippingFunction <- stream shipments\n\
             \x20 shardId-000000000000  held  checkpoint 4917…110000000000  held at {} (3 \
             failed deliveries; retry 3 of 5, next in 25 s)  discarded 6 (the last: \
             4917…60000000000 to 4917…110000000000, RetryAttemptsExhausted)\n\
             \x20 6 records in 1 batch discarded and sent to the on-failure destination Queue\n",
            embedded(12, 0)
        )
    );
    let line = progress_line("ShippingFunction", &shard, now);
    assert_eq!(
        line,
        "ShippingFunction shardId-000000000000  held               records 12  acked 5  \
         dropped 1  discarded 6  held 0  deliveries 48  retries 5  held at \
         4917…120000000000 (3 failed deliveries; retry 3 of 5, next in 25 s)"
    );
}

#[test]
fn the_status_tree_shows_a_managed_instances_functions_environments_in_flight() {
    let mut status = mapping(vec![main_command_shard()], None);
    assert!(!render_tree(&[status.clone()], SystemTime::UNIX_EPOCH).contains("environments"));
    status.environments = vec![
        EnvironmentInFlight {
            number: 1,
            in_flight: 2,
        },
        EnvironmentInFlight {
            number: 2,
            in_flight: 0,
        },
    ];
    let tree = render_tree(&[status], SystemTime::UNIX_EPOCH);
    assert!(
        tree.contains("\n  environments: #1 2 in flight, #2 0 in flight\n"),
        "{tree}"
    );
}

#[test]
fn the_status_tree_lists_a_shards_newest_invocations_with_their_verdicts() {
    let invocation = |first: u64, last: u64, micros, verdict, discarded| RecentInvocation {
        first: sequence_number(&embedded(first, 0)),
        last: sequence_number(&embedded(last, 0)),
        records: last - first + 1,
        at_epoch_millis: 0,
        duration_micros: micros,
        verdict,
        discarded,
    };
    let mut shard = main_command_shard();
    shard.invocations = 7;
    shard.last_discarded = None;
    shard.recent_invocations.push(invocation(
        0,
        5,
        850,
        InvocationVerdict::AllAcked { dropped: 0 },
        false,
    ));
    for _ in 0..5 {
        shard.recent_invocations.push(invocation(
            6,
            11,
            12_340,
            InvocationVerdict::HeldAt {
                sequence_number: sequence_number(&embedded(6, 0)),
                settled: 0,
            },
            false,
        ));
    }
    shard.recent_invocations.push(invocation(
        6,
        11,
        2_500_000,
        InvocationVerdict::FunctionError {
            error_type: esm_engine::invoke::ErrorType::new("Panic"),
        },
        true,
    ));
    let tree = render_tree(&[mapping(vec![shard], None)], SystemTime::UNIX_EPOCH);
    let lines: Vec<&str> = tree.lines().skip(2).take(6).collect();
    assert_eq!(
        lines,
        [
            "    the last 5 of 7 invocations:",
            "      4917…60000000000 to 4917…110000000000, 6 records, 12.3 ms: held at \
             4917…60000000000 (0 settled before it)",
            "      4917…60000000000 to 4917…110000000000, 6 records, 12.3 ms: held at \
             4917…60000000000 (0 settled before it)",
            "      4917…60000000000 to 4917…110000000000, 6 records, 12.3 ms: held at \
             4917…60000000000 (0 settled before it)",
            "      4917…60000000000 to 4917…110000000000, 6 records, 12.3 ms: held at \
             4917…60000000000 (0 settled before it)",
            "      4917…60000000000 to 4917…110000000000, 6 records, 2.50 s: function \
             error Panic, then discarded",
        ],
        "{tree}"
    );
}
