//! The cost of durability: the embedded Kinesis and the lease store in memory (plain `run`)
//! against the same kept in a state directory (`run --state-dir`), in the same run of the bench.
//!
//! Run with `cargo bench -p kinesis-esm --bench durability`. `DURABILITY_BENCH_RECORDS`
//! (records per run, default 100,000) and `DURABILITY_BENCH_RUNS` (runs, default 5) change its
//! length.
//!
//! Each run, for each of the two cases in turn (so that whatever else the machine does weighs on
//! both alike), starts a fresh embedded Kinesis (and, with a state directory, a fresh
//! directory), and:
//!
//! - **PutRecords of 500.** Fills a one-shard stream with valid shipments, 500 records a
//!   request, timing each request. With a state directory a request answers only once its
//!   records are committed to the journal, as `run --state-dir` answers producers.
//! - **In-process throughput.** Runs a fresh mapping (`TRIM_HORIZON`, `BatchSize` 100,
//!   `ReportBatchItemFailures`, the shipping handler in process) until the shard's checkpoint
//!   is its last record, with the lease store of the case (memory, or the state directory's:
//!   every checkpoint a committed write). Every record must be delivered once and acked.
//! - **Size.** With a state directory: its size on disk once the records are in and the
//!   checkpoints written, and that per record.
//!
//! It prints the medians of each case and their ratios (state directory / memory).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::kinesis::{EmbeddedKinesis, MAX_PUT_RECORDS_ENTRIES, PutRecordsEntry};
use kinesis_esm::lease::{Checkpoint, LeaseStore, MemoryLeaseStore};
use kinesis_esm::mapping::EventSourceMapping;
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::state::StateDir;
use shipping::Shipment;
use support::{env_or, load_average, median};

mod support;

const DEFAULT_RECORDS: usize = 100_000;
const DEFAULT_RUNS: usize = 5;
const STREAM: &str = "shipments";
const FUNCTION: &str = "shipping";
/// A run that has not checkpointed everything by then is broken, not slow.
const RUN_LIMIT: Duration = Duration::from_secs(600);

/// Where the embedded Kinesis and the leases live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keeping {
    Memory,
    StateDir,
}

impl Keeping {
    fn name(self) -> &'static str {
        match self {
            Self::Memory => "in memory",
            Self::StateDir => "--state-dir",
        }
    }
}

/// What one run of one case measured.
struct Measured {
    /// Each PutRecords request's time.
    puts: Vec<Duration>,
    /// Records per second through the mapping.
    rate: f64,
    /// The state directory's size, in bytes, after the run.
    bytes_on_disk: Option<u64>,
}

fn main() {
    let records = env_or("DURABILITY_BENCH_RECORDS", DEFAULT_RECORDS).max(1);
    let runs = env_or("DURABILITY_BENCH_RUNS", DEFAULT_RUNS).max(1);
    let runtime = support::runtime();
    println!(
        "{records} shipments per run, {runs} runs, one shard; {} cores; load average at the \
         start: {}",
        std::thread::available_parallelism().map_or(1, usize::from),
        load_average()
    );
    let base = std::env::temp_dir().join(format!("kinesis-esm-durability-{}", std::process::id()));
    let mut measured: Vec<(Keeping, Measured)> = Vec::new();
    runtime.block_on(async {
        for run in 0..runs {
            for keeping in [Keeping::Memory, Keeping::StateDir] {
                let dir = base.join(format!("run-{run}"));
                measured.push((keeping, measure(keeping, &dir, records).await));
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    });
    let _ = std::fs::remove_dir_all(&base);
    report(&measured, records);
    println!("load average at the end: {}", load_average());
}

async fn measure(keeping: Keeping, dir: &Path, records: usize) -> Measured {
    let builder = EmbeddedKinesis::builder();
    let (kinesis, leases, state): (EmbeddedKinesis, Arc<dyn LeaseStore>, _) = match keeping {
        Keeping::Memory => (builder.build(), Arc::new(MemoryLeaseStore::new()), None),
        Keeping::StateDir => {
            let state = StateDir::open(dir).unwrap_or_else(|error| panic!("{error}"));
            let kinesis = state
                .embedded_kinesis(builder)
                .unwrap_or_else(|error| panic!("{error}"));
            let leases = state
                .lease_store()
                .unwrap_or_else(|error| panic!("{error}"));
            (kinesis, Arc::new(leases), Some(state))
        }
    };
    kinesis
        .create_stream(STREAM, 1)
        .unwrap_or_else(|error| panic!("creating stream {STREAM}: {error}"));
    let (puts, last) = fill(&kinesis, records);

    let mut config = MappingConfig::new(FUNCTION, STREAM, StartingPosition::TrimHorizon);
    config.batch_size = 100;
    config.report_batch_item_failures = true;
    config.function_timeout = Duration::from_secs(60);
    let invoker = Arc::new(InProcess::service(shipping::function()));
    let started = Instant::now();
    let mapping = EventSourceMapping::new(config, Arc::new(kinesis.clone()), invoker)
        .lease_store(leases)
        .start();
    let checkpointed = tokio::time::timeout(
        RUN_LIMIT,
        mapping.wait_for(|status| {
            status.shards.values().any(|shard| {
                matches!(&shard.checkpoint, Some(Checkpoint::SequenceNumber(at)) if *at == last)
            })
        }),
    )
    .await;
    let elapsed = started.elapsed();
    let status = mapping.stop().await;
    assert!(
        checkpointed.is_ok(),
        "{}: not every record was checkpointed within {RUN_LIMIT:?}: {status:#?}",
        keeping.name()
    );
    let totals = status.totals();
    assert_eq!(
        (totals.acked, totals.delivered, totals.retries),
        (records as u64, records as u64, 0),
        "{}: every shipment is delivered once and acked (acked, delivered, retries)",
        keeping.name()
    );
    drop(kinesis);
    drop(state);
    Measured {
        puts,
        rate: records as f64 / elapsed.as_secs_f64(),
        bytes_on_disk: (keeping == Keeping::StateDir).then(|| size_on_disk(dir)),
    }
}

/// Puts `records` shipments, 500 a request, timing each request; returns the times and the
/// last record's sequence number.
fn fill(kinesis: &EmbeddedKinesis, records: usize) -> (Vec<Duration>, SequenceNumber) {
    let ids: Vec<u64> = (0..records as u64).collect();
    let mut times = Vec::new();
    let mut last = None;
    for chunk in ids.chunks(MAX_PUT_RECORDS_ENTRIES) {
        let entries: Vec<PutRecordsEntry> = chunk.iter().map(|&id| shipment_entry(id)).collect();
        let started = Instant::now();
        let puts = kinesis
            .put_records(STREAM, entries)
            .unwrap_or_else(|error| panic!("putting into stream {STREAM}: {error}"));
        times.push(started.elapsed());
        last = puts.into_iter().last().map(|put| put.sequence_number);
    }
    (times, last.expect("at least one record"))
}

fn shipment_entry(id: u64) -> PutRecordsEntry {
    let shipment = Shipment {
        id,
        address: "1 Main St".to_owned(),
        carrier: "dhl".to_owned(),
    };
    let data = serde_json::to_vec(&shipment).expect("a shipment serialises");
    PutRecordsEntry::new(format!("shipment-{id}"), data)
}

fn report(measured: &[(Keeping, Measured)], records: usize) {
    let of = |keeping: Keeping| measured.iter().filter(move |(k, _)| *k == keeping);
    let put_median = |keeping| {
        let mut times: Vec<Duration> = of(keeping)
            .flat_map(|(_, measured)| measured.puts.iter().copied())
            .collect();
        times.sort_unstable();
        times[times.len() / 2]
    };
    let rate_median = |keeping| median(of(keeping).map(|(_, measured)| measured.rate));
    println!("\nPutRecords of {MAX_PUT_RECORDS_ENTRIES} (median of every request):");
    for keeping in [Keeping::Memory, Keeping::StateDir] {
        println!(
            "  {:<11} {:>9.3} ms",
            keeping.name(),
            put_median(keeping).as_secs_f64() * 1e3
        );
    }
    println!(
        "  --state-dir / in memory = {:.2}",
        put_median(Keeping::StateDir).as_secs_f64() / put_median(Keeping::Memory).as_secs_f64()
    );
    println!("In-process throughput, BatchSize 100 (median of the runs):");
    for keeping in [Keeping::Memory, Keeping::StateDir] {
        println!(
            "  {:<11} {:>9.0} records/s",
            keeping.name(),
            rate_median(keeping)
        );
    }
    println!(
        "  --state-dir / in memory = {:.2}",
        rate_median(Keeping::StateDir) / rate_median(Keeping::Memory)
    );
    let size = median(
        of(Keeping::StateDir)
            .filter_map(|(_, measured)| measured.bytes_on_disk)
            .map(|bytes| bytes as f64),
    );
    println!(
        "State directory after {records} shipments and their checkpoints (median): {:.1} MiB, \
         {:.0} bytes per record",
        size / (1024.0 * 1024.0),
        size / records as f64
    );
}

/// The bytes of every file under `dir`.
fn size_on_disk(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending: Vec<PathBuf> = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(metadata) if metadata.is_dir() => pending.push(entry.path()),
                Ok(metadata) => total += metadata.len(),
                Err(_) => {}
            }
        }
    }
    total
}
