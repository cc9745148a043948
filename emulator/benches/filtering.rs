//! Event filtering's cost (`docs/filtering.md`), with shipments of which one in ten is for `dhl`
//! and the filter `{"data": {"carrier": ["dhl"]}}`, which passes them.
//!
//! Run with `cargo bench -p kinesis-esm --bench filtering`. `FILTER_BENCH_RECORDS` (records per
//! stream, default 200,000) and `FILTER_BENCH_RUNS` (runs per case, default 5) change its length.
//!
//! **Per record, in process.** `FilterCriteria::matches` over the records, timed per record,
//! against the same loop with no filter (the baseline). Target: under 1 µs per record of the
//! thread's CPU time (wall time is printed too; on a shared machine it also counts the time
//! other processes held the core).
//!
//! **Through a mapping.** One shard of the embedded Kinesis, the shipping handler in process,
//! `BatchSize` 100, each run timed from `start()` until the checkpoint is the last record: no
//! `FilterCriteria`, `FilterCriteria: {}` (what the template reader makes of it: no filter), and
//! the 10% filter. The first two are the unfiltered path; their ratio should be 1 within the
//! noise. Cases alternate within each round, so a change in the machine's load spreads over all
//! of them. Every run checks what was delivered and filtered.
//!
//! The machine may be shared: the load average is printed before and after.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use bytes::Bytes;
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::filter::{FilterCriteria, Pattern};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::kinesis::{EmbeddedKinesis, MAX_PUT_RECORDS_ENTRIES, PutRecordsEntry};
use kinesis_esm::lease::Checkpoint;
use kinesis_esm::mapping::EventSourceMapping;
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::Record;
use shipping::Shipment;
use support::{env_or, load_average, median};

mod support;

const DEFAULT_RECORDS: usize = 200_000;
const DEFAULT_RUNS: usize = 5;
const PATTERN: &str = r#"{"data": {"carrier": ["dhl"]}}"#;
const PER_RECORD_TARGET: Duration = Duration::from_micros(1);
/// A run that has not checkpointed everything by then is broken, not slow.
const RUN_LIMIT: Duration = Duration::from_secs(600);

fn main() {
    let records = env_or("FILTER_BENCH_RECORDS", DEFAULT_RECORDS);
    let runs = env_or("FILTER_BENCH_RUNS", DEFAULT_RUNS).max(1);
    println!(
        "filtering: {records} shipments (1 in 10 for dhl), {runs} runs per case; load average {}",
        load_average()
    );
    per_record(records, runs);
    let runtime = support::runtime();
    runtime.block_on(through_a_mapping(records, runs));
    println!("load average after: {}", load_average());
}

/// One in ten shipments is for dhl, the others for ups: both carriers the function books.
fn carrier(id: u64) -> &'static str {
    if id.is_multiple_of(10) { "dhl" } else { "ups" }
}

fn shipment_data(id: u64) -> Vec<u8> {
    let shipment = Shipment {
        id,
        address: "1 Main St".to_owned(),
        carrier: carrier(id).to_owned(),
    };
    serde_json::to_vec(&shipment).expect("a shipment serialises")
}

fn dhl_filter() -> FilterCriteria {
    FilterCriteria::new(vec![Pattern::parse(PATTERN).expect("the pattern parses")])
}

fn per_record(records: usize, runs: usize) {
    let batch: Vec<Record> = (0..records as u64)
        .map(|id| Record {
            sequence_number: (id + 1).to_string().parse().expect("a sequence number"),
            partition_key: format!("shipment-{id}").into(),
            data: Bytes::from(shipment_data(id)),
            approximate_arrival: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        })
        .collect();
    let cases = [
        ("no filter", FilterCriteria::default()),
        ("dhl filter", dhl_filter()),
    ];
    let mut medians = Vec::new();
    for (name, criteria) in &cases {
        let mut wall = Vec::with_capacity(runs);
        let mut on_cpu = Vec::with_capacity(runs);
        for _ in 0..runs {
            let cpu_before = thread_cpu_time();
            let started = Instant::now();
            let kept = batch
                .iter()
                .filter(|record| criteria.matches(black_box(record)))
                .count();
            wall.push(started.elapsed().as_secs_f64() / records as f64);
            on_cpu.push((thread_cpu_time() - cpu_before).as_secs_f64() / records as f64);
            let expected = if criteria.is_empty() {
                records
            } else {
                records.div_ceil(10)
            };
            assert_eq!(black_box(kept), expected, "{name}: records kept");
        }
        let (wall, on_cpu) = (median(wall), median(on_cpu));
        println!(
            "  in process, {name}: {:.0} ns of CPU per record ({:.0} ns wall; medians)",
            on_cpu * 1e9,
            wall * 1e9
        );
        medians.push(on_cpu);
    }
    let cost = medians[1] - medians[0];
    println!(
        "  filtering cost: {:.0} ns of CPU per record (target under {} ns): {}",
        cost * 1e9,
        PER_RECORD_TARGET.as_nanos(),
        if cost < PER_RECORD_TARGET.as_secs_f64() {
            "met"
        } else {
            "NOT met"
        }
    );
}

/// The time this thread has spent on a CPU (the kernel's `sum_exec_runtime`, in nanoseconds, the
/// first field of `/proc/thread-self/schedstat`). On a shared machine the wall time of a loop
/// also counts the time other processes held the core; this does not.
fn thread_cpu_time() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat")
        .expect("/proc/thread-self/schedstat is readable (Linux)");
    let nanos = text
        .split_whitespace()
        .next()
        .and_then(|field| field.parse().ok())
        .expect("schedstat starts with the thread's CPU time in nanoseconds");
    Duration::from_nanos(nanos)
}

async fn through_a_mapping(records: usize, runs: usize) {
    let kinesis = EmbeddedKinesis::new();
    let stream = "filtering";
    kinesis
        .create_stream(stream, 1)
        .expect("the stream is created");
    let ids: Vec<u64> = (0..records as u64).collect();
    let mut last = None;
    for chunk in ids.chunks(MAX_PUT_RECORDS_ENTRIES) {
        let entries = chunk
            .iter()
            .map(|&id| PutRecordsEntry::new(format!("shipment-{id}"), shipment_data(id)))
            .collect();
        let puts = kinesis
            .put_records(stream, entries)
            .expect("the records are put");
        last = puts.last().map(|put| put.sequence_number.clone());
    }
    let last = last.expect("records were put");
    let cases = [
        ("no FilterCriteria", None),
        ("FilterCriteria: {}", Some(FilterCriteria::new(Vec::new()))),
        ("dhl filter (10%)", Some(dhl_filter())),
    ];
    let mut rates = vec![Vec::with_capacity(runs); cases.len()];
    for _ in 0..runs {
        for ((_, criteria), rates) in cases.iter().zip(&mut rates) {
            rates.push(run_once(&kinesis, stream, &last, records, criteria.clone()).await);
        }
    }
    let medians: Vec<f64> = rates.into_iter().map(median).collect();
    for ((name, _), median) in cases.iter().zip(&medians) {
        println!(
            "  through a mapping, {name}: {:.0} records/s read and checkpointed (median)",
            median
        );
    }
    println!(
        "  FilterCriteria: {{}} against none: {:.3}x (the unfiltered path; 1 within the noise)",
        medians[1] / medians[0]
    );
    println!(
        "  dhl filter against none: {:.3}x (10% of the records invoke the function)",
        medians[2] / medians[0]
    );
}

/// One timed run: records per second read and checkpointed.
async fn run_once(
    kinesis: &EmbeddedKinesis,
    stream: &str,
    last: &SequenceNumber,
    records: usize,
    criteria: Option<FilterCriteria>,
) -> f64 {
    let mut config = MappingConfig::new("shipping", stream, StartingPosition::TrimHorizon);
    config.report_batch_item_failures = true;
    config.function_timeout = Duration::from_secs(60);
    let filtered = criteria
        .as_ref()
        .is_some_and(|criteria| !criteria.is_empty());
    if let Some(criteria) = criteria {
        config.filter_criteria = criteria;
    }
    let invoker = Arc::new(InProcess::service(shipping::function()));
    let started = Instant::now();
    let mapping = EventSourceMapping::new(config, Arc::new(kinesis.clone()), invoker).start();
    let checkpoint = Checkpoint::SequenceNumber(last.clone());
    let done = tokio::time::timeout(
        RUN_LIMIT,
        mapping.wait_for(|status| {
            status
                .shards
                .values()
                .any(|shard| shard.checkpoint.as_ref() == Some(&checkpoint))
        }),
    )
    .await;
    let elapsed = started.elapsed();
    let status = mapping.stop().await;
    assert!(
        done.is_ok(),
        "not every record was checkpointed within {RUN_LIMIT:?}"
    );
    let totals = status.totals();
    let delivered = if filtered {
        records.div_ceil(10)
    } else {
        records
    } as u64;
    assert_eq!(
        (
            totals.delivered,
            totals.acked,
            totals.filtered,
            totals.retries
        ),
        (delivered, delivered, records as u64 - delivered, 0),
        "delivered, acked, filtered, retries"
    );
    records as f64 / elapsed.as_secs_f64()
}
