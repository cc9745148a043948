//! Part 2: a stream on the local Kinesis server (kinesis-local), read through the SDK source
//! with Kinesis' read pacing, as `run --kinesis-endpoint` reads it; leases in memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kinesis_esm::aws::{AwsConnection, SdkKinesis};
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::mapping::EventSourceMapping;
use test_support::intercept::{Intercepted, SourceHooks};
use test_support::{kinesis_endpoint, unique_name};

use crate::embedded::shipment_data;
use crate::measure::{self, Interval, per};

const REGION: &str = "us-east-1";
const LIMIT: Duration = Duration::from_secs(300);

/// Counts `GetRecords` calls.
#[derive(Default)]
struct CountReads(AtomicU64);

impl SourceHooks for CountReads {
    fn before_get_records(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

pub(crate) async fn measure(shards: i32, records: u64, idle: Duration) {
    let connection = AwsConnection::local(kinesis_endpoint()).with_region(REGION);
    let producer = SdkKinesis::connect(&connection)
        .await
        .expect("a Kinesis client");
    let stream = unique_name("scale");
    producer
        .create_stream(&stream, shards)
        .await
        .unwrap_or_else(|error| panic!("creating {stream} on kinesis-local: {error}"));
    let source = Arc::new(Intercepted::new(
        Arc::new(SdkKinesis::from_client(producer.client().clone())),
        CountReads::default(),
    ));
    let mut config = MappingConfig::new("shipping", &stream, StartingPosition::TrimHorizon);
    config.report_batch_item_failures = true;
    let mapping = EventSourceMapping::new(
        config,
        source.clone(),
        Arc::new(InProcess::service(shipping::function())),
    )
    .start();
    let count = f64::from(shards);
    let start = measure::poll_until(&mapping, LIMIT, |status| {
        measure::every_shard_caught_up(status, shards as usize)
    })
    .await
    .unwrap_or_else(|| panic!("{shards} shards were not all read within {LIMIT:?}"));
    // Past the first read of every shard, so that each reader is in its idle cycle.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let reads_before = source.0.load(Ordering::Relaxed);
    let interval = Interval::start();
    tokio::time::sleep(idle).await;
    let spent = interval.end();
    let reads = source.0.load(Ordering::Relaxed) - reads_before;

    let filling = Interval::start();
    let put = put_shipments(&producer, &stream, records);
    let settled = measure::poll_until(&mapping, LIMIT, |status| measure::acked(status) >= records);
    let ((), settled) = tokio::join!(put, settled);
    let settled = settled.unwrap_or_else(|| panic!("{records} records not settled in {LIMIT:?}"));
    let filling = filling.end();
    let status = mapping.stop().await;
    assert_eq!(measure::acked(&status), records, "every record acked once");
    producer
        .delete_stream(&stream)
        .await
        .expect("the stream is deleted");
    println!(
        "  {shards} shards on kinesis-local: every shard reading {:.2} s after start; idle: \
         {:.2} GetRecords calls per shard per second (Lambda: 1), {:.1} us CPU per shard per \
         second (rest of the machine {:.2} cores); {records} records over every shard settled at \
         {:.0} records/s ({:.1} us CPU per record)",
        start.as_secs_f64(),
        per(reads as f64, count * spent.seconds),
        spent.own_ns as f64 / 1e3 / count / spent.seconds,
        spent.other_cores,
        records as f64 / settled.as_secs_f64(),
        filling.own_ns as f64 / 1e3 / records as f64,
    );
}

/// Puts `records` shipments with spread partition keys, 500 a call, again what was refused.
async fn put_shipments(producer: &SdkKinesis, stream: &str, records: u64) {
    let shipments: Vec<(String, Vec<u8>)> = (0..records)
        .map(|id| (format!("shipment-{id}"), shipment_data(id)))
        .collect();
    crate::support::put_all(producer, stream, &shipments).await;
}
