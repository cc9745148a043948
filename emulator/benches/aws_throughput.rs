//! How fast the emulator reads and settles records from kinesis-local, against a plain
//! `aws-sdk-kinesis` `GetRecords` loop over the same shards in the same run (the most that server
//! allows), and how many lease-table writes a settled batch costs.
//!
//! Run with `scripts/local-stack run -- cargo bench -p kinesis-esm --bench aws_throughput`.
//!
//! Each round reads one stream (20,000 shipments on 8 shards) from its start seven ways, in an
//! order that rotates from round to round:
//! - the plain loop: one task per shard, `GetShardIterator`, then `GetRecords` (limit 10,000)
//!   until a call returns nothing and `MillisBehindLatest` 0, and nothing else. Like the
//!   emulator it cannot know how many records to expect: it learns it has them all by reading
//!   once more, as the emulator's readers do before they wait for more;
//! - the emulator with reads unpaced ([`ReadPacing::UNLIMITED`], like the plain loop) and
//!   checkpoints in memory, then in a fresh DynamoDB lease table on dynalite, in batches of 100
//!   (Lambda's default) and of 1,000;
//! - the emulator with Kinesis' own read pacing (5 calls/s and 2 MiB/s per shard), which a run
//!   against real Kinesis must keep to, in batches of 100. Here one `GetRecords` call brings a
//!   shard's 2,500 records, so the pacing hardly shows; against a shard that must be read in
//!   many calls it caps each shard at 5 calls a second, which the plain loop ignores;
//! - the emulator in batches of 100 with a function that spends [`CALL`] per batch on a call of
//!   its own (a database write, a request to another service), with checkpoints in memory and in
//!   DynamoDB: a checkpoint write overlaps the next invocation, so the lease table should cost
//!   next to nothing once the function takes longer than a write.
//!
//! Besides, each round times the lease table alone: the checkpoint writes of a batches-of-100
//! run (one per batch, one at a time per shard, the 8 shards at once) with nothing else to do.
//! That is the least the DynamoDB runs' tail can be, whatever the emulator does: dynalite is a
//! single Node.js process, and at 8 writers its writes queue up.
//!
//! The function is the shipping function in process: what is measured is the emulator's own
//! cost. A rate is the records over the time from the first `GetRecords` call to the last record
//! read (plain loop) or settled (emulator). The time before the first read (the plain loop's
//! `GetShardIterator` calls; the emulator's `DescribeStreamSummary`, `ListShards`, lease
//! creation and take, `GetShardIterator`) is printed apart, as "start"; "tail" is the time
//! from the last record read to the last one settled. Both sides read through one SDK client
//! and the lease stores write through one DynamoDB client, warmed by a first round that is not
//! counted: reads through new connections to kinesis-local are markedly slower, whoever makes
//! them. The machine and the servers are shared, so each ratio is given twice: of the medians,
//! and "paired", the median of each round's ratio to that round's plain loop.
//!
//! Lease-table writes: the store's `writes()` over the run, less one create and one take per
//! shard, over the settled batches (its invocations: every batch succeeds at once). Renewals are
//! not subtracted but kept out: the failover time is ten minutes, so no lease is renewed during a
//! run (a renewal comes every third of it).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kinesis_esm::aws::{AwsConnection, DynamoLeaseStore, ReadPacing, SdkKinesis};
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::lease::{Checkpoint, Lease, LeaseStore, MemoryLeaseStore};
use kinesis_esm::mapping::{EventSourceMapping, MappingOptions};
use kinesis_esm::source::{GetRecordsOutput, SourceError};
use lambda_kinesis::HandlerOutcome;
use shipping::Shipment;
use support::median;
use test_support::intercept::{Intercepted, SourceHooks};
use test_support::{dynamodb_endpoint, kinesis_endpoint};

mod support;

const SHARDS: i32 = 8;
/// kinesis-local slows down as a shard grows (a 500-record put takes 4.6 s at 10,000 records):
/// about 2,500 records a shard keep filling the stream quick.
const RECORDS: usize = 20_000;
/// Odd, for a plain median.
const ROUNDS: usize = 9;
/// Lambda's default `BatchSize`.
const BATCH_SIZE: usize = 100;
/// A larger batch, to show what each invocation and checkpoint costs.
const LARGE_BATCH_SIZE: usize = 1_000;
const REGION: &str = "us-east-1";
const FAILOVER_TIME: Duration = Duration::from_secs(600);
const TIMEOUT: Duration = Duration::from_secs(300);
/// What the slower function spends on a call of its own per batch.
const CALL: Duration = Duration::from_millis(10);

fn main() {
    let runtime = support::runtime();
    runtime.block_on(bench());
}

/// The ways a stream is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reader {
    PlainLoop,
    Emulator {
        dynamodb: bool,
        paced: bool,
        batch_size: usize,
        /// Whether the function spends [`CALL`] per batch.
        calls_out: bool,
    },
}

impl Reader {
    const ALL: [Self; 9] = [
        Self::PlainLoop,
        Self::emulator(false, false, BATCH_SIZE),
        Self::emulator(true, false, BATCH_SIZE),
        Self::emulator(false, true, BATCH_SIZE),
        Self::emulator(true, true, BATCH_SIZE),
        Self::emulator(false, false, LARGE_BATCH_SIZE),
        Self::emulator(true, false, LARGE_BATCH_SIZE),
        Self::calling_out(false),
        Self::calling_out(true),
    ];

    const fn emulator(dynamodb: bool, paced: bool, batch_size: usize) -> Self {
        Self::Emulator {
            dynamodb,
            paced,
            batch_size,
            calls_out: false,
        }
    }

    const fn calling_out(dynamodb: bool) -> Self {
        Self::Emulator {
            dynamodb,
            paced: false,
            batch_size: BATCH_SIZE,
            calls_out: true,
        }
    }

    fn name(self) -> String {
        match self {
            Self::PlainLoop => "plain GetRecords loop".to_owned(),
            Self::Emulator {
                dynamodb,
                paced,
                batch_size,
                calls_out,
            } => format!(
                "emulator, {} leases, {}, batches of {batch_size}{}",
                if dynamodb { "DynamoDB" } else { "memory" },
                if paced { "Kinesis pacing" } else { "unpaced" },
                if calls_out {
                    format!(", {CALL:?} call")
                } else {
                    String::new()
                }
            ),
        }
    }
}

/// One read of the whole stream.
struct Run {
    /// From the start to the first `GetRecords` call.
    start: Duration,
    /// From the first `GetRecords` call to the last record read (plain loop) or settled
    /// (emulator).
    reading: Duration,
    /// From the last record read to the last record settled.
    tail: Duration,
    /// `GetRecords` calls made.
    reads: u64,
    /// With a lease table: its writes, and the batches settled.
    lease_writes: Option<(u64, u64)>,
}

async fn bench() {
    let kinesis = AwsConnection::local(kinesis_endpoint()).with_region(REGION);
    let dynamodb = support::dynamodb_client(dynamodb_endpoint(), REGION).await;
    let producer = SdkKinesis::connect(&kinesis)
        .await
        .expect("a Kinesis client");
    let stream = format!(
        "throughput-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    producer
        .create_stream(&stream, SHARDS)
        .await
        .expect("the stream");
    let per_shard = fill(&producer, &stream).await;
    println!(
        "stream {stream}: {RECORDS} shipments on {SHARDS} shards {:?}; {ROUNDS} rounds",
        per_shard.values().collect::<Vec<_>>()
    );

    let mut runs: BTreeMap<Reader, Vec<Run>> = BTreeMap::new();
    let mut lease_table_alone = Vec::new();
    // Round 0 only warms up: the servers, and the client's pool of connections (the first reads
    // through new connections to kinesis-local are markedly slower, whoever makes them).
    for round in 0..=ROUNDS {
        // Rotate the order, so that no way of reading always comes first after the fill.
        for offset in 0..Reader::ALL.len() {
            let reader = Reader::ALL[(round + offset) % Reader::ALL.len()];
            let run = match reader {
                Reader::PlainLoop => plain_loop(&producer, &stream, &per_shard).await,
                Reader::Emulator {
                    dynamodb: use_dynamodb,
                    paced,
                    batch_size,
                    calls_out,
                } => {
                    let table = use_dynamodb.then(|| {
                        let pacing = if paced { "paced" } else { "unpaced" };
                        let call = if calls_out { "-call" } else { "" };
                        format!("{stream}-leases-{round}-{pacing}-{batch_size}{call}")
                    });
                    emulator(
                        &producer, &dynamodb, &stream, table, paced, batch_size, calls_out,
                    )
                    .await
                }
            };
            if round > 0 {
                runs.entry(reader).or_default().push(run);
            }
        }
        let table = format!("{stream}-alone-{round}");
        let alone = checkpoint_writes_alone(&dynamodb, &table, &per_shard).await;
        if round > 0 {
            lease_table_alone.push(alone);
        }
    }

    let rate = |run: &Run| RECORDS as f64 / run.reading.as_secs_f64();
    let plain = &runs[&Reader::PlainLoop];
    let ceiling = median(plain.iter().map(rate));
    for reader in Reader::ALL {
        let of_reader = &runs[&reader];
        let median_rate = median(of_reader.iter().map(rate));
        let paired = median(
            of_reader
                .iter()
                .zip(plain)
                .map(|(run, plain)| rate(run) / rate(plain)),
        );
        let start = median(of_reader.iter().map(|run| run.start.as_secs_f64() * 1e3));
        let tail = median(of_reader.iter().map(|run| run.tail.as_secs_f64() * 1e3));
        let reads = median(of_reader.iter().map(|run| run.reads as f64));
        println!(
            "{:<56} {median_rate:>6.0} records/s: {:.2} of the plain loop, {paired:.2} paired \
             (start {start:>3.0} ms, tail {tail:>3.0} ms, {reads:>2.0} GetRecords calls)",
            reader.name(),
            median_rate / ceiling,
        );
    }
    let writes_per_run: usize = per_shard
        .values()
        .map(|records| records.div_ceil(BATCH_SIZE))
        .sum();
    println!(
        "the lease table alone: {writes_per_run} checkpoint writes, one at a time per shard and \
         {SHARDS} shards at once, take {:.0} ms (the least a DynamoDB run's tail in batches of \
         {BATCH_SIZE} can be)",
        median(
            lease_table_alone
                .iter()
                .map(|took| took.as_secs_f64() * 1e3)
        )
    );
    let of_memory = |dynamodb: Reader, memory: Reader| {
        median(
            runs[&dynamodb]
                .iter()
                .zip(&runs[&memory])
                .map(|(dynamodb, memory)| rate(dynamodb) / rate(memory)),
        )
    };
    println!(
        "DynamoDB against memory leases, paired, batches of {BATCH_SIZE}: {:.2} with the \
         shipping function alone, {:.2} with a {CALL:?} call per batch",
        of_memory(
            Reader::emulator(true, false, BATCH_SIZE),
            Reader::emulator(false, false, BATCH_SIZE)
        ),
        of_memory(Reader::calling_out(true), Reader::calling_out(false)),
    );
    producer
        .delete_stream(&stream)
        .await
        .expect("the stream is deleted");
    let setup = 2 * SHARDS as u64;
    for (reader, of_reader) in &runs {
        let per_batch: Vec<(u64, u64)> = of_reader
            .iter()
            .filter_map(|run| run.lease_writes)
            .collect();
        let Some(&(writes, batches)) = per_batch.first() else {
            continue;
        };
        let ratio = |&(writes, batches): &(u64, u64)| (writes - setup) as f64 / batches as f64;
        let lowest = per_batch.iter().map(ratio).fold(f64::INFINITY, f64::min);
        let highest = per_batch.iter().map(ratio).fold(0.0, f64::max);
        println!(
            "{}: {lowest:.2} to {highest:.2} lease-table writes per settled batch over {} runs \
             (the first: {writes} writes = {setup} to create and take the {SHARDS} leases + {} \
             for {batches} settled batches)",
            reader.name(),
            per_batch.len(),
            writes - setup
        );
    }
}

/// Puts the shipments (random partition keys) and counts how many went to each shard.
async fn fill(producer: &SdkKinesis, stream: &str) -> BTreeMap<String, usize> {
    let shipments: Vec<(String, Vec<u8>)> = (0..RECORDS as u64)
        .map(|id| {
            let shipment = Shipment {
                id,
                address: format!("{id} Harbour Road"),
                carrier: shipping::CARRIERS[(id % 2) as usize].to_owned(),
            };
            (
                uuid::Uuid::new_v4().to_string(),
                serde_json::to_vec(&shipment).expect("JSON"),
            )
        })
        .collect();
    support::put_all(producer, stream, &shipments).await
}

/// Reads every shard from its start with nothing but `GetShardIterator` and `GetRecords`, one
/// task per shard, until a read finds nothing more; checks that every record came.
async fn plain_loop(
    producer: &SdkKinesis,
    stream: &str,
    per_shard: &BTreeMap<String, usize>,
) -> Run {
    let started = Instant::now();
    let reads = Arc::new(Mutex::new(Reads::default()));
    let mut tasks = Vec::new();
    for (shard_id, &expected) in per_shard {
        let client = producer.client().clone();
        let stream = stream.to_owned();
        let shard_id = shard_id.clone();
        let reads = Arc::clone(&reads);
        tasks.push(tokio::spawn(async move {
            let mut iterator = support::trim_horizon_iterator(&client, &stream, &shard_id).await;
            let mut read = 0;
            let mut last_record_read = None;
            loop {
                reads.lock().unwrap().call_starts();
                let output = client
                    .get_records()
                    .shard_iterator(&iterator)
                    .limit(10_000)
                    .send()
                    .await
                    .expect("GetRecords");
                if output.records().is_empty() && output.millis_behind_latest() == Some(0) {
                    break;
                }
                if !output.records().is_empty() {
                    read += output.records().len();
                    last_record_read = Some(Instant::now());
                }
                iterator = output
                    .next_shard_iterator()
                    .expect("an open shard goes on")
                    .to_owned();
            }
            assert_eq!(read, expected, "every record of {shard_id} read");
            last_record_read.expect("records were read")
        }));
    }
    let mut last_record_read = started;
    for task in tasks {
        let read = tokio::time::timeout(TIMEOUT, task)
            .await
            .expect("the plain loop finishes")
            .expect("the plain loop does not panic");
        last_record_read = last_record_read.max(read);
    }
    let reads = reads.lock().unwrap();
    let first_read = reads.first.expect("a read");
    Run {
        start: first_read - started,
        reading: last_record_read - first_read,
        tail: Duration::ZERO,
        reads: reads.calls,
        lease_writes: None,
    }
}

/// When the first `GetRecords` call started, when the last one that returned records ended,
/// and how many were made.
#[derive(Debug, Default)]
struct Reads {
    first: Option<Instant>,
    last_with_records: Option<Instant>,
    calls: u64,
}

impl Reads {
    fn call_starts(&mut self) {
        self.first.get_or_insert_with(Instant::now);
        self.calls += 1;
    }
}

/// Notes the emulator's `GetRecords` calls.
#[derive(Default)]
struct TimeReads {
    reads: Mutex<Reads>,
}

impl SourceHooks for TimeReads {
    fn before_get_records(&self) {
        self.reads.lock().unwrap().call_starts();
    }

    fn after_get_records(&self, output: &Result<GetRecordsOutput, SourceError>) {
        if output
            .as_ref()
            .is_ok_and(|output| !output.records.is_empty())
        {
            self.reads.lock().unwrap().last_with_records = Some(Instant::now());
        }
    }
}

/// Writes as many checkpoints as a run in batches of 100 does, through the emulator's DynamoDB
/// lease store in a fresh table: one at a time per shard, every shard at once. Returns how long
/// the writes took, from the first to the last.
async fn checkpoint_writes_alone(
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &str,
    per_shard: &BTreeMap<String, usize>,
) -> Duration {
    let store = Arc::new(DynamoLeaseStore::from_client(dynamodb.clone(), table));
    store
        .create_table_if_missing()
        .await
        .expect("the lease table");
    let mut leases = Vec::new();
    for shard_id in per_shard.keys() {
        let lease = Lease::new(
            shard_id.as_str(),
            shard_id.as_str(),
            Checkpoint::TrimHorizon,
        );
        store.create_lease_if_absent(&lease).await.expect("a lease");
        leases.push(store.take_lease(&lease, "bench").await.expect("the lease"));
    }
    let started = Instant::now();
    let writers: Vec<_> = leases
        .into_iter()
        .zip(per_shard.values())
        .map(|(mut lease, &records)| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for batch in 0..records.div_ceil(BATCH_SIZE) {
                    let checkpoint = Checkpoint::SequenceNumber(
                        format!("{}", 49_000_000_000_000_000_000u128 + batch as u128)
                            .parse()
                            .expect("a sequence number"),
                    );
                    lease = store
                        .update_checkpoint(&lease, checkpoint)
                        .await
                        .expect("a checkpoint write");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("the writer does not panic");
    }
    started.elapsed()
}

/// The shipping function after a call of its own that takes [`CALL`] per batch.
async fn ship_after_a_call(shipments: &[Shipment]) -> Vec<HandlerOutcome> {
    tokio::time::sleep(CALL).await;
    let mut outcomes = Vec::with_capacity(shipments.len());
    for shipment in shipments {
        outcomes.push(shipping::ship(&shipping::Carriers, shipment).await);
    }
    outcomes
}

/// Runs a mapping with the shipping function in process until every record is settled.
async fn emulator(
    producer: &SdkKinesis,
    dynamodb: &aws_sdk_dynamodb::Client,
    stream: &str,
    table: Option<String>,
    paced: bool,
    batch_size: usize,
    calls_out: bool,
) -> Run {
    let pacing = if paced {
        ReadPacing::KINESIS_LIMITS
    } else {
        ReadPacing::UNLIMITED
    };
    let source = Arc::new(Intercepted::new(
        // The plain loop's client, so that both read through the same warm connections.
        Arc::new(SdkKinesis::from_client(producer.client().clone()).with_read_pacing(pacing)),
        TimeReads::default(),
    ));
    let dynamo = match &table {
        Some(table) => {
            // One client for every run, so that lease writes go through warm connections too.
            let store = DynamoLeaseStore::from_client(dynamodb.clone(), table.as_str());
            store
                .create_table_if_missing()
                .await
                .expect("the lease table");
            Some(Arc::new(store))
        }
        None => None,
    };
    let leases: Arc<dyn LeaseStore> = match &dynamo {
        Some(dynamo) => dynamo.clone(),
        None => Arc::new(MemoryLeaseStore::new()),
    };
    let mut config = MappingConfig::new("shipping", stream, StartingPosition::TrimHorizon);
    config.batch_size = batch_size;
    config.report_batch_item_failures = true;
    let started = Instant::now();
    let function = if calls_out {
        InProcess::handler(ship_after_a_call)
    } else {
        InProcess::service(shipping::function())
    };
    let mapping = EventSourceMapping::new(config, source.clone(), Arc::new(function))
        .lease_store(leases)
        .options(MappingOptions {
            failover_time: FAILOVER_TIME,
            ..MappingOptions::default()
        })
        .start();
    let status = tokio::time::timeout(
        TIMEOUT,
        mapping.wait_for(|status| status.totals().acked >= RECORDS as u64),
    )
    .await
    .expect("the emulator settles every record");
    let settled = Instant::now();
    let writes = dynamo.as_ref().map(|dynamo| dynamo.writes());
    let (first_read, last_record_read, reads) = {
        let reads = source.reads.lock().unwrap();
        let first = reads.first.expect("a read");
        (
            first,
            reads.last_with_records.expect("records"),
            reads.calls,
        )
    };
    mapping.stop().await;
    Run {
        start: first_read - started,
        reading: settled - first_read,
        tail: settled - last_record_read,
        reads,
        lease_writes: writes.map(|writes| (writes, status.totals().invocations)),
    }
}
