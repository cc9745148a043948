//! `ParallelizationFactor` 10 against 1 on one shard, with a function that spends 1 ms per
//! batch (Lambda's reason for the setting: a shard whose function waits on something else).
//!
//! One stream of one shard holds `records` shipments under 1,000 partition keys. Each run starts
//! a fresh mapping (BatchSize 100, `TRIM_HORIZON`, `ReportBatchItemFailures`) and is timed until
//! the shard's checkpoint is its last record; the runs of the two factors alternate, so both
//! meet the same machine. The function sleeps 1 ms per invocation and then runs the handler in
//! process, which notes each shipment with its key: every run checks that each record was
//! delivered once and acked, and that each key's records came in shard order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::{InProcess, Invocation, InvokeError, InvokeOutcome, Invoker};
use kinesis_esm::kinesis::{EmbeddedKinesis, MAX_PUT_RECORDS_ENTRIES, PutRecordsEntry};
use kinesis_esm::mapping::EventSourceMapping;
use lambda_kinesis::{HandlerOutcome, RecordMeta};
use shipping::Shipment;

use super::{
    CpuSample, FUNCTION, FUNCTION_TIMEOUT, RUN_LIMIT, all_checkpointed, check_delivered_once,
    shipment, si,
};

const STREAM: &str = "shipments-parallel";
const KEYS: u64 = 1_000;
const BATCH_SIZE: usize = 100;
const FACTORS: [usize; 2] = [1, 10];
/// What the function spends per batch besides handling its records.
const PER_BATCH: Duration = Duration::from_millis(1);
/// What ParallelizationFactor 10 must reach against 1.
const TARGET_RATIO: f64 = 5.0;

/// The shipments each key's handler saw, in the order it saw them.
type Seen = Arc<Mutex<HashMap<String, Vec<u64>>>>;

/// The in-process function, 1 ms slower per invocation.
struct SlowBatches(InProcess);

#[async_trait]
impl Invoker for SlowBatches {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeOutcome, InvokeError> {
        tokio::time::sleep(PER_BATCH).await;
        self.0.invoke(invocation).await
    }
}

fn noting_function(seen: &Seen) -> SlowBatches {
    let seen = Arc::clone(seen);
    SlowBatches(InProcess::handler(
        move |shipment: &Shipment, meta: &RecordMeta<'_>| {
            seen.lock()
                .unwrap()
                .entry(meta.partition_key().to_owned())
                .or_default()
                .push(shipment.id);
            std::future::ready(HandlerOutcome::ack())
        },
    ))
}

/// Runs the case and prints its medians and ratio.
pub(super) async fn compare(records: usize, runs: usize) {
    let records = records.min(100_000);
    let kinesis = EmbeddedKinesis::new();
    kinesis
        .create_stream(STREAM, 1)
        .unwrap_or_else(|error| panic!("creating stream {STREAM}: {error}"));
    let mut last = HashMap::new();
    let ids: Vec<u64> = (0..records as u64).collect();
    for chunk in ids.chunks(MAX_PUT_RECORDS_ENTRIES) {
        let entries = chunk
            .iter()
            .map(|&id| {
                let data = serde_json::to_vec(&shipment(id)).expect("a shipment serialises");
                PutRecordsEntry::new(format!("key-{}", id % KEYS), data)
            })
            .collect();
        for put in kinesis
            .put_records(STREAM, entries)
            .unwrap_or_else(|error| panic!("putting into stream {STREAM}: {error}"))
        {
            last.insert(put.shard_id.to_string(), put.sequence_number);
        }
    }
    println!(
        "\n{STREAM}: {records} shipments under {KEYS} keys in 1 shard; BatchSize {BATCH_SIZE}, \
         the function spends {PER_BATCH:?} per batch"
    );
    let mut rates: HashMap<usize, Vec<f64>> = HashMap::new();
    let load = CpuSample::take();
    for _ in 0..runs {
        for factor in FACTORS {
            let seen: Seen = Arc::default();
            let mut config = MappingConfig::new(FUNCTION, STREAM, StartingPosition::TrimHorizon);
            config.batch_size = BATCH_SIZE;
            config.report_batch_item_failures = true;
            config.function_timeout = FUNCTION_TIMEOUT;
            config.parallelization_factor = factor;
            let started = Instant::now();
            let mapping = EventSourceMapping::new(
                config,
                Arc::new(kinesis.clone()),
                Arc::new(noting_function(&seen)),
            )
            .start();
            let checkpointed = tokio::time::timeout(
                RUN_LIMIT,
                mapping.wait_for(|status| all_checkpointed(status, &last)),
            )
            .await;
            let elapsed = started.elapsed();
            let status = mapping.stop().await;
            assert!(
                checkpointed.is_ok(),
                "factor {factor}: not every record was checkpointed within {RUN_LIMIT:?}"
            );
            check_delivered_once(&status, records, &format!("factor {factor}"));
            check_key_order(&seen, records, factor);
            rates
                .entry(factor)
                .or_default()
                .push(records as f64 / elapsed.as_secs_f64());
        }
    }
    let load = load.until_now();
    let median = |factor| {
        let mut rates = rates[&factor].clone();
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    };
    for factor in FACTORS {
        println!(
            "  ParallelizationFactor {factor:>2}: median {} records/s over {runs} runs",
            si(median(factor))
        );
    }
    let ratio = median(10) / median(1);
    println!(
        "  factor 10 / factor 1 = {ratio:.2} (target at least {TARGET_RATIO:.0}x); every record \
         delivered once, each key in order\n    {load}"
    );
}

/// Every shipment was seen once, and each key's in the order they were put (ids grow).
fn check_key_order(seen: &Seen, records: usize, factor: usize) {
    let seen = seen.lock().unwrap();
    let total: usize = seen.values().map(Vec::len).sum();
    assert_eq!(total, records, "factor {factor}: each shipment seen once");
    for (key, ids) in seen.iter() {
        assert!(
            ids.windows(2).all(|pair| pair[0] < pair[1]),
            "factor {factor}: key {key}'s shipments came out of order"
        );
    }
}
