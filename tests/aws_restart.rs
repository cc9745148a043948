//! The settlement test the project started from, over kinesis-local: a shipment is held, the
//! emulator stops and starts again. Over a DynamoDB lease table the held shipment is the first
//! record delivered after the restart and every shipment behind it comes again; over the memory
//! store the restart opens at `StartingPosition` (`TRIM_HORIZON`) and everything comes again from
//! the start. Both in process (observer events) and through the `kinesis-esm` binary running the
//! ledger fixture function (the shipping function writing down its deliveries).

use std::sync::Arc;
use std::time::Duration;

use end_to_end::aws::{
    Delivery, LedgerTemplate, LocalAws, Observed, Published, ScratchDir, UNKNOWN_CARRIER,
    build_ledger_function, dynamodb_endpoint, idle_at, kinesis_endpoint, read_ledger,
    run_kinesis_esm, shipment_id, shipments_held_at, within,
};
use kinesis_esm::aws::ReadPacing;
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::lease::{Checkpoint, LeaseStore, MemoryLeaseStore};
use kinesis_esm::mapping::{EventSourceMapping, MappingOptions, MappingStatus};
use lambda_kinesis::HandlerOutcome;
use shipping::Shipment;

const SHIPMENTS: u64 = 30;
const HELD: u64 = 14;
const BATCH_SIZE: usize = 10;

/// Where a restarted mapping keeps its checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Store {
    /// A DynamoDB lease table on dynalite, shared by both runs.
    LeaseTable,
    /// A memory store of each run's own, as a new process has.
    Memory,
}

/// Shipments 1 to 30 on a one-shard stream; the 14th is for a carrier the service does not know.
async fn stream_with_a_held_shipment(aws: &LocalAws, prefix: &str) -> (String, Vec<Published>) {
    let stream = aws.create_stream(prefix, 1).await;
    let shipments = shipments_held_at(SHIPMENTS, HELD);
    let published = aws.publish_shipments(&stream, &shipments).await;
    (stream, published)
}

fn ids(deliveries: &[Delivery]) -> Vec<u64> {
    deliveries
        .iter()
        .map(|delivery| shipment_id(&delivery.partition_key))
        .collect()
}

/// The service once a deployment that knows the carrier is out: it books everything the
/// shipping function books, and the held carrier's shipments too.
async fn ship_with_the_new_carrier(shipment: &Shipment) -> HandlerOutcome {
    if shipment.carrier == UNKNOWN_CARRIER {
        return HandlerOutcome::ack();
    }
    shipping::ship(&shipping::Carriers, shipment).await
}

fn mapping_config(stream: &str) -> MappingConfig {
    let mut config = MappingConfig::new("shipping", stream, StartingPosition::TrimHorizon);
    config.batch_size = BATCH_SIZE;
    config.report_batch_item_failures = true;
    config
}

fn options(worker_id: &str) -> MappingOptions {
    MappingOptions {
        worker_id: worker_id.to_owned(),
        poll_interval: Duration::from_millis(100),
        shard_sync_interval: Duration::from_millis(500),
        retry_backoff_initial: Duration::from_millis(20),
        retry_backoff_max: Duration::from_millis(200),
        ..MappingOptions::default()
    }
}

fn held_and_retried(status: &MappingStatus) -> bool {
    status.is_idle()
        && status.shards.values().any(|shard| {
            shard
                .held
                .as_ref()
                .is_some_and(|held| held.failed_deliveries >= 2)
        })
}

/// Runs the shipping function until it holds shipment 14, stops, and runs the fixed service
/// with a store as `store` says. Returns what each run delivered.
async fn restart_in_process(store: Store) -> (Vec<Delivery>, Vec<Delivery>) {
    let aws = LocalAws::connect().await;
    let (stream, published) = stream_with_a_held_shipment(&aws, "restart").await;
    let table = match store {
        Store::LeaseTable => Some(aws.lease_table("restart").await),
        Store::Memory => None,
    };
    let open_store = async || -> Arc<dyn LeaseStore> {
        match &table {
            Some(table) => Arc::new(aws.lease_store(table).await),
            None => Arc::new(MemoryLeaseStore::new()) as Arc<dyn LeaseStore>,
        }
    };
    let source = aws.source(ReadPacing::UNLIMITED).await;

    let (observer, mut first_events) = Observed::channel();
    let first = EventSourceMapping::new(
        mapping_config(&stream),
        source.clone(),
        Arc::new(InProcess::service(shipping::function())),
    )
    .lease_store(open_store().await)
    .options(options("first-run"))
    .observe(observer)
    .start();
    let status = within(
        "the first run to hold shipment 14",
        first.wait_for(held_and_retried),
    )
    .await;
    let shard = status.shards.values().next().expect("one shard");
    let held = shard.held.as_ref().expect("a held shipment");
    assert_eq!(
        held.sequence_number,
        published[(HELD - 1) as usize].sequence_number
    );
    let in_front_of_the_held_one =
        Checkpoint::SequenceNumber(published[(HELD - 2) as usize].sequence_number.clone());
    assert_eq!(shard.checkpoint.as_ref(), Some(&in_front_of_the_held_one));
    within("stopping the first run", first.stop()).await;
    let before = first_events.deliveries();

    if let Some(table) = &table {
        let leases = aws.raw_leases(table).await;
        assert_eq!(leases.len(), 1, "{leases:#?}");
        assert_eq!(leases[0].checkpoint, in_front_of_the_held_one.as_str());
        assert_eq!(
            leases[0].lease_owner, None,
            "a run that stops gives its lease up"
        );
    }

    let (observer, mut second_events) = Observed::channel();
    let second = EventSourceMapping::new(
        mapping_config(&stream),
        source,
        Arc::new(InProcess::handler(ship_with_the_new_carrier)),
    )
    .lease_store(open_store().await)
    .options(options("second-run"))
    .observe(observer)
    .start();
    let last = Checkpoint::SequenceNumber(published.last().unwrap().sequence_number.clone());
    within(
        "the second run to settle every shipment",
        second.wait_for(|status| idle_at(status, &last)),
    )
    .await;
    within("stopping the second run", second.stop()).await;
    if let Some(table) = &table {
        let leases = aws.raw_leases(table).await;
        assert_eq!(leases[0].checkpoint, last.as_str());
    }
    (before, second_events.deliveries())
}

#[tokio::test]
async fn over_a_lease_table_the_held_shipment_is_the_first_delivery_after_a_restart() {
    let (before, after) = restart_in_process(Store::LeaseTable).await;
    assert_eq!(
        ids(&before)[..BATCH_SIZE + 1],
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    );
    assert_eq!(
        ids(&after),
        (HELD..=SHIPMENTS).collect::<Vec<_>>(),
        "the held shipment first, then every shipment behind it, each once"
    );
}

#[tokio::test]
async fn over_the_memory_store_a_restart_opens_at_the_starting_position() {
    let (before, after) = restart_in_process(Store::Memory).await;
    assert!(ids(&before).contains(&HELD));
    assert_eq!(
        ids(&after),
        (1..=SHIPMENTS).collect::<Vec<_>>(),
        "TRIM_HORIZON: everything again from the start"
    );
}

/// Runs `kinesis-esm run --until-idle` twice over the same stream (with `--lease-table` when
/// `store` says so), the ledger fixture writing down each run's deliveries. Returns them with
/// what was published.
async fn restart_through_the_binary(
    store: Store,
) -> (Vec<Published>, Vec<Delivery>, Vec<Delivery>) {
    let aws = LocalAws::connect().await;
    let (stream, published) = stream_with_a_held_shipment(&aws, "restart-cli").await;
    let table = match store {
        Store::LeaseTable => Some(aws.lease_table("restart-cli").await),
        Store::Memory => None,
    };
    build_ledger_function().await;
    let scratch = ScratchDir::new("restart-cli");
    let kinesis = kinesis_endpoint();
    let dynamodb = dynamodb_endpoint();
    let mut runs = Vec::new();
    for run in ["first", "second"] {
        let (template, ledger) =
            LedgerTemplate::new(&stream, 1, BATCH_SIZE as u32, 0).write_as(&scratch, run);
        let mut args = vec![
            "--template",
            &template,
            "--kinesis-endpoint",
            &kinesis,
            // Tests run side by side: none may take the default port.
            "--no-listen",
            "--until-idle",
        ];
        if let Some(table) = &table {
            args.extend(["--lease-table", table, "--dynamodb-endpoint", &dynamodb]);
        }
        let output = run_kinesis_esm(&format!("the {run} run"), &args).await;
        output.check_code(1, &format!("the {run} run ends held on shipment {HELD}"));
        assert!(
            output.stdout.contains(&format!(
                "held at {}",
                published[(HELD - 1) as usize].sequence_number
            )),
            "the summary names the held record:\n{}",
            output.stdout
        );
        runs.push(read_ledger(&ledger));
    }
    let after = runs.pop().unwrap();
    let before = runs.pop().unwrap();
    (published, before, after)
}

#[tokio::test]
async fn through_the_binary_over_a_lease_table_the_held_shipment_comes_first_after_a_restart() {
    let (published, before, after) = restart_through_the_binary(Store::LeaseTable).await;
    let first_batch: Vec<u64> = ids(&after).into_iter().take(BATCH_SIZE).collect();
    assert_eq!(
        first_batch,
        (HELD..HELD + BATCH_SIZE as u64).collect::<Vec<_>>(),
        "the held shipment is the first record delivered after the restart, with those behind it"
    );
    // Every shipment the first run had delivered behind the held one comes again; nothing in
    // front of it does.
    let behind_before: Vec<u64> = ids(&before).into_iter().filter(|&id| id > HELD).collect();
    assert!(!behind_before.is_empty());
    for id in behind_before {
        assert!(ids(&after).contains(&id), "shipment {id} came again");
    }
    assert!(
        ids(&after).iter().all(|&id| id >= HELD),
        "{:?}",
        ids(&after)
    );
    assert_eq!(
        after[0].sequence_number,
        published[(HELD - 1) as usize].sequence_number
    );
}

#[tokio::test]
async fn through_the_binary_over_the_memory_store_a_restart_starts_from_the_trim_horizon() {
    let (_, before, after) = restart_through_the_binary(Store::Memory).await;
    assert_eq!(ids(&before)[..BATCH_SIZE], ids(&after)[..BATCH_SIZE]);
    assert_eq!(
        ids(&after)[..BATCH_SIZE + 1],
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        "everything again from the start"
    );
}
