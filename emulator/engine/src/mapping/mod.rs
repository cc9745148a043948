//! The event source mapping: shard readers, leases, and the order of parents and children.
//!
//! A coordinator lists the stream's shards, creates a lease for each, and starts a reader for
//! every shard whose parents have all reached `SHARD_END`. Each reader keeps one batch in flight,
//! invokes the function, reads its answer and retries as Lambda does
//! (`docs/event-source-mapping.md` §1-§2) and writes one checkpoint per settled batch. At the end
//! of a closed shard it creates its children's leases and checkpoints `SHARD_END`, which lets the
//! coordinator start the children (`docs/resharding.md`). Several workers sharing one lease table
//! share the shards out: each round, a coordinator takes free leases up to its fair share, or
//! steals one from the most loaded worker (`balance.rs`, `docs/lease-table.md` §6).

mod balance;
mod checkpointer;
mod control;
mod lanes;
mod lineage;
pub mod metrics;
mod misconfiguration;
mod on_failure;
mod policy;
mod reader;
pub mod replay;
mod resume;
mod status;
mod window;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use futures_util::StreamExt as _;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::backoff::{Backoff, BackoffConfig, RetryKind};
use crate::config::MappingConfig;
use crate::destination::Destination;
use crate::invoke::Invoker;
use crate::lease::{Checkpoint, Lease, LeaseError, LeaseStore, MemoryLeaseStore};
use kinesis_source::{Shard, ShardSource, SourceError, StreamDescription};

pub use status::{
    DiscardedRange, HeldRecord, InvocationVerdict, MappingEvent, MappingStatus, NextRetry,
    RECENT_INVOCATIONS_KEPT, RecentInvocation, RecentInvocations, ShardPhase, ShardStatus,
};
use status::{Settled, ShardChange};

pub use control::MappingControl;
pub use reader::event_records;
use reader::{ReaderExit, ShardReader};

/// How many leases a worker takes at once: enough that a remote table's round trips overlap,
/// few enough that a table with thousands of shards is not flooded.
const CONCURRENT_TAKES: usize = 16;

/// How the emulator runs a mapping: knobs that are not Lambda properties.
#[derive(Debug, Clone)]
pub struct MappingOptions {
    /// This worker's name in the lease table (`leaseOwner`).
    pub worker_id: String,
    /// How long an idle shard waits before reading again when the source cannot signal new
    /// records (Lambda polls each shard about once a second).
    pub poll_interval: Duration,
    /// How often the coordinator lists shards and leases again.
    pub shard_sync_interval: Duration,
    /// How often the coordinator deletes the leases that nothing needs any more (finished
    /// parents, shards aged out of the stream), at its next shard sync (the KCL: every minute).
    pub lease_cleanup_interval: Duration,
    /// How long a lease may go unrenewed before another worker takes it (KCL: 10 s).
    pub failover_time: Duration,
    /// How many leases a worker below its fair share steals from a live worker in one round
    /// (the KCL's `maxLeasesToStealAtOneTime`: 1).
    pub max_leases_to_steal: usize,
    /// The first pause before retrying a failed batch.
    pub retry_backoff_initial: Duration,
    /// The longest pause between retries of a failed batch.
    pub retry_backoff_max: Duration,
    /// The execution role named in events (`invokeIdentityArn`).
    pub invoke_identity_arn: String,
    /// The mapping's UUID, as Lambda names it in S3 on-failure objects' keys.
    pub mapping_uuid: String,
}

impl Default for MappingOptions {
    fn default() -> Self {
        Self {
            worker_id: format!("kinesis-esm-{}", uuid::Uuid::new_v4()),
            poll_interval: Duration::from_secs(1),
            shard_sync_interval: Duration::from_secs(10),
            lease_cleanup_interval: Duration::from_secs(10),
            failover_time: Duration::from_secs(10),
            max_leases_to_steal: 1,
            retry_backoff_initial: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(2),
            invoke_identity_arn: "arn:aws:iam::000000000000:role/kinesis-esm".to_owned(),
            mapping_uuid: uuid::Uuid::new_v4().to_string(),
        }
    }
}

/// A stable UUID for the mapping from `stream_name` to `function_name` (an MD5 name-based
/// UUID), so that a mapping keeps its S3 on-failure keys' prefix from one run to the next, as a
/// deployed mapping keeps its UUID.
pub fn stable_mapping_uuid(function_name: &str, stream_name: &str) -> String {
    use md5::Digest as _;
    let digest = md5::Md5::digest(format!("kinesis-esm:{function_name}:{stream_name}"));
    uuid::Builder::from_md5_bytes(digest.into())
        .into_uuid()
        .to_string()
}

/// An event source mapping, ready to start.
pub struct EventSourceMapping {
    config: MappingConfig,
    source: Arc<dyn ShardSource>,
    invoker: Arc<dyn Invoker>,
    leases: Arc<dyn LeaseStore>,
    options: MappingOptions,
    observer: Option<mpsc::UnboundedSender<MappingEvent>>,
    destination: Option<Arc<dyn Destination>>,
}

impl EventSourceMapping {
    /// A mapping from `config.stream_name` in `source` to the function behind `invoker`, with
    /// checkpoints in a fresh [`MemoryLeaseStore`].
    pub fn new(
        config: MappingConfig,
        source: Arc<dyn ShardSource>,
        invoker: Arc<dyn Invoker>,
    ) -> Self {
        Self {
            config,
            source,
            invoker,
            leases: Arc::new(MemoryLeaseStore::new()),
            options: MappingOptions::default(),
            observer: None,
            destination: None,
        }
    }

    /// Delivers the records of discarded batches to `destination` (the mapping's
    /// `DestinationConfig.OnFailure`): the shard waits until each is delivered.
    pub fn on_failure_destination(mut self, destination: Arc<dyn Destination>) -> Self {
        self.destination = Some(destination);
        self
    }

    /// Keeps checkpoints in `leases` instead.
    pub fn lease_store(mut self, leases: Arc<dyn LeaseStore>) -> Self {
        self.leases = leases;
        self
    }

    /// Sets the emulator's own knobs.
    pub fn options(mut self, options: MappingOptions) -> Self {
        self.options = options;
        self
    }

    /// Sends every [`MappingEvent`] to `observer`.
    pub fn observe(mut self, observer: mpsc::UnboundedSender<MappingEvent>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Starts the mapping on the current tokio runtime.
    pub fn start(self) -> RunningMapping {
        let status = MappingStatus {
            function_name: self.config.function_name.clone(),
            stream_name: self.config.stream_name.clone(),
            on_failure_destination: self.config.on_failure_destination.clone(),
            event_count_metrics: self.config.event_count_metrics,
            ..MappingStatus::default()
        };
        let (status, status_changes) = watch::channel(status);
        let (stop, stopping) = watch::channel(false);
        let shared = Arc::new(Shared {
            config: self.config,
            source: self.source,
            invoker: self.invoker,
            leases: self.leases,
            options: self.options,
            observer: self.observer,
            destination: self.destination,
            status,
            ignored_item_failures_warning: misconfiguration::WarnOnce::default(),
            replay_registry: replay::ReplayRegistry::default(),
        });
        let coordinator = tokio::spawn(coordinate(Arc::clone(&shared), stopping));
        RunningMapping {
            shared,
            status: status_changes,
            stop,
            coordinator,
        }
    }
}

/// What the coordinator and the readers share.
struct Shared {
    config: MappingConfig,
    source: Arc<dyn ShardSource>,
    invoker: Arc<dyn Invoker>,
    leases: Arc<dyn LeaseStore>,
    options: MappingOptions,
    observer: Option<mpsc::UnboundedSender<MappingEvent>>,
    /// Where the records of discarded batches go, if anywhere.
    destination: Option<Arc<dyn Destination>>,
    status: watch::Sender<MappingStatus>,
    /// The misconfiguration warning, given once per mapping.
    ignored_item_failures_warning: misconfiguration::WarnOnce,
    /// The running readers, which take replays (`kinesis-esm replay`).
    replay_registry: replay::ReplayRegistry,
}

impl Shared {
    fn emit(&self, event: impl FnOnce() -> MappingEvent) {
        if let Some(observer) = &self.observer {
            // A gone observer only means nobody listens any more.
            let _ = observer.send(event());
        }
    }

    /// Records a change of a shard's status (`ShardStatus::apply` says what it changes). A
    /// change that leaves the status as it is wakes no watcher (`ShardStatus::unchanged_by`).
    fn update_shard(&self, shard_id: &str, change: ShardChange) {
        self.status.send_if_modified(|status| {
            if let Some(shard) = status.shards.get_mut(shard_id) {
                if shard.unchanged_by(&change) {
                    return false;
                }
                shard.apply(change);
                return true;
            }
            let mut shard = ShardStatus {
                shard_id: shard_id.to_owned(),
                metrics: metrics::ShardMetrics::new(self.config.event_count_metrics),
                ..ShardStatus::default()
            };
            shard.apply(change);
            status.shards.insert(shard_id.to_owned(), shard);
            true
        });
    }

    fn retry_backoff(&self) -> Backoff {
        Backoff::new(BackoffConfig {
            initial: self.options.retry_backoff_initial,
            max: self.options.retry_backoff_max,
            ..BackoffConfig::default()
        })
    }
}

/// A started mapping.
pub struct RunningMapping {
    shared: Arc<Shared>,
    status: watch::Receiver<MappingStatus>,
    stop: watch::Sender<bool>,
    coordinator: JoinHandle<()>,
}

impl RunningMapping {
    /// The mapping's status now.
    pub fn status(&self) -> MappingStatus {
        self.status.borrow().clone()
    }

    /// A receiver of the mapping's status, for watching it from another task.
    pub fn status_receiver(&self) -> watch::Receiver<MappingStatus> {
        self.status.clone()
    }

    /// The mapping's configuration.
    pub fn config(&self) -> &MappingConfig {
        &self.shared.config
    }

    /// Waits until the status satisfies `condition`, and returns that status.
    pub async fn wait_for(
        &self,
        mut condition: impl FnMut(&MappingStatus) -> bool,
    ) -> MappingStatus {
        let mut changes = self.status.clone();
        let status = changes
            .wait_for(|status| condition(status))
            .await
            .expect("the status outlives the mapping's tasks");
        status.clone()
    }

    /// Waits until there is nothing left to do until new records arrive
    /// ([`MappingStatus::is_idle`]).
    pub async fn wait_until_idle(&self) -> MappingStatus {
        self.wait_for(MappingStatus::is_idle).await
    }

    /// Stops the mapping: each reader finishes the invocation it has in flight, gives its lease
    /// up and stops. Returns the final status.
    pub async fn stop(self) -> MappingStatus {
        let _ = self.stop.send(true);
        if let Err(error) = self.coordinator.await {
            tracing::error!(%error, "the mapping's coordinator failed");
        }
        self.status.borrow().clone()
    }
}

/// The lease key of a shard: the KCL's multi-stream form, tied to the stream's creation time so
/// that a stream created again under the same name never resumes from the old one's checkpoints.
fn lease_key(stream: &StreamDescription, shard_id: &str) -> String {
    let account = stream.arn.split(':').nth(4).unwrap_or("000000000000");
    let created = stream
        .created
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    format!("{account}:{}:{created}:{shard_id}", stream.name)
}

/// Warns, once at start, of each lease left by a stream of the same name created at another
/// time: its checkpoint is not this stream's, and the reader does not resume at it
/// (`docs/checkpoints.md`).
async fn report_leases_of_another_creation(shared: &Shared, stream: &StreamDescription) {
    let Ok(leases) = shared.leases.list_leases().await else {
        // The first sync lists the leases again and reports the error.
        return;
    };
    let account = stream.arn.split(':').nth(4).unwrap_or("000000000000");
    let this_key = lease_key(stream, "");
    let created = this_key.split(':').nth(2).unwrap_or_default();
    for (lease, other_created) in
        resume::leases_of_another_creation(&leases, account, &stream.name, created)
    {
        tracing::warn!(
            stream = %stream.name,
            shard_id = %lease.shard_id,
            lease_key = %lease.lease_key,
            checkpoint = %lease.checkpoint,
            lease_stream_created = other_created,
            stream_created = created,
            "a lease is for a stream of this name created at another time (epoch seconds): its \
             checkpoint is not this stream's, so the reader does not resume at it; the shard \
             starts at the mapping's StartingPosition and the old lease is left as it is"
        );
    }
}

/// The coordinator's loop: sync shards and leases, start the readers that may run, clean up.
async fn coordinate(shared: Arc<Shared>, mut stopping: watch::Receiver<bool>) {
    let mut backoff = shared.retry_backoff();
    let describe = || shared.source.describe_stream(&shared.config.stream_name);
    let failed = |error, _| {
        report_error(
            &shared,
            format!("describing stream {}: {error}", shared.config.stream_name),
        );
        Ok::<_, ()>(RetryKind::Error)
    };
    let stopped = || {
        let mut stopping = stopping.clone();
        async move {
            let _ = stopping.wait_for(|stop| *stop).await;
        }
    };
    let Ok(stream) = backoff.retry_until_stopped(describe, failed, stopped).await else {
        return;
    };
    let stream = Arc::new(stream);
    report_leases_of_another_creation(&shared, &stream).await;
    let (exits, mut exited) = mpsc::unbounded_channel::<ReaderExited>();
    let mut readers: HashMap<String, JoinHandle<()>> = HashMap::new();
    let mut expiry = LeaseExpiry::default();
    let mut last_cleanup = None;
    let mut awaiting_expiry = false;
    let mut shared_with_others = false;
    loop {
        if *stopping.borrow() {
            break;
        }
        match sync(
            &shared,
            &stream,
            &mut readers,
            &mut expiry,
            &mut last_cleanup,
            &exits,
            &stopping,
        )
        .await
        {
            Ok(Round {
                undecided,
                others_seen,
            }) => {
                backoff.reset();
                shared.status.send_modify(|status| {
                    status.last_error = None;
                    // Until then the mapping cannot say that nothing is left to do: a lease
                    // that a dead worker never gave up must still be taken and read.
                    status.synced |= !undecided;
                });
                awaiting_expiry = undecided;
                shared_with_others = others_seen;
            }
            Err(error) => report_error(&shared, error),
        }
        let pause = if shared.status.borrow().last_error.is_some() {
            backoff.next_pause(RetryKind::Error)
        } else if awaiting_expiry {
            // Look again soon enough to see a renewal, or to take the lease once it expires.
            shared
                .options
                .shard_sync_interval
                .min(shared.options.failover_time / 2)
        } else if shared_with_others {
            // Look once a renewal period, so that a lease another worker gives up (a graceful
            // stop) is taken within one, and balancing steals one lease per period. Two workers
            // started together see each other first as a lost race for a free lease.
            shared
                .options
                .shard_sync_interval
                .min(shared.options.failover_time / 3)
        } else {
            shared.options.shard_sync_interval
        };
        tokio::select! {
            exit = exited.recv() => {
                if let Some(exited) = exit {
                    forget_reader(&mut readers, exited);
                }
                // The readers that exited meanwhile are seen by the same next round: when every
                // shard of a stream ends at once, a round per exit read the whole lease table
                // per shard, work in the square of the shard count (`docs/scale.md`).
                while let Ok(exited) = exited.try_recv() {
                    forget_reader(&mut readers, exited);
                }
            }
            () = tokio::time::sleep(pause) => {}
            _ = stopping.wait_for(|stop| *stop) => break,
        }
    }
    for (_, reader) in readers {
        let _ = reader.await;
    }
}

/// A shard reader's end, as its task reports it to the coordinator.
struct ReaderExited {
    shard_id: String,
    /// The reader's task: only its own entry is forgotten, never a newer reader's of the shard.
    task: tokio::task::Id,
    exit: ReaderExit,
}

/// Forgets the reader that `exited`, if it is still the one on record for its shard.
fn forget_reader(readers: &mut HashMap<String, JoinHandle<()>>, exited: ReaderExited) {
    let ReaderExited {
        shard_id,
        task,
        exit,
    } = exited;
    if readers
        .get(&shard_id)
        .is_some_and(|reader| reader.id() == task)
    {
        readers.remove(&shard_id);
    }
    tracing::debug!(shard_id, ?exit, "reader exited");
}

fn report_error(shared: &Shared, error: String) {
    tracing::warn!(
        function = %shared.config.function_name,
        stream = %shared.config.stream_name,
        "{error}"
    );
    shared
        .status
        .send_modify(|status| status.last_error = Some(error));
}

/// When other workers' leases were last seen to change, to tell a live lease from an expired one.
#[derive(Default)]
struct LeaseExpiry {
    last_change: HashMap<String, SeenLease>,
}

/// A lease as the coordinator last saw it.
struct SeenLease {
    counter: u64,
    /// When its counter last changed, or when it was first seen.
    changed_at: Instant,
    /// Whether its counter changed while this worker watched: its owner is alive.
    renewed: bool,
}

/// Whether a lease may be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Availability {
    /// Unowned, ours, or not renewed for the failover time.
    Available,
    /// Another worker holds it and renews it.
    HeldElsewhere,
    /// Another worker holds it, and it has not been watched long enough to tell whether that
    /// worker still renews it: a worker that died (`kill -9`) never gave its leases up.
    Undecided,
}

impl LeaseExpiry {
    /// Whether `lease` may be taken: unowned, ours, or not renewed for `failover_time`.
    fn availability(
        &mut self,
        lease: &Lease,
        worker_id: &str,
        failover_time: Duration,
    ) -> Availability {
        let now = Instant::now();
        let seen = self
            .last_change
            .entry(lease.lease_key.clone())
            .or_insert(SeenLease {
                counter: lease.lease_counter,
                changed_at: now,
                renewed: false,
            });
        if seen.counter != lease.lease_counter {
            *seen = SeenLease {
                counter: lease.lease_counter,
                changed_at: now,
                renewed: true,
            };
        }
        match lease.lease_owner.as_deref() {
            None => Availability::Available,
            Some(owner) if owner == worker_id => Availability::Available,
            Some(_) if now.duration_since(seen.changed_at) >= failover_time => {
                Availability::Available
            }
            Some(_) if seen.renewed => Availability::HeldElsewhere,
            Some(_) => Availability::Undecided,
        }
    }
}

/// What a round of the coordinator saw.
struct Round {
    /// Whether it left a lease of another worker undecided (neither seen renewed nor expired
    /// yet).
    undecided: bool,
    /// Whether another worker holds live leases of the stream, or won a lease this round.
    others_seen: bool,
}

/// One round of the coordinator: list shards, create missing leases, start runnable readers.
async fn sync(
    shared: &Arc<Shared>,
    stream: &Arc<StreamDescription>,
    readers: &mut HashMap<String, JoinHandle<()>>,
    expiry: &mut LeaseExpiry,
    last_cleanup: &mut Option<Instant>,
    exits: &mpsc::UnboundedSender<ReaderExited>,
    stopping: &watch::Receiver<bool>,
) -> Result<Round, String> {
    let config = &shared.config;
    let shards = shared
        .source
        .list_shards(&config.stream_name)
        .await
        .map_err(|error: SourceError| {
            format!("listing the shards of {}: {error}", config.stream_name)
        })?;
    let prefix = lease_key(stream, "");
    let list_leases = || async {
        let leases = shared
            .leases
            .list_leases()
            .await
            .map_err(|error: LeaseError| format!("listing leases: {error}"))?;
        Ok::<_, String>(
            leases
                .into_iter()
                .filter(|lease| lease.lease_key.starts_with(&prefix))
                .map(|lease| (lease.shard_id.clone(), lease))
                .collect::<BTreeMap<_, _>>(),
        )
    };
    let mut leases = list_leases().await?;
    if create_missing_leases(shared, stream, &shards, &leases).await? {
        leases = list_leases().await?;
    }
    let shards_by_id: HashMap<&str, &Shard> = shards
        .iter()
        .map(|shard| (shard.shard_id.as_str(), shard))
        .collect();
    for lease in leases.values() {
        shared.update_shard(
            &lease.shard_id,
            ShardChange::LeaseSeen {
                parent_shard_ids: lease.parent_shard_ids.clone(),
                checkpoint: lease.checkpoint.clone(),
                lease_owner: lease.lease_owner.clone(),
            },
        );
    }
    let mut undecided = false;
    let mut readable: Vec<(&Lease, &Shard, balance::Standing)> = Vec::new();
    for lease in leases.values() {
        if lease.checkpoint == Checkpoint::ShardEnd {
            continue;
        }
        let worker_id = shared.options.worker_id.as_str();
        let standing = if readers.contains_key(&lease.shard_id) {
            match lease.lease_owner.as_deref() {
                // Stolen: this worker's reader stops at its next lease write.
                Some(owner) if owner != worker_id => balance::Standing::Leaving(owner),
                _ => balance::Standing::Ours,
            }
        } else if !lineage::may_start(lease, &leases) {
            shared.update_shard(&lease.shard_id, ShardChange::WaitingOnParents);
            continue;
        } else {
            match expiry.availability(lease, worker_id, shared.options.failover_time) {
                Availability::Available => balance::Standing::Free,
                availability => {
                    undecided |= availability == Availability::Undecided;
                    shared.update_shard(&lease.shard_id, ShardChange::NotOwned);
                    match lease.lease_owner.as_deref() {
                        Some(owner) => balance::Standing::HeldBy(owner),
                        None => balance::Standing::Free,
                    }
                }
            }
        };
        let Some(shard) = shards_by_id.get(lease.shard_id.as_str()) else {
            // The shard has expired from the stream: nothing is left to read.
            continue;
        };
        readable.push((lease, *shard, standing));
    }
    let standings: Vec<(&str, balance::Standing)> = readable
        .iter()
        .map(|(lease, _, standing)| (lease.shard_id.as_str(), *standing))
        .collect();
    let chosen = balance::leases_to_take(&standings, shared.options.max_leases_to_steal);
    for shard_id in &chosen.stolen {
        tracing::info!(
            shard_id,
            live_workers = chosen.live_workers,
            "taking a lease from the most loaded worker, to reach this worker's fair share"
        );
    }
    // A set, not the lists: at the first start every lease is chosen, and looking each one up
    // in a list of them all was work in the square of the shard count (`docs/scale.md`).
    let chosen_ids: HashSet<&str> = chosen.free.iter().chain(&chosen.stolen).copied().collect();
    let mut to_take = Vec::new();
    for (lease, shard, standing) in &readable {
        let shard_id = lease.shard_id.as_str();
        if chosen_ids.contains(shard_id) {
            to_take.push((*lease, *shard));
        } else if *standing == balance::Standing::Free {
            // Left to the other workers: this one has its fair share.
            shared.update_shard(shard_id, ShardChange::NotOwned);
        }
    }
    // Taken a few at a time, so that against a remote table every reader starts at once rather
    // than one round trip after the other.
    let takes: Vec<_> = to_take
        .into_iter()
        .map(|(lease, shard)| take(shared, lease, shard))
        .collect();
    let mut takes = futures_util::stream::iter(takes).buffered(CONCURRENT_TAKES);
    let mut first_error = None;
    let mut lost_a_race = false;
    while let Some((lease, shard, sent, taken)) = takes.next().await {
        let taken = match taken {
            Ok(taken) => taken,
            // Another worker was faster; the next round, soon, will see it.
            Err(LeaseError::LeaseLost { .. }) => {
                lost_a_race = true;
                continue;
            }
            Err(error) => {
                first_error.get_or_insert_with(|| {
                    format!("taking the lease of {}: {error}", lease.shard_id)
                });
                continue;
            }
        };
        let reader = ShardReader::new(
            Arc::clone(shared),
            Arc::clone(stream),
            shard.clone(),
            taken,
            sent,
            stopping.clone(),
        );
        shared.update_shard(
            &lease.shard_id,
            ShardChange::Taken {
                worker_id: shared.options.worker_id.clone(),
            },
        );
        let exits = exits.clone();
        let shard_id = lease.shard_id.clone();
        readers.insert(
            shard_id.clone(),
            tokio::spawn(async move {
                let exit = reader.run().await;
                let _ = exits.send(ReaderExited {
                    shard_id,
                    task: tokio::task::id(),
                    exit,
                });
            }),
        );
    }
    if let Some(error) = first_error {
        return Err(error);
    }
    if last_cleanup.is_none_or(|at| at.elapsed() >= shared.options.lease_cleanup_interval) {
        *last_cleanup = Some(Instant::now());
        clean_up_leases(shared, &shards, &leases).await;
    }
    Ok(Round {
        undecided,
        others_seen: chosen.live_workers > 1 || lost_a_race,
    })
}

/// Takes `lease` for this worker; returns it with its shard, when the take was sent, and how it
/// went.
async fn take<'a>(
    shared: &Shared,
    lease: &'a Lease,
    shard: &'a Shard,
) -> (&'a Lease, &'a Shard, Instant, Result<Lease, LeaseError>) {
    let sent = Instant::now();
    let taken = shared
        .leases
        .take_lease(lease, &shared.options.worker_id)
        .await;
    (lease, shard, sent, taken)
}

/// Creates the leases [`lineage::leases_to_create`] names. Returns whether any was created.
async fn create_missing_leases(
    shared: &Shared,
    stream: &StreamDescription,
    shards: &[Shard],
    leases: &BTreeMap<String, Lease>,
) -> Result<bool, String> {
    let mut created = false;
    for (shard, checkpoint) in
        lineage::leases_to_create(shards, leases, &shared.config.starting_position)
    {
        let mut lease = Lease::new(
            lease_key(stream, &shard.shard_id),
            &shard.shard_id,
            checkpoint,
        );
        lease.parent_shard_ids = shard.parents().map(str::to_owned).collect();
        lease.starting_hash_key = Some(shard.hash_key_range.starting_hash_key.to_string());
        lease.ending_hash_key = Some(shard.hash_key_range.ending_hash_key.to_string());
        created |= shared
            .leases
            .create_lease_if_absent(&lease)
            .await
            .map_err(|error| format!("creating the lease of {}: {error}", shard.shard_id))?;
    }
    Ok(created)
}

/// Deletes the leases [`lineage::leases_to_delete`] names, so that the table does not grow with
/// every reshard (`docs/resharding.md`).
async fn clean_up_leases(shared: &Shared, shards: &[Shard], leases: &BTreeMap<String, Lease>) {
    for (lease, why) in lineage::leases_to_delete(shards, leases) {
        tracing::debug!(shard_id = %lease.shard_id, ?why, "deleting a lease");
        if let Err(error) = shared.leases.delete_lease(&lease.lease_key).await {
            tracing::warn!(shard_id = %lease.shard_id, %error, "could not delete a lease");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_of_another_worker_is_undecided_until_renewed_or_expired() {
        let failover_time = Duration::from_secs(3600);
        let mut expiry = LeaseExpiry::default();
        let mut lease = Lease::new("k", "shardId-000000000000", Checkpoint::TrimHorizon);
        assert_eq!(
            expiry.availability(&lease, "me", failover_time),
            Availability::Available,
            "an unowned lease"
        );
        lease.lease_owner = Some("other".to_owned());
        lease.lease_counter = 1;
        assert_eq!(
            expiry.availability(&lease, "me", failover_time),
            Availability::HeldElsewhere,
            "taken while watched: its owner is alive"
        );

        let mut expiry = LeaseExpiry::default();
        assert_eq!(
            expiry.availability(&lease, "me", failover_time),
            Availability::Undecided,
            "first seen held: its owner may be dead"
        );
        assert_eq!(
            expiry.availability(&lease, "me", failover_time),
            Availability::Undecided
        );
        lease.lease_counter = 2;
        assert_eq!(
            expiry.availability(&lease, "me", failover_time),
            Availability::HeldElsewhere,
            "renewed"
        );
        assert_eq!(
            expiry.availability(&lease, "other", failover_time),
            Availability::Available,
            "its own"
        );
        let mut expiry = LeaseExpiry::default();
        assert_eq!(
            expiry.availability(&lease, "me", Duration::ZERO),
            Availability::Available,
            "expired"
        );
    }
}
