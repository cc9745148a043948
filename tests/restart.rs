//! Restarting with the memory lease store: checkpoints live as long as the store, so a mapping
//! started again with a fresh store begins where `StartingPosition` says, over the same embedded
//! Kinesis. With `TRIM_HORIZON` every record comes again; with `LATEST` none of the old ones does.
//! A mapping started again with the same store resumes after its checkpoints.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use end_to_end::{Observed, TestStream, config};
use kinesis_esm::config::StartingPosition;
use kinesis_esm::invoke::InProcess;
use kinesis_esm::lease::{LeaseStore, MemoryLeaseStore};
use kinesis_esm::mapping::MappingStatus;
use kinesis_esm::sequence::SequenceNumber;
use lambda_kinesis::HandlerOutcome;
use serde_json::Value;

async fn ack(_: &Value) -> HandlerOutcome {
    HandlerOutcome::ack()
}

/// Starts a mapping with a fresh memory lease store.
fn start(stream: &TestStream, starting_position: StartingPosition) -> Observed {
    start_with(stream, starting_position, Arc::new(MemoryLeaseStore::new()))
}

/// Starts a mapping that keeps its checkpoints in `leases`.
fn start_with(
    stream: &TestStream,
    starting_position: StartingPosition,
    leases: Arc<dyn LeaseStore>,
) -> Observed {
    let mut config = config("restart", &stream.name, starting_position);
    config.batch_size = 4;
    Observed::start_with_leases(config, stream, Arc::new(InProcess::handler(ack)), leases)
}

/// Puts `count` records spread over the stream's shards, numbered from `first`; returns their
/// sequence numbers and shards.
fn put(stream: &TestStream, first: usize, count: usize) -> BTreeMap<SequenceNumber, Arc<str>> {
    (first..first + count)
        .map(|n| {
            let put = stream.put(&format!("key-{n}"), format!(r#"{{"n":{n}}}"#));
            (put.sequence_number, put.shard_id)
        })
        .collect()
}

fn sequence_numbers(records: &BTreeMap<SequenceNumber, Arc<str>>) -> BTreeSet<SequenceNumber> {
    records.keys().cloned().collect()
}

/// Waits until `observed` has acked `count` records; `what` names the wait.
async fn acked(observed: &Observed, what: &str, count: u64) -> MappingStatus {
    observed
        .wait_for(what, |status| status.totals().acked == count)
        .await
}

/// Waits until `observed` has acked `count` records and is idle; `what` names the wait.
async fn acked_and_idle(observed: &Observed, what: &str, count: u64) -> MappingStatus {
    observed
        .wait_for(what, |status| {
            status.totals().acked == count && status.is_idle()
        })
        .await
}

/// Every record the mapping delivered.
fn delivered(observed: &mut Observed) -> BTreeSet<SequenceNumber> {
    observed.delivery_counts().into_keys().collect()
}

#[tokio::test]
async fn trim_horizon_delivers_every_record_again_after_a_restart() {
    let stream = TestStream::create("restart-trim-horizon", 2);
    let records = put(&stream, 0, 20);

    let mut first = start(&stream, StartingPosition::TrimHorizon);
    acked(&first, "the first run to ack every record", 20).await;
    assert_eq!(delivered(&mut first), sequence_numbers(&records));
    first.stop().await;

    let mut second = start(&stream, StartingPosition::TrimHorizon);
    let status = acked_and_idle(&second, "the second run to ack every record", 20).await;
    assert_eq!(
        delivered(&mut second),
        sequence_numbers(&records),
        "every record, again"
    );
    for shard in stream.shards() {
        let oldest = records
            .iter()
            .find(|(_, shard_id)| ***shard_id == *shard.shard_id)
            .map(|(sequence_number, _)| sequence_number);
        assert!(oldest.is_some(), "{} holds records", shard.shard_id);
        assert_eq!(
            second
                .invocations_on(&shard.shard_id)
                .first()
                .and_then(|batch| batch.first()),
            oldest,
            "{}: the second run starts at the shard's oldest record",
            shard.shard_id
        );
    }
    assert_eq!(status.totals().delivered, 20, "each record once");
    second.stop().await;
}

#[tokio::test]
async fn latest_delivers_only_records_put_after_a_restart() {
    let stream = TestStream::create("restart-latest", 2);
    let before_first_run = put(&stream, 0, 6);

    let mut first = start(&stream, StartingPosition::Latest);
    first
        .wait_for("the first run to be idle", MappingStatus::is_idle)
        .await;
    let first_run_records = put(&stream, 6, 10);
    acked(&first, "the first run to ack its records", 10).await;
    assert_eq!(delivered(&mut first), sequence_numbers(&first_run_records));
    first.stop().await;

    let mut second = start(&stream, StartingPosition::Latest);
    second
        .wait_for("the second run to be idle", MappingStatus::is_idle)
        .await;
    let second_run_records = put(&stream, 16, 5);
    let status = acked_and_idle(&second, "the second run to ack its records", 5).await;
    assert_eq!(
        delivered(&mut second),
        sequence_numbers(&second_run_records),
        "none of the {} old records",
        before_first_run.len() + first_run_records.len()
    );
    assert_eq!(status.totals().delivered, 5);
    second.stop().await;
}

#[tokio::test]
async fn the_same_store_resumes_after_its_checkpoints() {
    let stream = TestStream::create("restart-same-store", 2);
    let leases: Arc<dyn LeaseStore> = Arc::new(MemoryLeaseStore::new());
    let old_records = put(&stream, 0, 12);

    let mut first = start_with(&stream, StartingPosition::TrimHorizon, Arc::clone(&leases));
    acked(&first, "the first run to ack every record", 12).await;
    assert_eq!(delivered(&mut first), sequence_numbers(&old_records));
    first.stop().await;

    let mut second = start_with(&stream, StartingPosition::TrimHorizon, leases);
    second
        .wait_for("the second run to be idle", MappingStatus::is_idle)
        .await;
    let new_records = put(&stream, 12, 4);
    let status = acked_and_idle(&second, "the second run to ack the new records", 4).await;
    assert_eq!(
        delivered(&mut second),
        sequence_numbers(&new_records),
        "only the records put after the checkpoints"
    );
    assert_eq!(status.totals().delivered, 4);
    second.stop().await;
}

#[tokio::test]
async fn a_stream_created_again_under_the_same_name_starts_afresh() {
    let stream = TestStream::create("restart-recreated", 1);
    let leases: Arc<dyn LeaseStore> = Arc::new(MemoryLeaseStore::new());
    put(&stream, 0, 6);
    let first = start_with(&stream, StartingPosition::TrimHorizon, Arc::clone(&leases));
    acked(&first, "the first run to ack every record", 6).await;
    first.stop().await;
    let old_leases = leases.list_leases().await.unwrap();

    // The stream is deleted and created again under the same name, with new records.
    stream.kinesis.delete_stream(&stream.name).unwrap();
    let stream = TestStream::create_in(&stream.kinesis, &stream.name, 1);
    let new_records = put(&stream, 100, 3);

    // The old stream's checkpoint is in the store, but it belongs to the old stream: the new one
    // starts at TRIM_HORIZON under leases of its own.
    let mut second = start_with(&stream, StartingPosition::TrimHorizon, Arc::clone(&leases));
    let status = acked_and_idle(&second, "the second run to ack the new records", 3).await;
    assert_eq!(delivered(&mut second), sequence_numbers(&new_records));
    assert_eq!(status.last_error, None);
    second.stop().await;
    let all_leases = leases.list_leases().await.unwrap();
    assert_eq!(all_leases.len(), old_leases.len() + 1, "{all_leases:#?}");
    for old in &old_leases {
        assert!(
            all_leases.contains(old),
            "the old stream's lease is untouched: {old:?}"
        );
    }
}

/// Issue 10's silent skip: a lease store that outlives an embedded Kinesis (`run --lease-table`
/// without `--state-dir`) met a fresh stream created in the same second, so with the same lease
/// keys, whose records all lay below the old checkpoints. They were skipped without a word
/// (0 delivered); now the reader sees that no record backs its checkpoint and reads the shard
/// from its oldest record.
#[tokio::test]
async fn a_checkpoint_beyond_every_record_of_a_fresh_stream_skips_nothing() {
    use kinesis_esm::kinesis::{EmbeddedKinesis, ManualClock};
    let clock = ManualClock::new(std::time::SystemTime::now());
    let kinesis = || EmbeddedKinesis::builder().clock(clock.clone()).build();
    let leases: Arc<dyn LeaseStore> = Arc::new(MemoryLeaseStore::new());

    let first_stream = TestStream::create_in(&kinesis(), "restart-fresh-stream", 1);
    put(&first_stream, 0, 5);
    let first = start_with(
        &first_stream,
        StartingPosition::TrimHorizon,
        Arc::clone(&leases),
    );
    acked_and_idle(&first, "the first run to ack every record", 5).await;
    first.stop().await;

    // The same name, the same second: the same lease keys, and sequence numbers that start over.
    let second_stream = TestStream::create_in(&kinesis(), "restart-fresh-stream", 1);
    let records = put(&second_stream, 100, 3);
    let mut second = start_with(&second_stream, StartingPosition::TrimHorizon, leases);
    let status = acked_and_idle(
        &second,
        "the second run to ack the fresh stream's records",
        3,
    )
    .await;
    assert_eq!(delivered(&mut second), sequence_numbers(&records));
    assert_eq!(status.totals().delivered, 3);
    second.stop().await;
}
