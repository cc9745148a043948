//! Part 1: many shards on the embedded Kinesis, the shipping function in process, leases in
//! memory. Each shard count runs in a process of its own (this bench binary again, told by
//! [`CHILD_SHARDS`]), so that memory one case freed is not reused by the next and its resident
//! memory is its own.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::kinesis::{EmbeddedKinesis, MAX_PUT_RECORDS_ENTRIES, PutRecordsEntry};
use kinesis_esm::lease::MemoryLeaseStore;
use kinesis_esm::mapping::{EventSourceMapping, MappingStatus, ShardPhase};
use test_support::intercept::{Intercepted, SourceHooks};

use crate::counting_store::{CountingStore, Counts, SCANNED_ITEMS, SCANS};
use crate::measure::{self, Interval, per};
use crate::support::env_or;

/// Set in a child process: the shard count it measures.
pub(crate) const CHILD_SHARDS: &str = "SCALE_CHILD_SHARDS";
/// The prefix of the line a child reports its figures on, as JSON.
const RESULT: &str = "scale-result";
/// A start, a fill or a stop that takes longer than this is broken, not slow.
const LIMIT: Duration = Duration::from_secs(600);
/// How long the shards sit idle before memory is read: the first lease renewals (a third of
/// the failover time, 10 s by default) and the first shard sync after the start are behind.
const SETTLE: Duration = Duration::from_secs(4);

/// What one shard count measured.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Figures {
    pub(crate) shards: f64,
    /// From `start()` to every shard caught up (read to its tip once).
    pub(crate) start_seconds: f64,
    /// The stream's own memory (its shards, empty), per shard, in KiB.
    pub(crate) stream_kib_per_shard: f64,
    /// The mapping's memory (readers, leases, status) per idle shard, in KiB.
    pub(crate) mapping_kib_per_shard: f64,
    /// CPU per idle shard per second, in microseconds, with nothing watching the status.
    pub(crate) idle_cpu_us: f64,
    /// The same with one status watcher that reads the status on every change, as
    /// `RunningMapping::wait_until_idle` (`run --until-idle`) does.
    pub(crate) watched_idle_cpu_us: f64,
    /// `GetRecords` calls per idle shard per second.
    pub(crate) idle_reads: f64,
    /// Status changes per idle shard per second.
    pub(crate) idle_status_changes: f64,
    /// Records settled per second, spread over every shard.
    pub(crate) records_per_second: f64,
    /// CPU per record settled, in microseconds.
    pub(crate) cpu_us_per_record: f64,
    /// From splitting every shard to every child read to its tip, every parent at `SHARD_END`.
    pub(crate) reshard_seconds: f64,
    /// Lease-table scans during the resharding, per parent shard.
    pub(crate) reshard_scans: f64,
    /// Leases those scans read, per parent shard.
    pub(crate) reshard_scanned_items: f64,
    /// CPU per parent shard over the resharding, in microseconds.
    pub(crate) reshard_cpu_us: f64,
    /// `stop()`: every reader gives its lease up.
    pub(crate) stop_seconds: f64,
    /// Cores the rest of the machine used during the idle intervals.
    pub(crate) other_cores: f64,
}

/// Runs each shard count in a child process and prints the figures and the ratios of the
/// largest to the smallest.
pub(crate) fn compare(shard_counts: &[u32]) {
    let mut all = Vec::new();
    for &shards in shard_counts {
        let output = Command::new(std::env::current_exe().expect("this bench's path"))
            .env(CHILD_SHARDS, shards.to_string())
            .output()
            .expect("the bench runs itself as a child");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the {shards}-shard case failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let line = stdout
            .lines()
            .find_map(|line| line.strip_prefix(RESULT))
            .unwrap_or_else(|| panic!("the {shards}-shard case reported no figures:\n{stdout}"));
        let figures: Figures = serde_json::from_str(line.trim()).expect("a child's figures");
        print(&figures);
        all.push(figures);
    }
    let (Some(small), Some(large)) = (all.first(), all.last()) else {
        return;
    };
    if all.len() < 2 {
        return;
    }
    println!(
        "  per-shard ratios, {:.0} shards against {:.0} (1.00 = flat; well above 1 grows faster \
         than the shard count):",
        large.shards, small.shards
    );
    let ratio = |of: fn(&Figures) -> f64| per(of(large), of(small));
    println!(
        "    start time per shard {:.2}, mapping memory per shard {:.2}, stream memory per shard \
         {:.2}, idle CPU per shard {:.2} ({:.2} watched), GetRecords per idle shard {:.2}, \
         CPU per record {:.2}, resharding time per shard {:.2}, lease-table scans per \
         parent {:.2}, leases scanned per parent {:.2}, resharding CPU per parent {:.2}, stop \
         time per shard {:.2}",
        ratio(|f| f.start_seconds / f.shards),
        ratio(|f| f.mapping_kib_per_shard),
        ratio(|f| f.stream_kib_per_shard),
        ratio(|f| f.idle_cpu_us),
        ratio(|f| f.watched_idle_cpu_us),
        ratio(|f| f.idle_reads),
        ratio(|f| f.cpu_us_per_record),
        ratio(|f| f.reshard_seconds / f.shards),
        ratio(|f| f.reshard_scans),
        ratio(|f| f.reshard_scanned_items),
        ratio(|f| f.reshard_cpu_us),
        ratio(|f| f.stop_seconds / f.shards),
    );
}

fn print(f: &Figures) {
    println!(
        "  {:>5.0} shards: every shard reading {:.2} s after start; memory per idle shard {:.1} \
         KiB (mapping) + {:.1} KiB (stream); idle: {:.1} us CPU per shard per second ({:.1} us \
         with a status watcher), {:.2} GetRecords and {:.2} status changes per shard per second; \
         {:.0} records/s over every shard ({:.2} us CPU per record); every shard split: children \
         reading {:.2} s later, {:.2} lease-table scans reading {:.0} leases and {:.0} us CPU per \
         parent; stop {:.2} s; rest of the machine {:.2} cores",
        f.shards,
        f.start_seconds,
        f.mapping_kib_per_shard,
        f.stream_kib_per_shard,
        f.idle_cpu_us,
        f.watched_idle_cpu_us,
        f.idle_reads,
        f.idle_status_changes,
        f.records_per_second,
        f.cpu_us_per_record,
        f.reshard_seconds,
        f.reshard_scans,
        f.reshard_scanned_items,
        f.reshard_cpu_us,
        f.stop_seconds,
        f.other_cores,
    );
}

/// Counts `GetRecords` calls.
#[derive(Default)]
struct CountReads(AtomicU64);

impl SourceHooks for CountReads {
    fn before_get_records(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// The child's work: measures `shards` shards and prints the figures on one line.
pub(crate) fn child(shards: u32) {
    let runtime = crate::support::runtime();
    let figures = runtime.block_on(measure_shards(shards));
    let figures = serde_json::to_string(&figures).expect("figures as JSON");
    println!("{RESULT} {figures}");
}

async fn measure_shards(shards: u32) -> Figures {
    let idle = Duration::from_secs(env_or("SCALE_IDLE_SECONDS", 10));
    let records: u64 = env_or("SCALE_RECORDS", 100_000);
    let count = f64::from(shards);
    // Room for the children of a split of every shard (the default limit is 500 open shards).
    let kinesis = EmbeddedKinesis::builder()
        .shard_limit(2 * shards as usize)
        .build();
    let stream = "scale";
    let before_stream = measure::rss_kib();
    kinesis
        .create_stream(stream, shards)
        .unwrap_or_else(|error| panic!("creating {stream}: {error}"));
    let before_mapping = measure::rss_kib();
    let source = Arc::new(Intercepted::new(
        Arc::new(kinesis.clone()),
        CountReads::default(),
    ));
    let mut config = MappingConfig::new("shipping", stream, StartingPosition::TrimHorizon);
    config.report_batch_item_failures = true;
    let counts = Arc::new(Counts::default());
    let mapping = EventSourceMapping::new(
        config,
        source.clone(),
        Arc::new(InProcess::service(shipping::function())),
    )
    .lease_store(Arc::new(CountingStore::new(
        Arc::new(MemoryLeaseStore::new()),
        &counts,
    )))
    .start();
    let start = measure::poll_until(&mapping, LIMIT, |status| {
        measure::every_shard_caught_up(status, shards as usize)
    })
    .await
    .unwrap_or_else(|| panic!("{shards} shards were not all read within {LIMIT:?}"));
    tokio::time::sleep(SETTLE).await;
    let idle_memory = measure::rss_kib();

    let reads_before = source.0.load(Ordering::Relaxed);
    let bare = Interval::start();
    tokio::time::sleep(idle).await;
    let bare = bare.end();
    let reads = source.0.load(Ordering::Relaxed) - reads_before;

    let changes = Arc::new(AtomicU64::new(0));
    let watcher = {
        let mut status = mapping.status_receiver();
        let changes = Arc::clone(&changes);
        tokio::spawn(async move {
            while status.changed().await.is_ok() {
                changes.fetch_add(1, Ordering::Relaxed);
                std::hint::black_box(MappingStatus::is_idle(&status.borrow_and_update()));
            }
        })
    };
    let watched = Interval::start();
    tokio::time::sleep(idle).await;
    let watched = watched.end();
    watcher.abort();
    let changes = changes.load(Ordering::Relaxed);

    let filling = Interval::start();
    let producer = {
        let kinesis = kinesis.clone();
        tokio::task::spawn_blocking(move || put_shipments(&kinesis, stream, records))
    };
    let settled = measure::poll_until(&mapping, LIMIT, |status| measure::acked(status) >= records)
        .await
        .unwrap_or_else(|| panic!("{records} records were not all settled within {LIMIT:?}"));
    producer.await.expect("the producer does not panic");
    let filling = filling.end();

    let before = counts.snapshot();
    let resharding = Interval::start();
    split_every_shard(&kinesis, stream);
    let resharded = measure::poll_until(&mapping, LIMIT, |status| {
        let phases = |phase| {
            status
                .shards
                .values()
                .filter(|shard| shard.phase == phase)
                .count()
        };
        phases(ShardPhase::Ended) == shards as usize
            && phases(ShardPhase::CaughtUp) == 2 * shards as usize
    })
    .await
    .unwrap_or_else(|| panic!("{shards} splits not read through within {LIMIT:?}"));
    let resharding = resharding.end();
    let after = counts.snapshot();

    let stopping = Instant::now();
    let status = mapping.stop().await;
    let stop_seconds = stopping.elapsed().as_secs_f64();
    let per_shard: BTreeMap<_, _> = status
        .shards
        .values()
        .map(|shard| (shard.shard_id.as_str(), shard.acked))
        .collect();
    assert_eq!(
        per_shard.values().sum::<u64>(),
        records,
        "every record acked once"
    );
    let idle_seconds = bare.seconds;
    Figures {
        shards: count,
        start_seconds: start.as_secs_f64(),
        stream_kib_per_shard: per(before_mapping as f64 - before_stream as f64, count),
        mapping_kib_per_shard: per(idle_memory as f64 - before_mapping as f64, count),
        idle_cpu_us: bare.own_ns as f64 / 1e3 / count / idle_seconds,
        watched_idle_cpu_us: watched.own_ns as f64 / 1e3 / count / watched.seconds,
        idle_reads: reads as f64 / count / idle_seconds,
        idle_status_changes: changes as f64 / count / watched.seconds,
        records_per_second: records as f64 / settled.as_secs_f64(),
        cpu_us_per_record: filling.own_ns as f64 / 1e3 / records as f64,
        reshard_seconds: resharded.as_secs_f64(),
        reshard_scans: per((after[SCANS] - before[SCANS]) as f64, count),
        reshard_scanned_items: per((after[SCANNED_ITEMS] - before[SCANNED_ITEMS]) as f64, count),
        reshard_cpu_us: resharding.own_ns as f64 / 1e3 / count,
        stop_seconds,
        other_cores: (bare.other_cores + watched.other_cores) / 2.0,
    }
}

/// Splits every open shard of `stream` in the middle of its hash key range.
fn split_every_shard(kinesis: &EmbeddedKinesis, stream: &str) {
    let shards = kinesis
        .list_shards(stream)
        .unwrap_or_else(|error| panic!("listing {stream}: {error}"));
    for shard in shards
        .iter()
        .filter(|shard| shard.ending_sequence_number.is_none())
    {
        let range = shard.hash_key_range;
        let middle =
            range.starting_hash_key + (range.ending_hash_key - range.starting_hash_key) / 2;
        kinesis
            .split_shard(stream, &shard.shard_id, &(middle + 1).to_string())
            .unwrap_or_else(|error| panic!("splitting {}: {error}", shard.shard_id));
    }
}

/// Puts `records` shipments, spread over every shard by their partition keys.
fn put_shipments(kinesis: &EmbeddedKinesis, stream: &str, records: u64) {
    let ids: Vec<u64> = (0..records).collect();
    for chunk in ids.chunks(MAX_PUT_RECORDS_ENTRIES) {
        let entries = chunk.iter().map(|&id| shipment_entry(id)).collect();
        kinesis
            .put_records(stream, entries)
            .unwrap_or_else(|error| panic!("putting into {stream}: {error}"));
    }
}

pub(crate) fn shipment_entry(id: u64) -> PutRecordsEntry {
    PutRecordsEntry::new(format!("shipment-{id}"), shipment_data(id))
}

pub(crate) fn shipment_data(id: u64) -> Vec<u8> {
    let shipment = shipping::Shipment {
        id,
        address: format!("{id} Harbour Road"),
        carrier: shipping::CARRIERS[(id % 2) as usize].to_owned(),
    };
    serde_json::to_vec(&shipment).expect("a shipment serialises")
}
