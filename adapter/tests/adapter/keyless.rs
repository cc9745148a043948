//! Keyless records: a stream whose record distribution strategy is `AUTO` takes records without
//! a partition key, and Lambda's event may carry one with no `partitionKey`, a `null` one or
//! `""`. Each reads as the empty key and is settled like any record.

use lambda_kinesis::testing::{TestEvent, settle};
use lambda_kinesis::wire::KinesisBatch;
use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};

use crate::support::{Decision, decide};

/// `event`'s JSON with every record's partition key written as `written` (the whole member,
/// `"partitionKey":...,`, or nothing for a record without the field).
fn keyless(event: &TestEvent, written: &str) -> Vec<u8> {
    let json = String::from_utf8(event.to_json()).unwrap();
    let keyed = r#""partitionKey":"partition-key","#;
    assert!(
        json.contains(keyed),
        "the event has no partition key to replace: {json}"
    );
    json.replace(keyed, written).into_bytes()
}

/// The three ways an event may write a keyless record.
const KEYLESS: [&str; 3] = ["", r#""partitionKey":null,"#, r#""partitionKey":"","#];

async fn ack_with_key(decision: &Decision, meta: &RecordMeta<'_>) -> HandlerOutcome {
    assert_eq!(meta.partition_key(), "");
    decision.outcome()
}

#[tokio::test]
async fn a_keyless_record_reads_as_the_empty_key_and_is_acked() {
    let event = TestEvent::new().json(&Decision::Ack).json(&Decision::Ack);
    for written in KEYLESS {
        let batch = KinesisBatch::from_json(&keyless(&event, written))
            .unwrap_or_else(|error| panic!("{written:?}: {error}"));
        let keys: Vec<_> = batch
            .records()
            .map(|r| r.partition_key().to_owned())
            .collect();
        assert_eq!(keys, ["", ""], "{written:?}");
        let settlement = settle(ack_with_key, batch).await;
        assert_eq!(settlement.summary(), "ack ack", "{written:?}");
        assert_eq!(settlement.cut(), None, "{written:?}");
        assert_eq!(
            serde_json::to_string(&settlement.response()).unwrap(),
            r#"{"batchItemFailures":[]}"#,
            "{written:?}"
        );
    }
}

#[tokio::test]
async fn keyless_records_share_one_lane_and_keep_shard_order_in_it() {
    let event = TestEvent::new()
        .json(&Decision::Ack)
        .json(&Decision::Hold)
        .json(&Decision::Ack);
    for written in KEYLESS {
        let batch = KinesisBatch::from_json(&keyless(&event, written)).unwrap();
        let adapter = KinesisAdapter::new(decide).per_key_lanes(4);
        let settlement = adapter
            .settle(batch, &lambda_kinesis::lambda_runtime::Context::default())
            .await;
        // One lane: the held record holds the keyless record behind it.
        assert_eq!(settlement.summary(), "ack hold skip", "{written:?}");
        assert_eq!(settlement.cut(), Some(event.cut_at(1)), "{written:?}");
    }
}
