//! The cost per record of the idempotent wrapper, in the same run: the bare handler; the handler
//! wrapped over the in-memory store (every record new, then every record a duplicate); and wrapped
//! over the DynamoDB store against the local server (dynalite), new then duplicate.
//!
//! Run with `scripts/local-stack run -- cargo bench -p lambda-kinesis-idempotency`: it needs
//! `DYNAMODB_ENDPOINT` and stops with an error without it. Settings are short (the machine is
//! shared); each figure is the median of the iterations.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::testing::TestEvent;
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
use lambda_kinesis_idempotency::{DynamoDbStore, Idempotency, MemoryStore, Store};
use serde::{Deserialize, Serialize};

const RECORDS: u64 = 200;
const ITERATIONS: usize = 7;

#[derive(Serialize, Deserialize)]
struct Shipment {
    id: u64,
    carrier: String,
}

async fn ship(shipment: &Shipment) -> HandlerOutcome {
    if shipment.carrier.is_empty() {
        HandlerOutcome::drop()
    } else {
        HandlerOutcome::ack()
    }
}

/// `RECORDS` shipments whose ids start at `first`.
fn event(first: u64) -> TestEvent {
    (first..first + RECORDS).fold(TestEvent::new(), |event, id| {
        event.json(&Shipment {
            id,
            carrier: "dhl".into(),
        })
    })
}

/// The median time per record of `ITERATIONS` runs of `settle`, each given its iteration.
async fn per_record<F, Fut>(mut settle: F) -> Duration
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut times = Vec::with_capacity(ITERATIONS);
    for iteration in 0..ITERATIONS {
        let started = Instant::now();
        settle(iteration).await;
        times.push(started.elapsed() / RECORDS as u32);
    }
    times.sort();
    times[ITERATIONS / 2]
}

/// New keys in each iteration (ids shifted by the iteration), then the same keys again.
async fn wrapped<St: Store + Clone>(store: St, base: u64) -> (Duration, Duration) {
    let adapter = Idempotency::new(store)
        .function_name("bench")
        .wrap(ship)
        .key(|shipment: &Shipment| shipment.id)
        .into_adapter();
    let events: Vec<TestEvent> = (0..ITERATIONS)
        .map(|i| event(base + (i as u64) * RECORDS))
        .collect();
    let context = Context::default();
    let new = per_record(|i| {
        let (adapter, event, context) = (&adapter, &events[i], &context);
        async move {
            assert!(adapter.settle(event, context).await.cut().is_none());
        }
    })
    .await;
    let duplicate = per_record(|i| {
        let (adapter, event, context) = (&adapter, &events[i], &context);
        async move {
            assert!(adapter.settle(event, context).await.cut().is_none());
        }
    })
    .await;
    (new, duplicate)
}

async fn dynamodb_store() -> DynamoDbStore {
    let endpoint = std::env::var("DYNAMODB_ENDPOINT").unwrap_or_else(|_| {
        eprintln!(
            "DYNAMODB_ENDPOINT is not set: run `scripts/local-stack run -- cargo bench -p lambda-kinesis-idempotency`"
        );
        std::process::exit(2);
    });
    let config = aws_config::from_env()
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::for_tests())
        .load()
        .await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let store = DynamoDbStore::new(client, format!("idempotency-bench-{}", std::process::id()));
    store
        .create_table()
        .await
        .unwrap_or_else(|error| panic!("dynalite creates the bench's table: {error}"));
    store
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

#[tokio::main]
async fn main() {
    let bare = KinesisAdapter::new(ship);
    let context = Context::default();
    let events: Vec<TestEvent> = (0..ITERATIONS).map(|i| event(i as u64 * RECORDS)).collect();
    let baseline = per_record(|i| {
        let (bare, event, context) = (&bare, &events[i], &context);
        async move {
            assert!(bare.settle(event, context).await.cut().is_none());
        }
    })
    .await;
    let (memory_new, memory_duplicate) = wrapped(Arc::new(MemoryStore::new()), 0).await;
    let (dynamo_new, dynamo_duplicate) = wrapped(dynamodb_store().await, 0).await;
    println!("{RECORDS} records per batch, median of {ITERATIONS} batches, per record:");
    println!(
        "  bare handler                 {:>10.2} µs  (1.00x)",
        micros(baseline)
    );
    for (name, time) in [
        ("memory store, new keys", memory_new),
        ("memory store, duplicates", memory_duplicate),
        ("DynamoDB (dynalite), new keys", dynamo_new),
        ("DynamoDB (dynalite), duplicates", dynamo_duplicate),
    ] {
        println!(
            "  {name:<30} {:>10.2} µs  ({:.1}x)",
            micros(time),
            time.as_secs_f64() / baseline.as_secs_f64()
        );
    }
}
