//! Part 3: what the lease table is asked, per shard per second, by 1 and by 3 instances sharing
//! one DynamoDB table on dynalite, counted at the `LeaseStore` boundary by a wrapper the bench
//! puts around each instance's store (the product's path counts nothing more than it did).
//! The instances read one embedded Kinesis stream (the source does not change what the lease
//! table is asked), with the default options (failover time 10 s, shard sync every 10 s) and a
//! trickle of one record per shard per second, so that checkpoints are written as in steady use.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kinesis_esm::aws::DynamoLeaseStore;
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::lease::LeaseStore;
use kinesis_esm::mapping::{EventSourceMapping, MappingOptions};
use test_support::{dynamodb_endpoint, unique_name};

use crate::counting_store::{
    CHECKPOINTS, CREATES, CountingStore, Counts, GETS, OTHER_WRITES, RENEWALS, SCANNED_ITEMS,
    SCANS, TAKES,
};
use crate::embedded::shipment_entry;
use crate::measure::{Interval, per};

const REGION: &str = "us-east-1";

pub(crate) async fn measure(shards: u32, instances: usize, warm_up: Duration, window: Duration) {
    let dynamodb = crate::support::dynamodb_client(dynamodb_endpoint(), REGION).await;
    let table = unique_name("scale-leases");
    let store = Arc::new(DynamoLeaseStore::from_client(dynamodb, table.as_str()));
    store
        .create_table_if_missing()
        .await
        .unwrap_or_else(|error| panic!("creating lease table {table} on dynalite: {error}"));
    let kinesis = EmbeddedKinesis::new();
    let stream = "scale-leases";
    kinesis
        .create_stream(stream, shards)
        .unwrap_or_else(|error| panic!("creating {stream}: {error}"));
    let counts = Arc::new(Counts::default());
    let mappings: Vec<_> = (0..instances)
        .map(|instance| {
            let mut config = MappingConfig::new("shipping", stream, StartingPosition::TrimHorizon);
            config.report_batch_item_failures = true;
            EventSourceMapping::new(
                config,
                Arc::new(kinesis.clone()),
                Arc::new(InProcess::service(shipping::function())),
            )
            .lease_store(Arc::new(CountingStore::new(store.clone(), &counts)))
            .options(MappingOptions {
                worker_id: format!("instance-{instance}"),
                ..MappingOptions::default()
            })
            .start()
        })
        .collect();
    let producing = {
        let kinesis = kinesis.clone();
        tokio::spawn(async move {
            let mut id = 0;
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let entries = (id..id + u64::from(shards)).map(shipment_entry).collect();
                id += u64::from(shards);
                kinesis
                    .put_records(stream, entries)
                    .unwrap_or_else(|error| panic!("putting into {stream}: {error}"));
            }
        })
    };
    tokio::time::sleep(warm_up).await;
    let before = counts.snapshot();
    let (reads_before, writes_before) = (store.reads(), store.writes());
    let interval = Interval::start();
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let seconds = started.elapsed().as_secs_f64();
    let spent = interval.end();
    let after = counts.snapshot();
    let (reads, writes) = (store.reads() - reads_before, store.writes() - writes_before);
    producing.abort();
    let owners: BTreeMap<String, usize> = store
        .list_leases()
        .await
        .expect("the leases")
        .into_iter()
        .filter_map(|lease| lease.lease_owner)
        .fold(BTreeMap::new(), |mut owners, owner| {
            *owners.entry(owner).or_default() += 1;
            owners
        });
    for mapping in mappings {
        mapping.stop().await;
    }
    let rate = |index: usize| {
        per(
            (after[index] - before[index]) as f64,
            f64::from(shards) * seconds,
        )
    };
    println!(
        "  {instances} instance(s), {shards} shards, over {seconds:.0} s after {:.0} s of warm-up \
         (leases held {owners:?}): per shard per second, {:.3} renewals, {:.3} checkpoints, \
         {:.3} takes, {:.4} other writes, {:.3} creates; shard sync {:.4} scans reading {:.3} \
         items, {:.4} gets; DynamoDB calls per shard per second: {:.3} reads (scan pages, gets), \
         {:.3} writes; CPU {:.1} us per shard per second (rest of the machine, dynalite among it, \
         {:.2} cores)",
        warm_up.as_secs_f64(),
        rate(RENEWALS),
        rate(CHECKPOINTS),
        rate(TAKES),
        rate(OTHER_WRITES),
        rate(CREATES),
        rate(SCANS),
        rate(SCANNED_ITEMS),
        rate(GETS),
        per(reads as f64, f64::from(shards) * seconds),
        per(writes as f64, f64::from(shards) * seconds),
        spent.own_ns as f64 / 1e3 / f64::from(shards) / spent.seconds,
        spent.other_cores,
    );
}
