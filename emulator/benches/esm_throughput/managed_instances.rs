//! Lambda Managed Instances against the standard execution environment: 8 shards, BatchSize
//! 100, the shipping function's `bootstrap` through the Runtime API with
//! `PerExecutionEnvironmentMaxConcurrency` 8 (one process serving up to 8 batches at once, as
//! the adapter's `run` does when `AWS_LAMBDA_MAX_CONCURRENCY` is above 1) against one
//! environment per batch, in the same run.
//!
//! One stream of 8 shards holds `records` shipments, at most 20,000: the case compares two ways
//! of running the function, and a short stream keeps the bench's run time near what it was.
//! Each invoker is warmed as the throughput cases' are, with 8 invocations at once: one
//! environment per batch starts 8 processes, Managed Instances 1, which takes all 8. Then each
//! run starts a fresh mapping and is timed until every shard's checkpoint is its last record
//! ([`run_once`], which checks every record was delivered once and acked). No process may start
//! during the timed runs: start-up is not throughput.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use kinesis_esm::invoke::Invoker;
use kinesis_esm::invoke::runtime_api::RuntimeApi;
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::sequence::SequenceNumber;

use super::{CpuSample, fill, run_once, shipping_definition, si, warmed};

const STREAM: &str = "shipments-managed-instances";
const SHARDS: u32 = 8;
const BATCH_SIZE: usize = 100;
const MOST_RECORDS: usize = 20_000;
/// `PerExecutionEnvironmentMaxConcurrency` of the Managed Instances case: one per shard, so
/// that one environment can take every batch in flight.
const CONCURRENCY: usize = 8;

/// The filled stream both cases read.
struct Stream<'a> {
    kinesis: &'a EmbeddedKinesis,
    last: &'a HashMap<String, SequenceNumber>,
    records: usize,
}

/// One way of running the function and what its runs measured.
struct Outcome {
    rates: Vec<f64>,
    function_ns: f64,
}

impl Outcome {
    fn median(&self) -> f64 {
        let mut rates = self.rates.clone();
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    }
}

/// Runs both cases and prints their figures and ratios.
pub(super) async fn compare(binary: &Path, records: usize, runs: usize) {
    let records = records.min(MOST_RECORDS);
    let kinesis = EmbeddedKinesis::new();
    let filling = Instant::now();
    let last = fill(&kinesis, STREAM, SHARDS, records);
    println!(
        "\n{STREAM}: {records} shipments put into {SHARDS} shards in {:.2} s; BatchSize \
         {BATCH_SIZE}, the shipping function through the Runtime API",
        filling.elapsed().as_secs_f64()
    );
    let stream = Stream {
        kinesis: &kinesis,
        last: &last,
        records,
    };
    let standard = measure(&stream, binary, 1, runs).await;
    let managed = measure(&stream, binary, CONCURRENCY, runs).await;
    println!(
        "  Managed Instances / one environment per batch: records/s {:.2}, CPU per record in \
         the function's processes {:.2}",
        managed.median() / standard.median(),
        managed.function_ns / standard.function_ns,
    );
}

/// `runs` timed runs through the Runtime API with `concurrency` invocations per environment
/// (1: one environment per batch); prints their figures.
async fn measure(stream: &Stream<'_>, binary: &Path, concurrency: usize, runs: usize) -> Outcome {
    let Stream {
        kinesis,
        last,
        records,
    } = *stream;
    let environments = SHARDS as usize;
    let mut api =
        RuntimeApi::new(shipping_definition(binary, "warn")).max_environments(environments);
    if concurrency > 1 {
        api = api.per_environment_concurrency(concurrency);
    }
    let api = warmed(api, environments).await;
    let started = api.environments_started();
    let mut rates = Vec::with_capacity(runs);
    let load = CpuSample::take();
    for _ in 0..runs {
        let invoker = Arc::clone(&api) as Arc<dyn Invoker>;
        let run = run_once(kinesis, STREAM, last, records, BATCH_SIZE, invoker).await;
        rates.push(run.rate);
    }
    let load = load.until_now();
    assert_eq!(
        api.environments_started(),
        started,
        "a function process started during timed runs: start-up was timed"
    );
    let (own_ns, function_ns) = load.cpu_ns_per(records * runs);
    let outcome = Outcome { rates, function_ns };
    let name = if concurrency > 1 {
        format!("PerExecutionEnvironmentMaxConcurrency {concurrency}")
    } else {
        "one environment per batch".to_owned()
    };
    let (low, high) = outcome
        .rates
        .iter()
        .fold((f64::MAX, 0.0_f64), |(low, high), &rate| {
            (low.min(rate), high.max(rate))
        });
    println!(
        "  {name}: median {} records/s over {runs} runs ({}..{}); {started} environment(s) \
         started, at most {} invocation(s) in flight in one\n    CPU per record: {own_ns:.0} ns \
         in this process, {function_ns:.0} ns in the function's processes\n    {load}",
        si(outcome.median()),
        si(low),
        si(high),
        api.most_in_flight(),
    );
    api.shutdown().await;
    outcome
}
