//! A record whose event alone is over Lambda's 6 MB payload (`docs/event-source-mapping.md`
//! §4.5): on a stream whose `MaxRecordSizeInKiB` takes a 5 MiB record, the mapping never sends
//! its event, counts each attempt as a failed invocation (`RequestTooLargeException`), retries
//! it by `MaximumRetryAttempts`, then discards it with an invocation record that names it, and
//! the records around it are delivered as usual.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use end_to_end::{Observed, TestStream, at, one_shard_mapping, shard, shipping_bootstrap};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::mapping::{InvocationVerdict, MappingEvent};
use lambda_kinesis::HandlerOutcome;

use end_to_end::run::{check_row, cli_template, kinesis_esm_with, temp_file};

const SHARD: &str = "shardId-000000000000";
/// 5 MiB of data: within a 6 MiB `MaxRecordSizeInKiB`, but about 6.7 MiB once base64 in an event.
const LARGE_RECORD_BYTES: usize = 5 * 1024 * 1024;

#[tokio::test]
async fn a_record_no_event_can_carry_is_retried_and_discarded_by_the_mappings_rules() {
    let name = "oversize-record";
    let kinesis = EmbeddedKinesis::new();
    kinesis.create_stream(name, 1).unwrap();
    kinesis.update_max_record_size(name, 6 * 1024).unwrap();
    let stream = TestStream {
        kinesis,
        name: name.to_owned(),
    };
    let before = stream.put("a", "1").sequence_number;
    let large = stream
        .put("b", vec![b'7'; LARGE_RECORD_BYTES])
        .sequence_number;
    let after = stream.put("c", "3").sequence_number;

    let deliveries: Arc<Mutex<HashMap<u64, usize>>> = Arc::default();
    let handler = {
        let deliveries = deliveries.clone();
        move |n: &u64| {
            *deliveries.lock().unwrap().entry(*n).or_default() += 1;
            async { HandlerOutcome::ack() }
        }
    };
    let config = one_shard_mapping(
        &stream.name,
        "            BatchSize: 10
            MaximumRetryAttempts: 1
",
    );
    let mut observed = Observed::start(config, &stream, Arc::new(InProcess::handler(handler)));
    let status = observed.wait_for_checkpoint(SHARD, &at(&after)).await;

    // The records around it were delivered once each; the large one never reached the function.
    let deliveries = deliveries.lock().unwrap().clone();
    assert_eq!(deliveries, HashMap::from([(1, 1), (3, 1)]), "{before}");
    let shard_status = shard(&status, SHARD);
    // Its first attempt and its one retry count as failed invocations, then it is discarded.
    assert_eq!(shard_status.retries, 1, "{shard_status:#?}");
    assert_eq!(shard_status.invocations, 4, "{shard_status:#?}");
    assert_eq!(shard_status.discarded, 1, "{shard_status:#?}");
    let discarded = shard_status.last_discarded.as_ref().expect("a discard");
    assert_eq!((&discarded.first, &discarded.last), (&large, &large));
    assert_eq!(discarded.condition, "RetryAttemptsExhausted");
    let refused: Vec<_> = shard_status
        .recent_invocations
        .iter()
        .filter(|invocation| {
            matches!(&invocation.verdict, InvocationVerdict::FunctionError { error_type }
                if error_type.as_str() == "RequestTooLargeException")
        })
        .map(|invocation| invocation.first.clone())
        .collect();
    assert_eq!(refused, [large.clone(), large.clone()], "{shard_status:#?}");

    // The invocation record an on-failure destination receives names the record and the cause.
    let record = observed
        .events()
        .iter()
        .find_map(|event| match event {
            MappingEvent::Discarded { record, .. } => Some(record.clone()),
            _ => None,
        })
        .expect("a discarded batch's invocation record");
    let batch_info = &record["KinesisBatchInfo"];
    assert_eq!(
        batch_info["startSequenceNumber"],
        large.as_str(),
        "{record}"
    );
    assert_eq!(batch_info["batchSize"], 1, "{record}");
    observed.stop().await;
}

/// `kinesis-esm run` gives the embedded stream the template's `MaxRecordSizeInKiB` (10240): a
/// 2 MiB shipment, which a stream of the default 1 MiB would refuse, is published by `--put`
/// and booked by the shipping function, next to a small one.
#[tokio::test]
async fn run_makes_the_templates_stream_with_its_max_record_size() {
    shipping_bootstrap().await;
    let address = "x".repeat(2 * 1024 * 1024);
    let records = temp_file(
        "two-mib-shipment.jsonl",
        &format!(
            "{{\"partitionKey\": \"large\", \"data\": {{\"id\": 1, \"address\": \"{address}\", \"carrier\": \"dhl\"}}}}\n\
             {{\"partitionKey\": \"small\", \"data\": {{\"id\": 2, \"address\": \"2 Quay Street\", \"carrier\": \"ups\"}}}}\n"
        ),
    );
    let run = kinesis_esm_with(&cli_template("shipping-10-mib.yaml"), &records, &[]).await;
    std::fs::remove_file(&records).expect("cleaned");
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    check_row(
        &run,
        &[
            ("records", "2"),
            ("acked", "2"),
            ("discarded", "0"),
            ("held", "0"),
        ],
    );
}

/// The oversize rule through `kinesis-esm run`: on the template's 10 MiB stream, a 5 MiB
/// shipment makes an event over Lambda's 6 MB payload. Its batch is never sent: each attempt
/// fails (`RequestTooLargeException`) with a warning naming the shard and the sizes, and after
/// the one retry `MaximumRetryAttempts: 1` allows it is discarded; the small shipments around it
/// are booked.
#[tokio::test]
async fn run_discards_a_record_no_event_can_carry_by_the_mappings_rules() {
    shipping_bootstrap().await;
    let address = "x".repeat(LARGE_RECORD_BYTES);
    let records = temp_file(
        "five-mib-shipment.jsonl",
        &format!(
            "{{\"partitionKey\": \"before\", \"data\": {{\"id\": 1, \"address\": \"1 Quay Street\", \"carrier\": \"dhl\"}}}}\n\
             {{\"partitionKey\": \"large\", \"data\": {{\"id\": 2, \"address\": \"{address}\", \"carrier\": \"dhl\"}}}}\n\
             {{\"partitionKey\": \"after\", \"data\": {{\"id\": 3, \"address\": \"3 Quay Street\", \"carrier\": \"ups\"}}}}\n"
        ),
    );
    let run = kinesis_esm_with(
        &cli_template("shipping-10-mib.yaml"),
        &records,
        &["--retry-pause", "100ms", "--max-retry-pause", "100ms"],
    )
    .await;
    std::fs::remove_file(&records).expect("cleaned");
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    check_row(
        &run,
        &[
            ("records", "3"),
            ("acked", "2"),
            ("discarded", "1"),
            ("held", "0"),
            ("retries", "1"),
        ],
    );
    let warning = run
        .stderr
        .lines()
        .find(|line| line.contains("an event over Lambda's payload limit"))
        .unwrap_or_else(|| panic!("the refusal is warned of: {}", run.stderr));
    assert!(
        warning.contains("shard_id=shardId-000000000000")
            && warning.contains("limit_bytes=6291456"),
        "{warning}"
    );
}
