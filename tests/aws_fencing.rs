//! Fencing between two mappings (two workers) on one stream and one lease table (`docs/lease-table.md` §3-§4).
//!
//! Worker A reaches the table through a fault proxy. While its function holds an invocation in
//! flight, the proxy goes black: A's renewals stop reaching the table, and worker B, which had
//! left A's live lease alone, takes it once the failover time has passed and goes on from A's
//! last checkpoint. When the table is reachable again and A's invocation ends, A's checkpoint
//! write fails with `LeaseLost` and its reader stops: the checkpoint never moves back, and the
//! only records delivered twice are those after A's last checkpoint.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use end_to_end::aws::fault_proxy::FaultProxy;
use end_to_end::aws::{
    Delivery, Gate, LeaseChange, LocalAws, Observed, REGION, dynamodb_endpoint, idle_at,
    recording_lease_store, ship_after_gate, shipment, shipment_id, within,
};
use kinesis_esm::aws::{AwsConnection, ReadPacing};
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::lease::{Checkpoint, LeaseError};
use kinesis_esm::mapping::{EventSourceMapping, MappingEvent, MappingOptions, ShardPhase};
use shipping::Shipment;

const SHIPMENTS: u64 = 40;
const BATCH_SIZE: usize = 5;
/// The shipment whose invocation worker A holds in flight.
const GATED: u64 = 21;
const FAILOVER_TIME: Duration = Duration::from_secs(1);

fn options(worker_id: &str) -> MappingOptions {
    MappingOptions {
        worker_id: worker_id.to_owned(),
        poll_interval: Duration::from_millis(100),
        shard_sync_interval: Duration::from_millis(200),
        failover_time: FAILOVER_TIME,
        retry_backoff_initial: Duration::from_millis(20),
        retry_backoff_max: Duration::from_millis(200),
        ..MappingOptions::default()
    }
}

fn ids(deliveries: &[Delivery]) -> Vec<u64> {
    deliveries
        .iter()
        .map(|delivery| shipment_id(&delivery.partition_key))
        .collect()
}

#[tokio::test]
async fn a_worker_whose_lease_was_taken_can_no_longer_checkpoint() {
    let aws = LocalAws::connect().await;
    let stream = aws.create_stream("fencing", 1).await;
    let shipments: Vec<Shipment> = (1..=SHIPMENTS).map(shipment).collect();
    let published = aws.publish_shipments(&stream, &shipments).await;
    let sequence_number_of = |id: u64| published[(id - 1) as usize].sequence_number.clone();
    let table = aws.lease_table("fencing").await;
    let proxy = FaultProxy::start(&dynamodb_endpoint()).await;
    let through_proxy = AwsConnection::local(proxy.endpoint())
        .with_region(REGION)
        .with_timeouts(Duration::from_secs(1), Duration::from_secs(2));
    let leases_a = Arc::new(recording_lease_store(Arc::new(
        aws.lease_store_at(&through_proxy, &table).await,
    )));
    let leases_b = Arc::new(recording_lease_store(Arc::new(
        aws.lease_store(&table).await,
    )));
    let mut config = MappingConfig::new("shipping", &stream, StartingPosition::TrimHorizon);
    config.batch_size = BATCH_SIZE;
    config.report_batch_item_failures = true;
    // A's invocation is held far longer than a function timeout would allow otherwise.
    config.function_timeout = Duration::from_secs(300);

    let gate = Arc::new(Gate::default());
    let (observer_a, mut observed_a) = Observed::channel();
    let worker_a = EventSourceMapping::new(
        config.clone(),
        aws.source(ReadPacing::UNLIMITED).await,
        Arc::new(InProcess::handler(ship_after_gate(gate.clone(), GATED))),
    )
    .lease_store(leases_a.clone())
    .options(options("worker-a"))
    .observe(observer_a)
    .start();
    gate.wait_until_entered("worker A reaching shipment 21")
        .await;
    // The checkpoint before the held batch is written while that batch is invoked.
    let last_checkpoint_of_a = Checkpoint::SequenceNumber(sequence_number_of(GATED - 1));
    within(
        "worker A checkpointing the batch before shipment 21",
        worker_a.wait_for(|status| {
            status.shards.values().next().unwrap().checkpoint.as_ref()
                == Some(&last_checkpoint_of_a)
        }),
    )
    .await;

    // B leaves a lease alone while its owner renews it.
    let (observer_b, mut observed_b) = Observed::channel();
    let worker_b = EventSourceMapping::new(
        config.clone(),
        aws.source(ReadPacing::UNLIMITED).await,
        Arc::new(InProcess::service(shipping::function())),
    )
    .lease_store(leases_b.clone())
    .options(options("worker-b"))
    .observe(observer_b)
    .start();
    let status_b = within(
        "worker B's first shard sync",
        worker_b.wait_for(|status| status.synced),
    )
    .await;
    assert!(
        status_b
            .shards
            .values()
            .all(|shard| shard.phase == ShardPhase::NotOwned),
        "{status_b:#?}"
    );
    assert!(observed_b.deliveries().is_empty());

    // A's lease store goes black: its renewals stop, and B takes the lease from A's checkpoint.
    proxy.go_away();
    let events_b = observed_b
        .wait_for("worker B taking the lease", |events| {
            events
                .iter()
                .any(|event| matches!(event, MappingEvent::ShardStarted { .. }))
        })
        .await;
    assert!(
        matches!(&events_b[0], MappingEvent::ShardStarted { checkpoint, .. } if *checkpoint == last_checkpoint_of_a),
        "B resumes from A's last checkpoint: {events_b:#?}"
    );
    let last = Checkpoint::SequenceNumber(sequence_number_of(SHIPMENTS));
    within(
        "worker B settling the rest",
        worker_b.wait_for(|status| idle_at(status, &last)),
    )
    .await;

    // The table comes back and A's invocation ends: A's checkpoint write is refused.
    proxy.come_back().await;
    gate.open();
    let writes_a = leases_a
        .wait_for("worker A's last checkpoint write", |writes| {
            writes
                .iter()
                .any(|write| matches!(write.change, LeaseChange::Checkpoint(_)) && write.lost())
        })
        .await;
    within(
        "worker A's reader stopping",
        worker_a.wait_for(|status| {
            status
                .shards
                .values()
                .all(|shard| shard.phase == ShardPhase::NotOwned)
        }),
    )
    .await;
    // What A wrote is read from its lease writes below, not from its status: once the table
    // answers again, A's next shard sync shows the lease as the table holds it, B's checkpoint.
    let checkpoints_of_a: Vec<(Checkpoint, Option<LeaseError>)> = writes_a
        .iter()
        .filter_map(|write| match &write.change {
            LeaseChange::Checkpoint(checkpoint) => Some((checkpoint.clone(), write.error.clone())),
            _ => None,
        })
        .collect();
    let refused = checkpoints_of_a.last().unwrap();
    assert_eq!(
        refused.0,
        Checkpoint::SequenceNumber(sequence_number_of(GATED + BATCH_SIZE as u64 - 1))
    );
    assert!(
        matches!(refused.1, Some(LeaseError::LeaseLost { .. })),
        "{checkpoints_of_a:#?}"
    );
    let succeeded: Vec<&Checkpoint> = checkpoints_of_a
        .iter()
        .filter(|(_, error)| error.is_none())
        .map(|(checkpoint, _)| checkpoint)
        .collect();
    assert_eq!(succeeded.last(), Some(&&last_checkpoint_of_a));

    let stopped_b = within("stopping worker B", worker_b.stop()).await;
    let stopped_a = within("stopping worker A", worker_a.stop()).await;
    assert_eq!(
        stopped_a.totals().invocations,
        (GATED - 1) / BATCH_SIZE as u64 + 1
    );
    assert_eq!(stopped_b.totals().acked, SHIPMENTS - GATED + 1);

    // The table holds B's checkpoint at the end; A's refused write left no trace.
    let leases = aws.raw_leases(&table).await;
    assert_eq!(leases.len(), 1, "{leases:#?}");
    assert_eq!(leases[0].checkpoint, last.as_str());

    // A delivered up to its held batch; B everything after A's last checkpoint, once; the two
    // overlap exactly on A's unsettled batch.
    let delivered_a = ids(&observed_a.deliveries());
    let delivered_b = ids(&observed_b.deliveries());
    assert_eq!(
        delivered_a,
        (1..GATED + BATCH_SIZE as u64).collect::<Vec<_>>()
    );
    assert_eq!(delivered_b, (GATED..=SHIPMENTS).collect::<Vec<_>>());
    let twice: HashSet<u64> = delivered_a
        .iter()
        .copied()
        .filter(|id| delivered_b.contains(id))
        .collect();
    assert_eq!(twice, (GATED..GATED + BATCH_SIZE as u64).collect());
}
