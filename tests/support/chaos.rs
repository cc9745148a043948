//! The chaos run (`docs/lease-table.md` §8): several `kinesis-esm run` processes sharing one
//! dynalite lease table, over one kinesis-local stream or over the embedded Kinesis one of them
//! serves, a producer publishing records numbered per key the whole time, and at seeded random
//! times a `kill -9`, a SIGSTOP/SIGCONT (a zombie: its leases expire while it sleeps and its
//! writes are refused when it wakes), a graceful stop and restart, plus one split and one merge.
//!
//! Every instance's function (the ledger fixture) appends to one shared ledger, one write per
//! invocation, so the file's order is the order deliveries happened in, and each line names the
//! function process that was delivered the record by its id and start time (a process id alone
//! is handed out again within minutes on a busy machine). [`verdict`] judges what came out.
//!
//! Run in short form by `tests/aws_chaos.rs` (the test command), in long form by the `chaos`
//! binary (`cargo run -p end-to-end --bin chaos -- --minutes 10` under `scripts/local-stack`).
//! Every wait is bounded and a failed one names the instance and shows the end of its log.

mod instance;
mod observe;
mod report;
pub mod verdict;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kinesis_esm::source::{Shard, ShardSource as _};
use tokio::sync::watch;

use crate::aws::{
    LedgerTemplate, LocalAws, RawLease, ScratchDir, build_ledger_function, dynamodb_endpoint,
    kinesis_endpoint, kinesis_esm_binary, leases_by_shard, read_ledger_by_process, unique_name,
};
use instance::{INSTANCE_TIMEOUT, Instance, Life, count_in_log, free_loopback_address, progress};
use observe::{produce, watch_unread};
pub use report::ChaosReport;
use verdict::{FinalShard, KeyedDelivery};

/// Which Kinesis the instances read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChaosKinesis {
    /// kinesis-local, started by `scripts/local-stack`.
    LocalServer,
    /// The embedded Kinesis, served by the first instance (which the chaos then spares: its
    /// stream lives in its memory) and read by the others through its endpoint.
    Embedded,
}

impl fmt::Display for ChaosKinesis {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::LocalServer => "kinesis-local",
            Self::Embedded => "the embedded Kinesis",
        })
    }
}

/// What a chaos run does.
#[derive(Debug, Clone)]
pub struct ChaosPlan {
    /// Seeds every random choice (which action, which instance, how long between actions).
    pub seed: u64,
    /// How long the chaos lasts (then the run drains: everyone wakes, nothing more is published).
    pub chaos_time: Duration,
    /// How many `kinesis-esm run` processes.
    pub instances: usize,
    /// The stream's shards at the start.
    pub shards: u32,
    /// Which Kinesis.
    pub kinesis: ChaosKinesis,
    /// The instances' `--failover-time`; a zombie sleeps twice as long.
    pub failover: Duration,
    /// The producer's keys (one record per key a tick).
    pub keys: usize,
    /// How long the drain may take to deliver everything and bring every lease to its end.
    pub drain_time: Duration,
}

impl ChaosPlan {
    /// The short form the test command runs: about half a minute of chaos.
    pub fn short(kinesis: ChaosKinesis, seed: u64) -> Self {
        Self {
            seed,
            chaos_time: Duration::from_secs(30),
            instances: 3,
            shards: 4,
            kinesis,
            failover: Duration::from_secs(3),
            keys: 12,
            drain_time: Duration::from_secs(90),
        }
    }
}

/// A seed from `CHAOS_SEED`, else from the clock.
pub fn seed_from_env() -> u64 {
    match std::env::var("CHAOS_SEED") {
        Ok(seed) => seed
            .parse()
            .unwrap_or_else(|_| panic!("CHAOS_SEED `{seed}` is not a number")),
        Err(_) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("the clock is after 1970")
                .as_nanos();
            (nanos as u64) | 1
        }
    }
}

/// How long the function takes per batch, so that batches are in flight when a signal lands.
const DELAY_MS: u64 = 20;
const BATCH_SIZE: u32 = 10;
/// How often the producer publishes and the watch looks at the lease table.
const TICK: Duration = Duration::from_millis(250);
/// What the emulator logs when fencing refuses a checkpoint write, and a renewal.
const REFUSED_CHECKPOINT: &str = "the lease was taken by another worker";
const REFUSED_RENEWAL: &str = "the lease was lost";

/// Keeps an action for the report and prints it as it happens.
fn record(actions: &mut Vec<String>, action: String) {
    progress(&action);
    actions.push(action);
}

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

    fn between(&mut self, from: Duration, to: Duration) -> Duration {
        let span = (to - from).as_millis() as u64;
        from + Duration::from_millis(self.next() % span.max(1))
    }
}

fn open_shards(shards: &[Shard]) -> Vec<&Shard> {
    let mut open: Vec<&Shard> = shards.iter().filter(|shard| !shard.is_closed()).collect();
    open.sort_by_key(|shard| shard.hash_key_range.starting_hash_key);
    open
}

/// Runs the chaos `plan` against the servers `scripts/local-stack` started. Panics, naming the
/// instance and showing its log, if an instance fails to start or stop in time.
pub async fn run(plan: ChaosPlan) -> ChaosReport {
    match try_run(plan).await {
        Ok(report) => report,
        Err(fault) => panic!("{fault}"),
    }
}

async fn try_run(plan: ChaosPlan) -> Result<ChaosReport, String> {
    assert!(
        plan.instances >= 2,
        "a chaos run needs two instances at least"
    );
    let mut rng = Rng(plan.seed);
    // Built once up front, and the function handed to every instance built (`--prebuilt-dir`):
    // a start or restart then runs no cargo, which would wait for the build lock while another
    // test builds.
    progress("building kinesis-esm and the ledger function");
    kinesis_esm_binary().await;
    let function_binary = build_ledger_function().await;
    let prebuilt_dir = function_binary
        .parent()
        .expect("a binary lies in a folder")
        .to_str()
        .expect("a UTF-8 path")
        .to_owned();
    progress("built");
    let local = LocalAws::connect().await;
    let table = local.lease_table("chaos").await;
    let scratch = ScratchDir::new("chaos");
    let ledger = scratch.join("ledger");
    let template = scratch.join("template.yaml");
    let failover = format!("{}ms", plan.failover.as_millis());
    let (embedded_listen, stream, kinesis_url) = match plan.kinesis {
        ChaosKinesis::LocalServer => {
            let stream = local.create_stream("chaos", plan.shards as i32).await;
            (None, stream, kinesis_endpoint())
        }
        ChaosKinesis::Embedded => {
            let listen = free_loopback_address();
            (
                Some(listen),
                unique_name("chaos"),
                format!("http://{listen}"),
            )
        }
    };
    LedgerTemplate {
        stream: stream.clone(),
        shards: plan.shards,
        batch_size: BATCH_SIZE,
        ledger: ledger.clone(),
        delay_ms: DELAY_MS,
    }
    .write(&template);
    let dynamodb = dynamodb_endpoint();
    let mut instances: Vec<Instance> = (0..plan.instances)
        .map(|index| {
            let worker = format!("chaos-worker-{index}");
            let serves_kinesis = plan.kinesis == ChaosKinesis::Embedded && index == 0;
            let mut args: Vec<String> = [
                "--template",
                template.to_str().expect("a UTF-8 path"),
                "--lease-table",
                &table,
                "--dynamodb-endpoint",
                &dynamodb,
                "--worker-id",
                &worker,
                "--failover-time",
                &failover,
                "--prebuilt-dir",
                &prebuilt_dir,
            ]
            .map(str::to_owned)
            .to_vec();
            if !serves_kinesis {
                args.extend(["--kinesis-endpoint".to_owned(), kinesis_url.clone()]);
            }
            Instance {
                log: scratch.join(&format!("{worker}.log")),
                worker,
                args,
                fixed_listen: embedded_listen.filter(|_| serves_kinesis),
                process: None,
                life: Life::Dead,
                serves_kinesis,
            }
        })
        .collect();
    // The instance serving the embedded Kinesis first: the others read its stream.
    for instance in &mut instances {
        instance.start().await?;
        progress(&format!("{} started", instance.worker));
    }
    let aws = Arc::new(match plan.kinesis {
        ChaosKinesis::LocalServer => local,
        ChaosKinesis::Embedded => LocalAws::connect_to_kinesis(&kinesis_url).await,
    });

    let running: Arc<Mutex<HashSet<String>>> = Arc::new(Mutex::new(
        instances
            .iter()
            .map(|instance| instance.worker.clone())
            .collect(),
    ));
    let set_running = |worker: &str, is_running: bool| {
        let mut running = running.lock().unwrap_or_else(PoisonError::into_inner);
        if is_running {
            running.insert(worker.to_owned());
        } else {
            running.remove(worker);
        }
    };
    let began = Instant::now();
    let (stop_producer, producer_stopped) = watch::channel(false);
    let producer = tokio::spawn(produce(
        Arc::clone(&aws),
        stream.clone(),
        plan.keys,
        producer_stopped,
    ));
    let (stop_watch, watch_stopped) = watch::channel(false);
    let watcher = tokio::spawn(watch_unread(
        Arc::clone(&aws),
        table.clone(),
        Arc::clone(&running),
        began,
        watch_stopped,
    ));

    let mut actions = Vec::new();
    let (mut split_done, mut merge_done) = (false, false);
    while began.elapsed() < plan.chaos_time {
        let until =
            Instant::now() + rng.between(Duration::from_millis(1500), Duration::from_millis(3500));
        while Instant::now() < until {
            for instance in &mut instances {
                if let Life::Paused(wake_at) = instance.life
                    && Instant::now() >= wake_at
                {
                    instance.process().signal("CONT").await;
                    instance.life = Life::Running;
                    set_running(&instance.worker, true);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let at = began.elapsed();
        // The dead come back first.
        for instance in &mut instances {
            if instance.life == Life::Dead {
                instance.start().await?;
                set_running(&instance.worker, true);
                record(
                    &mut actions,
                    format!("{at:.1?} restart {}", instance.worker),
                );
            }
        }
        if !split_done && at >= plan.chaos_time / 3 {
            split_done = true;
            let shards = list_shards(&aws, &stream).await;
            let open = open_shards(&shards);
            let shard = open[rng.below(open.len())];
            let range = &shard.hash_key_range;
            let middle =
                range.starting_hash_key + (range.ending_hash_key - range.starting_hash_key) / 2;
            reshard(&format!("splitting {}", shard.shard_id), || {
                aws.kinesis()
                    .split_shard(&stream, &shard.shard_id, middle + 1)
            })
            .await?;
            record(&mut actions, format!("{at:.1?} split {}", shard.shard_id));
            continue;
        }
        if !merge_done && at >= plan.chaos_time * 2 / 3 {
            merge_done = true;
            let shards = list_shards(&aws, &stream).await;
            let open = open_shards(&shards);
            let first = rng.below(open.len() - 1);
            let (a, b) = (open[first], open[first + 1]);
            reshard(
                &format!("merging {} and {}", a.shard_id, b.shard_id),
                || {
                    aws.kinesis()
                        .merge_shards(&stream, &a.shard_id, &b.shard_id)
                },
            )
            .await?;
            record(
                &mut actions,
                format!("{at:.1?} merge {} {}", a.shard_id, b.shard_id),
            );
            continue;
        }
        let running_now: Vec<usize> = (0..instances.len())
            .filter(|&index| instances[index].life == Life::Running)
            .collect();
        let victims: Vec<usize> = running_now
            .iter()
            .copied()
            .filter(|&index| !instances[index].serves_kinesis)
            .collect();
        // Someone must go on reading.
        if victims.is_empty() || running_now.len() < 2 {
            continue;
        }
        let victim = &mut instances[victims[rng.below(victims.len())]];
        match rng.below(3) {
            0 => {
                set_running(&victim.worker, false);
                victim.kill().await?;
                record(&mut actions, format!("{at:.1?} kill -9 {}", victim.worker));
            }
            1 => {
                set_running(&victim.worker, false);
                victim.process().signal("STOP").await;
                let sleep = plan.failover * 2;
                victim.life = Life::Paused(Instant::now() + sleep);
                record(
                    &mut actions,
                    format!("{at:.1?} SIGSTOP {} for {sleep:?}", victim.worker),
                );
            }
            _ => {
                set_running(&victim.worker, false);
                victim.stop().await?;
                victim.start().await?;
                set_running(&victim.worker, true);
                record(
                    &mut actions,
                    format!("{at:.1?} SIGTERM and restart {}", victim.worker),
                );
            }
        }
    }
    let chaos_took = began.elapsed();
    progress("draining");

    // The drain: everyone awake and alive, nothing more published; every record delivered and
    // every lease at its shard's end, within the drain time.
    for instance in &mut instances {
        match instance.life {
            Life::Paused(_) => instance.process().signal("CONT").await,
            Life::Dead => instance.start().await?,
            Life::Running => {}
        }
        instance.life = Life::Running;
        set_running(&instance.worker, true);
    }
    stop_producer.send_replace(true);
    let placed = producer
        .await
        .map_err(|error| format!("the producer failed: {error}"))?;
    let published: HashMap<(String, String), (usize, u64)> = placed
        .iter()
        .map(|record| {
            (
                (record.shard_id.clone(), record.sequence_number.clone()),
                (record.key, record.index),
            )
        })
        .collect();
    let drain_began = Instant::now();
    let last_of_shard: BTreeMap<String, String> = placed
        .iter()
        .map(|record| (record.shard_id.clone(), record.sequence_number.clone()))
        .collect();
    let checkpoints = |leases: &BTreeMap<String, RawLease>| -> BTreeMap<String, String> {
        leases
            .iter()
            .map(|(shard, lease)| (shard.clone(), lease.checkpoint.clone()))
            .collect()
    };
    let final_shards = |shards: &[Shard]| -> Vec<FinalShard> {
        shards
            .iter()
            .map(|shard| FinalShard {
                shard_id: shard.shard_id.clone(),
                closed: shard.is_closed(),
                last_record: last_of_shard.get(&shard.shard_id).cloned(),
            })
            .collect()
    };
    let shards = list_shards(&aws, &stream).await;
    let final_shards = final_shards(&shards);
    loop {
        let delivered: HashSet<(String, String)> = read_ledger_by_process(&ledger)
            .into_iter()
            .map(|(delivery, _)| {
                (
                    delivery.shard_id,
                    delivery.sequence_number.as_str().to_owned(),
                )
            })
            .collect();
        let all_delivered = published.keys().all(|record| delivered.contains(record));
        let leases = leases_by_shard(&aws.raw_leases(&table).await);
        if all_delivered
            && verdict::final_lease_faults(&final_shards, &checkpoints(&leases)).is_empty()
        {
            break;
        }
        if drain_began.elapsed() > plan.drain_time {
            // Not a harness fault: the report says what is missing.
            break;
        }
        tokio::time::sleep(TICK).await;
    }
    let drain_took = drain_began.elapsed();
    progress("stopping");
    stop_watch.send_replace(true);
    let watch = watcher
        .await
        .map_err(|error| format!("the watch failed: {error}"))?;
    for instance in &mut instances {
        // The instance serving the embedded Kinesis last: the others read through it.
        if !instance.serves_kinesis {
            instance.stop().await?;
        }
    }
    for instance in &mut instances {
        if instance.serves_kinesis {
            instance.stop().await?;
        }
    }
    // After the graceful stops every final checkpoint is written.
    let leases = leases_by_shard(&aws.raw_leases(&table).await);
    let final_lease_faults = verdict::final_lease_faults(&final_shards, &checkpoints(&leases));

    let ledger_lines = read_ledger_by_process(&ledger);
    let delivered: Vec<(String, String)> = ledger_lines
        .iter()
        .map(|(delivery, _)| {
            (
                delivery.shard_id.clone(),
                delivery.sequence_number.as_str().to_owned(),
            )
        })
        .collect();
    let published_records: HashSet<(String, String)> = published.keys().cloned().collect();
    let tally = verdict::tally(&published_records, &delivered);
    // Readers (execution environments) numbered in the order of their first delivery; a fault
    // names the ledger line, which names the environment.
    let mut reader_numbers: HashMap<&str, u32> = HashMap::new();
    let keyed: Vec<KeyedDelivery> = ledger_lines
        .iter()
        .zip(&delivered)
        .filter_map(|((_, environment), record)| {
            let next = reader_numbers.len() as u32;
            let reader = *reader_numbers.entry(environment.as_str()).or_insert(next);
            published
                .get(record)
                .map(|&(key, index)| KeyedDelivery { key, index, reader })
        })
        .collect();
    let order_violations = verdict::order_violations(&keyed);
    let refused_checkpoints = instances
        .iter()
        .map(|instance| count_in_log(&instance.log, REFUSED_CHECKPOINT))
        .sum();
    let refused_renewals = instances
        .iter()
        .map(|instance| count_in_log(&instance.log, REFUSED_RENEWAL))
        .sum();
    let mut report = ChaosReport {
        plan,
        actions,
        tally,
        order_violations,
        refused_checkpoints,
        refused_renewals,
        longest_unread: watch.longest,
        final_leases: leases
            .into_values()
            .map(|lease| (lease.shard_id, lease.checkpoint, lease.lease_owner))
            .collect(),
        final_lease_faults,
        chaos_took,
        drain_took,
        kept: None,
    };
    // A faulty run keeps its ledger and logs: the verdict names ledger lines, and the run cannot
    // be replayed exactly (the seed fixes the choices, not the servers' timing).
    if !report.faults().is_empty() {
        report.kept = Some(scratch.keep());
    }
    Ok(report)
}

async fn list_shards(aws: &LocalAws, stream: &str) -> Vec<Shard> {
    crate::aws::within(
        &format!("listing the shards of {stream}"),
        aws.kinesis().list_shards(stream),
    )
    .await
    .unwrap_or_else(|error| panic!("listing the shards of {stream}: {error}"))
}

/// A split or merge, tried again while the stream is still `UPDATING` from the last one.
async fn reshard<F, E>(what: &str, call: impl Fn() -> F + Send) -> Result<(), String>
where
    F: Future<Output = Result<(), E>> + Send,
    E: fmt::Display + Send,
{
    let began = Instant::now();
    loop {
        match call().await {
            Ok(()) => return Ok(()),
            // The stream is UPDATING after the last change for a while on kinesis-local.
            Err(_) if began.elapsed() < INSTANCE_TIMEOUT => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(error) => return Err(format!("{what}: {error}")),
        }
    }
}
