//! Where batches come from: Lambda's JSON, the `aws_lambda_events` type, and the sample event
//! `sam local generate-event kinesis get-records` writes.

use std::time::{Duration, SystemTime};

use lambda_kinesis::testing::{TestEvent, settle};
use lambda_kinesis::wire::{KinesisBatch, KinesisEvent};
use lambda_kinesis::{HandlerOutcome, RawData, RecordMeta};

use crate::support::{Decision, check_outcomes, decide};

/// The metadata of every record, owned, to compare batches read in different ways.
fn metadata(batch: &KinesisBatch) -> Vec<(String, String, String, String, SystemTime)> {
    batch
        .records()
        .map(|record: RecordMeta<'_>| {
            (
                record.shard_id().to_owned(),
                record.sequence_number().to_owned(),
                record.partition_key().to_owned(),
                record.event_source_arn().to_owned(),
                record.approximate_arrival(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_batch_from_the_aws_lambda_events_type_settles_like_one_from_json() {
    let event = TestEvent::new()
        .shard("shardId-000000000003")
        .json_keyed("x", &Decision::Ack)
        .json_keyed("y", &Decision::Drop)
        .json_keyed("x", &Decision::Hold)
        .json_keyed("z", &Decision::Ack);
    let typed: KinesisEvent = event.to_event();
    let from_type = KinesisBatch::from(typed);
    let from_json = KinesisBatch::from(&event);
    assert_eq!(from_type.len(), 4);
    assert_eq!(metadata(&from_type), metadata(&from_json));

    let settlement = settle(decide, from_type).await;
    check_outcomes(&settlement, "ack drop hold skip");
    assert_eq!(
        settlement.cut().map(|cut| cut.sequence_number),
        Some(event.sequence_number(2))
    );
}

#[tokio::test]
async fn the_sam_cli_sample_event_is_read() {
    let json = include_bytes!("fixtures/sam-kinesis-get-records.json");
    let batch = KinesisBatch::from_json(json).expect("the SAM sample event is a Kinesis event");
    assert_eq!(
        metadata(&batch),
        [(
            "shardId-000000000000".to_owned(),
            "49545115243490985018280067714973144582180062593244200961".to_owned(),
            "partitionKey-03".to_owned(),
            "arn:aws:kinesis:EXAMPLE".to_owned(),
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_428_537_600),
        )]
    );

    let text = |data: &RawData| {
        let text = String::from_utf8(data.0.clone());
        async move {
            match text.as_deref() {
                Ok("Hello, this is a test 123.") => HandlerOutcome::ack(),
                _ => HandlerOutcome::hold(),
            }
        }
    };
    check_outcomes(&settle(text, batch).await, "ack");
}

#[test]
fn an_event_that_is_not_a_kinesis_event_is_an_error() {
    for (json, says) in [
        (
            // A missing `partitionKey` is a keyless record (`keyless.rs`); the sequence number
            // is what a record cannot lack.
            &br#"{"Records":[{"kinesis":{}}]}"#[..],
            "missing field `sequenceNumber`",
        ),
        (br#"{"Records":{}}"#, "an array of Kinesis event records"),
        (br#"[]"#, "a Kinesis event"),
        (br#"{"Records":[]"#, "EOF"),
    ] {
        let error = KinesisBatch::from_json(json).expect_err("not a Kinesis event");
        assert!(
            error.to_string().contains(says),
            "{error} should say {says:?}"
        );
    }
}

#[test]
fn test_events_are_shaped_like_lambdas() {
    let event = TestEvent::new()
        .stream("shipments")
        .arrival(SystemTime::UNIX_EPOCH + Duration::from_millis(1_767_225_600_100))
        .json_keyed("k", &1)
        .bytes(&b"\x00\x01"[..]);
    let json: serde_json::Value = serde_json::from_slice(&event.to_json()).unwrap();
    let records = json["Records"].as_array().unwrap();
    assert_eq!(records.len(), 2);
    for (index, record) in records.iter().enumerate() {
        let sequence_number = event.sequence_number(index);
        assert_eq!(sequence_number.len(), 56);
        assert_eq!(record["kinesis"]["sequenceNumber"], sequence_number);
        assert_eq!(
            record["eventID"],
            format!("shardId-000000000000:{sequence_number}")
        );
        assert_eq!(
            record["eventSourceARN"],
            "arn:aws:kinesis:us-east-1:123456789012:stream/shipments"
        );
        assert!(record["kinesis"]["approximateArrivalTimestamp"].is_f64());
        assert!(record["kinesis"].get("encryptionType").is_none());
    }
    assert_eq!(records[0]["kinesis"]["data"], "MQ==");
    assert_eq!(records[1]["kinesis"]["data"], "AAE=");
    assert!(event.sequence_number(0) < event.sequence_number(1));
    let text = String::from_utf8(event.to_json()).unwrap();
    assert!(
        text.contains(r#""approximateArrivalTimestamp":1767225600.100}"#),
        "{text}"
    );
    assert!(
        text.contains(r#""approximateArrivalTimestamp":1767225600.101}"#),
        "{text}"
    );
}
