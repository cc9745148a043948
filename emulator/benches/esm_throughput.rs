//! The event source mapping end to end: records per second from the embedded Kinesis through
//! the shipping handler with checkpoints, and the latency from a put to the handler.
//!
//! Run with `cargo bench -p kinesis-esm --bench esm_throughput`. It first builds the shipping
//! function's release `bootstrap` (a few minutes the first time). `ESM_BENCH_RECORDS` (records
//! per stream, default 1,000,000) and `ESM_BENCH_RUNS` (runs per case, default 5) shorten it
//! while working on it; `ESM_BENCH_VIA=in-process` or `runtime-api` and `ESM_BENCH_SHARDS=1` or
//! `8` run only those cases (and skip the ratios and the latency), for profiling one of them;
//! `ESM_BENCH_VIA=parallelization` runs only `ParallelizationFactor` 10 against 1
//! ([`parallelization`]), which otherwise runs after the throughput cases, and
//! `ESM_BENCH_VIA=page` only the cost of an open live page ([`page`]), which runs last;
//! `ESM_BENCH_VIA=fan-out` only the latency through an enhanced fan-out consumer against
//! polling ([`fan_out`]), which otherwise runs after the latency, and `ESM_BENCH_VIA=latency`
//! only the latency from a put to the handler (in process and through the Runtime API);
//! `ESM_BENCH_VIA=managed-instances` only `PerExecutionEnvironmentMaxConcurrency` 8 against
//! one environment per batch through the Runtime API ([`managed_instances`], on at most
//! 20,000 records), which otherwise runs after the fan-out latency.
//!
//! **Throughput.** A stream of 1 and one of 8 shards are filled with valid shipments (every one
//! is acked). Each run starts a fresh mapping (memory lease store, `TRIM_HORIZON`,
//! `ReportBatchItemFailures`) and is timed from `start()` until every shard's checkpoint is its
//! last record, as the mapping's status tells it (`RunningMapping::wait_for` from the main
//! thread, as the CLI's `--until-idle` waits: every status change wakes it, and that cost is
//! part of the figures). Every run checks that each record was delivered once and acked, with
//! no retry. The function runs in process
//! (`InProcess::service(shipping::function())`) or as its own release `bootstrap` through the Runtime
//! API. Its processes, one per shard, are started before the clock starts: Lambda's init phase
//! is not throughput. They run with `RUST_LOG=warn`: the shipping function logs every shipment
//! at INFO, and a run that writes a line per record measures the pipe into the emulator's log
//! rather than the mapping.
//!
//! **Latency.** Single puts, 1 ms apart, into a one-shard stream, with no batching window. In
//! process the handler is `shipping::ship` behind a wrapper that notes the instant it sees the
//! shipment. Through the Runtime API the bench cannot see inside the function, so it brackets
//! the handler: the instant the mapping hands the event to the Runtime API (before the
//! function sees it) and the instant the function's log line "shipment booked" reaches the
//! emulator (after; the function runs at INFO here, one line per invocation), besides the
//! instant the response comes back.
//!
//! **Load.** The machine may be shared: each case reports the cores this process, the
//! function's processes and everything else on the machine used meanwhile (from `/proc`, in
//! ticks of 10 ms), and the load average. Records per second follow what other work leaves;
//! the CPU time per record, also printed, changes far less, and is the figure to compare
//! changes by.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::runtime_api::{FUNCTION_LOG_TARGET, FunctionDefinition, RuntimeApi};
use kinesis_esm::invoke::{InProcess, Invocation, InvokeError, InvokeOutcome, Invoker};
use kinesis_esm::kinesis::{EmbeddedKinesis, MAX_PUT_RECORDS_ENTRIES, PutRecordsEntry};
use kinesis_esm::lease::Checkpoint;
use kinesis_esm::mapping::{EventSourceMapping, MappingStatus, ShardPhase};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::ShardSource;
use lambda_kinesis::HandlerOutcome;
use lambda_kinesis::testing::TestEvent;
use shipping::Shipment;
use test_support::intercept::{Intercepted, InvokerHooks};
use tokio::sync::mpsc;
use tracing_subscriber::layer::SubscriberExt as _;

use cpu::CpuSample;
use support::env_or;

#[path = "esm_throughput/cpu.rs"]
mod cpu;
#[path = "esm_throughput/fan_out.rs"]
mod fan_out;
#[path = "esm_throughput/managed_instances.rs"]
mod managed_instances;
#[path = "esm_throughput/page.rs"]
mod page;
#[path = "esm_throughput/parallelization.rs"]
mod parallelization;
mod support;

const FUNCTION: &str = "shipping";
const DEFAULT_RECORDS: usize = 1_000_000;
const DEFAULT_RUNS: usize = 5;
const SHARD_COUNTS: [u32; 2] = [1, 8];
const BATCH_SIZES: [usize; 2] = [100, 10_000];
/// Long enough that a loaded machine never times a batch out: a timeout would be a retry.
const FUNCTION_TIMEOUT: Duration = Duration::from_secs(60);
/// A run that has not checkpointed everything by then is broken, not slow.
const RUN_LIMIT: Duration = Duration::from_secs(600);

const LATENCY_ROUNDS: usize = 1_000;
/// A report of a shipment seen that takes longer than this is lost.
const REPORT_LIMIT: Duration = Duration::from_secs(10);
/// The pause before each put, so that the reader has gone back to waiting for records.
const LATENCY_SPACING: Duration = Duration::from_millis(1);

const IN_PROCESS_TARGET: f64 = 1_000_000.0;
const RUNTIME_API_TARGET: f64 = 200_000.0;
const LATENCY_TARGET: Duration = Duration::from_millis(1);

fn main() {
    let records = env_or("ESM_BENCH_RECORDS", DEFAULT_RECORDS).max(1);
    let runs = env_or("ESM_BENCH_RUNS", DEFAULT_RUNS).max(1);
    let (function_lines, seen_in_log) = mpsc::unbounded_channel();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(FunctionLines {
        tell: function_lines,
    }))
    .expect("no other subscriber is set");

    let via = std::env::var("ESM_BENCH_VIA").ok();
    if via.as_deref() == Some("parallelization") {
        // In process only: no function binary to build.
        let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
        runtime.block_on(parallelization::compare(records, runs));
        return;
    }
    if via.as_deref() == Some("fan-out") {
        // In process only: no function binary to build.
        let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
        println!("load average at the start: {}", load_average());
        runtime.block_on(fan_out::compare());
        return;
    }
    if via.as_deref() == Some("page") {
        let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
        println!("load average at the start: {}", load_average());
        runtime.block_on(page::compare(records, runs));
        return;
    }
    let binary = support::shipping_binary();
    let runtime = support::runtime();
    println!(
        "{} cores, {} tokio workers; load average at the start: {}",
        cores(),
        cores(),
        load_average()
    );
    if via.as_deref() == Some("latency") {
        runtime.block_on(latency(&binary, seen_in_log));
        return;
    }
    if via.as_deref() == Some("managed-instances") {
        runtime.block_on(managed_instances::compare(&binary, records, runs));
        return;
    }
    let only = via.map(|via| match via.as_str() {
        "in-process" => Via::InProcess,
        "runtime-api" => Via::RuntimeApi,
        other => {
            panic!(
                "ESM_BENCH_VIA={other}: say in-process, runtime-api, latency, \
                 managed-instances, parallelization, fan-out or page"
            )
        }
    });
    let only_shards = std::env::var("ESM_BENCH_SHARDS").ok().map(|shards| {
        shards
            .parse::<u32>()
            .ok()
            .filter(|shards| SHARD_COUNTS.contains(shards))
            .unwrap_or_else(|| panic!("ESM_BENCH_SHARDS={shards}: say one of {SHARD_COUNTS:?}"))
    });
    runtime.block_on(async {
        let cases = throughput(&binary, records, runs, only, only_shards).await;
        if only.is_none() && only_shards.is_none() {
            summarise(&cases);
            latency(&binary, seen_in_log).await;
            fan_out::compare().await;
            managed_instances::compare(&binary, records, runs).await;
            parallelization::compare(records, runs).await;
            page::compare(records, runs).await;
        }
    });
}

/// How the function is invoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    InProcess,
    RuntimeApi,
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::InProcess => "in process",
            Self::RuntimeApi => "Runtime API",
        })
    }
}

/// One case's runs.
struct Case {
    via: Via,
    shards: u32,
    batch_size: usize,
    rates: Vec<f64>,
}

impl Case {
    fn median(&self) -> f64 {
        let mut rates = self.rates.clone();
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    }
}

async fn throughput(
    binary: &Path,
    records: usize,
    runs: usize,
    only: Option<Via>,
    only_shards: Option<u32>,
) -> Vec<Case> {
    let mut cases = Vec::new();
    for shards in SHARD_COUNTS {
        if only_shards.is_some_and(|only| only != shards) {
            continue;
        }
        let kinesis = EmbeddedKinesis::new();
        let stream = format!("shipments-{shards}");
        let filling = Instant::now();
        let last = fill(&kinesis, &stream, shards, records);
        println!(
            "\n{stream}: {records} shipments put into {shards} shard(s) in {:.2} s",
            filling.elapsed().as_secs_f64()
        );
        for via in [Via::InProcess, Via::RuntimeApi] {
            if only.is_some_and(|only| only != via) {
                continue;
            }
            let (invoker, runtime_api): (Arc<dyn Invoker>, _) = match via {
                Via::InProcess => (Arc::new(InProcess::service(shipping::function())), None),
                Via::RuntimeApi => {
                    let api = runtime_api(binary, shards as usize, "warn").await;
                    (Arc::clone(&api) as Arc<dyn Invoker>, Some(api))
                }
            };
            for batch_size in BATCH_SIZES {
                let processes = runtime_api.as_ref().map(|api| api.environments_started());
                let mut case = Case {
                    via,
                    shards,
                    batch_size,
                    rates: Vec::with_capacity(runs),
                };
                let mut invocations = 0;
                let load = CpuSample::take();
                for _ in 0..runs {
                    let run = run_once(
                        &kinesis,
                        &stream,
                        &last,
                        records,
                        batch_size,
                        Arc::clone(&invoker),
                    )
                    .await;
                    case.rates.push(run.rate);
                    invocations += run.invocations;
                }
                let load = load.until_now();
                if let Some(api) = &runtime_api {
                    assert_eq!(
                        Some(api.environments_started()),
                        processes,
                        "a function process started during timed runs: start-up was timed"
                    );
                }
                let target = match via {
                    Via::InProcess => IN_PROCESS_TARGET,
                    Via::RuntimeApi => RUNTIME_API_TARGET,
                };
                let (low, high) = case
                    .rates
                    .iter()
                    .fold((f64::MAX, 0.0_f64), |(low, high), &rate| {
                        (low.min(rate), high.max(rate))
                    });
                let (own_ns, children_ns) = load.cpu_ns_per(records * runs);
                println!(
                    "  {via:<11} BatchSize {batch_size:>6}: median {} records/s over {runs} \
                     runs ({}..{}), {:.2}x the target of {}; {:.0} records per invocation\n    \
                     CPU per record: {own_ns:.0} ns in this process, {children_ns:.0} ns in the \
                     function's processes\n    {load}",
                    si(case.median()),
                    si(low),
                    si(high),
                    case.median() / target,
                    si(target),
                    (records * runs) as f64 / invocations as f64,
                );
                cases.push(case);
            }
            if let Some(api) = runtime_api {
                api.shutdown().await;
            }
        }
    }
    cases
}

/// Prints the ratios between cases.
fn summarise(cases: &[Case]) {
    let find = |via, shards, batch_size| {
        cases
            .iter()
            .find(|case| case.via == via && case.shards == shards && case.batch_size == batch_size)
            .map(Case::median)
            .expect("every case ran")
    };
    println!("\nRatios of medians:");
    for shards in SHARD_COUNTS {
        for batch_size in BATCH_SIZES {
            println!(
                "  {shards} shard(s), BatchSize {batch_size:>6}: in process / Runtime API = {:.2}",
                find(Via::InProcess, shards, batch_size)
                    / find(Via::RuntimeApi, shards, batch_size)
            );
        }
    }
    for via in [Via::InProcess, Via::RuntimeApi] {
        for batch_size in BATCH_SIZES {
            println!(
                "  {via:<11} BatchSize {batch_size:>6}: 8 shards / 1 shard = {:.2}",
                find(via, 8, batch_size) / find(via, 1, batch_size)
            );
        }
        for shards in SHARD_COUNTS {
            println!(
                "  {via:<11} {shards} shard(s): BatchSize 10,000 / 100 = {:.2}",
                find(via, shards, 10_000) / find(via, shards, 100)
            );
        }
    }
}

fn shipment(id: u64) -> Shipment {
    Shipment {
        id,
        address: "1 Main St".to_owned(),
        carrier: "dhl".to_owned(),
    }
}

fn shipment_entry(id: u64) -> PutRecordsEntry {
    let data = serde_json::to_vec(&shipment(id)).expect("a shipment serialises");
    PutRecordsEntry::new(format!("shipment-{id}"), data)
}

/// Creates `stream` with `records` shipments; returns each shard's last sequence number.
fn fill(
    kinesis: &EmbeddedKinesis,
    stream: &str,
    shards: u32,
    records: usize,
) -> HashMap<String, SequenceNumber> {
    kinesis
        .create_stream(stream, shards)
        .unwrap_or_else(|error| panic!("creating stream {stream}: {error}"));
    let mut last = HashMap::new();
    let ids: Vec<u64> = (0..records as u64).collect();
    for chunk in ids.chunks(MAX_PUT_RECORDS_ENTRIES) {
        let entries = chunk.iter().map(|&id| shipment_entry(id)).collect();
        let puts = kinesis
            .put_records(stream, entries)
            .unwrap_or_else(|error| panic!("putting into stream {stream}: {error}"));
        // Within a shard, later puts have higher sequence numbers.
        for put in puts {
            last.insert(put.shard_id.to_string(), put.sequence_number);
        }
    }
    last
}

/// The function's own binary through the Runtime API, one process per shard, every process
/// started and past its first invocation.
async fn runtime_api(binary: &Path, environments: usize, log_level: &str) -> Arc<RuntimeApi> {
    let api =
        RuntimeApi::new(shipping_definition(binary, log_level)).max_environments(environments);
    warmed(api, environments).await
}

/// The shipping function's `bootstrap`, logging at `log_level`.
fn shipping_definition(binary: &Path, log_level: &str) -> FunctionDefinition {
    let mut function = FunctionDefinition::new(FUNCTION, binary);
    function.timeout = FUNCTION_TIMEOUT;
    function
        .environment
        .insert("RUST_LOG".to_owned(), log_level.to_owned());
    function
}

/// `api` after `invocations` invocations at once, each answered: the processes they started
/// are past their first invocation.
async fn warmed(api: RuntimeApi, invocations: usize) -> Arc<RuntimeApi> {
    let api = Arc::new(api);
    // Invocations at the same time find no idle process, so each starts one (or, on Managed
    // Instances, shares one while it has room).
    let event = Bytes::from(TestEvent::new().json(&shipment(0)).to_json());
    let warm_up =
        (0..invocations).map(|_| api.invoke(Invocation::new(event.clone(), FUNCTION_TIMEOUT)));
    for outcome in futures_util::future::join_all(warm_up).await {
        match outcome {
            Ok(InvokeOutcome::Response(_)) => {}
            other => panic!("the shipping function did not answer its warm-up: {other:?}"),
        }
    }
    api
}

/// One timed run.
struct Run {
    rate: f64,
    invocations: u64,
}

async fn run_once(
    kinesis: &EmbeddedKinesis,
    stream: &str,
    last: &HashMap<String, SequenceNumber>,
    records: usize,
    batch_size: usize,
    invoker: Arc<dyn Invoker>,
) -> Run {
    let mut config = MappingConfig::new(FUNCTION, stream, StartingPosition::TrimHorizon);
    config.batch_size = batch_size;
    config.report_batch_item_failures = true;
    config.function_timeout = FUNCTION_TIMEOUT;
    let started = Instant::now();
    let mapping = EventSourceMapping::new(config, Arc::new(kinesis.clone()), invoker).start();
    let checkpointed = tokio::time::timeout(
        RUN_LIMIT,
        mapping.wait_for(|status| all_checkpointed(status, last)),
    )
    .await;
    let elapsed = started.elapsed();
    let status = mapping.stop().await;
    if checkpointed.is_err() {
        panic!("{stream}: not every record was checkpointed within {RUN_LIMIT:?}: {status:#?}");
    }
    let totals = status.totals();
    assert_eq!(
        (
            totals.acked,
            totals.delivered,
            totals.dropped,
            totals.discarded,
            totals.retries
        ),
        (records as u64, records as u64, 0, 0, 0),
        "{stream}: every shipment is delivered once and acked (acked, delivered, dropped, \
         discarded, retries)"
    );
    Run {
        rate: records as f64 / elapsed.as_secs_f64(),
        invocations: totals.invocations,
    }
}

/// Whether every shard's checkpoint is its last record.
/// Checks that each of `records` shipments was delivered once and acked, without a retry;
/// a failure names `case`.
fn check_delivered_once(status: &MappingStatus, records: usize, case: &str) {
    let totals = status.totals();
    assert_eq!(
        (totals.acked, totals.delivered, totals.retries),
        (records as u64, records as u64, 0),
        "{case}: every shipment is delivered once and acked"
    );
}

fn all_checkpointed(status: &MappingStatus, last: &HashMap<String, SequenceNumber>) -> bool {
    last.iter().all(|(shard_id, last)| {
        matches!(
            status.shards.get(shard_id.as_str()).and_then(|shard| shard.checkpoint.as_ref()),
            Some(Checkpoint::SequenceNumber(at)) if at == last
        )
    })
}

/// Where the in-process handler tells the instant it saw each shipment.
static SEEN_BY_HANDLER: OnceLock<mpsc::UnboundedSender<(u64, Instant)>> = OnceLock::new();

/// The shipping handler, noting first when it sees the shipment.
async fn ship_and_tell(shipment: &Shipment) -> HandlerOutcome {
    let seen = Instant::now();
    if let Some(tell) = SEEN_BY_HANDLER.get() {
        let _ = tell.send((shipment.id, seen));
    }
    shipping::ship(&shipping::Carriers, shipment).await
}

/// Tells when each invocation was handed over and when its answer came back.
struct Timed {
    tell: mpsc::UnboundedSender<(Instant, Instant)>,
}

impl InvokerHooks for Timed {
    type Note = Option<Instant>;

    fn before_invoke(&self, _: &Invocation) -> Option<Instant> {
        Some(Instant::now())
    }

    fn after_invoke(&self, invoked: Option<Instant>, _: &Result<InvokeOutcome, InvokeError>) {
        let invoked = invoked.expect("before_invoke notes the instant");
        let _ = self.tell.send((invoked, Instant::now()));
    }
}

/// Latencies from a put, one list per stage.
#[derive(Default)]
struct Latencies {
    invoked: Vec<Duration>,
    /// In process: the handler's own instant. Through the Runtime API: its log line's arrival.
    handler: Vec<Duration>,
    answered: Vec<Duration>,
    checkpointed: Vec<Duration>,
}

async fn latency(binary: &Path, mut seen_in_log: mpsc::UnboundedReceiver<(u64, Instant)>) {
    let (tell, mut seen_by_handler) = mpsc::unbounded_channel();
    SEEN_BY_HANDLER
        .set(tell)
        .expect("the handler's channel is set once");
    let kinesis = EmbeddedKinesis::new();

    let in_process = Arc::new(InProcess::handler(ship_and_tell));
    let load = CpuSample::take();
    let latencies = measure_latency(
        &kinesis,
        "latency-in-process",
        in_process,
        &mut seen_by_handler,
    )
    .await;
    let load = load.until_now();
    println!(
        "\nLatency from put_record, {LATENCY_ROUNDS} single puts {LATENCY_SPACING:?} apart, \
         one shard, no batching window:"
    );
    report_latency("in process", "the handler sees it", &latencies);
    println!("    {load}");

    let api = runtime_api(binary, 1, "info").await;
    let load = CpuSample::take();
    let latencies = measure_latency(
        &kinesis,
        "latency-runtime-api",
        Arc::clone(&api) as Arc<dyn Invoker>,
        &mut seen_in_log,
    )
    .await;
    let load = load.until_now();
    report_latency(
        "Runtime API",
        "its log line reaches the emulator",
        &latencies,
    );
    println!("    {load}");
    api.shutdown().await;
}

/// Puts single shipments into a fresh one-shard stream read by a mapping to `invoker`;
/// `handler_saw` tells the instant the handler saw each shipment (by id).
async fn measure_latency(
    kinesis: &EmbeddedKinesis,
    stream: &str,
    invoker: Arc<dyn Invoker>,
    handler_saw: &mut mpsc::UnboundedReceiver<(u64, Instant)>,
) -> Latencies {
    create_stream(kinesis, stream);
    let source = Arc::new(kinesis.clone());
    measure_latency_from(
        kinesis,
        stream,
        source,
        invoker,
        handler_saw,
        LATENCY_ROUNDS,
    )
    .await
}

fn create_stream(kinesis: &EmbeddedKinesis, stream: &str) {
    kinesis
        .create_stream(stream, 1)
        .unwrap_or_else(|error| panic!("creating stream {stream}: {error}"));
}

/// [`measure_latency`] on a stream that exists, read from `source`, over `rounds` puts (after
/// a tenth as many unmeasured).
async fn measure_latency_from(
    kinesis: &EmbeddedKinesis,
    stream: &str,
    source: Arc<dyn ShardSource>,
    invoker: Arc<dyn Invoker>,
    handler_saw: &mut mpsc::UnboundedReceiver<(u64, Instant)>,
    rounds: usize,
) -> Latencies {
    let warm_up = (rounds / 10).max(1);
    let (tell, mut calls) = mpsc::unbounded_channel();
    let invoker = Arc::new(Intercepted::new(invoker, Timed { tell }));
    let mut config = MappingConfig::new(FUNCTION, stream, StartingPosition::TrimHorizon);
    config.report_batch_item_failures = true;
    config.function_timeout = FUNCTION_TIMEOUT;
    let mapping = EventSourceMapping::new(config, source, invoker).start();
    mapping
        .wait_for(|status| {
            status.synced
                && status
                    .shards
                    .values()
                    .all(|shard| shard.phase == ShardPhase::CaughtUp)
        })
        .await;
    let mut latencies = Latencies::default();
    for round in 0..(warm_up + rounds) as u64 {
        tokio::time::sleep(LATENCY_SPACING).await;
        let put_at = Instant::now();
        let put = kinesis
            .put_record(stream, shipment_entry(round))
            .unwrap_or_else(|error| panic!("putting into stream {stream}: {error}"));
        let (invoked_at, answered_at) = calls
            .recv()
            .await
            .expect("the mapping invokes the function");
        let status = mapping
            .wait_for(|status| {
                status.shards.get(&*put.shard_id).is_some_and(|shard| {
                    shard.phase == ShardPhase::CaughtUp
                        && matches!(
                            &shard.checkpoint,
                            Some(Checkpoint::SequenceNumber(at)) if *at == put.sequence_number
                        )
                })
            })
            .await;
        let checkpointed_at = Instant::now();
        assert_eq!(
            status.totals().invocations,
            round + 1,
            "one invocation per put"
        );
        // Earlier reports (such as the warm-up's log line) are passed over.
        let handler_at = loop {
            match tokio::time::timeout(REPORT_LIMIT, handler_saw.recv()).await {
                Ok(Some((id, at))) if id == round => break at,
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => panic!("{stream}: no report that shipment {round} was seen"),
            }
        };
        if round as usize >= warm_up {
            latencies.invoked.push(invoked_at - put_at);
            latencies.handler.push(handler_at - put_at);
            latencies.answered.push(answered_at - put_at);
            latencies.checkpointed.push(checkpointed_at - put_at);
        }
    }
    mapping.stop().await;
    latencies
}

fn report_latency(name: &str, handler_stage: &str, latencies: &Latencies) {
    println!("  {name}:");
    let stages = [
        ("the mapping invokes", &latencies.invoked),
        (handler_stage, &latencies.handler),
        ("the answer is back", &latencies.answered),
        (
            "a status watcher sees the checkpoint",
            &latencies.checkpointed,
        ),
    ];
    for (stage, durations) in stages {
        let mut sorted = durations.clone();
        sorted.sort();
        let median = percentile(&sorted, 0.5);
        println!(
            "    until {stage:<37} median {:>7.1} µs, p99 {:>7.1} µs, max {:>8.1} µs{}",
            micros(median),
            micros(percentile(&sorted, 0.99)),
            micros(sorted[sorted.len() - 1]),
            if stage == handler_stage {
                format!(
                    " ({:.2}x the target of {:?})",
                    median.as_secs_f64() / LATENCY_TARGET.as_secs_f64(),
                    LATENCY_TARGET
                )
            } else {
                String::new()
            }
        );
    }
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let index = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// A rate with an SI prefix: `1.23 M`, `456 k`.
fn si(rate: f64) -> String {
    if rate >= 1e6 {
        format!("{:.2} M", rate / 1e6)
    } else {
        format!("{:.0} k", rate / 1e3)
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Forwards the function's "shipment booked" log lines, as the emulator logs them, with the
/// instant each arrived. Every other event and span stays disabled, so it costs nothing.
struct FunctionLines {
    tell: mpsc::UnboundedSender<(u64, Instant)>,
}

impl FunctionLines {
    fn wanted(metadata: &tracing::Metadata<'_>) -> bool {
        // The emulator logs a function's lines under their own target, not its module's: the
        // module's path moved with the crates and the bench lost every line.
        metadata.is_event() && metadata.target() == FUNCTION_LOG_TARGET
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for FunctionLines {
    fn register_callsite(
        &self,
        metadata: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if Self::wanted(metadata) {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }

    fn enabled(
        &self,
        metadata: &tracing::Metadata<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        Self::wanted(metadata)
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let arrived = Instant::now();
        let mut message = Message(String::new());
        event.record(&mut message);
        let text = message.0;
        if !text.contains("shipment booked") {
            return;
        }
        let id = text.split_once("shipment_id=").and_then(|(_, rest)| {
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            rest[..digits].parse().ok()
        });
        if let Some(id) = id {
            let _ = self.tell.send((id, arrived));
        }
    }
}

/// An event's message, as text.
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}
