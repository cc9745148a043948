//! The coordinator of an event source mapping: the shard sync, the leases it takes, renews and
//! gives up, and which shard's reader may run (`docs/resharding.md`, `docs/lease-table.md`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use futures_util::StreamExt as _;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::backoff::RetryKind;
use crate::config::MappingConfig;
use crate::destination::Destination;
use crate::invoke::Invoker;
use crate::lease::{Checkpoint, Lease, LeaseError, LeaseStore, MemoryLeaseStore};
use kinesis_source::{Shard, ShardSource, SourceError, StreamDescription};

use super::status::ShardChange;
use super::status::{MappingEvent, MappingStatus};

use super::balance::Standing;
use super::options::MappingOptions;
use super::reader::ShardReader;
use super::reader_exit::ReaderExit;
use super::shared::Shared;

/// How many leases a worker takes at once: enough that a remote table's round trips overlap,
/// few enough that a table with thousands of shards is not flooded.
const CONCURRENT_TAKES: usize = 16;

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
            ignored_item_failures_warning: super::misconfiguration::WarnOnce::default(),
            replay_registry: super::replay::ReplayRegistry::default(),
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

/// A started mapping.
pub struct RunningMapping {
    pub(super) shared: Arc<Shared>,
    pub(super) status: watch::Receiver<MappingStatus>,
    pub(super) stop: watch::Sender<bool>,
    pub(super) coordinator: JoinHandle<()>,
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
pub(super) fn lease_key(stream: &StreamDescription, shard_id: &str) -> String {
    let account = &stream.arn.account;
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
    let account = &stream.arn.account;
    let this_key = lease_key(stream, "");
    let created = this_key.split(':').nth(2).unwrap_or_default();
    for (lease, other_created) in
        super::resume::leases_of_another_creation(&leases, account, &stream.name, created)
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
    let stream_name = &shared.config.stream_name;
    let shards = shared
        .source
        .list_shards(stream_name)
        .await
        .map_err(|error: SourceError| format!("listing the shards of {stream_name}: {error}"))?;
    let mut leases = list_stream_leases(shared, stream).await?;
    if create_missing_leases(shared, stream, &shards, &leases).await? {
        leases = list_stream_leases(shared, stream).await?;
    }
    report_leases_seen(shared, &leases);
    let readable = readable_leases(shared, readers, expiry, &shards, &leases);
    let (to_take, live_workers) = choose_leases_to_take(shared, &readable.leases);
    let lost_a_race =
        take_and_start_readers(shared, stream, to_take, readers, exits, stopping).await?;
    if last_cleanup.is_none_or(|at| at.elapsed() >= shared.options.lease_cleanup_interval) {
        *last_cleanup = Some(Instant::now());
        clean_up_leases(shared, &shards, &leases).await;
    }
    Ok(Round {
        undecided: readable.undecided,
        others_seen: live_workers > 1 || lost_a_race,
    })
}

/// The leases of this stream (this creation of it) in the lease table, by shard id.
async fn list_stream_leases(
    shared: &Shared,
    stream: &StreamDescription,
) -> Result<BTreeMap<String, Lease>, String> {
    let prefix = lease_key(stream, "");
    let leases = shared
        .leases
        .list_leases()
        .await
        .map_err(|error: LeaseError| format!("listing leases: {error}"))?;
    Ok(leases
        .into_iter()
        .filter(|lease| lease.lease_key.starts_with(&prefix))
        .map(|lease| (lease.shard_id.clone(), lease))
        .collect())
}

/// Reports each lease as the round read it: its parents, checkpoint and owner.
fn report_leases_seen(shared: &Shared, leases: &BTreeMap<String, Lease>) {
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
}

/// The leases a round may read, each with its shard and where it stands.
struct ReadableLeases<'a> {
    leases: Vec<(&'a Lease, &'a Shard, Standing<'a>)>,
    /// Whether a lease of another worker is left undecided (neither seen renewed nor expired).
    undecided: bool,
}

/// The leases this worker could read: not at `SHARD_END`, their parents done, their shard still
/// in the stream; each with where it stands (ours, free, or another worker's).
fn readable_leases<'a>(
    shared: &'a Shared,
    readers: &HashMap<String, JoinHandle<()>>,
    expiry: &mut LeaseExpiry,
    shards: &'a [Shard],
    leases: &'a BTreeMap<String, Lease>,
) -> ReadableLeases<'a> {
    let shards_by_id: HashMap<&str, &Shard> = shards
        .iter()
        .map(|shard| (shard.shard_id.as_str(), shard))
        .collect();
    let mut readable = ReadableLeases {
        leases: Vec::new(),
        undecided: false,
    };
    for lease in leases.values() {
        if lease.checkpoint == Checkpoint::ShardEnd {
            continue;
        }
        let standing = if readers.contains_key(&lease.shard_id) {
            standing_of_ours(lease, &shared.options.worker_id)
        } else if !super::lineage::may_start(lease, leases) {
            shared.update_shard(&lease.shard_id, ShardChange::WaitingOnParents);
            continue;
        } else {
            let (standing, undecided) = standing_without_reader(shared, expiry, lease);
            readable.undecided |= undecided;
            standing
        };
        let Some(shard) = shards_by_id.get(lease.shard_id.as_str()) else {
            // The shard has expired from the stream: nothing is left to read.
            continue;
        };
        readable.leases.push((lease, *shard, standing));
    }
    readable
}

/// Where a lease this worker runs a reader of stands.
fn standing_of_ours<'a>(lease: &'a Lease, worker_id: &str) -> Standing<'a> {
    match lease.lease_owner.as_deref() {
        // Stolen: this worker's reader stops at its next lease write.
        Some(owner) if owner != worker_id => Standing::Leaving(owner),
        _ => Standing::Ours,
    }
}

/// Where a lease this worker runs no reader of stands, and whether its owner is undecided
/// (alive or not); a lease not available is reported not owned.
fn standing_without_reader<'a>(
    shared: &Shared,
    expiry: &mut LeaseExpiry,
    lease: &'a Lease,
) -> (Standing<'a>, bool) {
    let worker_id = shared.options.worker_id.as_str();
    match expiry.availability(lease, worker_id, shared.options.failover_time) {
        Availability::Available => (Standing::Free, false),
        availability => {
            shared.update_shard(&lease.shard_id, ShardChange::NotOwned);
            let standing = match lease.lease_owner.as_deref() {
                Some(owner) => Standing::HeldBy(owner),
                None => Standing::Free,
            };
            (standing, availability == Availability::Undecided)
        }
    }
}

/// Chooses, by [`super::balance::leases_to_take`], which `readable` leases this worker takes
/// this round; reports the others it leaves free as not owned. Returns them with the number of
/// live workers seen.
fn choose_leases_to_take<'a>(
    shared: &Shared,
    readable: &[(&'a Lease, &'a Shard, Standing<'_>)],
) -> (Vec<(&'a Lease, &'a Shard)>, usize) {
    let standings: Vec<(&str, Standing)> = readable
        .iter()
        .map(|(lease, _, standing)| (lease.shard_id.as_str(), *standing))
        .collect();
    let chosen = super::balance::leases_to_take(&standings, shared.options.max_leases_to_steal);
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
    for (lease, shard, standing) in readable {
        let shard_id = lease.shard_id.as_str();
        if chosen_ids.contains(shard_id) {
            to_take.push((*lease, *shard));
        } else if *standing == Standing::Free {
            // Left to the other workers: this one has its fair share.
            shared.update_shard(shard_id, ShardChange::NotOwned);
        }
    }
    (to_take, chosen.live_workers)
}

/// Takes the leases `to_take` and starts a reader for each one taken. Returns whether another
/// worker won a lease first, or the first error met (after every take was tried).
async fn take_and_start_readers(
    shared: &Arc<Shared>,
    stream: &Arc<StreamDescription>,
    to_take: Vec<(&Lease, &Shard)>,
    readers: &mut HashMap<String, JoinHandle<()>>,
    exits: &mpsc::UnboundedSender<ReaderExited>,
    stopping: &watch::Receiver<bool>,
) -> Result<bool, String> {
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
        let task = spawn_reader(reader, lease.shard_id.clone(), exits.clone());
        readers.insert(lease.shard_id.clone(), task);
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(lost_a_race),
    }
}

/// Runs `reader` in a task of its own, which tells `exits` how it ended.
fn spawn_reader(
    reader: ShardReader,
    shard_id: String,
    exits: mpsc::UnboundedSender<ReaderExited>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let exit = reader.run().await;
        let _ = exits.send(ReaderExited {
            shard_id,
            task: tokio::task::id(),
            exit,
        });
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

/// Creates the leases [`super::lineage::leases_to_create`] names. Returns whether any was created.
async fn create_missing_leases(
    shared: &Shared,
    stream: &StreamDescription,
    shards: &[Shard],
    leases: &BTreeMap<String, Lease>,
) -> Result<bool, String> {
    let mut created = false;
    for (shard, checkpoint) in
        super::lineage::leases_to_create(shards, leases, &shared.config.starting_position)
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

/// Deletes the leases [`super::lineage::leases_to_delete`] names, so that the table does not grow with
/// every reshard (`docs/resharding.md`).
async fn clean_up_leases(shared: &Shared, shards: &[Shard], leases: &BTreeMap<String, Lease>) {
    for (lease, why) in super::lineage::leases_to_delete(shards, leases) {
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
