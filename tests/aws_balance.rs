//! Two `kinesis-esm` processes over one DynamoDB lease table (dynalite) and one kinesis-local
//! stream of 8 shards: started together, they split the shards 4/4 within a few renewal periods
//! (free leases first, then one lease stolen a round from the worker above its fair share,
//! `docs/lease-table.md` §6). Stopped gracefully (SIGTERM), one finishes its batches in flight,
//! checkpoints them and gives its leases up, and the other takes them long before the failover
//! time: nothing is lost and nothing is delivered twice.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use end_to_end::aws::{
    Delivery, EsmProcess, LedgerTemplate, LocalAws, Published, ScratchDir, build_ledger_function,
    dynamodb_endpoint, kinesis_endpoint, leases_by_shard, read_ledger, shipment, within,
};
use shipping::Shipment;

const SHARDS: u32 = 8;
const SHIPMENTS: u64 = 800;
const BATCH_SIZE: u32 = 10;
/// Per batch: 10 batches a shard take about a second, so the stop lands with batches in flight.
const DELAY_MS: u64 = 100;
/// The workers' failover time; they renew, and look at the table, every third of it.
const FAILOVER: Duration = Duration::from_secs(6);
const FIRST: &str = "worker-first";
const SECOND: &str = "worker-second";

/// One `kinesis-esm run` process and where it writes.
struct Instance {
    process: EsmProcess,
    ledger: PathBuf,
    log: PathBuf,
}

impl Instance {
    async fn start(scratch: &ScratchDir, stream: &str, table: &str, worker: &str) -> Self {
        let (template, ledger) =
            LedgerTemplate::new(stream, SHARDS, BATCH_SIZE, DELAY_MS).write_as(scratch, worker);
        let log = scratch.join(&format!("{worker}.log"));
        let failover = format!("{}s", FAILOVER.as_secs());
        let (kinesis, dynamodb) = (kinesis_endpoint(), dynamodb_endpoint());
        let args = [
            "--template",
            &template,
            "--kinesis-endpoint",
            &kinesis,
            "--lease-table",
            table,
            "--dynamodb-endpoint",
            &dynamodb,
            "--worker-id",
            worker,
            "--failover-time",
            &failover,
            "--no-listen",
        ];
        Self {
            process: EsmProcess::start(&args, &log).await,
            ledger,
            log,
        }
    }

    async fn stop(&mut self) -> Option<i32> {
        self.process.stop().await
    }

    fn deliveries(&self) -> Vec<Delivery> {
        read_ledger(&self.ledger)
    }
}

fn log_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// How many leases of the table each worker owns (`None`: unowned).
async fn owners(aws: &LocalAws, table: &str) -> BTreeMap<Option<String>, usize> {
    let mut counts = BTreeMap::new();
    for lease in leases_by_shard(&aws.raw_leases(table).await).into_values() {
        *counts.entry(lease.lease_owner).or_insert(0) += 1;
    }
    counts
}

/// Polls the lease table until `done` holds of the owner counts; returns how long that took.
async fn wait_for_owners(
    aws: &LocalAws,
    table: &str,
    what: &str,
    mut done: impl FnMut(&BTreeMap<Option<String>, usize>) -> bool,
) -> Duration {
    let started = Instant::now();
    within(what, async {
        loop {
            if done(&owners(aws, table).await) {
                return started.elapsed();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

fn owned_by(counts: &BTreeMap<Option<String>, usize>, worker: &str) -> usize {
    counts.get(&Some(worker.to_owned())).copied().unwrap_or(0)
}

#[tokio::test]
async fn two_instances_split_the_shards_and_a_graceful_stop_hands_them_over_at_once() {
    let aws = LocalAws::connect().await;
    let stream = aws.create_stream("balance", SHARDS as i32).await;
    let table = aws.lease_table("balance").await;
    build_ledger_function().await;
    let scratch = ScratchDir::new("balance");

    // Started together: both find every lease free and race for them.
    let mut first = Instance::start(&scratch, &stream, &table, FIRST).await;
    let mut second = Instance::start(&scratch, &stream, &table, SECOND).await;
    let logs = |first: &Instance, second: &Instance| {
        format!(
            "--- {FIRST} ---\n{}\n--- {SECOND} ---\n{}",
            log_text(&first.log),
            log_text(&second.log)
        )
    };
    let all_owned = wait_for_owners(&aws, &table, "every lease to be taken", |counts| {
        !counts.contains_key(&None) && counts.values().sum::<usize>() == SHARDS as usize
    })
    .await;
    let renewal = FAILOVER / 3;
    let balanced = wait_for_owners(&aws, &table, "a 4/4 split", |counts| {
        owned_by(counts, FIRST) == 4 && owned_by(counts, SECOND) == 4
    })
    .await;
    println!(
        "8 shards, 2 instances: every lease taken after {all_owned:?}, split 4/4 {balanced:?} \
         later (renewal period {renewal:?})"
    );
    assert!(
        balanced <= renewal * 8,
        "4/4 within a few renewal periods, not {balanced:?}\n{}",
        logs(&first, &second)
    );
    // And it stays so: a worker at its fair share takes nothing more.
    tokio::time::sleep(renewal * 2).await;
    let counts = owners(&aws, &table).await;
    assert_eq!(
        (owned_by(&counts, FIRST), owned_by(&counts, SECOND)),
        (4, 4),
        "the split holds: {counts:?}"
    );

    // Records published once the split holds: no steal can repeat any of them.
    let shipments: Vec<Shipment> = (1..=SHIPMENTS).map(shipment).collect();
    let published = aws.publish_shipments(&stream, &shipments).await;
    within("the first instance's first deliveries", async {
        while first.deliveries().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    // A graceful stop in the middle: the batches in flight finish and the leases are given up.
    let code = first.stop().await;
    let stopped_at = Instant::now();
    assert_eq!(code, Some(0), "{}", logs(&first, &second));
    let first_log = log_text(&first.log);
    assert!(
        first_log.contains("SIGTERM: stopping after the batches in flight"),
        "{first_log}"
    );
    let at_the_stop = owners(&aws, &table).await;
    assert_eq!(
        owned_by(&at_the_stop, FIRST),
        0,
        "a stopped instance gives every lease up: {at_the_stop:?}"
    );
    let handed_over = wait_for_owners(&aws, &table, "the hand-over", |counts| {
        owned_by(counts, SECOND) == SHARDS as usize
    })
    .await
    .max(stopped_at.elapsed());
    println!("graceful stop: the other instance held all 8 leases {handed_over:?} after it");
    assert!(
        handed_over < FAILOVER,
        "taken well before the failover time ({FAILOVER:?}), not after {handed_over:?}\n{}",
        logs(&first, &second)
    );

    // Everything is delivered, once.
    let wanted: HashSet<(String, _)> = published.iter().map(Published::position).collect();
    within("every record to be delivered", async {
        loop {
            let delivered: HashSet<_> = first
                .deliveries()
                .iter()
                .chain(&second.deliveries())
                .map(Delivery::position)
                .collect();
            if wanted.is_subset(&delivered) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert_eq!(second.stop().await, Some(0), "{}", logs(&first, &second));
    let (before, after) = (first.deliveries(), second.deliveries());
    let mut seen = HashSet::new();
    let twice: Vec<&Delivery> = before
        .iter()
        .chain(&after)
        .filter(|delivery| !seen.insert(delivery.position()))
        .collect();
    println!(
        "{SHIPMENTS} records: {} delivered by the stopped instance, {} by the other, {} twice",
        before.len(),
        after.len(),
        twice.len()
    );
    assert!(
        twice.is_empty(),
        "the stopped instance checkpointed everything it was delivered: {twice:#?}"
    );
    // Every lease ends at its shard's last record, unowned.
    let last_of_shard: BTreeMap<&str, &Published> = published
        .iter()
        .map(|record| (record.shard_id.as_str(), record))
        .collect();
    for (shard, lease) in leases_by_shard(&aws.raw_leases(&table).await) {
        assert_eq!(lease.lease_owner, None, "{shard}: given up at the stop");
        assert_eq!(
            lease.checkpoint,
            last_of_shard[shard.as_str()].sequence_number.as_str(),
            "{shard}"
        );
    }
}
