//! The response Lambda reads: exactly one record named, the first unsettled in shard order, and
//! where the shard's checkpoint then stands.

use lambda_kinesis::HandlerOutcome;
use lambda_kinesis::testing::{TestEvent, settle};
use lambda_kinesis::wire::KinesisEventResponse;

use crate::support::{Decision, check_outcomes, decide, response_json};

/// An event whose records carry the decisions of `line` (`"ack drop hold"`), one per word.
fn event_of(line: &str) -> TestEvent {
    line.split_whitespace()
        .fold(TestEvent::new(), |event, word| {
            event.json(&Decision::parse(word))
        })
}

/// Settles records that carry `decisions`, then checks the outcomes and which record the response
/// names (the index in the event, or none).
#[track_caller]
fn check(decisions: &str, outcomes: &str, named: Option<usize>) {
    let event = event_of(decisions);
    let settlement = block_on(settle(decide, &event));
    check_outcomes(&settlement, outcomes);
    assert_eq!(
        settlement.cut(),
        named.map(|index| event.cut_at(index)),
        "the record named"
    );
    assert_eq!(
        settlement
            .response()
            .failures()
            .batch_item_failures
            .first()
            .and_then(|failure| failure.item_identifier.as_deref()),
        named.map(|index| event.sequence_number(index)),
        "the response's itemIdentifier"
    );
    let redelivered: Vec<&str> = settlement
        .redelivered()
        .map(|record| record.sequence_number())
        .collect();
    let expected: Vec<&str> = (named.unwrap_or(event.len())..event.len())
        .map(|index| event.sequence_number(index))
        .collect();
    assert_eq!(redelivered, expected, "the records Lambda delivers again");
}

/// Runs a future to completion on a runtime of its own: `check` is a plain function so that it
/// can carry `#[track_caller]`.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a test runtime starts")
        .block_on(future)
}

#[test]
fn every_record_settled_names_none() {
    check("", "", None);
    check("ack", "ack", None);
    check("ack ack ack", "ack ack ack", None);
    check("drop", "drop", None);
    check("ack drop ack drop", "ack drop ack drop", None);
}

#[test]
fn the_first_held_record_is_named_and_the_rest_is_skipped() {
    check("hold", "hold", Some(0));
    check("hold ack", "hold skip", Some(0));
    check("ack hold", "ack hold", Some(1));
    check("ack drop hold ack", "ack drop hold skip", Some(2));
    check("ack ack hold hold drop", "ack ack hold skip skip", Some(2));
    check("drop drop drop hold", "drop drop drop hold", Some(3));
}

#[tokio::test]
async fn the_response_json_is_exactly_lambdas_partial_batch_response() {
    let all_settled = settle(decide, event_of("ack ack")).await;
    assert_eq!(response_json(&all_settled), r#"{"batchItemFailures":[]}"#);

    let event = event_of("ack hold ack");
    let held = settle(decide, &event).await;
    assert_eq!(
        response_json(&held),
        format!(
            r#"{{"batchItemFailures":[{{"itemIdentifier":"{}"}}]}}"#,
            event.sequence_number(1)
        )
    );
}

#[tokio::test]
async fn several_held_records_still_name_only_the_first() {
    // A batch handler can hold several records at once; Lambda would checkpoint at the lowest
    // anyway, so the response names that one alone.
    let handler = |numbers: &[u32]| {
        let outcomes = numbers
            .iter()
            .map(|n| {
                if n % 2 == 0 {
                    HandlerOutcome::hold()
                } else {
                    HandlerOutcome::ack()
                }
            })
            .collect::<Vec<_>>();
        async move { outcomes }
    };
    let event = TestEvent::new().json(&1).json(&2).json(&3).json(&4);
    let settlement = settle(handler, &event).await;
    check_outcomes(&settlement, "ack hold ack hold");
    assert_eq!(
        response_json(&settlement),
        format!(
            r#"{{"batchItemFailures":[{{"itemIdentifier":"{}"}}]}}"#,
            event.sequence_number(1)
        )
    );
    assert_eq!(settlement.cut(), Some(event.cut_at(1)));
}

#[tokio::test]
async fn dropped_records_are_reported_in_an_extension_only_when_there_are_some() {
    let event = event_of("drop ack drop");
    let settlement = settle(decide, &event).await;
    assert_eq!(
        response_json(&settlement),
        format!(
            r#"{{"batchItemFailures":[],"lambdaKinesis":{{"dropped":["{}","{}"]}}}}"#,
            event.sequence_number(0),
            event.sequence_number(2)
        )
    );
    // Lambda reads only `batchItemFailures`: for it, the response is a full success.
    let lambda_reads: KinesisEventResponse =
        serde_json::from_str(&response_json(&settlement)).unwrap();
    assert!(lambda_reads.batch_item_failures.is_empty());
    assert_eq!(
        KinesisEventResponse::from(settlement.response()),
        lambda_reads
    );
}

#[tokio::test]
async fn the_extension_reports_only_drops_the_checkpoint_passes() {
    // The dropped record behind the held one is delivered again: it is not retired yet.
    let handler = |numbers: &[u32]| {
        let outcomes = numbers
            .iter()
            .map(|n| match n {
                0 => HandlerOutcome::drop(),
                1 => HandlerOutcome::hold(),
                _ => HandlerOutcome::ack(),
            })
            .collect::<Vec<_>>();
        async move { outcomes }
    };
    let event = TestEvent::new().json(&0).json(&1).json(&0).json(&2);
    let settlement = settle(handler, &event).await;
    check_outcomes(&settlement, "drop hold drop ack");
    assert_eq!(settlement.response().dropped(), [event.sequence_number(0)]);
    assert_eq!(
        response_json(&settlement),
        format!(
            r#"{{"batchItemFailures":[{{"itemIdentifier":"{}"}}],"lambdaKinesis":{{"dropped":["{}"]}}}}"#,
            event.sequence_number(1),
            event.sequence_number(0)
        )
    );
}

#[tokio::test]
async fn the_settlement_lists_each_record_with_its_outcome() {
    let event = event_of("ack drop hold");
    let settlement = settle(decide, &event).await;
    let listed: Vec<(String, String)> = settlement
        .records()
        .map(|(record, outcome)| {
            (
                record.sequence_number().to_owned(),
                crate::support::outcome_word(outcome).to_owned(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (event.sequence_number(0).to_owned(), "ack".to_owned()),
            (event.sequence_number(1).to_owned(), "drop".to_owned()),
            (event.sequence_number(2).to_owned(), "hold".to_owned()),
        ]
    );
    assert_eq!(settlement.outcome(2), &settlement.outcomes()[2]);
    assert_eq!(
        settlement.cut().map(|cut| cut.sequence_number),
        Some(event.sequence_number(2))
    );
}
