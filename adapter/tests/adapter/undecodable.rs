//! Records whose data does not decode: a named rejection, a warning, and a rule fixed before the
//! handler runs (dropped by default, held on request). The handler never sees them.

use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::settlement::{
    DecodeFailure, DropReason, HoldReason, RecordOutcome, UndecodableRecord,
};
use lambda_kinesis::testing::{TestEvent, settle};
use lambda_kinesis::wire::KinesisBatch;
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
use serde::Deserialize;

use crate::support::{Calls, LogCapture, check_outcomes, response_json};

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct Parcel {
    weight_grams: u32,
}

/// A handler that remembers every parcel it saw and acks it.
fn recording() -> (
    Calls<u32>,
    impl Fn(&Parcel) -> std::future::Ready<HandlerOutcome> + Send + Sync + 'static,
) {
    let calls = Calls::default();
    let handler = {
        let calls = calls.clone();
        move |parcel: &Parcel| {
            calls.push(parcel.weight_grams);
            std::future::ready(HandlerOutcome::ack())
        }
    };
    (calls, handler)
}

fn parcel(weight_grams: u32) -> serde_json::Value {
    serde_json::json!({ "weight_grams": weight_grams })
}

/// Two parcels around a record that is not one: plain text, JSON of another shape, or a number.
#[track_caller]
fn event_with_in_the_middle(data: &[u8]) -> TestEvent {
    TestEvent::new()
        .json(&parcel(100))
        .bytes(data.to_vec())
        .json(&parcel(300))
}

#[track_caller]
fn check_rejection(outcome: &RecordOutcome, event: &TestEvent, index: usize, detail: &str) {
    let rejection: &UndecodableRecord = match outcome {
        RecordOutcome::Dropped(DropReason::Undecodable(rejection))
        | RecordOutcome::Held(HoldReason::Undecodable(rejection)) => rejection,
        other => panic!("expected an undecodable record, got {other:?}"),
    };
    assert_eq!(rejection.shard_id, "shardId-000000000000");
    assert_eq!(rejection.sequence_number, event.sequence_number(index));
    match &rejection.failure {
        DecodeFailure::InvalidData(text) | DecodeFailure::InvalidBase64(text) => {
            assert!(text.contains(detail), "{text:?} should say {detail:?}");
        }
        other => panic!("an unknown rejection {other:?}"),
    }
    let shown = rejection.to_string();
    assert!(
        shown.contains(event.sequence_number(index)) && shown.contains("shardId-000000000000"),
        "the rejection names its record: {shown}"
    );
}

#[tokio::test]
async fn data_that_is_not_the_handlers_type_is_dropped_and_never_reaches_the_handler() {
    for (data, detail) in [
        (&b"not json at all"[..], "expected ident"),
        (br#"{"weight":1}"#, "missing field `weight_grams`"),
        (br#"{"weight_grams":-5}"#, "invalid value"),
        (b"", "EOF while parsing"),
    ] {
        let event = event_with_in_the_middle(data);
        let (calls, handler) = recording();
        let settlement = settle(handler, &event).await;
        check_outcomes(&settlement, "ack drop:undecodable ack");
        check_rejection(settlement.outcome(1), &event, 1, detail);
        assert_eq!(calls.taken(), [100, 300], "the handler never sees {data:?}");
        assert_eq!(
            response_json(&settlement),
            format!(
                r#"{{"batchItemFailures":[],"lambdaKinesis":{{"dropped":["{0}"],"undecodable":["{0}"]}}}}"#,
                event.sequence_number(1)
            )
        );
    }
}

#[tokio::test]
async fn hold_undecodable_holds_the_record_and_what_follows() {
    let event = event_with_in_the_middle(b"<parcel/>");
    let (calls, handler) = recording();
    let settlement = KinesisAdapter::new(handler)
        .hold_undecodable()
        .settle(KinesisBatch::from(&event), &Context::default())
        .await;
    check_outcomes(&settlement, "ack hold:undecodable skip");
    check_rejection(settlement.outcome(1), &event, 1, "expected value");
    assert_eq!(calls.taken(), [100]);
    assert_eq!(
        settlement.cut().map(|cut| cut.sequence_number),
        Some(event.sequence_number(1))
    );
}

#[tokio::test]
async fn the_warning_names_the_record_its_key_and_its_first_bytes() {
    let event = TestEvent::new()
        .json(&parcel(100))
        .bytes_keyed("producer-7", b"\xff\xfe \"quoted\"".to_vec())
        .json(&parcel(300));
    let (logs, _guard) = LogCapture::start();
    let (_, handler) = recording();
    settle(handler, &event).await;
    let (_, handler) = recording();
    KinesisAdapter::new(handler)
        .hold_undecodable()
        .settle(KinesisBatch::from(&event), &Context::default())
        .await;

    for message in ["undecodable record dropped", "undecodable record held"] {
        let line = logs.one(message);
        assert_eq!(line["level"], "WARN");
        assert_eq!(line["fields"]["shard_id"], "shardId-000000000000");
        assert_eq!(line["fields"]["sequence_number"], event.sequence_number(1));
        assert_eq!(line["fields"]["partition_key"], "producer-7");
        assert_eq!(line["fields"]["data"], r#""\xff\xfe \"quoted\"""#);
        let error = line["fields"]["error"].as_str().unwrap();
        assert!(error.contains("not valid JSON"), "{error}");
    }
}

/// An event as a hand-written file might hold it, with `data` that is not base64.
fn event_with_data(data: &str) -> KinesisBatch {
    let json = format!(
        r#"{{"Records":[{{"kinesis":{{"kinesisSchemaVersion":"1.0","partitionKey":"k",
        "sequenceNumber":"49590338271490256608559692538361571095921575989136588898",
        "data":"{data}","approximateArrivalTimestamp":1545084650.987}},
        "eventSource":"aws:kinesis","eventVersion":"1.0",
        "eventID":"shardId-000000000006:49590338271490256608559692538361571095921575989136588898",
        "eventName":"aws:kinesis:record","invokeIdentityArn":"arn:aws:iam::123456789012:role/r",
        "awsRegion":"us-east-2","eventSourceARN":"arn:aws:kinesis:us-east-2:123456789012:stream/s"}}]}}"#
    );
    KinesisBatch::from_json(json.as_bytes()).expect("the event is well-formed")
}

#[tokio::test]
async fn data_that_is_not_base64_is_a_rejection_of_its_own() {
    let (calls, handler) = recording();
    let settlement = settle(handler, event_with_data("not base64!")).await;
    check_outcomes(&settlement, "drop:undecodable");
    let RecordOutcome::Dropped(DropReason::Undecodable(rejection)) = settlement.outcome(0) else {
        panic!("expected a dropped record");
    };
    assert!(
        matches!(rejection.failure, DecodeFailure::InvalidBase64(_)),
        "{rejection:?}"
    );
    assert_eq!(rejection.shard_id, "shardId-000000000006");
    assert!(calls.taken().is_empty());
}

#[tokio::test]
async fn a_batch_handler_gets_only_the_records_that_decode() {
    let event = event_with_in_the_middle(b"oops");
    let calls = Calls::default();
    let handler = {
        let calls = calls.clone();
        move |parcels: &[Parcel]| {
            calls.push(parcels.iter().map(|p| p.weight_grams).collect::<Vec<_>>());
            std::future::ready(HandlerOutcome::ack())
        }
    };
    let settlement = settle(handler.clone(), &event).await;
    check_outcomes(&settlement, "ack drop:undecodable ack");

    // Held, the undecodable record stops the batch: the handler gets what lies in front of it.
    let held = KinesisAdapter::new(handler)
        .hold_undecodable()
        .settle(KinesisBatch::from(&event), &Context::default())
        .await;
    check_outcomes(&held, "ack hold:undecodable skip");
    assert_eq!(calls.taken(), [vec![100, 300], vec![100]]);
}
