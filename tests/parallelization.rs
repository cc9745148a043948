//! `ParallelizationFactor` end to end: a template's `ParallelizationFactor: 4`, read by the
//! template reader and run over the embedded Kinesis with a function in process that holds
//! records at random. Every record of a key reaches the function in shard order, none is lost,
//! none is settled twice, and the shard's checkpoint never passes a record the function has not
//! settled (`docs/event-source-mapping.md` §6). A slow batch holds only its own lane: the others
//! start their next batches while it runs, and the checkpoint waits for it. Through the Runtime
//! API, each concurrent batch runs in an execution environment of its own.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use end_to_end::{
    Observed, TestStream, at, one_shard_mapping, shard, shipment, shipping_bootstrap,
};
use kinesis_esm::config::MappingConfig;
use kinesis_esm::invoke::runtime_api::{FunctionDefinition, RuntimeApi};
use kinesis_esm::invoke::{InProcess, Invoker};
use kinesis_esm::kinesis::{EmbeddedKinesis, RecordDistribution};
use kinesis_esm::lease::{Checkpoint, MemoryLeaseStore};
use kinesis_esm::mapping::MappingEvent;
use lambda_kinesis::{HandlerOutcome, RecordMeta};
use test_support::intercept::{Intercepted, LeaseChange, LeaseHooks};

const SHARD: &str = "shardId-000000000000";
const RECORDS: u32 = 600;
const KEYS: u32 = 37;

/// The only mapping of a one-shard template on `stream`, four batches of a shard at once.
fn mapping(stream: &str) -> MappingConfig {
    let config = one_shard_mapping(
        stream,
        "            BatchSize: 10
            ParallelizationFactor: 4
            FunctionResponseTypes: [ReportBatchItemFailures]
",
    );
    assert_eq!(config.parallelization_factor, 4);
    config
}

/// What happened, in the order it happened: the function settling a record, or a checkpoint
/// write reaching the lease store.
#[derive(Debug, Clone)]
enum Entry {
    Settled {
        sequence_number: String,
        key: String,
    },
    Checkpoint(Checkpoint),
}

type Log = Arc<Mutex<Vec<Entry>>>;

/// Logs each checkpoint write as it is asked for, before it lands.
struct LogCheckpoints(Log);

#[async_trait]
impl LeaseHooks for LogCheckpoints {
    type Note = ();

    async fn before_write(&self, _: &str, change: &LeaseChange) {
        if let LeaseChange::Checkpoint(checkpoint) = change {
            self.0
                .lock()
                .unwrap()
                .push(Entry::Checkpoint(checkpoint.clone()));
        }
    }
}

/// How many times the function holds record `n` before it settles it: 0 for most, 1 or 2 for
/// about one in eight, spread by a multiplicative hash (a fixed "random" choice, so that a
/// failure can be replayed).
fn holds(n: u32) -> usize {
    match n.wrapping_mul(2_654_435_761) % 64 {
        0..=1 => 2,
        2..=7 => 1,
        _ => 0,
    }
}

#[tokio::test]
async fn four_concurrent_batches_keep_each_keys_order_and_checkpoint_only_settled_records() {
    let stream = TestStream::create("parallelization-factor", 1);
    let mut records = Vec::new();
    for n in 0..RECORDS {
        let key = format!("key-{}", n % KEYS);
        let put = stream.put(&key, n.to_string());
        records.push((put.sequence_number, key));
    }
    let last = records.last().expect("records were put").0.clone();

    let log: Log = Arc::default();
    let deliveries: Arc<Mutex<HashMap<u32, usize>>> = Arc::default();
    let handler = {
        let (log, deliveries) = (log.clone(), deliveries.clone());
        move |n: &u32, meta: &RecordMeta<'_>| {
            let delivery = {
                let mut deliveries = deliveries.lock().unwrap();
                let count = deliveries.entry(*n).or_default();
                *count += 1;
                *count
            };
            let outcome = if delivery <= holds(*n) {
                HandlerOutcome::hold()
            } else {
                log.lock().unwrap().push(Entry::Settled {
                    sequence_number: meta.sequence_number().to_owned(),
                    key: meta.partition_key().to_owned(),
                });
                HandlerOutcome::ack()
            };
            async move {
                // Lets the other lanes' invocations run meanwhile.
                tokio::time::sleep(Duration::from_micros(200)).await;
                outcome
            }
        }
    };
    let leases = Arc::new(Intercepted::new(
        Arc::new(MemoryLeaseStore::new()),
        LogCheckpoints(log.clone()),
    ));
    let mut observed = Observed::start_with_leases(
        mapping(&stream.name),
        &stream,
        Arc::new(InProcess::handler(handler)),
        leases,
    );
    let status = observed.wait_for_checkpoint(SHARD, &at(&last)).await;
    let shard_status = shard(&status, SHARD);
    assert_eq!(shard_status.acked, u64::from(RECORDS));
    assert_eq!(shard_status.unsettled, 0);

    let log = log.lock().unwrap().clone();
    let order: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .map(|(index, (sequence_number, _))| (sequence_number.as_str(), index))
        .collect();
    let mut settled: HashSet<usize> = HashSet::new();
    let mut last_of_key: BTreeMap<String, usize> = BTreeMap::new();
    let mut checkpoints = 0;
    for entry in &log {
        match entry {
            Entry::Settled {
                sequence_number,
                key,
            } => {
                let index = order[sequence_number.as_str()];
                assert!(settled.insert(index), "record {index} was settled twice");
                // The key's records come in shard order: the key's last settled record is the
                // one before this one among the key's records.
                let previous_of_key = (0..index).rev().find(|&earlier| records[earlier].1 == *key);
                assert_eq!(
                    last_of_key.get(key).copied(),
                    previous_of_key,
                    "record {index} of {key} was settled out of the key's order"
                );
                last_of_key.insert(key.clone(), index);
            }
            Entry::Checkpoint(Checkpoint::SequenceNumber(checkpoint)) => {
                checkpoints += 1;
                let upto = order[checkpoint.as_str()];
                let unsettled: Vec<usize> = (0..=upto)
                    .filter(|index| !settled.contains(index))
                    .collect();
                assert!(
                    unsettled.is_empty(),
                    "the checkpoint moved to record {upto} before records {unsettled:?} were settled"
                );
            }
            Entry::Checkpoint(other) => panic!("unexpected checkpoint {other}"),
        }
    }
    assert_eq!(settled.len(), RECORDS as usize, "every record was settled");
    assert!(checkpoints > 1, "the checkpoint moved as the lanes settled");

    // Records were held, and the batches of one invocation each hold keys of one lane only:
    // no key appears in two invocations that overlap, since a key's next batch waits for its
    // last one to settle.
    let held: usize = (0..RECORDS).map(holds).sum();
    assert!(held > 50, "the test holds records ({held})");
    let keys_per_invocation: Vec<HashSet<String>> = observed
        .events()
        .iter()
        .filter_map(|event| match event {
            MappingEvent::Invoked { records, .. } => Some(
                records
                    .iter()
                    .map(|(_, key)| key.to_string())
                    .collect::<HashSet<_>>(),
            ),
            _ => None,
        })
        .collect();
    let lanes_of_key = lanes_sharing_keys(&keys_per_invocation);
    assert!(
        (2..=4).contains(&lanes_of_key),
        "the keys fall into between 2 and 4 groups that never share a batch: {lanes_of_key}"
    );
    observed.stop().await;
}

/// How many groups the keys fall into when keys delivered in one invocation are one group: with
/// `ParallelizationFactor: 4`, a batch holds the keys of one lane, so at most four.
fn lanes_sharing_keys(invocations: &[HashSet<String>]) -> usize {
    let mut groups: Vec<HashSet<String>> = Vec::new();
    for keys in invocations {
        let (joined, rest): (Vec<_>, Vec<_>) = groups
            .into_iter()
            .partition(|group| !group.is_disjoint(keys));
        let mut merged: HashSet<String> = keys.clone();
        for group in joined {
            merged.extend(group);
        }
        groups = rest;
        groups.push(merged);
    }
    groups.len()
}

/// How many invocations of the other keys a slow batch must not hold back: one round of four
/// concurrent batches would invoke at most three besides the slow one before it returns.
const OTHER_INVOCATIONS: u64 = 5;

#[tokio::test]
async fn a_slow_batch_holds_only_its_own_lane_and_the_checkpoint_waits_for_it() {
    let stream = TestStream::create("parallelization-slow-lane", 1);
    let slow = stream.put("slow", "0".to_owned()).sequence_number;
    let mut last = slow.clone();
    for n in 1..=60_u32 {
        last = stream
            .put(&format!("key-{}", n % 12), n.to_string())
            .sequence_number;
    }
    let (release, released) = tokio::sync::watch::channel(false);
    let handler = move |_: &u32, meta: &RecordMeta<'_>| {
        let mut released = released.clone();
        let slow = meta.partition_key() == "slow";
        async move {
            if slow {
                // Held until the test has seen the other lanes go on.
                let _ = released.wait_for(|released| *released).await;
            }
            HandlerOutcome::ack()
        }
    };
    let config = one_shard_mapping(
        &stream.name,
        "            BatchSize: 2
            ParallelizationFactor: 4
            FunctionResponseTypes: [ReportBatchItemFailures]
",
    );
    let observed = Observed::start(config, &stream, Arc::new(InProcess::handler(handler)));
    // The slow record's batch is the first invoked and has not returned: the other lanes start
    // their next batches meanwhile.
    let status = observed
        .wait_for("the other lanes to invoke their next batches", |status| {
            status
                .shards
                .get(SHARD)
                .is_some_and(|shard| shard.invocations > OTHER_INVOCATIONS)
        })
        .await;
    // The slow record is the shard's first: nothing it precedes is checkpointed.
    let checkpoint = shard(&status, SHARD).checkpoint.clone();
    assert!(
        !matches!(checkpoint, Some(Checkpoint::SequenceNumber(_))),
        "the checkpoint moved past the unsettled slow record to {checkpoint:?}"
    );
    release.send_replace(true);
    let status = observed.wait_for_checkpoint(SHARD, &at(&last)).await;
    assert_eq!(shard(&status, SHARD).acked, 61);
    observed.stop().await;
}

#[tokio::test]
async fn through_the_runtime_api_each_concurrent_batch_has_an_execution_environment() {
    let stream = TestStream::create("parallelization-runtime-api", 1);
    let mut last = None;
    for id in 0..200_u64 {
        let put = stream.put(&format!("shipment-{id}"), shipment(id, "1 Main St", "dhl"));
        last = Some(put.sequence_number);
    }
    let last = last.expect("records were put");
    let function = FunctionDefinition::new("shipping", shipping_bootstrap().await);
    // More environments allowed than the mapping needs: it is the mapping that asks for four.
    let api = Arc::new(RuntimeApi::new(function).max_environments(10));
    let observed = Observed::start(
        mapping(&stream.name),
        &stream,
        Arc::clone(&api) as Arc<dyn Invoker>,
    );
    let status = observed.wait_for_checkpoint(SHARD, &at(&last)).await;
    assert_eq!(shard(&status, SHARD).acked, 200);
    assert_eq!(
        api.environments_started(),
        4,
        "one execution environment per concurrent batch of the shard"
    );
    observed.stop().await;
    api.shutdown().await;
}

/// Keyless records (an `AUTO` stream's) have no per-key order to keep: with two lanes they are
/// spread over both by sequence number, run at once, and each is delivered once
/// (`docs/event-source-mapping.md` §6.4).
#[tokio::test]
async fn keyless_records_are_spread_over_the_lanes_and_each_delivered_once() {
    const KEYLESS: u32 = 200;
    let name = "parallelization-keyless";
    let kinesis = EmbeddedKinesis::new();
    kinesis.create_on_demand_stream(name, 1).unwrap();
    kinesis
        .set_record_distribution(name, RecordDistribution::Auto)
        .unwrap();
    let stream = TestStream {
        kinesis,
        name: name.to_owned(),
    };
    let mut last = None;
    for n in 0..KEYLESS {
        last = Some(stream.put("", n.to_string()).sequence_number);
    }
    let last = last.expect("records were put");

    let deliveries: Arc<Mutex<HashMap<u32, usize>>> = Arc::default();
    // How many invocations run the handler at this moment, and the most seen at once.
    let in_flight: Arc<Mutex<(usize, usize)>> = Arc::default();
    let handler = {
        let (deliveries, in_flight) = (deliveries.clone(), in_flight.clone());
        move |n: &u32, meta: &RecordMeta<'_>| {
            assert_eq!(
                meta.partition_key(),
                "",
                "record {n} gained a partition key"
            );
            *deliveries.lock().unwrap().entry(*n).or_default() += 1;
            let in_flight = in_flight.clone();
            async move {
                {
                    let mut counts = in_flight.lock().unwrap();
                    counts.0 += 1;
                    counts.1 = counts.1.max(counts.0);
                }
                // Lets the other lane's invocation run meanwhile.
                tokio::time::sleep(Duration::from_millis(1)).await;
                in_flight.lock().unwrap().0 -= 1;
                HandlerOutcome::ack()
            }
        }
    };
    let config = one_shard_mapping(
        &stream.name,
        "            BatchSize: 10
            ParallelizationFactor: 2
",
    );
    let observed = Observed::start(config, &stream, Arc::new(InProcess::handler(handler)));
    let status = observed.wait_for_checkpoint(SHARD, &at(&last)).await;
    assert_eq!(shard(&status, SHARD).acked, u64::from(KEYLESS));
    observed.stop().await;

    let deliveries = deliveries.lock().unwrap();
    let not_once: Vec<_> = (0..KEYLESS)
        .filter(|n| deliveries.get(n) != Some(&1))
        .collect();
    assert!(
        not_once.is_empty(),
        "records not delivered once: {not_once:?}"
    );
    assert_eq!(
        in_flight.lock().unwrap().1,
        2,
        "both lanes invoke at once: keyless records are not piled into one lane"
    );
}
