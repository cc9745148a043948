//! Handlers that return errors: the error holds the record (a batch handler's holds the batch)
//! and is logged; the work before it stands.

use lambda_kinesis::HandlerOutcome;
use lambda_kinesis::handler::HandlerError;
use lambda_kinesis::settlement::{HoldReason, RecordOutcome};
use lambda_kinesis::testing::{TestEvent, settle};

use crate::support::{LogCapture, check_outcomes};

async fn book(n: &u32) -> Result<HandlerOutcome, String> {
    match n {
        0 => Err("the carrier's API answered 503".to_owned()),
        _ => Ok(HandlerOutcome::ack()),
    }
}

#[tokio::test]
async fn an_error_holds_its_record_and_is_logged_with_the_record() {
    let event = TestEvent::new().json(&1).json(&2).json(&0).json(&3);
    let (logs, _guard) = LogCapture::start();
    let settlement = settle(book, &event).await;

    check_outcomes(&settlement, "ack ack error skip");
    assert_eq!(
        settlement.outcome(2),
        &RecordOutcome::Held(HoldReason::Error(HandlerError::new(
            "the carrier's API answered 503"
        )))
    );
    assert_eq!(
        settlement.cut().map(|cut| cut.sequence_number),
        Some(event.sequence_number(2))
    );

    let line = logs.one("the handler failed; the record is held");
    assert_eq!(line["level"], "ERROR");
    assert_eq!(line["fields"]["error"], "the carrier's API answered 503");
    assert_eq!(line["span"]["name"], "record");
    assert_eq!(line["span"]["sequence_number"], event.sequence_number(2));
    assert_eq!(line["span"]["shard_id"], "shardId-000000000000");
    assert_eq!(line["span"]["partition_key"], "partition-key");
}

async fn wrong_length(numbers: &[u32]) -> Vec<HandlerOutcome> {
    vec![HandlerOutcome::ack(); numbers.len() - 1]
}

async fn too_long(numbers: &[u32]) -> Result<Vec<HandlerOutcome>, String> {
    Ok(vec![HandlerOutcome::drop(); numbers.len() + 2])
}

#[tokio::test]
async fn a_batch_handler_returning_the_wrong_number_of_outcomes_holds_the_batch() {
    let event = TestEvent::new().json(&1).json(&2).json(&3);
    let (logs, _guard) = LogCapture::start();

    let short = settle(wrong_length, &event).await;
    check_outcomes(&short, "mismatch skip skip");
    assert_eq!(
        short.outcome(0),
        &RecordOutcome::Held(HoldReason::OutcomeCountMismatch {
            records: 3,
            outcomes: 2
        })
    );
    assert_eq!(
        short.cut().map(|cut| cut.sequence_number),
        Some(event.sequence_number(0))
    );

    let long = settle(too_long, &event).await;
    assert_eq!(
        long.outcome(0),
        &RecordOutcome::Held(HoldReason::OutcomeCountMismatch {
            records: 3,
            outcomes: 5
        })
    );
    assert!(long.response().dropped().is_empty(), "nothing was dropped");

    let lines = logs.with_message(
        "the batch handler returned a number of outcomes unlike the number of records; the batch is held",
    );
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert_eq!(lines[0]["level"], "ERROR");
    assert_eq!(lines[0]["fields"]["records"], 3);
    assert_eq!(lines[0]["fields"]["outcomes"], 2);
    assert_eq!(
        lines[0]["span"]["first_sequence_number"],
        event.sequence_number(0)
    );
}

#[tokio::test]
async fn a_batch_handler_error_holds_the_batch_and_is_logged() {
    let handler = |_: &[u32]| async { Err::<(), _>("the warehouse is closed") };
    let event = TestEvent::new().json(&1).json(&2);
    let (logs, _guard) = LogCapture::start();
    let settlement = settle(handler, &event).await;
    check_outcomes(&settlement, "error skip");
    let line = logs.one("the batch handler failed; the batch is held");
    assert_eq!(line["fields"]["error"], "the warehouse is closed");
    assert_eq!(line["span"]["records"], 2);
}
