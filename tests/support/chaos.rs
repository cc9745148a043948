//! The chaos run (`docs/lease-table.md` §8): several `kinesis-esm run` processes sharing one
//! dynalite lease table, over one kinesis-local stream or over the embedded Kinesis one of them
//! serves, a producer publishing records numbered per key the whole time, and at seeded random
//! times a `kill -9`, a SIGSTOP/SIGCONT (a zombie: its leases expire while it sleeps and its
//! writes are refused when it wakes), a graceful stop and restart, plus one split and one merge.
//!
//! Every instance's function (the ledger fixture) appends to one shared ledger, one write per
//! invocation, so the file's order is the order deliveries happened in, and each line names the
//! function process that was delivered the record. [`verdict`] judges what came out.
//!
//! Run in short form by `tests/aws_chaos.rs` (the test command), in long form by the `chaos`
//! binary (`cargo run -p end-to-end --bin chaos -- --minutes 10` under `scripts/local-stack`).
//! Every wait is bounded and a failed one names the instance and shows the end of its log.

pub mod verdict;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kinesis_esm::source::{Shard, ShardSource as _};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::watch;

use crate::aws::{
    EsmProcess, LedgerTemplate, LocalAws, RawLease, ScratchDir, build_ledger_function,
    dynamodb_endpoint, kinesis_endpoint, kinesis_esm_binary, leases_by_shard,
    read_ledger_by_process, shipment, unique_name,
};
use verdict::{FinalShard, KeyedDelivery, LeaseView, OrderViolation, Tally, UnreadWatch};

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
/// How long an instance may take to start (its mapping running) or to stop gracefully.
const INSTANCE_TIMEOUT: Duration = Duration::from_secs(60);
/// What the emulator logs when fencing refuses a checkpoint write, and a renewal.
const REFUSED_CHECKPOINT: &str = "the lease was taken by another worker";
const REFUSED_RENEWAL: &str = "the lease was lost";
const STATUS_PATH: &str = "/kinesis-esm/status";

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    Running,
    /// SIGSTOPped; woken (SIGCONT) at this time.
    Paused(Instant),
    Dead,
}

/// One `kinesis-esm run` instance, through its restarts.
struct Instance {
    worker: String,
    /// Its arguments but `--listen`.
    args: Vec<String>,
    /// Where it listens: fixed for the instance serving the embedded Kinesis, fresh each start
    /// for the others (status only).
    fixed_listen: Option<SocketAddr>,
    log: PathBuf,
    process: Option<EsmProcess>,
    life: Life,
    serves_kinesis: bool,
}

impl Instance {
    /// Starts it and waits until its mapping runs (its status lists it), so that a signal sent
    /// afterwards finds it past building the function.
    async fn start(&mut self) -> Result<(), String> {
        let listen = match self.fixed_listen {
            Some(listen) => listen,
            None => free_loopback_address(),
        };
        let listen_text = listen.to_string();
        let mut args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        args.extend(["--listen", &listen_text]);
        let mut process = EsmProcess::start(&args, &self.log).await;
        let started = Instant::now();
        loop {
            if let Some(code) = process.ended() {
                return Err(self.fault(&format!("ended while starting (exit {code:?})")));
            }
            if let Some(body) = http_get(listen, STATUS_PATH).await
                && body.contains('{')
            {
                break;
            }
            if started.elapsed() > INSTANCE_TIMEOUT {
                process.signal("KILL").await;
                return Err(self.fault(&format!(
                    "its mapping did not start within {INSTANCE_TIMEOUT:?} (status at {listen})"
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.process = Some(process);
        self.life = Life::Running;
        Ok(())
    }

    fn process(&mut self) -> &mut EsmProcess {
        self.process.as_mut().expect("a started instance")
    }

    async fn kill(&mut self) -> Result<(), String> {
        self.process().signal("KILL").await;
        match self.process().ended_within(INSTANCE_TIMEOUT).await {
            Some(_) => {
                self.life = Life::Dead;
                Ok(())
            }
            None => Err(self.fault("did not end within a minute of SIGKILL")),
        }
    }

    /// SIGTERM, and a bounded wait for the graceful stop (batches in flight, final checkpoints,
    /// leases given up).
    async fn stop(&mut self) -> Result<(), String> {
        self.process().signal("TERM").await;
        match self.process().ended_within(INSTANCE_TIMEOUT).await {
            Some(Some(0)) => {
                self.life = Life::Dead;
                Ok(())
            }
            Some(code) => Err(self.fault(&format!("a graceful stop exited with {code:?}"))),
            None => {
                self.process().signal("KILL").await;
                Err(self.fault(&format!(
                    "a graceful stop (SIGTERM) did not end within {INSTANCE_TIMEOUT:?}"
                )))
            }
        }
    }

    /// A failure naming the instance, with the end of its log.
    fn fault(&self, what: &str) -> String {
        format!(
            "instance {}: {what}\n--- the end of {} ---\n{}",
            self.worker,
            self.log.display(),
            log_tail(&self.log, 40)
        )
    }
}

/// A line on standard error, so that a long run shows where it is.
fn progress(what: &str) {
    eprintln!("chaos: {what}");
}

fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn count_in_log(path: &Path, needle: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(needle))
        .count()
}

/// A loopback address with a port the system just handed out (and took back).
fn free_loopback_address() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
}

/// `GET path` over HTTP/1.0 (no chunked answer): the body, or `None` if nothing answered.
async fn http_get(address: SocketAddr, path: &str) -> Option<String> {
    let exchange = async {
        let mut connection = tokio::net::TcpStream::connect(address).await.ok()?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n");
        connection.write_all(request.as_bytes()).await.ok()?;
        let mut answer = Vec::new();
        connection.read_to_end(&mut answer).await.ok()?;
        let text = String::from_utf8_lossy(&answer);
        text.split_once("\r\n\r\n").map(|(_, body)| body.to_owned())
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .ok()
        .flatten()
}

/// One record the producer had accepted.
#[derive(Debug, Clone)]
struct Placed {
    shard_id: String,
    sequence_number: String,
    key: usize,
    index: u64,
}

/// The producer: one record per key a tick, numbered per key, until told to stop.
async fn produce(
    aws: Arc<LocalAws>,
    stream: String,
    keys: usize,
    mut stop: watch::Receiver<bool>,
) -> Vec<Placed> {
    let mut placed = Vec::new();
    let mut next_index = vec![0_u64; keys];
    let mut next_id = 0;
    while !*stop.borrow() {
        // One record per key a call: a record Kinesis refuses is put again before the next
        // call, so none overtakes another of its key.
        let records: Vec<(String, Vec<u8>)> = (0..keys)
            .map(|key| {
                next_id += 1;
                let data = serde_json::to_vec(&shipment(next_id)).expect("a shipment is JSON");
                (format!("key-{key}"), data)
            })
            .collect();
        for (key, record) in aws.publish(&stream, &records).await.into_iter().enumerate() {
            placed.push(Placed {
                shard_id: record.shard_id,
                sequence_number: record.sequence_number.as_str().to_owned(),
                key,
                index: next_index[key],
            });
            next_index[key] += 1;
        }
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            _ = stop.changed() => {}
        }
    }
    placed
}

/// The lease table as the unread watch reads it.
fn lease_views(leases: &BTreeMap<String, RawLease>) -> Vec<LeaseView> {
    leases
        .values()
        .map(|lease| LeaseView {
            shard_id: lease.shard_id.clone(),
            owner: lease.lease_owner.clone(),
            at_shard_end: lease.checkpoint == "SHARD_END",
            parents: lease.parent_shard_ids.clone(),
        })
        .collect()
}

/// Looks at the lease table every tick until told to stop; `running` names the instances
/// whose mapping runs (not dead, not asleep, not starting).
async fn watch_unread(
    aws: Arc<LocalAws>,
    table: String,
    running: Arc<Mutex<HashSet<String>>>,
    began: Instant,
    mut stop: watch::Receiver<bool>,
) -> UnreadWatch {
    let mut watch = UnreadWatch::default();
    while !*stop.borrow() {
        let leases = leases_by_shard(&aws.raw_leases(&table).await);
        let views = lease_views(&leases);
        {
            let running = running.lock().unwrap_or_else(PoisonError::into_inner);
            let running: HashSet<&str> = running.iter().map(String::as_str).collect();
            watch.look(began.elapsed(), &verdict::unread_shards(&views, &running));
        }
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            _ = stop.changed() => {}
        }
    }
    watch
}

fn open_shards(shards: &[Shard]) -> Vec<&Shard> {
    let mut open: Vec<&Shard> = shards.iter().filter(|shard| !shard.is_closed()).collect();
    open.sort_by_key(|shard| shard.hash_key_range.starting_hash_key);
    open
}

/// What a chaos run saw and what it makes of it.
#[derive(Debug)]
pub struct ChaosReport {
    /// The plan it ran.
    pub plan: ChaosPlan,
    /// What was done, and when.
    pub actions: Vec<String>,
    /// Published, delivered, repeated, lost.
    pub tally: Tally,
    /// Per-key order violations.
    pub order_violations: Vec<OrderViolation>,
    /// Checkpoint writes fencing refused (the reader's lease had been taken).
    pub refused_checkpoints: usize,
    /// Renewals fencing refused.
    pub refused_renewals: usize,
    /// The longest time a shard wanting a reader had none, and which.
    pub longest_unread: Option<(Duration, String)>,
    /// The final lease table: shard, checkpoint, owner.
    pub final_leases: Vec<(String, String, Option<String>)>,
    /// What is wrong with it.
    pub final_lease_faults: Vec<String>,
    /// How long the chaos, and the drain, took.
    pub chaos_took: Duration,
    /// How long the drain took (everything delivered, every lease at its end).
    pub drain_took: Duration,
}

impl ChaosReport {
    /// What breaks the guarantees: records lost or unknown, keys out of order, leases short of
    /// their shard's end.
    pub fn faults(&self) -> Vec<String> {
        let mut faults = Vec::new();
        if self.tally.lost > 0 {
            faults.push(format!("{} records lost", self.tally.lost));
        }
        if self.tally.unknown > 0 {
            faults.push(format!(
                "{} deliveries of records never published",
                self.tally.unknown
            ));
        }
        faults.extend(
            self.order_violations.iter().map(|violation| {
                format!("ledger line {}: {}", violation.position + 1, violation.why)
            }),
        );
        faults.extend(self.final_lease_faults.iter().cloned());
        faults
    }
}

impl fmt::Display for ChaosReport {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plan = &self.plan;
        writeln!(
            formatter,
            "chaos over {}: seed {} (CHAOS_SEED={} replays the choices), {} instances, {} shards, \
             {:?} of chaos, failover {:?}",
            plan.kinesis,
            plan.seed,
            plan.seed,
            plan.instances,
            plan.shards,
            self.chaos_took,
            plan.failover
        )?;
        writeln!(formatter, "  actions: {}", self.actions.join("; "))?;
        let tally = &self.tally;
        writeln!(
            formatter,
            "  published {}, delivered {} ({} records more than once, {} repeated deliveries), \
             lost {}, per-key order violations {}",
            tally.published,
            tally.deliveries,
            tally.delivered_more_than_once,
            tally.repeated_deliveries,
            tally.lost,
            self.order_violations.len()
        )?;
        writeln!(
            formatter,
            "  refused by fencing: {} checkpoint writes, {} renewals",
            self.refused_checkpoints, self.refused_renewals
        )?;
        match &self.longest_unread {
            Some((stretch, shard)) => writeln!(
                formatter,
                "  longest time a shard had no reader: {stretch:.1?} ({shard}; sampled every \
                 table scan, about {TICK:?})"
            )?,
            None => writeln!(formatter, "  every shard always had a reader")?,
        }
        writeln!(formatter, "  drain: {:.1?}", self.drain_took)?;
        for (shard, checkpoint, owner) in &self.final_leases {
            writeln!(
                formatter,
                "  final lease {shard}: {checkpoint} (owner {owner:?})"
            )?;
        }
        for fault in self.faults() {
            writeln!(formatter, "  FAULT: {fault}")?;
        }
        Ok(())
    }
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
    // Built once up front: an instance only finds them built (its own cargo build is a no-op).
    progress("building kinesis-esm and the ledger function");
    kinesis_esm_binary().await;
    build_ledger_function().await;
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
        progress(&format!(
            "{at:.1?}: {}",
            actions.last().map_or("", String::as_str)
        ));
        // The dead come back first.
        for instance in &mut instances {
            if instance.life == Life::Dead {
                instance.start().await?;
                set_running(&instance.worker, true);
                actions.push(format!("{at:.1?} restart {}", instance.worker));
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
            actions.push(format!("{at:.1?} split {}", shard.shard_id));
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
            actions.push(format!("{at:.1?} merge {} {}", a.shard_id, b.shard_id));
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
                actions.push(format!("{at:.1?} kill -9 {}", victim.worker));
            }
            1 => {
                set_running(&victim.worker, false);
                victim.process().signal("STOP").await;
                let sleep = plan.failover * 2;
                victim.life = Life::Paused(Instant::now() + sleep);
                actions.push(format!("{at:.1?} SIGSTOP {} for {sleep:?}", victim.worker));
            }
            _ => {
                set_running(&victim.worker, false);
                victim.stop().await?;
                victim.start().await?;
                set_running(&victim.worker, true);
                actions.push(format!("{at:.1?} SIGTERM and restart {}", victim.worker));
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
    let keyed: Vec<KeyedDelivery> = ledger_lines
        .iter()
        .zip(&delivered)
        .filter_map(|((_, reader), record)| {
            published.get(record).map(|&(key, index)| KeyedDelivery {
                key,
                index,
                reader: *reader,
            })
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
    Ok(ChaosReport {
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
    })
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
