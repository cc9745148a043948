//! How fast the embedded Kinesis puts, reads and wakes readers.
//!
//! Run with `cargo bench -p kinesis-esm --bench embedded_kinesis`.
//!
//! Each figure is printed next to a baseline measured in the same run, on the same machine:
//! puts against hashing the partition keys alone (the least a put must do), reads against
//! cloning and dropping the same records out of a plain `Vec` (the least a read must do).
//! Single-threaded figures are the thread's own CPU time (from `/proc/thread-self/schedstat`
//! where the kernel offers it), so that other work on a shared machine does not inflate them;
//! wall time is printed beside it.

use std::hint::black_box;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kinesis_esm::kinesis::{EmbeddedKinesis, PutRecordsEntry};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::{IteratorPosition, Record, ShardSource};
use md5::{Digest, Md5};

const STREAM: &str = "bench";
const SHARDS: u32 = 8;
const BATCH: usize = 500;
const BATCHES: usize = 800;
const RECORDS: usize = BATCH * BATCHES;
const PAYLOAD: usize = 100;
const LIMIT: usize = 10_000;

fn main() {
    let kinesis = EmbeddedKinesis::new();
    let batches: Vec<Vec<PutRecordsEntry>> = (0..BATCHES)
        .map(|batch| {
            (0..BATCH)
                .map(|i| {
                    let payload = Bytes::copy_from_slice(&[(i % 251) as u8; PAYLOAD]);
                    PutRecordsEntry::new(format!("customer-{batch}-{i}"), payload)
                })
                .collect()
        })
        .collect();

    let hashing = best_of_three(|| {
        let stopwatch = Stopwatch::start();
        for batch in &batches {
            for entry in batch {
                black_box(Md5::digest(entry.partition_key.as_bytes()));
            }
        }
        stopwatch.per_record()
    });
    // Each run fills a fresh stream; the last one stays for the reads.
    let putting = best_of_three(|| {
        let _ = kinesis.delete_stream(STREAM);
        kinesis.create_stream(STREAM, SHARDS).unwrap();
        let batches = batches.clone();
        let stopwatch = Stopwatch::start();
        for batch in batches {
            black_box(kinesis.put_records(STREAM, batch).unwrap());
        }
        stopwatch.per_record()
    });
    println!(
        "PutRecords, {BATCH} records of {PAYLOAD} B into {SHARDS} shards: {putting}; \
         MD5 of the keys alone: {hashing} (ratio {:.1})",
        putting.ratio(&hashing)
    );

    let shard_ids: Vec<String> = kinesis
        .list_shards(STREAM)
        .unwrap()
        .into_iter()
        .map(|shard| shard.shard_id)
        .collect();
    // Reads a shard from its start to its end, dropping each output as a consumer would.
    let read_shard = |shard_id: &str| -> usize {
        let mut iterator = kinesis
            .get_shard_iterator(STREAM, shard_id, &IteratorPosition::TrimHorizon)
            .unwrap();
        let mut read = 0;
        loop {
            let output = black_box(kinesis.get_records(&iterator, LIMIT).unwrap());
            read += output.records.len();
            if output.records.is_empty() {
                return read;
            }
            iterator = output.next_shard_iterator.unwrap();
        }
    };

    // The baseline holds the same records, in shard order, in one Vec.
    let all: Vec<Record> = shard_ids
        .iter()
        .flat_map(|shard_id| {
            let mut records = Vec::new();
            let mut iterator = kinesis
                .get_shard_iterator(STREAM, shard_id, &IteratorPosition::TrimHorizon)
                .unwrap();
            loop {
                let output = kinesis.get_records(&iterator, LIMIT).unwrap();
                if output.records.is_empty() {
                    return records;
                }
                records.extend(output.records);
                iterator = output.next_shard_iterator.unwrap();
            }
        })
        .collect();
    assert_eq!(all.len(), RECORDS);
    let cloning = best_of_three(|| {
        let stopwatch = Stopwatch::start();
        for chunk in all.chunks(LIMIT) {
            black_box(chunk.to_vec());
        }
        stopwatch.per_record()
    });
    let reading = best_of_three(|| {
        let stopwatch = Stopwatch::start();
        let read: usize = shard_ids.iter().map(|shard_id| read_shard(shard_id)).sum();
        assert_eq!(read, RECORDS);
        stopwatch.per_record()
    });
    println!(
        "GetRecords, Limit {LIMIT}, {SHARDS} shards one after another: {reading}; \
         cloning and dropping from a Vec: {cloning} (ratio {:.1})",
        reading.ratio(&cloning)
    );

    // The embedded Kinesis' own share: the calls alone, with the records dropped afterwards.
    let cloning_only = best_of_three(|| {
        let stopwatch = Stopwatch::start();
        let clones: Vec<Vec<Record>> = all.chunks(LIMIT).map(<[Record]>::to_vec).collect();
        let time = stopwatch.per_record();
        drop(black_box(clones));
        time
    });
    let reading_only = best_of_three(|| {
        let mut outputs = Vec::with_capacity(RECORDS / LIMIT + 2 * SHARDS as usize);
        let stopwatch = Stopwatch::start();
        for shard_id in &shard_ids {
            let mut iterator = kinesis
                .get_shard_iterator(STREAM, shard_id, &IteratorPosition::TrimHorizon)
                .unwrap();
            loop {
                let output = kinesis.get_records(&iterator, LIMIT).unwrap();
                let Some(next) = output.next_shard_iterator.clone() else {
                    break;
                };
                let done = output.records.is_empty();
                outputs.push(output);
                if done {
                    break;
                }
                iterator = next;
            }
        }
        let time = stopwatch.per_record();
        let read: usize = outputs.iter().map(|output| output.records.len()).sum();
        assert_eq!(read, RECORDS);
        drop(black_box(outputs));
        time
    });
    println!(
        "GetRecords alone (the records dropped after timing): {reading_only}; cloning alone: \
         {cloning_only} (ratio {:.1})",
        reading_only.ratio(&cloning_only)
    );

    // As the event source mapping reads: a little behind the producer, so the records read
    // were put a moment ago. Each round puts 10,000 records, then reads every shard once.
    let pipelined = best_of_three(|| {
        const PIPELINE: &str = "pipeline";
        let _ = kinesis.delete_stream(PIPELINE);
        kinesis.create_stream(PIPELINE, SHARDS).unwrap();
        let mut iterators: Vec<String> = kinesis
            .list_shards(PIPELINE)
            .unwrap()
            .iter()
            .map(|shard| {
                kinesis
                    .get_shard_iterator(PIPELINE, &shard.shard_id, &IteratorPosition::TrimHorizon)
                    .unwrap()
            })
            .collect();
        let mut total = PerRecord::ZERO;
        let mut read = 0;
        for round in batches.chunks(LIMIT / BATCH) {
            for batch in round {
                kinesis.put_records(PIPELINE, batch.clone()).unwrap();
            }
            let stopwatch = Stopwatch::start();
            for iterator in &mut iterators {
                let output = black_box(kinesis.get_records(iterator, LIMIT).unwrap());
                read += output.records.len();
                *iterator = output.next_shard_iterator.unwrap();
            }
            total += stopwatch.per_record();
        }
        assert_eq!(read, RECORDS);
        total
    });
    kinesis.delete_stream("pipeline").unwrap();
    println!(
        "GetRecords, Limit {LIMIT}, {SHARDS} shards read right after each 10,000 records put: \
         {pipelined}"
    );

    let parallel = best_of_three(|| {
        let stopwatch = Stopwatch::start();
        std::thread::scope(|scope| {
            let readers: Vec<_> = shard_ids
                .iter()
                .map(|shard_id| scope.spawn(|| read_shard(shard_id)))
                .collect();
            let read: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();
            assert_eq!(read, RECORDS);
        });
        stopwatch.per_record()
    });
    println!(
        "GetRecords, Limit {LIMIT}, {SHARDS} shards on {SHARDS} threads ({} cores): {:.0} \
         ns/record of wall time ({:.2} M records/s)",
        std::thread::available_parallelism().map_or(1, usize::from),
        parallel.wall_ns,
        1e3 / parallel.wall_ns
    );

    wake_latency();
}

/// Time per record, on the thread's CPU and on the wall.
#[derive(Clone, Copy)]
struct PerRecord {
    cpu_ns: Option<f64>,
    wall_ns: f64,
}

impl PerRecord {
    const ZERO: Self = Self {
        cpu_ns: Some(0.0),
        wall_ns: 0.0,
    };

    /// The figure to compare: CPU time where known, else wall time.
    fn ns(&self) -> f64 {
        self.cpu_ns.unwrap_or(self.wall_ns)
    }

    fn ratio(&self, baseline: &Self) -> f64 {
        self.ns() / baseline.ns()
    }
}

impl std::ops::AddAssign for PerRecord {
    fn add_assign(&mut self, more: Self) {
        self.cpu_ns = self.cpu_ns.zip(more.cpu_ns).map(|(a, b)| a + b);
        self.wall_ns += more.wall_ns;
    }
}

impl std::fmt::Display for PerRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cpu_ns {
            Some(cpu_ns) => write!(
                f,
                "{cpu_ns:.0} ns/record of CPU ({:.2} M records/s), {:.0} ns of wall time",
                1e3 / cpu_ns,
                self.wall_ns
            ),
            None => write!(
                f,
                "{:.0} ns/record of wall time ({:.2} M records/s)",
                self.wall_ns,
                1e3 / self.wall_ns
            ),
        }
    }
}

struct Stopwatch {
    wall: Instant,
    cpu_ns: Option<u64>,
}

impl Stopwatch {
    fn start() -> Self {
        Self {
            cpu_ns: thread_cpu_ns(),
            wall: Instant::now(),
        }
    }

    /// The time since the start, per record of a run over `RECORDS` records.
    fn per_record(&self) -> PerRecord {
        let wall_ns = self.wall.elapsed().as_secs_f64() * 1e9 / RECORDS as f64;
        let cpu_ns = self
            .cpu_ns
            .zip(thread_cpu_ns())
            .map(|(start, end)| (end - start) as f64 / RECORDS as f64);
        PerRecord { cpu_ns, wall_ns }
    }
}

/// The CPU time this thread has had, in nanoseconds, if the kernel tells.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Runs `run` three times and returns its best result.
fn best_of_three(mut run: impl FnMut() -> PerRecord) -> PerRecord {
    (0..3)
        .map(|_| run())
        .min_by(|a, b| a.ns().total_cmp(&b.ns()))
        .unwrap()
}

/// How long a reader parked in `wait_for_records` takes to see a record after `put_record`
/// is called, on a multi-threaded runtime: the embedded Kinesis' share of the emulator's
/// put-to-handler latency.
fn wake_latency() {
    const ROUNDS: usize = 2_000;
    const STREAM: &str = "latency";
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let kinesis = EmbeddedKinesis::new();
    kinesis.create_stream(STREAM, 1).unwrap();
    let shard_id = kinesis.list_shards(STREAM).unwrap()[0].shard_id.clone();
    let put_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    let (seen, seen_by_putter) = mpsc::channel::<()>();

    let waiter = runtime.spawn({
        let (kinesis, put_at) = (kinesis.clone(), put_at.clone());
        async move {
            let mut latencies = Vec::with_capacity(ROUNDS);
            let mut newest: Option<SequenceNumber> = None;
            while latencies.len() < ROUNDS {
                kinesis
                    .wait_for_records(STREAM, &shard_id, newest.as_ref(), Duration::from_secs(5))
                    .await;
                let woke = Instant::now();
                let position = match &newest {
                    Some(after) => IteratorPosition::AfterSequenceNumber(after.clone()),
                    None => IteratorPosition::TrimHorizon,
                };
                let iterator = kinesis
                    .get_shard_iterator(STREAM, &shard_id, &position)
                    .unwrap();
                let output = kinesis.get_records(&iterator, 100).unwrap();
                let Some(last) = output.records.last() else {
                    continue;
                };
                newest = Some(last.sequence_number.clone());
                let put = put_at.lock().unwrap().expect("set before the put");
                latencies.push(woke.duration_since(put));
                seen.send(()).unwrap();
            }
            latencies
        }
    });

    for round in 0..ROUNDS {
        // The reader has seen the last record; give it time to park again, so that this
        // measures a wake-up rather than a reader that had not gone to sleep yet.
        std::thread::sleep(Duration::from_micros(200));
        *put_at.lock().unwrap() = Some(Instant::now());
        kinesis
            .put_record(STREAM, PutRecordsEntry::new("k", round.to_string()))
            .unwrap();
        seen_by_putter.recv().unwrap();
    }
    let mut latencies = runtime.block_on(waiter).unwrap();
    latencies.sort();
    let at = |quantile: f64| latencies[((latencies.len() - 1) as f64 * quantile) as usize];
    println!(
        "put_record until a parked wait_for_records has woken, {ROUNDS} rounds: median {:?}, \
         p99 {:?}, max {:?}",
        at(0.5),
        at(0.99),
        latencies[latencies.len() - 1]
    );
}
