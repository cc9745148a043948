//! A running mapping whose Kinesis and lease table sit behind fault-injecting proxies: throttled
//! reads, an expired iterator, 5xx answers, a dropped connection, a throttled and a lost lease
//! write, a failed condition, and both servers going away mid-run and coming back. The mapping
//! keeps going, pauses before trying again, and loses nothing: every record is delivered, a
//! record comes twice only when a reader restarts from its checkpoint, and the checkpoint ends
//! at the last record.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use end_to_end::aws::fault_proxy::{Fault, FaultProxy, SeenCall};
use end_to_end::aws::{
    Gate, LeaseChange, LocalAws, Observed, REGION, dynamodb_endpoint, idle_at, kinesis_endpoint,
    recording_lease_store, ship_after_gate, shipment, within,
};
use kinesis_esm::aws::{AwsConnection, ReadPacing, SdkKinesis};
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::lease::{Checkpoint, LeaseError};
use kinesis_esm::mapping::{EventSourceMapping, MappingEvent, MappingOptions};
use kinesis_esm::sequence::SequenceNumber;
use shipping::Shipment;

const SHIPMENTS: u64 = 60;
const BATCH_SIZE: usize = 5;
/// The shipment whose invocation is in flight when both servers go away.
const GATED: u64 = 31;
const RETRY_BACKOFF_INITIAL: Duration = Duration::from_millis(50);
/// Also the pause after a throttle: the mapping's throttle floor (1 s) is capped by it.
const RETRY_BACKOFF_MAX: Duration = Duration::from_millis(500);

fn through(proxy: &FaultProxy) -> AwsConnection {
    AwsConnection::local(proxy.endpoint())
        .with_region(REGION)
        .with_timeouts(Duration::from_secs(1), Duration::from_secs(3))
}

/// For each faulted call among `calls`, in order: how long after it the next call came.
fn pauses_after_faults(calls: &[SeenCall]) -> Vec<Duration> {
    calls
        .windows(2)
        .filter(|pair| pair[0].faulted)
        .map(|pair| pair[1].at - pair[0].at)
        .collect()
}

#[tokio::test]
async fn a_running_mapping_rides_out_faults_and_loses_nothing() {
    let aws = LocalAws::connect().await;
    let stream = aws.create_stream("faults", 1).await;
    let shipments: Vec<Shipment> = (1..=SHIPMENTS).map(shipment).collect();
    let published = aws.publish_shipments(&stream, &shipments).await;
    let table = aws.lease_table("faults").await;
    let kinesis_proxy = FaultProxy::start(&kinesis_endpoint()).await;
    let dynamodb_proxy = FaultProxy::start(&dynamodb_endpoint()).await;
    let source = SdkKinesis::connect(&through(&kinesis_proxy))
        .await
        .unwrap()
        .with_read_pacing(ReadPacing::UNLIMITED);
    let leases = Arc::new(recording_lease_store(Arc::new(
        aws.lease_store_at(&through(&dynamodb_proxy), &table).await,
    )));

    // Faults for the first calls of each kind.
    kinesis_proxy.inject("ListShards", Fault::server_error());
    kinesis_proxy.inject("GetShardIterator", Fault::server_error());
    for fault in [
        Fault::throttled(),
        Fault::expired_iterator(),
        Fault::server_error(),
        Fault::DropConnection,
    ] {
        kinesis_proxy.inject("GetRecords", fault);
    }
    dynamodb_proxy.inject("UpdateItem", Fault::throttled());

    let mut config = MappingConfig::new("shipping", &stream, StartingPosition::TrimHorizon);
    config.batch_size = BATCH_SIZE;
    config.report_batch_item_failures = true;
    config.function_timeout = Duration::from_secs(300);
    let gate = Arc::new(Gate::default());
    let (observer, mut observed) = Observed::channel();
    let mapping = EventSourceMapping::new(
        config,
        Arc::new(source),
        Arc::new(InProcess::handler(ship_after_gate(gate.clone(), GATED))),
    )
    .lease_store(leases.clone())
    .options(MappingOptions {
        worker_id: "faulty-worker".to_owned(),
        poll_interval: Duration::from_millis(100),
        shard_sync_interval: Duration::from_millis(200),
        // No renewal during the test: every lease write is the mapping's own doing.
        failover_time: Duration::from_secs(120),
        retry_backoff_initial: RETRY_BACKOFF_INITIAL,
        retry_backoff_max: RETRY_BACKOFF_MAX,
        ..MappingOptions::default()
    })
    .observe(observer)
    .start();

    // Once checkpoints are being written, a checkpoint write meets a failed condition, and the
    // next one loses its answer on the way back.
    observed
        .wait_for("the first checkpoint", |events| {
            events
                .iter()
                .any(|event| matches!(event, MappingEvent::Checkpointed { .. }))
        })
        .await;
    dynamodb_proxy.inject("UpdateItem", Fault::conditional_check_failed());
    dynamodb_proxy.inject("UpdateItem", Fault::ForwardThenDrop);

    // With an invocation in flight, both servers go away; the function answers meanwhile.
    gate.wait_until_entered("the invocation of shipment 31")
        .await;
    assert_eq!(
        kinesis_proxy.pending_faults(),
        0,
        "every Kinesis fault met its call"
    );
    assert_eq!(
        dynamodb_proxy.pending_faults(),
        0,
        "every lease table fault met its call"
    );
    kinesis_proxy.go_away();
    dynamodb_proxy.go_away();
    within(
        "the mapping noticing that Kinesis is gone",
        mapping.wait_for(|status| {
            status
                .last_error
                .as_deref()
                .is_some_and(|error| error.contains("nothing answers at"))
        }),
    )
    .await;
    gate.open();
    let failed_before = leases
        .writes()
        .iter()
        .filter(|write| write.error.is_some())
        .count();
    leases
        .wait_for(
            "two checkpoint writes against a table that is gone",
            |writes| {
                writes
                    .iter()
                    .filter(|write| {
                        matches!(write.change, LeaseChange::Checkpoint(_))
                            && matches!(write.error, Some(LeaseError::Unavailable { .. }))
                    })
                    .count()
                    >= 2
                    && writes.iter().filter(|write| write.error.is_some()).count()
                        >= failed_before + 2
            },
        )
        .await;
    kinesis_proxy.come_back().await;
    dynamodb_proxy.come_back().await;

    let last = Checkpoint::SequenceNumber(published.last().unwrap().sequence_number.clone());
    let status = within(
        "every record settled",
        mapping.wait_for(|status| status.last_error.is_none() && idle_at(status, &last)),
    )
    .await;
    within("stopping the mapping", mapping.stop()).await;
    assert_eq!(status.totals().acked, SHIPMENTS, "{status:#?}");
    let events = observed.events().to_vec();

    // Nothing lost; the table's checkpoint ends at the last record.
    let deliveries = end_to_end::aws::deliveries(&events);
    let delivered: HashSet<_> = deliveries
        .iter()
        .map(|delivery| delivery.position())
        .collect();
    for record in &published {
        assert!(
            delivered.contains(&record.position()),
            "{record:?} was never delivered"
        );
    }
    let leases_at_the_end = aws.raw_leases(&table).await;
    assert_eq!(leases_at_the_end[0].checkpoint, last.as_str());

    // Each reader starts right after the last checkpoint written, and delivers each record once:
    // a record comes twice only through a restart from the checkpoint.
    let mut last_checkpoint = None;
    let mut segments: Vec<(Option<SequenceNumber>, Vec<SequenceNumber>)> = Vec::new();
    for event in &events {
        match event {
            MappingEvent::ShardStarted { checkpoint, .. } => {
                let resumed_from = match checkpoint {
                    Checkpoint::SequenceNumber(number) => Some(number.clone()),
                    _ => None,
                };
                assert_eq!(
                    resumed_from, last_checkpoint,
                    "a reader starts at the last checkpoint"
                );
                segments.push((resumed_from, Vec::new()));
            }
            MappingEvent::Checkpointed {
                checkpoint: Checkpoint::SequenceNumber(number),
                ..
            } => last_checkpoint = Some(number.clone()),
            MappingEvent::Invoked { records, .. } => segments
                .last_mut()
                .expect("a reader started")
                .1
                .extend(records.iter().map(|(number, _)| number.clone())),
            _ => {}
        }
    }
    assert!(
        segments.len() >= 2,
        "the failed condition stopped a reader, and another took over: {segments:#?}"
    );
    let order: BTreeMap<&SequenceNumber, usize> = published
        .iter()
        .enumerate()
        .map(|(index, record)| (&record.sequence_number, index))
        .collect();
    for (resumed_from, delivered) in &segments {
        let first_expected = resumed_from.as_ref().map_or(0, |number| order[number] + 1);
        let expected: Vec<SequenceNumber> = published[first_expected..]
            .iter()
            .take(delivered.len())
            .map(|record| record.sequence_number.clone())
            .collect();
        assert_eq!(
            *delivered, expected,
            "a reader delivers the records after its checkpoint, in order, once each"
        );
    }

    // After each fault the call came again only after a pause; an expired iterator was
    // replaced by a new one instead.
    let reads = kinesis_proxy.calls("GetRecords");
    let pauses = pauses_after_faults(&reads);
    assert_eq!(pauses.len(), 4, "{reads:#?}");
    assert!(
        pauses[0] >= RETRY_BACKOFF_MAX,
        "after a throttle: {:?}",
        pauses[0]
    );
    assert!(
        pauses[2] >= RETRY_BACKOFF_INITIAL,
        "after a 500: {:?}",
        pauses[2]
    );
    assert!(
        pauses[3] >= RETRY_BACKOFF_INITIAL,
        "after a dropped connection: {:?}",
        pauses[3]
    );
    let kinesis_calls = kinesis_proxy.calls("Kinesis");
    let expired = kinesis_calls
        .iter()
        .filter(|call| call.faulted && call.target.ends_with("GetRecords"))
        .nth(1)
        .unwrap();
    let next_read_or_iterator = kinesis_calls
        .iter()
        .find(|call| {
            call.at > expired.at
                && (call.target.ends_with("GetRecords")
                    || call.target.ends_with("GetShardIterator"))
        })
        .unwrap();
    assert!(
        next_read_or_iterator.target.ends_with("GetShardIterator"),
        "an expired iterator is replaced before the next read"
    );
    for target in ["ListShards", "GetShardIterator"] {
        let pauses = pauses_after_faults(&kinesis_proxy.calls(target));
        assert!(pauses[0] >= RETRY_BACKOFF_INITIAL, "{target}: {pauses:?}");
    }

    // The lease writes: the throttled one and the ones against the vanished table were tried
    // again; the one whose answer was lost was recognised as done.
    let writes = leases.writes();
    let unavailable = writes
        .iter()
        .filter(|write| matches!(write.error, Some(LeaseError::Unavailable { .. })))
        .count();
    assert!(unavailable >= 4, "{writes:#?}");
    println!(
        "faults ridden out: pauses after the faulted reads {pauses:?}; {} readers in turn; \
         {unavailable} lease writes failed and were tried again",
        segments.len()
    );
    assert_eq!(
        writes.iter().filter(|write| write.lost()).count(),
        1,
        "only the injected failed condition is a lost lease: {writes:#?}"
    );
}
