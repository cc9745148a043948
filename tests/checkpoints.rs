//! Checkpoint writes overlap the next invocation: a shard's reader invokes the next batch while
//! the last settled batch's checkpoint is being written, yet the writes land one at a time, in
//! order, one per settled batch, and a stopping reader lands its last one before it gives its
//! lease up. The lease store here holds each checkpoint write until the test lets it through.

use std::sync::Arc;

use async_trait::async_trait;
use end_to_end::aws::{LeaseChange, RecordingLeaseStore, recording_lease_store};
use end_to_end::{Observed, TestStream, at, config, shard, shipment, within};
use kinesis_esm::config::StartingPosition;
use kinesis_esm::invoke::InProcess;
use kinesis_esm::lease::{Checkpoint, LeaseStore as _, MemoryLeaseStore};
use kinesis_esm::sequence::SequenceNumber;
use test_support::intercept::{Intercepted, LeaseHooks};
use tokio::sync::{Semaphore, watch};

const BATCH_SIZE: usize = 10;

/// A memory lease store whose checkpoint writes each wait for a permit from the test.
type GatedCheckpoints = Intercepted<RecordingLeaseStore, Gate>;

fn gated_checkpoints() -> GatedCheckpoints {
    let recorded = Arc::new(recording_lease_store(Arc::new(MemoryLeaseStore::new())));
    Intercepted::new(
        Arc::clone(&recorded),
        Gate {
            recorded,
            permits: Semaphore::new(0),
            asked: watch::Sender::new(Vec::new()),
        },
    )
}

/// Holds each checkpoint write until the test lets it through.
struct Gate {
    /// The store the writes go to, read for what landed.
    recorded: Arc<RecordingLeaseStore>,
    permits: Semaphore,
    /// The checkpoint writes asked for so far (landed or not), in order.
    asked: watch::Sender<Vec<Checkpoint>>,
}

impl Gate {
    /// Lets `writes` more checkpoint writes through.
    fn let_through(&self, writes: usize) {
        self.permits.add_permits(writes);
    }

    async fn wait_until_asked(&self, writes: usize) -> Vec<Checkpoint> {
        let mut asked = self.asked.subscribe();
        within(
            &format!("{writes} checkpoint writes asked for"),
            asked.wait_for(|asked| asked.len() >= writes),
        )
        .await
        .expect("the store outlives the wait")
        .clone()
    }

    /// The changes that reached the store, in order.
    fn landed(&self) -> Vec<LeaseChange> {
        self.recorded
            .writes()
            .into_iter()
            .filter(|write| write.error.is_none())
            .map(|write| write.change)
            .collect()
    }
}

#[async_trait]
impl LeaseHooks for Gate {
    type Note = ();

    async fn before_write(&self, _: &str, change: &LeaseChange) {
        if let LeaseChange::Checkpoint(checkpoint) = change {
            self.asked
                .send_modify(|asked| asked.push(checkpoint.clone()));
            self.permits
                .acquire()
                .await
                .expect("the semaphore stays open")
                .forget();
        }
    }
}

/// A one-shard stream with `batches` full batches of shipments; returns it and the last
/// sequence number of each batch.
fn stream_of_batches(name: &str, batches: u64) -> (TestStream, Vec<SequenceNumber>) {
    let stream = TestStream::create(name, 1);
    let sequence_numbers: Vec<SequenceNumber> = (1..=batches * BATCH_SIZE as u64)
        .map(|id| {
            stream
                .put(
                    &format!("shipment-{id}"),
                    shipment(id, "1 Quay Street", "dhl"),
                )
                .sequence_number
        })
        .collect();
    let batch_ends = sequence_numbers
        .chunks(BATCH_SIZE)
        .map(|batch| batch[batch.len() - 1].clone())
        .collect();
    (stream, batch_ends)
}

fn start(stream: &TestStream, leases: Arc<GatedCheckpoints>) -> Observed {
    let mut config = config("shipping", &stream.name, StartingPosition::TrimHorizon);
    config.batch_size = BATCH_SIZE;
    Observed::start_with_leases(
        config,
        stream,
        Arc::new(InProcess::service(shipping::function())),
        leases,
    )
}

#[tokio::test]
async fn the_next_batch_is_invoked_while_the_last_checkpoint_is_written() {
    let (stream, batch_ends) = stream_of_batches("overlapping-checkpoints", 3);
    let shard_id = stream.open_shards()[0].shard_id.clone();
    let leases = Arc::new(gated_checkpoints());
    let observed = start(&stream, Arc::clone(&leases));

    // The first batch's checkpoint is asked for and held; the second batch is invoked meanwhile.
    leases.wait_until_asked(1).await;
    observed
        .wait_for("the second batch invoked", |status| {
            shard(status, &shard_id).invocations == 2
        })
        .await;
    // The second batch is settled, but its write waits for the first to land: no third batch.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let status = observed.mapping.status();
    let shard_status = shard(&status, &shard_id);
    assert_eq!(shard_status.invocations, 2, "{shard_status:#?}");
    assert_eq!(
        shard_status.checkpoint,
        Some(Checkpoint::TrimHorizon),
        "a checkpoint counts once written"
    );
    assert_eq!(
        shard_status.acked, 0,
        "records count as settled once checkpointed"
    );
    assert_eq!(leases.wait_until_asked(1).await, [at(&batch_ends[0])]);

    // The first write lands: the second is asked for, and the third batch invoked.
    leases.let_through(1);
    observed
        .wait_for_checkpoint(&shard_id, &at(&batch_ends[0]))
        .await;
    assert_eq!(
        leases.wait_until_asked(2).await,
        [at(&batch_ends[0]), at(&batch_ends[1])]
    );
    observed
        .wait_for("the third batch invoked", |status| {
            shard(status, &shard_id).invocations == 3
        })
        .await;

    // Every write lands, in order, one per batch, and the shard is caught up only then.
    leases.let_through(2);
    let status = observed
        .wait_for("the shard caught up", |status| status.is_idle())
        .await;
    let shard_status = shard(&status, &shard_id);
    assert_eq!(shard_status.checkpoint, Some(at(&batch_ends[2])));
    assert_eq!(shard_status.acked, 3 * BATCH_SIZE as u64);
    assert_eq!(shard_status.unsettled, 0);
    let checkpoints: Vec<LeaseChange> = leases
        .landed()
        .into_iter()
        .filter(|change| matches!(change, LeaseChange::Checkpoint(_)))
        .collect();
    assert_eq!(
        checkpoints,
        batch_ends
            .iter()
            .map(|end| LeaseChange::Checkpoint(at(end)))
            .collect::<Vec<_>>()
    );
    observed.stop().await;
}

#[tokio::test]
async fn a_stopping_reader_lands_its_checkpoints_before_giving_the_lease_up() {
    let (stream, batch_ends) = stream_of_batches("checkpoints-at-stop", 3);
    let leases = Arc::new(gated_checkpoints());
    let observed = start(&stream, Arc::clone(&leases));

    // The first write is held while the second batch is settled; then the mapping is told to stop.
    leases.wait_until_asked(1).await;
    let shard_id = stream.open_shards()[0].shard_id.clone();
    observed
        .wait_for("the second batch invoked", |status| {
            shard(status, &shard_id).invocations == 2
        })
        .await;
    let stopping = tokio::spawn(observed.stop());
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(
        leases
            .landed()
            .iter()
            .all(|change| !matches!(change, LeaseChange::Checkpoint(_) | LeaseChange::Evict)),
        "nothing is given up while a checkpoint write is held: {:#?}",
        leases.landed()
    );

    // Both settled batches are checkpointed, in order, and only then is the lease given up.
    leases.let_through(2);
    let status = within("the mapping to stop", stopping)
        .await
        .expect("stopping does not panic");
    assert_eq!(shard(&status, &shard_id).invocations, 2);
    let landed: Vec<LeaseChange> = leases
        .landed()
        .into_iter()
        .filter(|change| !matches!(change, LeaseChange::Create | LeaseChange::Take(_)))
        .collect();
    assert_eq!(
        landed,
        [
            LeaseChange::Checkpoint(at(&batch_ends[0])),
            LeaseChange::Checkpoint(at(&batch_ends[1])),
            LeaseChange::Evict,
        ]
    );
    let lease = leases.list_leases().await.expect("the leases");
    assert_eq!(lease[0].checkpoint, at(&batch_ends[1]));
    assert_eq!(lease[0].lease_owner, None);
}
