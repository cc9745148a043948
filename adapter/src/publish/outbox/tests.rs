use std::time::Duration;

use super::*;

fn accepted(n: u32) -> EntryResult {
    EntryResult::Accepted {
        shard_id: "shardId-000000000000".to_owned(),
        sequence_number: n.to_string(),
    }
}

fn throttled() -> EntryResult {
    EntryResult::Rejected {
        code: Some("ProvisionedThroughputExceededException".to_owned()),
        message: "Rate exceeded".to_owned(),
        retryable: true,
    }
}

fn outbox(keys: &[&str]) -> Outbox {
    let mut outbox = Outbox::with_max_record_bytes(MAX_BYTES_PER_RECORD);
    for key in keys {
        outbox.push((*key).to_owned(), Ok(b"{}".to_vec()));
    }
    outbox
}

#[test]
fn a_request_carries_one_record_per_key_in_the_order_keys_came() {
    let outbox = outbox(&["a", "b", "a", "c", "b"]);
    assert_eq!(outbox.next_request(), vec![0, 1, 3]);
}

#[test]
fn a_keys_next_record_is_sent_only_after_the_one_ahead_succeeded() {
    let mut outbox = outbox(&["a", "a", "b"]);
    assert_eq!(outbox.next_request(), vec![0, 2]);
    outbox.settle(0, throttled(), 5);
    outbox.settle(2, accepted(1), 5);
    // The throttled record goes again, and its key's next record still waits for it.
    assert_eq!(outbox.next_request(), vec![0]);
    outbox.settle(0, accepted(2), 5);
    assert_eq!(outbox.next_request(), vec![1]);
    outbox.settle(1, accepted(3), 5);
    assert!(outbox.is_settled());
    let (published, given_up) = outbox.into_report();
    let order: Vec<_> = published.iter().map(|(index, ..)| *index).collect();
    assert_eq!(order, vec![0, 1, 2]);
    assert!(given_up.is_empty());
}

#[test]
fn a_record_failing_every_attempt_is_given_up_with_the_records_of_its_key_behind_it() {
    let mut outbox = outbox(&["a", "b", "a"]);
    outbox.settle(1, accepted(1), 2);
    outbox.settle(0, throttled(), 2);
    assert!(!outbox.is_settled());
    outbox.settle(0, throttled(), 2);
    assert!(outbox.is_settled());
    let (published, given_up) = outbox.into_report();
    assert_eq!(published.len(), 1);
    assert_eq!(
        given_up,
        vec![
            (
                0,
                "a".to_owned(),
                GiveUp::Failed {
                    code: Some("ProvisionedThroughputExceededException".to_owned()),
                    message: "Rate exceeded".to_owned(),
                    attempts: 2,
                }
            ),
            (2, "a".to_owned(), GiveUp::BehindFailed { ahead: 0 }),
        ]
    );
}

#[test]
fn a_failure_that_cannot_pass_gives_up_at_once() {
    let mut outbox = outbox(&["a"]);
    let not_found = EntryResult::Rejected {
        code: Some("ResourceNotFoundException".to_owned()),
        message: "Stream shipments not found".to_owned(),
        retryable: false,
    };
    outbox.settle(0, not_found, 5);
    assert!(outbox.is_settled());
}

#[test]
fn a_record_kinesis_could_never_take_is_refused_after_the_records_of_its_key_ahead_of_it() {
    let mut outbox = outbox(&["a"]);
    outbox.push("a".to_owned(), Ok(vec![0; MAX_BYTES_PER_RECORD]));
    outbox.push("a".to_owned(), Ok(b"{}".to_vec()));
    outbox.push(String::new(), Ok(b"{}".to_vec()));
    outbox.push(
        "b".to_owned(),
        Err("it cannot be serialized: no".to_owned()),
    );
    assert_eq!(outbox.next_request(), vec![0]);
    outbox.settle(0, accepted(1), 5);
    assert!(outbox.is_settled());
    let (published, given_up) = outbox.into_report();
    assert_eq!(published.len(), 1);
    let why: Vec<_> = given_up
        .iter()
        .map(|(index, _, why)| match why {
            GiveUp::Refused(reason) => format!("{index} refused: {reason}"),
            other => format!("{index} {other:?}"),
        })
        .collect();
    assert_eq!(
        why,
        vec![
            "1 refused: it holds 1048577 bytes with its partition key (the stream takes at most \
             1048576 per record, a MaxRecordSizeInKiB of 1024)",
            "2 BehindFailed { ahead: 1 }",
            "3 refused: its partition key is empty (Kinesis takes 1 to 256 characters)",
            "4 refused: it cannot be serialized: no",
        ]
    );
}

#[test]
fn a_request_stops_at_500_records() {
    let mut outbox = Outbox::with_max_record_bytes(MAX_BYTES_PER_RECORD);
    for key in 0..501 {
        outbox.push(key.to_string(), Ok(b"{}".to_vec()));
    }
    assert_eq!(outbox.next_request().len(), MAX_RECORDS_PER_REQUEST);
}

#[test]
fn a_request_stops_before_5_mib_counting_partition_keys() {
    let mut outbox = Outbox::with_max_record_bytes(MAX_BYTES_PER_RECORD);
    // Five records of exactly 1 MiB with their keys fill a request; the sixth waits.
    for key in ["k1", "k2", "k3", "k4", "k5", "k6"] {
        outbox.push(
            key.to_owned(),
            Ok(vec![0; MAX_BYTES_PER_RECORD - key.len()]),
        );
    }
    assert_eq!(outbox.next_request(), vec![0, 1, 2, 3, 4]);
}

#[test]
fn a_stream_raised_to_10_mib_takes_a_9_mib_record_in_a_request_of_its_own() {
    const MIB: usize = 1024 * 1024;
    let mut outbox = Outbox::with_max_record_bytes(10 * MIB);
    outbox.push("small".to_owned(), Ok(vec![0; 10]));
    outbox.push("large".to_owned(), Ok(vec![0; 9 * MIB]));
    outbox.push("over".to_owned(), Ok(vec![0; 10 * MIB]));
    // The small record's request has no room for the large one, which then goes alone.
    assert_eq!(outbox.next_request(), vec![0]);
    outbox.settle(0, accepted(1), 5);
    assert_eq!(outbox.next_request(), vec![1]);
    outbox.settle(1, accepted(2), 5);
    assert!(outbox.is_settled());
    let (published, given_up) = outbox.into_report();
    assert_eq!(published.len(), 2);
    assert_eq!(given_up.len(), 1);
    assert!(
        matches!(&given_up[0], (2, _, GiveUp::Refused(why)) if why.contains("10485764 bytes")),
        "{given_up:?}"
    );
}

#[test]
fn an_outbox_limit_stays_within_what_a_stream_can_be_set_to() {
    // Below 1 MiB no stream is set; above 10 MiB none takes it.
    for (asked, kept) in [(0, 1024 * 1024), (64 * 1024 * 1024, 10 * 1024 * 1024)] {
        let mut outbox = Outbox::with_max_record_bytes(asked);
        outbox.push("k".to_owned(), Ok(vec![0; kept - 1]));
        outbox.push("k".to_owned(), Ok(vec![0; kept]));
        outbox.settle(0, accepted(1), 5);
        let (_, given_up) = outbox.into_report();
        assert_eq!(given_up.len(), 1, "asked {asked}: {given_up:?}");
    }
}

#[test]
fn throttles_and_server_failures_are_retried_a_missing_stream_is_not() {
    assert!(call_failure_is_retryable(None));
    assert!(call_failure_is_retryable(Some(
        "ProvisionedThroughputExceededException"
    )));
    assert!(call_failure_is_retryable(Some("InternalFailure")));
    assert!(!call_failure_is_retryable(Some(
        "ResourceNotFoundException"
    )));
    assert!(!call_failure_is_retryable(Some("AccessDeniedException")));
}

#[test]
fn the_backoff_doubles_up_to_its_maximum() {
    let first = Duration::from_millis(100);
    let max = Duration::from_secs(1);
    let pauses: Vec<_> = (1..=6)
        .map(|n| backoff(n, first, max).as_millis())
        .collect();
    assert_eq!(pauses, vec![100, 200, 400, 800, 1000, 1000]);
}
