//! The embedded Kinesis' endpoint against kinesis-local (the Kinesis inside LocalStack), on the
//! same workload with the same `aws-sdk-kinesis` client code, in the same run:
//!
//! - `PutRecords` of 500 records of about 100 bytes into a shard that already holds 10,000;
//! - `GetRecords` with `Limit` 10,000 reading a 10,000-record backlog from its start.
//!
//! It prints the median of each on both endpoints and their ratio. Then, on the embedded
//! endpoint alone, the `SubscribeToShard` delivery latency: from the start of a `PutRecord` of
//! one record to its `SubscribeToShardEvent` reaching a consumer subscribed at `LATEST`
//! (medians and p99 of [`PUSHES`] single puts, [`PUSH_SPACING`] apart).
//!
//! Run with `cargo bench -p kinesis-esm --bench kinesis_http`. It reaches kinesis-local at
//! `KINESIS_ENDPOINT` when that is set (as `scripts/local-stack run -- cargo bench ...` sets it),
//! and otherwise starts it with `scripts/local-stack up`, which leaves it running
//! (`scripts/local-stack down` stops it). kinesis-local slows down as a shard grows, so its half
//! takes a minute or two.

use std::path::Path;
use std::time::{Duration, Instant};

use aws_sdk_kinesis::Client;
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::{
    PutRecordsRequestEntry, ShardIteratorType, StartingPosition, SubscribeToShardEventStream,
};
use kinesis_esm::aws::AwsConnection;
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::kinesis::http;
use support::median;

mod support;

/// Records already in the shard when `PutRecords` is measured, and the backlog `GetRecords`
/// reads.
const BACKLOG: usize = 10_000;
/// Records in one `PutRecords` call.
const BATCH: usize = 500;
/// The size of each record's data.
const RECORD_BYTES: usize = 100;
/// Measured calls of each kind, after one unmeasured warm-up call. Each measured `PutRecords`
/// adds 500 records, so the shard ends at 10,000 + 500 × (SAMPLES + 1).
const SAMPLES: usize = 7;
/// The ratio the endpoint is meant to reach on both calls.
const TARGET_RATIO: f64 = 20.0;
/// Single puts whose delivery through `SubscribeToShard` is timed, after 10 unmeasured ones.
const PUSHES: usize = 200;
/// The pause between two of them.
const PUSH_SPACING: Duration = Duration::from_millis(2);

fn main() {
    let runtime = support::runtime();
    runtime.block_on(async {
        let kinesis_local = kinesis_local_endpoint();
        let server = http::serve(EmbeddedKinesis::new(), "127.0.0.1:0".parse().unwrap())
            .await
            .expect("the endpoint starts");
        println!(
            "workload: PutRecords of {BATCH} records of {RECORD_BYTES} bytes into a shard \
             holding {BACKLOG}; GetRecords (Limit {BACKLOG}) of a {BACKLOG}-record backlog; \
             median of {SAMPLES} calls each"
        );
        println!("embedded Kinesis endpoint at {}", server.endpoint_url());
        let ours = measure(&server.endpoint_url()).await;
        println!("kinesis-local at {kinesis_local}");
        let theirs = measure(&kinesis_local).await;

        println!();
        println!(
            "{:<24} {:>14} {:>16} {:>10}",
            "call", "endpoint", "kinesis-local", "ratio"
        );
        let mut met = true;
        for (call, ours, theirs) in [
            ("PutRecords (500)", ours.put, theirs.put),
            ("GetRecords (10,000)", ours.get, theirs.get),
        ] {
            let ratio = theirs.as_secs_f64() / ours.as_secs_f64();
            met &= ratio >= TARGET_RATIO;
            println!(
                "{call:<24} {:>14} {:>16} {:>9.0}x",
                format!("{ours:.2?}"),
                format!("{theirs:.2?}"),
                ratio
            );
        }
        println!(
            "target: at least {TARGET_RATIO}x kinesis-local on both calls: {}",
            if met { "met" } else { "NOT met" }
        );
        let (median, p99) = subscribe_latency(&server.endpoint_url()).await;
        println!(
            "SubscribeToShard delivery on the endpoint (PutRecord start to the event, {PUSHES} \
             single puts {PUSH_SPACING:?} apart): median {median:.2?}, p99 {p99:.2?}"
        );
        server.stop().await;
    });
}

/// kinesis-local's endpoint: `KINESIS_ENDPOINT`, or what `scripts/local-stack up` prints.
fn kinesis_local_endpoint() -> String {
    if let Some(endpoint) = std::env::var("KINESIS_ENDPOINT")
        .ok()
        .filter(|endpoint| !endpoint.is_empty())
    {
        return endpoint;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/local-stack");
    let output = std::process::Command::new(&script)
        .arg("up")
        .output()
        .unwrap_or_else(|error| panic!("could not run {} up: {error}", script.display()));
    assert!(
        output.status.success(),
        "{} up failed:\n{}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("KINESIS_ENDPOINT="))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("{} up printed no KINESIS_ENDPOINT", script.display()))
}

/// Medians of one endpoint.
struct Medians {
    put: Duration,
    get: Duration,
}

async fn measure(endpoint: &str) -> Medians {
    // kinesis-local takes seconds per call on a long shard: give each call a minute.
    let config = AwsConnection::local(endpoint)
        .with_timeouts(Duration::from_secs(3), Duration::from_secs(60))
        .sdk_config()
        .await
        .expect("a local configuration");
    let client = Client::new(&config);
    let stream = format!("bench-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    client
        .create_stream()
        .stream_name(&stream)
        .shard_count(1)
        .send()
        .await
        .expect("CreateStream");
    wait_until_active(&client, &stream).await;

    let fill = Instant::now();
    for batch in 0..BACKLOG / BATCH {
        put_batch(&client, &stream, batch).await;
    }
    println!("  filled {BACKLOG} records in {:.2?}", fill.elapsed());

    // Reads first, while the shard holds exactly the backlog.
    let mut gets = Vec::new();
    for sample in 0..=SAMPLES {
        let iterator =
            support::trim_horizon_iterator(&client, &stream, "shardId-000000000000").await;
        let started = Instant::now();
        let read = client
            .get_records()
            .shard_iterator(iterator)
            .limit(BACKLOG as i32)
            .send()
            .await
            .expect("GetRecords");
        let elapsed = started.elapsed();
        assert_eq!(
            read.records().len(),
            BACKLOG,
            "one call reads the whole backlog"
        );
        if sample > 0 {
            gets.push(elapsed);
        }
    }

    let mut puts = Vec::new();
    for sample in 0..=SAMPLES {
        let started = Instant::now();
        put_batch(&client, &stream, BACKLOG / BATCH + sample).await;
        if sample > 0 {
            puts.push(started.elapsed());
        }
    }

    client
        .delete_stream()
        .stream_name(&stream)
        .send()
        .await
        .expect("DeleteStream");
    let medians = Medians {
        put: median(puts),
        get: median(gets),
    };
    println!(
        "  PutRecords median {:.2?}, GetRecords median {:.2?}",
        medians.put, medians.get
    );
    medians
}

/// Puts batch number `batch`: 500 records of 100 bytes, each with its own partition key.
async fn put_batch(client: &Client, stream: &str, batch: usize) {
    let records = (0..BATCH)
        .map(|index| {
            let id = batch * BATCH + index;
            let mut data = format!(r#"{{"id":{id},"address":"1 Main St","carrier":"dhl","note":""#);
            data.extend(std::iter::repeat_n('x', RECORD_BYTES - 2 - data.len()));
            data.push_str(r#""}"#);
            PutRecordsRequestEntry::builder()
                .partition_key(format!("shipment-{id}"))
                .data(Blob::new(data))
                .build()
                .expect("a complete entry")
        })
        .collect();
    support::put_entries(client, stream, records).await;
}

/// kinesis-local may report a new stream `CREATING` for a moment; the endpoint never does.
async fn wait_until_active(client: &Client, stream: &str) {
    for _ in 0..100 {
        let summary = client
            .describe_stream_summary()
            .stream_name(stream)
            .send()
            .await
            .expect("DescribeStreamSummary");
        let status = summary
            .stream_description_summary()
            .map(|summary| summary.stream_status().as_str().to_owned());
        if status.as_deref() == Some("ACTIVE") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("stream {stream} did not become ACTIVE");
}

/// Median and p99 of the time from a `PutRecord`'s start to its record's event reaching a
/// subscribed consumer, through the SDK on both sides.
async fn subscribe_latency(endpoint: &str) -> (Duration, Duration) {
    let config = AwsConnection::local(endpoint)
        .sdk_config()
        .await
        .expect("a local configuration");
    let client = Client::new(&config);
    let stream = "bench-subscribe";
    client
        .create_stream()
        .stream_name(stream)
        .shard_count(1)
        .send()
        .await
        .expect("CreateStream");
    wait_until_active(&client, stream).await;
    let stream_arn = client
        .describe_stream_summary()
        .stream_name(stream)
        .send()
        .await
        .expect("DescribeStreamSummary")
        .stream_description_summary
        .expect("a summary")
        .stream_arn;
    let consumer_arn = client
        .register_stream_consumer()
        .stream_arn(&stream_arn)
        .consumer_name("bench")
        .send()
        .await
        .expect("RegisterStreamConsumer")
        .consumer
        .expect("a consumer")
        .consumer_arn;
    let mut output = client
        .subscribe_to_shard()
        .consumer_arn(&consumer_arn)
        .shard_id("shardId-000000000000")
        .starting_position(
            StartingPosition::builder()
                .r#type(ShardIteratorType::Latest)
                .build()
                .expect("a starting position"),
        )
        .send()
        .await
        .expect("SubscribeToShard");
    let mut latencies = Vec::new();
    for push in 0..PUSHES + 10 {
        tokio::time::sleep(PUSH_SPACING).await;
        let started = Instant::now();
        client
            .put_record()
            .stream_name(stream)
            .partition_key("key")
            .data(Blob::new(format!("push-{push}")))
            .send()
            .await
            .expect("PutRecord");
        loop {
            let event = output
                .event_stream
                .recv()
                .await
                .expect("the event stream reads")
                .expect("the subscription lasts");
            if let SubscribeToShardEventStream::SubscribeToShardEvent(event) = event
                && !event.records().is_empty()
            {
                assert_eq!(event.records().len(), 1, "one record per put");
                break;
            }
        }
        if push >= 10 {
            latencies.push(started.elapsed());
        }
    }
    latencies.sort();
    let p99 = latencies[(latencies.len() * 99).div_ceil(100) - 1];
    (latencies[latencies.len() / 2], p99)
}
