//! The chaos run: three `kinesis-esm` processes over one kinesis-local stream and one dynalite
//! lease table, a producer publishing per-key numbered records the whole time, and at random
//! times (seeded) a `kill -9`, a SIGSTOP/SIGCONT (a zombie: its leases expire while it sleeps,
//! and its writes are refused when it wakes), a graceful stop and restart, plus one split and one
//! merge. Every instance's function appends to one shared ledger (one write per invocation, so
//! the file's order is the order deliveries happened in).
//!
//! It reports what was published, delivered, delivered more than once, lost, delivered out of
//! per-key order, the lease writes fencing refused, the longest time a shard had no live reader,
//! and the final leases; and asserts nothing was lost, no key went out of order, and every lease
//! ended at its shard's last record or `SHARD_END`.
//!
//! Work in progress, not yet a module of `main.rs`: its first run (beside `aws_balance`, machine
//! load 14) timed out waiting 90 s for a graceful stop of one instance, not yet explained. Once
//! it passes it is meant to run in the test command with 6 steps (`CHAOS_STEPS`) and on demand
//! with more; `CHAOS_SEED` replays a run's seed (printed at its start).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use end_to_end::aws::{
    EsmProcess, LedgerTemplate, LocalAws, Published, ScratchDir, build_ledger_function,
    dynamodb_endpoint, kinesis_endpoint, leases_by_shard, read_ledger, shipment, within,
};
use kinesis_esm::source::{Shard, ShardSource as _};

const INSTANCES: usize = 3;
const SHARDS: u32 = 4;
const KEYS: usize = 12;
const BATCH_SIZE: u32 = 10;
const DELAY_MS: u64 = 20;
const FAILOVER: Duration = Duration::from_secs(3);
/// How often the run publishes one record per key and looks at the lease table.
const TICK: Duration = Duration::from_millis(250);
const SHORT_FORM_STEPS: usize = 6;

/// A small seeded generator (xorshift64*): enough to pick actions and pauses reproducibly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.next() % (to - from))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    Running,
    /// SIGSTOPped; woken (SIGCONT) at this time.
    Paused(Instant),
    Dead,
}

struct Instance {
    worker: String,
    args: Vec<String>,
    log: PathBuf,
    process: Option<EsmProcess>,
    life: Life,
}

impl Instance {
    async fn start(&mut self) {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.process = Some(EsmProcess::start(&args, &self.log).await);
        self.life = Life::Running;
    }

    fn process(&mut self) -> &mut EsmProcess {
        self.process.as_mut().expect("a started instance")
    }
}

/// What the run saw while it ran.
#[derive(Default)]
struct Watch {
    /// Per shard: since when it has had no live reader.
    unread_since: HashMap<String, Instant>,
    longest_unread: Duration,
    longest_unread_shard: String,
}

impl Watch {
    /// Looks at the lease table: a shard that may be read (not `SHARD_END`, parents done) and
    /// whose owner is nobody or a dead or sleeping instance has no reader.
    async fn look(&mut self, aws: &LocalAws, table: &str, instances: &[Instance]) {
        let live: HashSet<&str> = instances
            .iter()
            .filter(|instance| instance.life == Life::Running)
            .map(|instance| instance.worker.as_str())
            .collect();
        let leases = leases_by_shard(&aws.raw_leases(table).await);
        let now = Instant::now();
        for (shard, lease) in &leases {
            let waiting_on_parents = lease.parent_shard_ids.iter().any(|parent| {
                leases
                    .get(parent)
                    .is_some_and(|parent| parent.checkpoint != "SHARD_END")
            });
            let unread = lease.checkpoint != "SHARD_END"
                && !waiting_on_parents
                && lease
                    .lease_owner
                    .as_deref()
                    .is_none_or(|owner| !live.contains(owner));
            if unread {
                let since = *self.unread_since.entry(shard.clone()).or_insert(now);
                if now - since > self.longest_unread {
                    self.longest_unread = now - since;
                    self.longest_unread_shard.clone_from(shard);
                }
            } else {
                self.unread_since.remove(shard);
            }
        }
    }
}

/// The producer: one record per key a tick, numbered per key.
struct Producer {
    next_index: Vec<u64>,
    next_id: u64,
    /// Where each record went, with its key and number.
    published: Vec<(Published, usize, u64)>,
}

impl Producer {
    async fn publish(&mut self, aws: &LocalAws, stream: &str) {
        // One record per key a call: a record Kinesis refuses and the publisher puts again can
        // never overtake another of its key.
        let records: Vec<(String, Vec<u8>)> = (0..KEYS)
            .map(|key| {
                self.next_id += 1;
                let data = serde_json::to_vec(&shipment(self.next_id)).expect("JSON");
                (format!("key-{key}"), data)
            })
            .collect();
        for (key, placed) in aws.publish(stream, &records).await.into_iter().enumerate() {
            self.published.push((placed, key, self.next_index[key]));
            self.next_index[key] += 1;
        }
    }
}

fn count_in_logs(instances: &[Instance], needles: &[&str]) -> usize {
    instances
        .iter()
        .map(|instance| {
            let log = std::fs::read_to_string(&instance.log).unwrap_or_default();
            log.lines()
                .filter(|line| needles.iter().any(|needle| line.contains(needle)))
                .count()
        })
        .sum()
}

fn open_shards(shards: &[Shard]) -> Vec<&Shard> {
    let mut open: Vec<&Shard> = shards.iter().filter(|shard| !shard.is_closed()).collect();
    open.sort_by_key(|shard| shard.hash_key_range.starting_hash_key);
    open
}

fn steps() -> usize {
    std::env::var("CHAOS_STEPS")
        .ok()
        .map(|steps| steps.parse().expect("CHAOS_STEPS is a number"))
        .unwrap_or(SHORT_FORM_STEPS)
}

fn seed() -> u64 {
    match std::env::var("CHAOS_SEED") {
        Ok(seed) => seed.parse().expect("CHAOS_SEED is a number"),
        Err(_) => {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("after 1970")
                .as_nanos() as u64
                | 1
        }
    }
}

#[tokio::test]
async fn a_chaos_run_loses_nothing_and_keeps_every_key_in_order() {
    let seed = seed();
    let steps = steps();
    println!("chaos: seed {seed}, {steps} steps (CHAOS_SEED={seed} CHAOS_STEPS={steps} replays)");
    let mut rng = Rng(seed);
    let aws = LocalAws::connect().await;
    let stream = aws.create_stream("chaos", SHARDS as i32).await;
    let table = aws.lease_table("chaos").await;
    build_ledger_function().await;
    let scratch = ScratchDir::new("chaos");
    let ledger = scratch.join("ledger");
    let template = scratch.join("template.yaml");
    LedgerTemplate {
        stream: stream.clone(),
        shards: SHARDS,
        batch_size: BATCH_SIZE,
        ledger: ledger.clone(),
        delay_ms: DELAY_MS,
    }
    .write(&template);
    let (kinesis, dynamodb) = (kinesis_endpoint(), dynamodb_endpoint());
    let failover = format!("{}s", FAILOVER.as_secs());
    let mut instances: Vec<Instance> = (0..INSTANCES)
        .map(|index| {
            let worker = format!("chaos-worker-{index}");
            let args = [
                "--template",
                template.to_str().expect("a UTF-8 path"),
                "--kinesis-endpoint",
                &kinesis,
                "--lease-table",
                &table,
                "--dynamodb-endpoint",
                &dynamodb,
                "--worker-id",
                &worker,
                "--failover-time",
                &failover,
                "--no-listen",
            ]
            .map(str::to_owned)
            .to_vec();
            Instance {
                log: scratch.join(&format!("{worker}.log")),
                worker,
                args,
                process: None,
                life: Life::Dead,
            }
        })
        .collect();
    for instance in &mut instances {
        instance.start().await;
    }

    let mut producer = Producer {
        next_index: vec![0; KEYS],
        next_id: 0,
        published: Vec::new(),
    };
    let mut watch = Watch::default();
    let mut actions = Vec::new();
    let started = Instant::now();
    for step in 0..steps {
        // Between actions: publish, look at the table, wake the sleepers that are due.
        let until = Instant::now() + rng.millis(1500, 3500);
        while Instant::now() < until {
            producer.publish(&aws, &stream).await;
            watch.look(&aws, &table, &instances).await;
            for instance in &mut instances {
                if let Life::Paused(wake_at) = instance.life
                    && Instant::now() >= wake_at
                {
                    instance.process().signal("CONT").await;
                    instance.life = Life::Running;
                }
            }
            tokio::time::sleep(TICK).await;
        }
        // The dead come back first.
        for instance in &mut instances {
            if instance.life == Life::Dead {
                instance.start().await;
                actions.push(format!("restart {}", instance.worker));
            }
        }
        let at = started.elapsed();
        if step == steps / 3 {
            let shards = aws
                .kinesis()
                .list_shards(&stream)
                .await
                .expect("ListShards");
            let open = open_shards(&shards);
            let shard = open[rng.below(open.len())];
            let range = &shard.hash_key_range;
            let middle =
                range.starting_hash_key + (range.ending_hash_key - range.starting_hash_key) / 2;
            within(
                "a split",
                aws.kinesis()
                    .split_shard(&stream, &shard.shard_id, middle + 1),
            )
            .await
            .expect("SplitShard");
            actions.push(format!("{at:.1?}: split {}", shard.shard_id));
            continue;
        }
        if step == 2 * steps / 3 {
            let shards = aws
                .kinesis()
                .list_shards(&stream)
                .await
                .expect("ListShards");
            let open = open_shards(&shards);
            let first = rng.below(open.len() - 1);
            let (a, b) = (open[first], open[first + 1]);
            within(
                "a merge",
                aws.kinesis()
                    .merge_shards(&stream, &a.shard_id, &b.shard_id),
            )
            .await
            .expect("MergeShards");
            actions.push(format!("{at:.1?}: merge {} {}", a.shard_id, b.shard_id));
            continue;
        }
        let running: Vec<usize> = (0..INSTANCES)
            .filter(|&index| instances[index].life == Life::Running)
            .collect();
        if running.len() < 2 {
            // Someone must go on reading.
            continue;
        }
        let victim = &mut instances[running[rng.below(running.len())]];
        match rng.below(3) {
            0 => {
                victim.process().signal("KILL").await;
                victim.process().wait().await;
                victim.life = Life::Dead;
                actions.push(format!("{at:.1?}: kill -9 {}", victim.worker));
            }
            1 => {
                victim.process().signal("STOP").await;
                victim.life = Life::Paused(Instant::now() + FAILOVER * 2);
                actions.push(format!(
                    "{at:.1?}: SIGSTOP {} (SIGCONT in {:?})",
                    victim.worker,
                    FAILOVER * 2
                ));
            }
            _ => {
                let code = victim.process().stop().await;
                assert_eq!(code, Some(0), "a graceful stop of {}", victim.worker);
                victim.start().await;
                actions.push(format!("{at:.1?}: SIGTERM and restart {}", victim.worker));
            }
        }
    }

    // The calm: everyone awake and alive, no more records; wait for every record to be
    // delivered and every lease to reach its shard's end.
    for instance in &mut instances {
        match instance.life {
            Life::Paused(_) => instance.process().signal("CONT").await,
            Life::Dead => instance.start().await,
            Life::Running => {}
        }
        instance.life = Life::Running;
    }
    let published: HashMap<(String, String), (usize, u64)> = producer
        .published
        .iter()
        .map(|(placed, key, index)| {
            (
                (
                    placed.shard_id.clone(),
                    placed.sequence_number.as_str().to_owned(),
                ),
                (*key, *index),
            )
        })
        .collect();
    let deliveries_of = |ledger: &Path| {
        read_ledger(ledger)
            .into_iter()
            .map(|delivery| {
                (
                    delivery.shard_id.clone(),
                    delivery.sequence_number.as_str().to_owned(),
                )
            })
            .collect::<Vec<_>>()
    };
    within("every record to be delivered", async {
        loop {
            let delivered: HashSet<_> = deliveries_of(&ledger).into_iter().collect();
            if published.keys().all(|record| delivered.contains(record)) {
                break;
            }
            watch.look(&aws, &table, &instances).await;
            tokio::time::sleep(TICK).await;
        }
    })
    .await;
    let last_of_shard: BTreeMap<String, String> = producer
        .published
        .iter()
        .map(|(placed, _, _)| {
            (
                placed.shard_id.clone(),
                placed.sequence_number.as_str().to_owned(),
            )
        })
        .collect();
    let shards = aws
        .kinesis()
        .list_shards(&stream)
        .await
        .expect("ListShards");
    let at_end = |leases: &BTreeMap<String, end_to_end::aws::RawLease>| {
        shards
            .iter()
            .all(|shard| match leases.get(&shard.shard_id) {
                // A finished parent's lease is deleted once its children started.
                None => shard.is_closed(),
                Some(lease) if shard.is_closed() => lease.checkpoint == "SHARD_END",
                Some(lease) => match last_of_shard.get(&shard.shard_id) {
                    Some(last) => &lease.checkpoint == last,
                    None => lease.checkpoint == "TRIM_HORIZON",
                },
            })
    };
    let final_leases = within("every lease at its shard's end", async {
        loop {
            let leases = leases_by_shard(&aws.raw_leases(&table).await);
            if at_end(&leases) {
                return leases;
            }
            tokio::time::sleep(TICK).await;
        }
    })
    .await;
    for instance in &mut instances {
        let code = instance.process().stop().await;
        assert_eq!(code, Some(0), "the final stop of {}", instance.worker);
    }

    // The figures.
    let deliveries = deliveries_of(&ledger);
    let mut seen = HashSet::new();
    let mut duplicates = 0;
    let mut order_violations = Vec::new();
    let mut newest_first_delivery: HashMap<usize, u64> = HashMap::new();
    for delivery in &deliveries {
        if !seen.insert(delivery.clone()) {
            duplicates += 1;
            continue;
        }
        let Some(&(key, index)) = published.get(delivery) else {
            panic!("delivered a record never published: {delivery:?}");
        };
        // A record's first delivery comes after the first delivery of every earlier record of
        // its key.
        if let Some(&newest) = newest_first_delivery.get(&key)
            && newest > index
        {
            order_violations.push((key, index, newest));
            continue;
        }
        newest_first_delivery.insert(key, index);
    }
    let lost = published
        .keys()
        .filter(|record| !seen.contains(*record))
        .count();
    let refusals = count_in_logs(
        &instances,
        &[
            "the lease was taken by another worker",
            "the lease was lost",
        ],
    );
    println!("chaos: actions: {}", actions.join("; "));
    println!(
        "chaos: {} published, {} delivered, {duplicates} delivered more than once, {lost} lost, \
         {} per-key order violations, {refusals} lease writes refused by fencing, longest shard \
         without a reader {:?} ({})",
        published.len(),
        deliveries.len(),
        order_violations.len(),
        watch.longest_unread,
        watch.longest_unread_shard,
    );
    for (shard, lease) in &final_leases {
        println!(
            "chaos: lease {shard} at {} (owner {:?})",
            lease.checkpoint, lease.lease_owner
        );
    }
    assert_eq!(lost, 0, "nothing is lost (seed {seed})");
    assert!(
        order_violations.is_empty(),
        "records of a key delivered out of order (key, index, after index), seed {seed}: \
         {order_violations:?}"
    );
}
