//! Each answer shape of the table of `docs/event-source-mapping.md` §1.4, through a whole mapping: a function that always gives
//! the same answer reads three records put on one shard, with `MaximumRetryAttempts: 2`.
//!
//! - A success shape checkpoints past the batch after one invocation.
//! - A failure shape fails the whole batch: it is invoked three times (1 + 2 retries), then
//!   discarded with an on-failure record (`functionError` null for a normal return, `"Unhandled"`
//!   for a function error), and the checkpoint passes it.
//! - A partial response moves the checkpoint to just before the lowest reported record. The
//!   same answer then names the first record of the narrowed batch, which fails it: three more
//!   invocations, then the remainder is discarded.
//! - With `ReportBatchItemFailures` off, the body is never read: any normal return succeeds.
//!
//! Identifiers written `#N` in an answer stand for the sequence number of the N-th record put.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use end_to_end::{Observed, TestStream, at, canned_answer_bootstrap, config, json_fields, shard};
use kinesis_esm::config::StartingPosition;
use kinesis_esm::invoke::runtime_api::{FunctionDefinition, RuntimeApi};
use kinesis_esm::invoke::{InProcess, Invoker};
use kinesis_esm::lease::Checkpoint;
use kinesis_esm::mapping::MappingEvent;
use kinesis_esm::sequence::SequenceNumber;
use lambda_kinesis::lambda_runtime::LambdaEvent;
use lambda_kinesis::lambda_runtime::{Diagnostic, service_fn};
use lambda_kinesis::wire::KinesisBatch;
use serde_json::{Value, json};

/// How many records each check puts, all read in one batch.
const RECORDS: usize = 3;

/// How the function answers every invocation.
#[derive(Debug, Clone)]
enum Answer {
    /// Returns this value, which the runtime serialises (in process).
    Json(Value),
    /// Fails with an error (in process).
    FunctionError,
    /// Posts these bytes as its response: the `canned-answer` fixture's own binary through the
    /// Runtime API, with `ANSWER` set to this (`garbage` gives bytes that are not even UTF-8).
    Posted(&'static str),
}

/// What Lambda makes of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    /// The whole batch succeeded.
    Success,
    /// The whole batch failed, every time; the on-failure record says `functionError`.
    Failure {
        function_error: Option<&'static str>,
    },
    /// The records before this index succeeded; the rest failed from then on.
    PartialAt(usize),
}

/// Runs one answer through a mapping and compares what happened with `expected`.
async fn check(answer: Answer, report_batch_item_failures: bool, expected: Expected) {
    static CHECKS: AtomicUsize = AtomicUsize::new(0);
    let label = format!("{answer:?} with ReportBatchItemFailures {report_batch_item_failures}");
    let stream = TestStream::create(
        &format!("responses-{}", CHECKS.fetch_add(1, Ordering::Relaxed)),
        1,
    );
    let shard_id = stream.open_shards()[0].shard_id.clone();
    let records: Vec<SequenceNumber> = (0..RECORDS)
        .map(|n| {
            stream
                .put(&format!("key-{n}"), json!({ "n": n }).to_string())
                .sequence_number
        })
        .collect();
    let invoker = invoker(&answer, &records).await;
    let mut config = config("responses", &stream.name, StartingPosition::TrimHorizon);
    config.batch_size = RECORDS;
    config.maximum_retry_attempts = Some(2);
    config.report_batch_item_failures = report_batch_item_failures;
    let mut observed = Observed::start(config, &stream, Arc::clone(&invoker));

    // Every expectation ends with the checkpoint past the last record: settled or discarded.
    let last = at(&records[RECORDS - 1]);
    let status = observed
        .wait_for(&format!("{label} to settle every record"), |status| {
            status.shards.get(&shard_id).is_some_and(|shard| {
                shard.checkpoint.as_ref() == Some(&last) && shard.unsettled == 0
            })
        })
        .await;
    let shard = shard(&status, &shard_id);
    let invocations = observed.invocations_on(&shard_id);
    let checkpoints: Vec<Checkpoint> = observed
        .events()
        .iter()
        .filter_map(|event| match event {
            MappingEvent::Checkpointed { checkpoint, .. } => Some(checkpoint.clone()),
            _ => None,
        })
        .collect();
    let discarded: Vec<Value> = status
        .on_failure
        .iter()
        .map(|record| on_failure_summary(record))
        .collect();

    match expected {
        Expected::Success => {
            assert_eq!(
                invocations,
                std::slice::from_ref(&records),
                "{label}: one invocation"
            );
            assert_eq!(
                checkpoints,
                [last],
                "{label}: one checkpoint, past the batch"
            );
            assert_eq!(discarded, Vec::<Value>::new(), "{label}: nothing discarded");
            assert_eq!((shard.acked, shard.discarded), (3, 0), "{label}");
        }
        Expected::Failure { function_error } => {
            assert_eq!(
                invocations,
                vec![records.clone(); 3],
                "{label}: the first invocation and two retries"
            );
            assert_eq!(
                checkpoints,
                [last],
                "{label}: checkpointed once, at the discard"
            );
            let expected = json!({
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": 3,
                "functionError": function_error,
                "start": records[0].as_str(),
                "end": records[RECORDS - 1].as_str(),
                "batchSize": RECORDS,
            });
            assert_eq!(discarded, [expected], "{label}: the on-failure record");
            assert_eq!((shard.acked, shard.discarded), (0, 3), "{label}");
        }
        Expected::PartialAt(first_failed) => {
            let remainder = records[first_failed..].to_vec();
            let mut expected_invocations = vec![records.clone()];
            expected_invocations.extend(vec![remainder; 3]);
            assert_eq!(
                invocations, expected_invocations,
                "{label}: the batch, then the remainder three times"
            );
            assert_eq!(
                checkpoints,
                [at(&records[first_failed - 1]), last],
                "{label}: the checkpoint moves to the reported record, then past the discard"
            );
            let expected = json!({
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": 3,
                "functionError": null,
                "start": records[first_failed].as_str(),
                "end": records[RECORDS - 1].as_str(),
                "batchSize": RECORDS - first_failed,
            });
            assert_eq!(discarded, [expected], "{label}: the on-failure record");
            assert_eq!(
                (shard.acked, shard.discarded),
                (first_failed as u64, (RECORDS - first_failed) as u64),
                "{label}"
            );
        }
    }
    observed.stop().await;
    invoker.shutdown().await;
}

/// A function that gives `answer` to every invocation.
async fn invoker(answer: &Answer, records: &[SequenceNumber]) -> Arc<dyn Invoker> {
    match answer {
        Answer::Json(value) => {
            let value = with_sequence_numbers(value, records);
            Arc::new(InProcess::service(service_fn(
                move |_: LambdaEvent<KinesisBatch>| {
                    let value = value.clone();
                    async move { Ok::<Value, Diagnostic>(value) }
                },
            )))
        }
        Answer::FunctionError => Arc::new(InProcess::service(service_fn(
            |_: LambdaEvent<KinesisBatch>| async {
                Err::<Value, Diagnostic>(Diagnostic {
                    error_type: "Shipping.Unavailable".to_owned(),
                    error_message: "the carrier's API is down".to_owned(),
                })
            },
        ))),
        Answer::Posted(answer) => {
            let mut function =
                FunctionDefinition::new("canned-answer", canned_answer_bootstrap().await);
            function
                .environment
                .insert("ANSWER".to_owned(), (*answer).to_owned());
            Arc::new(RuntimeApi::new(function))
        }
    }
}

/// `value` with every string `#N` replaced by the sequence number of record N.
fn with_sequence_numbers(value: &Value, records: &[SequenceNumber]) -> Value {
    match value {
        Value::String(text) => match text.strip_prefix('#').and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => Value::String(records[n].to_string()),
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| with_sequence_numbers(item, records))
                .collect(),
        ),
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, item)| (key.clone(), with_sequence_numbers(item, records)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The fields of an on-failure record that a check can know in advance.
fn on_failure_summary(record: &Value) -> Value {
    json_fields(
        record,
        &[
            ("start", "/KinesisBatchInfo/startSequenceNumber"),
            ("end", "/KinesisBatchInfo/endSequenceNumber"),
            ("batchSize", "/KinesisBatchInfo/batchSize"),
            ("condition", "/requestContext/condition"),
            (
                "approximateInvokeCount",
                "/requestContext/approximateInvokeCount",
            ),
            ("functionError", "/responseContext/functionError"),
        ],
    )
}

fn json(text: &str) -> Answer {
    Answer::Json(serde_json::from_str(text).expect("the answer is JSON"))
}

const FAILED: Expected = Expected::Failure {
    function_error: None,
};

#[tokio::test]
async fn success_shapes_checkpoint_past_the_batch_after_one_invocation() {
    check(json(r#"{"batchItemFailures":[]}"#), true, Expected::Success).await;
    check(
        json(r#"{"batchItemFailures":null}"#),
        true,
        Expected::Success,
    )
    .await;
    check(json("{}"), true, Expected::Success).await;
    // A misspelt top-level key is an empty response: the reported record is not retried.
    check(
        json(r##"{"batchItemFailure":[{"itemIdentifier":"#1"}]}"##),
        true,
        Expected::Success,
    )
    .await;
    check(json("null"), true, Expected::Success).await;
    check(json(r#""""#), true, Expected::Success).await;
    check(json("[]"), true, Expected::Success).await;
}

#[tokio::test]
async fn failure_shapes_retry_the_whole_batch_then_discard_it() {
    check(
        json(r#"{"batchItemFailures":[{"itemIdentifier":""}]}"#),
        true,
        FAILED,
    )
    .await;
    check(
        json(r#"{"batchItemFailures":[{"itemIdentifier":null}]}"#),
        true,
        FAILED,
    )
    .await;
    check(json(r#"{"batchItemFailures":[{"foo":123}]}"#), true, FAILED).await;
    check(
        json(r#"{"batchItemFailures":[{"foo":null}]}"#),
        true,
        FAILED,
    )
    .await;
    check(
        json(r#"{"batchItemFailures":[{"itemIdentifier":123}]}"#),
        true,
        FAILED,
    )
    .await;
    // A well-formed sequence number that is not a record of the batch.
    check(
        json(r#"{"batchItemFailures":[{"itemIdentifier":"1"}]}"#),
        true,
        FAILED,
    )
    .await;
    // Reporting the batch's first record makes no progress: it counts as a failed attempt.
    check(
        json(r##"{"batchItemFailures":[{"itemIdentifier":"#0"}]}"##),
        true,
        FAILED,
    )
    .await;
    check(json(r#""shipped""#), true, FAILED).await;
}

#[tokio::test]
async fn a_function_error_is_unhandled() {
    let unhandled = Expected::Failure {
        function_error: Some("Unhandled"),
    };
    check(Answer::FunctionError, true, unhandled).await;
    // A function error fails the batch whether or not the body would be read.
    check(Answer::FunctionError, false, unhandled).await;
}

#[tokio::test]
async fn an_answer_that_is_not_json_fails_the_batch() {
    check(Answer::Posted("garbage"), true, FAILED).await;
    check(Answer::Posted("{\"batchItemFailures\":["), true, FAILED).await;
}

#[tokio::test]
async fn a_partial_response_moves_the_checkpoint_to_the_reported_record() {
    check(
        json(r##"{"batchItemFailures":[{"itemIdentifier":"#1"}]}"##),
        true,
        Expected::PartialAt(1),
    )
    .await;
    check(
        json(r##"{"batchItemFailures":[{"itemIdentifier":"#2"}]}"##),
        true,
        Expected::PartialAt(2),
    )
    .await;
    // The lowest reported record wins, whatever the order of the list.
    check(
        json(r##"{"batchItemFailures":[{"itemIdentifier":"#2"},{"itemIdentifier":"#1"}]}"##),
        true,
        Expected::PartialAt(1),
    )
    .await;
}

#[tokio::test]
async fn without_report_batch_item_failures_the_body_is_ignored() {
    check(
        json(r##"{"batchItemFailures":[{"itemIdentifier":"#0"}]}"##),
        false,
        Expected::Success,
    )
    .await;
    check(
        json(r#"{"batchItemFailures":[{"foo":123}]}"#),
        false,
        Expected::Success,
    )
    .await;
    check(json(r#""shipped""#), false, Expected::Success).await;
    check(Answer::Posted("garbage"), false, Expected::Success).await;
}
