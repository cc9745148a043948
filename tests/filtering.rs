//! `FilterCriteria` end to end: a template whose Kinesis event filters on `carrier`, read by the
//! template reader and run over the embedded Kinesis with the shipping function in process.
//! Only matching records reach the function; the shard's checkpoint passes every record, the
//! filtered ones too, and a read whose records all fail the filter invokes nothing but still
//! checkpoints (`docs/filtering.md`, "Records that do not match").

use std::sync::Arc;

use end_to_end::{Observed, TestStream, at, one_shard_mapping, shard, shipment};
use kinesis_esm::config::MappingConfig;
use kinesis_esm::invoke::InProcess;
use kinesis_esm::sequence::SequenceNumber;

const SHARD: &str = "shardId-000000000000";

/// The only mapping of a one-shard template on `stream` whose event keeps `pattern`.
fn mapping_with_filter(stream: &str, pattern: &str) -> MappingConfig {
    one_shard_mapping(
        stream,
        &format!(
            "            BatchSize: 3
            FunctionResponseTypes: [ReportBatchItemFailures]
            KmsKeyArn: arn:aws:kms:us-east-1:123456789012:key/filters
            FilterCriteria:
              Filters:
                - Pattern: '{pattern}'
"
        ),
    )
}

/// The sequence numbers of every invoked record, in invocation order.
fn invoked(observed: &mut Observed) -> Vec<SequenceNumber> {
    observed.invocations_on(SHARD).concat()
}

#[tokio::test]
async fn only_matching_records_reach_the_function_and_the_checkpoint_passes_all() {
    let stream = TestStream::create("filter-carrier", 1);
    let config = mapping_with_filter(&stream.name, r#"{"data": {"carrier": ["dhl"]}}"#);
    let mut dhl = Vec::new();
    let mut last = None;
    for id in 0..20 {
        // `fedex` is a carrier the function does not know and would hold: filtered, it is
        // never delivered, so nothing holds the shard.
        let carrier = ["dhl", "ups", "fedex", "dhl", "ups"][id % 5];
        let put = stream.put(
            &format!("order-{id}"),
            shipment(id as u64, "1 Main St", carrier),
        );
        if carrier == "dhl" {
            dhl.push(put.sequence_number.clone());
        }
        last = Some(put.sequence_number);
    }
    // Data that is not JSON never matches a pattern on `data`; it ends the shard here, so the
    // checkpoint must pass filtered records that no delivered record follows.
    let not_json = stream.put("order-raw", "not json").sequence_number;
    assert!(last.is_some_and(|last| last < not_json));

    let mut observed = Observed::start(
        config,
        &stream,
        Arc::new(InProcess::service(shipping::function())),
    );
    observed.wait_for_checkpoint(SHARD, &at(&not_json)).await;
    let status = observed
        .wait_for("the shard to be caught up", |status| status.is_idle())
        .await;
    assert_eq!(invoked(&mut observed), dhl, "only dhl shipments, in order");
    let shard = shard(&status, SHARD);
    assert_eq!(shard.delivered, dhl.len() as u64);
    assert_eq!(shard.acked, dhl.len() as u64);
    assert_eq!(shard.filtered, 21 - dhl.len() as u64);
    assert_eq!(shard.unsettled, 0);
    assert!(shard.held.is_none(), "{shard:#?}");
    observed.stop().await;
}

#[tokio::test]
async fn a_read_whose_records_all_fail_the_filter_invokes_nothing_and_still_checkpoints() {
    let stream = TestStream::create("filter-none-match", 1);
    let config = mapping_with_filter(
        &stream.name,
        r#"{"data": {"carrier": [{"anything-but": ["ups", "fedex"]}]}}"#,
    );
    let mut last = None;
    for id in 0..7_u64 {
        let carrier = if id.is_multiple_of(2) { "ups" } else { "fedex" };
        last = Some(
            stream
                .put(&format!("order-{id}"), shipment(id, "1 Main St", carrier))
                .sequence_number,
        );
    }
    let last = last.expect("records were put");

    let mut observed = Observed::start(
        config,
        &stream,
        Arc::new(InProcess::service(shipping::function())),
    );
    let status = observed.wait_for_checkpoint(SHARD, &at(&last)).await;
    assert_eq!(shard(&status, SHARD).filtered, 7);
    // Records put later still go through the filter: a dhl shipment is delivered.
    let dhl = stream
        .put("order-7", shipment(7, "1 Main St", "dhl"))
        .sequence_number;
    let status = observed.wait_for_checkpoint(SHARD, &at(&dhl)).await;
    assert_eq!(invoked(&mut observed), vec![dhl]);
    assert_eq!(shard(&status, SHARD).invocations, 1);
    observed.stop().await;
}
