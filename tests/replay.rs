//! `kinesis-esm replay` as the mapping applies it: a running mapping's shard reads its records
//! again from a record, a time or the oldest record, its checkpoint moved back by the reader
//! that holds the lease, over the memory lease store and the state directory (`aws_replay` does
//! it over a DynamoDB lease table), and the replays it refuses.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use end_to_end::aws::ScratchDir;
use end_to_end::{Observed, TestStream, Via, at, config, shard, shipment};
use kinesis_esm::config::StartingPosition;
use kinesis_esm::lease::{Checkpoint, LeaseStore, MemoryLeaseStore};
use kinesis_esm::mapping::replay::ReplayFrom;
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::state::StateDir;

const SHARD: &str = "shardId-000000000000";

/// Publishes shipments `ids` on `stream`; returns their sequence numbers.
fn publish(stream: &TestStream, ids: std::ops::RangeInclusive<u64>) -> Vec<SequenceNumber> {
    ids.map(|id| {
        stream
            .put(&format!("shipment-{id}"), shipment(id, "Main St 1", "ups"))
            .sequence_number
    })
    .collect()
}

/// Waits until `SHARD` has had `deliveries` deliveries and checkpointed at `last`.
async fn wait_for_deliveries(observed: &Observed, deliveries: u64, last: &SequenceNumber) {
    observed
        .wait_for(
            &format!("{deliveries} deliveries, checkpointed at {last}"),
            |status| {
                status.shards.get(SHARD).is_some_and(|shard| {
                    shard.delivered == deliveries && shard.checkpoint == Some(at(last))
                })
            },
        )
        .await;
}

/// The lease store's checkpoint of `SHARD`.
async fn stored_checkpoint(leases: &dyn LeaseStore) -> Checkpoint {
    let leases = leases.list_leases().await.expect("the leases list");
    leases
        .into_iter()
        .find(|lease| lease.shard_id == SHARD)
        .expect("the shard has a lease")
        .checkpoint
}

/// Replays from a record, from a time and from the oldest record over `leases`: each time the
/// records from there are delivered again, and the checkpoint ends at the last record again.
pub(crate) async fn replays_deliver_records_again(name: &str, leases: Arc<dyn LeaseStore>) {
    let stream = TestStream::create(name, 1);
    let mut first = publish(&stream, 1..=2);
    // The records after this time arrive at least a few milliseconds after it.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let between = SystemTime::now();
    tokio::time::sleep(Duration::from_millis(20)).await;
    first.extend(publish(&stream, 3..=5));
    let records = first;
    let last = records[4].clone();
    let observed = Observed::start_with_leases(
        config("shipping", &stream.name, StartingPosition::TrimHorizon),
        &stream,
        Via::InProcess.shipping().await,
        Arc::clone(&leases),
    );
    wait_for_deliveries(&observed, 5, &last).await;
    let control = observed.mapping.control();

    // From the fourth record: it and the fifth come again.
    let report = control
        .replay(Some(SHARD), ReplayFrom::SequenceNumber(records[3].clone()))
        .await
        .expect("the replay from a record is taken");
    assert_eq!(report.replayed.len(), 1, "{report:?}");
    let outcome = &report.replayed[0];
    assert_eq!(outcome.previous_checkpoint, at(&last));
    assert_eq!(
        outcome.checkpoint,
        at(&records[2]),
        "the record before the fourth"
    );
    assert_eq!(outcome.first_record.as_ref(), Some(&records[3]));
    wait_for_deliveries(&observed, 7, &last).await;

    // From a time between the second and third records: the last three come again.
    let report = control
        .replay(None, ReplayFrom::Timestamp(between))
        .await
        .expect("the replay from a time is taken");
    assert_eq!(report.replayed[0].checkpoint, at(&records[1]));
    wait_for_deliveries(&observed, 10, &last).await;

    // From the oldest record: all five come again.
    let report = control
        .replay(Some(SHARD), ReplayFrom::TrimHorizon)
        .await
        .expect("the replay from the oldest record is taken");
    assert_eq!(report.replayed[0].checkpoint, Checkpoint::TrimHorizon);
    let status = observed
        .wait_for("15 deliveries", |status| {
            status
                .shards
                .get(SHARD)
                .is_some_and(|shard| shard.delivered == 15 && shard.checkpoint == Some(at(&last)))
        })
        .await;
    let replayed = shard(&status, SHARD)
        .replayed
        .as_ref()
        .expect("the status shows the replay");
    assert_eq!(replayed.from, "TRIM_HORIZON");
    assert_eq!(replayed.previous_checkpoint, at(&last));
    assert_eq!(shard(&status, SHARD).acked, 15, "every delivery settled");
    assert_eq!(stored_checkpoint(&*leases).await, at(&last));
    observed.stop().await;
}

#[tokio::test]
async fn a_replay_over_the_memory_lease_store_delivers_the_records_again() {
    replays_deliver_records_again("replay-memory", Arc::new(MemoryLeaseStore::new())).await;
}

#[tokio::test]
async fn a_replay_over_the_state_directory_delivers_the_records_again_and_keeps_the_checkpoint() {
    let scratch = ScratchDir::new("replay-state-dir");
    let state = StateDir::open(&scratch.join("state")).expect("the state directory opens");
    let leases = Arc::new(state.lease_store().expect("the lease store opens"));
    replays_deliver_records_again("replay-state-dir", leases).await;
    drop(state);
    // Read back from the disk: the checkpoint written after the replays.
    let state = StateDir::open(&scratch.join("state")).expect("the state directory opens again");
    let leases = state.lease_store().expect("the leases read back");
    assert!(matches!(
        stored_checkpoint(&leases).await,
        Checkpoint::SequenceNumber(_)
    ));
}

#[tokio::test]
async fn a_replay_refuses_an_unknown_shard_a_foreign_record_a_future_time_and_a_closed_shard() {
    let stream = TestStream::create("replay-refusals", 1);
    let records = publish(&stream, 1..=3);
    let observed = Observed::start(
        config("shipping", &stream.name, StartingPosition::TrimHorizon),
        &stream,
        Via::InProcess.shipping().await,
    );
    wait_for_deliveries(&observed, 3, &records[2]).await;
    let control = observed.mapping.control();
    let refusal = |from: ReplayFrom, shard_id: &'static str| {
        let control = control.clone();
        async move {
            control
                .replay(Some(shard_id), from)
                .await
                .expect_err("the replay is refused")
                .to_string()
        }
    };

    let unknown = refusal(ReplayFrom::TrimHorizon, "shardId-000000000007").await;
    assert!(
        unknown.contains("stream replay-refusals has no shard shardId-000000000007"),
        "{unknown}"
    );
    let beyond: SequenceNumber = format!("{}9", records[2]).parse().unwrap();
    let foreign = refusal(ReplayFrom::SequenceNumber(beyond.clone()), SHARD).await;
    assert!(
        foreign.contains(&format!(
            "sequence number {beyond} is not a record of shard {SHARD} of stream replay-refusals"
        )),
        "{foreign}"
    );
    let future = refusal(
        ReplayFrom::Timestamp(SystemTime::now() + Duration::from_secs(3600)),
        SHARD,
    )
    .await;
    assert!(future.contains("is in the future"), "{future}");
    // Nothing refused moved the checkpoint.
    assert_eq!(
        shard(&observed.mapping.status(), SHARD).checkpoint,
        Some(at(&records[2]))
    );

    // Split the shard: once its reader reaches SHARD_END, the parent is not read again.
    let middle = (u128::MAX / 2).to_string();
    stream
        .kinesis
        .split_shard(&stream.name, SHARD, &middle)
        .expect("the shard splits");
    observed
        .wait_for_checkpoint(SHARD, &Checkpoint::ShardEnd)
        .await;
    observed
        .wait_for("the children to be seen", |status| status.shards.len() == 3)
        .await;
    let closed = refusal(ReplayFrom::TrimHorizon, SHARD).await;
    assert!(
        closed.contains("is closed and read to its end (SHARD_END)")
            && closed.contains("shardId-000000000001, shardId-000000000002"),
        "{closed}"
    );
    // Without --shard, the closed parent is passed over and its children read again.
    let report = control
        .replay(None, ReplayFrom::TrimHorizon)
        .await
        .expect("the children replay");
    assert_eq!(report.passed_over.len(), 1, "{report:?}");
    observed.stop().await;
}
