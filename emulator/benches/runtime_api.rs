//! Invocations through the Runtime API with the shipping function's release `bootstrap`: the
//! round-trip latency of a small event, and records per second in batches of 10,000, against
//! the same function in process as the baseline measured in the same run.
//!
//! Run with `cargo bench -p kinesis-esm --bench runtime_api` (it builds the function in release
//! first, which takes a few minutes the first time).

use std::time::{Duration, Instant};

use kinesis_esm::invoke::runtime_api::{FunctionDefinition, RuntimeApi};
use kinesis_esm::invoke::{InProcess, Invocation, InvokeOutcome, Invoker};
use lambda_kinesis::testing::TestEvent;
use shipping::Shipment;

mod support;

const WARM_UP: usize = 500;
const ROUND_TRIPS: usize = 5_000;
const BATCH_SIZE: u64 = 10_000;
const BATCHES: usize = 20;
const TIMEOUT: Duration = Duration::from_secs(60);

fn main() {
    let binary = support::shipping_binary();
    let runtime = support::runtime();
    runtime.block_on(async {
        let small = TestEvent::new().json(&shipment(1)).to_json();
        let batch = (0..BATCH_SIZE)
            .fold(TestEvent::new(), |event, id| event.json(&shipment(id)))
            .to_json();
        println!(
            "small event: {} bytes; batch: {BATCH_SIZE} records, {} bytes",
            small.len(),
            batch.len()
        );

        let in_process = InProcess::service(shipping::function());
        let baseline = round_trips(&in_process, &small).await;
        report("in process (baseline)", &baseline, None);

        for log_level in ["INFO", "WARN"] {
            let mut function = FunctionDefinition::new("shipping", &binary);
            function.timeout = TIMEOUT;
            // The shipping function logs every shipment at INFO; Lambda's advanced logging
            // controls set this variable to quiet it.
            function
                .environment
                .insert("AWS_LAMBDA_LOG_LEVEL".to_owned(), log_level.to_owned());
            let api = RuntimeApi::new(function);
            let latencies = round_trips(&api, &small).await;
            report(
                &format!("Runtime API, function logs at {log_level}"),
                &latencies,
                Some(&baseline),
            );
            let rate = records_per_second(&api, &batch).await;
            let baseline_rate = records_per_second(&in_process, &batch).await;
            println!(
                "  batches of {BATCH_SIZE}: {rate:.0} records/s through the Runtime API, \
                 {baseline_rate:.0} in process ({:.2}x)",
                baseline_rate / rate
            );
            api.shutdown().await;
        }
    });
}

fn shipment(id: u64) -> Shipment {
    Shipment {
        id,
        address: "1 Main St".to_owned(),
        carrier: "dhl".to_owned(),
    }
}

async fn invoke_once(invoker: &impl Invoker, event: &[u8]) {
    let payload = bytes::Bytes::copy_from_slice(event);
    match invoker.invoke(Invocation::new(payload, TIMEOUT)).await {
        Ok(InvokeOutcome::Response(_)) => {}
        other => panic!("the shipping function did not answer: {other:?}"),
    }
}

/// Sequential round trips of `event`, after a warm-up; sorted.
async fn round_trips(invoker: &impl Invoker, event: &[u8]) -> Vec<Duration> {
    for _ in 0..WARM_UP {
        invoke_once(invoker, event).await;
    }
    let mut latencies = Vec::with_capacity(ROUND_TRIPS);
    for _ in 0..ROUND_TRIPS {
        let start = Instant::now();
        invoke_once(invoker, event).await;
        latencies.push(start.elapsed());
    }
    latencies.sort();
    latencies
}

async fn records_per_second(invoker: &impl Invoker, batch: &[u8]) -> f64 {
    invoke_once(invoker, batch).await;
    let start = Instant::now();
    for _ in 0..BATCHES {
        invoke_once(invoker, batch).await;
    }
    (BATCH_SIZE as usize * BATCHES) as f64 / start.elapsed().as_secs_f64()
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let index = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}

fn report(name: &str, sorted: &[Duration], baseline: Option<&[Duration]>) {
    let median = percentile(sorted, 0.5);
    let p99 = percentile(sorted, 0.99);
    print!(
        "{name}: {} round trips of the small event: median {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        sorted.len(),
        median.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6,
        sorted[sorted.len() - 1].as_secs_f64() * 1e6
    );
    match baseline {
        Some(baseline) => println!(
            " ({:.1}x the in-process median)",
            median.as_secs_f64() / percentile(baseline, 0.5).as_secs_f64()
        ),
        None => println!(),
    }
}
