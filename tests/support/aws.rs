//! What the end-to-end tests against local stand-ins for AWS share: the endpoints of kinesis-local
//! and dynalite, streams of shipments, lease table items read raw, a lease store that writes down
//! its writes, an observer of mapping events, the `kinesis-esm` binary with the ledger fixture
//! function, and a fault-injecting proxy (from the `test-support` crate, with the endpoints and
//! unique names).
//!
//! Those tests need the servers: run them with
//! `scripts/local-stack run -- cargo test -p end-to-end aws_`. Without the servers' endpoints
//! they fail with a message that says so; they are never skipped.

pub use test_support::fault_proxy;
pub use test_support::intercept::LeaseChange;
pub use test_support::{dynamodb_endpoint, kinesis_endpoint, unique_name};

pub use crate::run::Run;
pub use crate::{kinesis_esm_binary, workspace_dir};
pub use ledger::{
    LedgerTemplate, ScratchDir, build_ledger_function, ledger_function_dir, read_ledger,
    read_ledger_by_process,
};

mod ledger;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use kinesis_esm::aws::{AwsConnection, DynamoLeaseStore, ReadPacing, SdkKinesis};
use kinesis_esm::lease::{Checkpoint, LeaseError, LeaseStore};
use kinesis_esm::mapping::{MappingEvent, MappingStatus};
use kinesis_esm::sequence::SequenceNumber;
use shipping::Shipment;
use test_support::intercept::{Intercepted, LeaseHooks};

use crate::run::KinesisEsm;
use tokio::sync::{mpsc, watch};

/// How long any one step of a test may take before the test fails. kinesis-local answers about
/// 150 requests a second, shared by every test running at the time, so steps get room.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// The region every client uses: local servers accept any, and naming one keeps the SDK from
/// probing the instance metadata address.
pub const REGION: &str = "us-east-1";

/// The carrier `shipping::ship` does not know: a shipment for it is held.
pub const UNKNOWN_CARRIER: &str = "fedex";

/// Fails the test if `future` takes longer than [`TIMEOUT`] (the local servers' pace).
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    crate::within_time(TIMEOUT, what, future).await
}

/// A shipment `shipping::ship` acknowledges: an address and a carrier it knows.
pub fn shipment(id: u64) -> Shipment {
    Shipment {
        id,
        address: format!("{id} Harbour Road"),
        carrier: shipping::CARRIERS[(id % 2) as usize].to_owned(),
    }
}

/// A shipment `shipping::ship` holds: its carrier is unknown.
pub fn held_shipment(id: u64) -> Shipment {
    Shipment {
        carrier: UNKNOWN_CARRIER.to_owned(),
        ..shipment(id)
    }
}

/// Shipments 1 to `count`, of which shipment `held` is one `shipping::ship` holds.
pub fn shipments_held_at(count: u64, held: u64) -> Vec<Shipment> {
    (1..=count)
        .map(|id| {
            if id == held {
                held_shipment(id)
            } else {
                shipment(id)
            }
        })
        .collect()
}

/// The partition key a shipment is published under: its id, so that a delivery names its
/// shipment wherever it is observed (observer events, the ledger fixture).
pub fn partition_key(id: u64) -> String {
    format!("shipment-{id}")
}

/// The shipment id in a partition key made by [`partition_key`].
pub fn shipment_id(partition_key: &str) -> u64 {
    partition_key
        .strip_prefix("shipment-")
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("`{partition_key}` is not a shipment's partition key"))
}

/// A record Kinesis accepted: where it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// Its shard.
    pub shard_id: String,
    /// Its sequence number in that shard.
    pub sequence_number: SequenceNumber,
    /// Its partition key.
    pub partition_key: String,
}

/// A delivery: one record of one invocation, in the order the invocations came.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Delivery {
    /// The record's shard.
    pub shard_id: String,
    /// Its sequence number.
    pub sequence_number: SequenceNumber,
    /// Its partition key.
    pub partition_key: String,
}

impl Delivery {
    /// The record's shard and sequence number: what identifies it in the stream.
    pub fn position(&self) -> (String, SequenceNumber) {
        (self.shard_id.clone(), self.sequence_number.clone())
    }
}

impl Published {
    /// The record's shard and sequence number: what identifies it in the stream.
    pub fn position(&self) -> (String, SequenceNumber) {
        (self.shard_id.clone(), self.sequence_number.clone())
    }
}

/// The records of `published` in shard order, shard by shard.
pub fn by_shard(published: &[Published]) -> BTreeMap<String, Vec<Published>> {
    let mut shards: BTreeMap<String, Vec<Published>> = BTreeMap::new();
    for record in published {
        shards
            .entry(record.shard_id.clone())
            .or_default()
            .push(record.clone());
    }
    for records in shards.values_mut() {
        records.sort_by(|a, b| a.sequence_number.cmp(&b.sequence_number));
    }
    shards
}

/// kinesis-local and dynalite, with clients for what the tests do besides running mappings.
pub struct LocalAws {
    kinesis: SdkKinesis,
    dynamodb: aws_sdk_dynamodb::Client,
}

impl LocalAws {
    /// Clients for the servers `scripts/local-stack` started.
    pub async fn connect() -> Self {
        crate::init_logging();
        let kinesis = SdkKinesis::connect(&Self::kinesis_connection())
            .await
            .expect("a Kinesis client for kinesis-local")
            .with_read_pacing(ReadPacing::UNLIMITED);
        let config = Self::dynamodb_connection()
            .sdk_config()
            .await
            .expect("a DynamoDB configuration for dynalite");
        Self {
            kinesis,
            dynamodb: aws_sdk_dynamodb::Client::new(&config),
        }
    }

    /// Clients for another Kinesis at `endpoint` (the embedded Kinesis a `kinesis-esm run`
    /// serves) and for dynalite.
    pub async fn connect_to_kinesis(endpoint: &str) -> Self {
        let mut aws = Self::connect().await;
        aws.kinesis = SdkKinesis::connect(&AwsConnection::local(endpoint).with_region(REGION))
            .await
            .unwrap_or_else(|error| panic!("a Kinesis client for {endpoint}: {error}"))
            .with_read_pacing(ReadPacing::UNLIMITED);
        aws
    }

    /// How to reach kinesis-local.
    pub fn kinesis_connection() -> AwsConnection {
        AwsConnection::local(kinesis_endpoint()).with_region(REGION)
    }

    /// How to reach dynalite.
    pub fn dynamodb_connection() -> AwsConnection {
        AwsConnection::local(dynamodb_endpoint()).with_region(REGION)
    }

    /// The producer's Kinesis client (no read pacing).
    pub fn kinesis(&self) -> &SdkKinesis {
        &self.kinesis
    }

    /// A Kinesis source for a mapping, reading kinesis-local with `pacing`.
    pub async fn source(&self, pacing: ReadPacing) -> Arc<SdkKinesis> {
        Arc::new(
            SdkKinesis::connect(&Self::kinesis_connection())
                .await
                .expect("a Kinesis client for kinesis-local")
                .with_read_pacing(pacing),
        )
    }

    /// Creates a stream of its own with `shards` shards.
    pub async fn create_stream(&self, prefix: &str, shards: i32) -> String {
        let name = unique_name(prefix);
        within(
            &format!("creating stream {name}"),
            self.kinesis.create_stream(&name, shards),
        )
        .await
        .unwrap_or_else(|error| panic!("creating stream {name}: {error}"));
        name
    }

    /// Publishes records in order, in `PutRecords` calls of at most 500; a record Kinesis refuses
    /// is put again before the next call. Returns where each went, in the order given.
    pub async fn publish(&self, stream: &str, records: &[(String, Vec<u8>)]) -> Vec<Published> {
        let mut published = Vec::with_capacity(records.len());
        for chunk in records.chunks(500) {
            let mut pending: Vec<usize> = (0..chunk.len()).collect();
            let mut placed: Vec<Option<Published>> = vec![None; chunk.len()];
            while !pending.is_empty() {
                let entries: Vec<(&str, &[u8])> = pending
                    .iter()
                    .map(|&index| (chunk[index].0.as_str(), chunk[index].1.as_slice()))
                    .collect();
                let outcomes = within(
                    &format!("publishing to stream {stream}"),
                    self.kinesis.put_records(stream, &entries),
                )
                .await
                .unwrap_or_else(|error| panic!("publishing to stream {stream}: {error}"));
                let mut refused = Vec::new();
                for (&index, outcome) in pending.iter().zip(outcomes) {
                    match outcome {
                        Ok((shard_id, sequence_number)) => {
                            placed[index] = Some(Published {
                                shard_id,
                                sequence_number,
                                partition_key: chunk[index].0.clone(),
                            });
                        }
                        Err(_) => refused.push(index),
                    }
                }
                pending = refused;
            }
            published.extend(
                placed
                    .into_iter()
                    .map(|placed| placed.expect("every record placed")),
            );
        }
        published
    }

    /// Publishes shipments as JSON under their [`partition_key`], in order.
    pub async fn publish_shipments(&self, stream: &str, shipments: &[Shipment]) -> Vec<Published> {
        let records: Vec<(String, Vec<u8>)> = shipments
            .iter()
            .map(|shipment| {
                (
                    partition_key(shipment.id),
                    serde_json::to_vec(shipment).expect("a shipment is JSON"),
                )
            })
            .collect();
        self.publish(stream, &records).await
    }

    /// A lease table of its own, created and active.
    pub async fn lease_table(&self, prefix: &str) -> String {
        let table = unique_name(prefix);
        self.lease_store(&table).await;
        table
    }

    /// A lease store on `table` at dynalite (the table is created if missing).
    pub async fn lease_store(&self, table: &str) -> DynamoLeaseStore {
        self.lease_store_at(&Self::dynamodb_connection(), table)
            .await
    }

    /// A lease store on `table` through `connection` (a proxy, say).
    pub async fn lease_store_at(
        &self,
        connection: &AwsConnection,
        table: &str,
    ) -> DynamoLeaseStore {
        within(
            &format!("opening lease table {table}"),
            DynamoLeaseStore::connect(connection, table),
        )
        .await
        .unwrap_or_else(|error| panic!("opening lease table {table}: {error}"))
    }

    /// The items of a lease table, read raw.
    pub async fn raw_leases(&self, table: &str) -> Vec<RawLease> {
        within(
            &format!("scanning lease table {table}"),
            raw_leases(&self.dynamodb, table),
        )
        .await
    }

    /// The DynamoDB client.
    pub fn dynamodb(&self) -> &aws_sdk_dynamodb::Client {
        &self.dynamodb
    }
}

/// A lease table item as DynamoDB holds it, read attribute by attribute under the KCL's names
/// (`docs/lease-table.md` §1), so that a test checks the table a KCL application would read, not what the lease
/// store makes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLease {
    /// `leaseKey` (S).
    pub lease_key: String,
    /// `shardId` (S).
    pub shard_id: String,
    /// `leaseOwner` (S), absent when nobody holds the lease.
    pub lease_owner: Option<String>,
    /// `leaseCounter` (N).
    pub lease_counter: u64,
    /// `checkpoint` (S): a sequence number or a sentinel such as `SHARD_END`.
    pub checkpoint: String,
    /// `parentShardId` (SS), sorted; empty when absent.
    pub parent_shard_ids: Vec<String>,
    /// `childShardIds` (SS), sorted; empty when absent.
    pub child_shard_ids: Vec<String>,
    /// Every attribute name the item has.
    pub attribute_names: BTreeSet<String>,
}

impl RawLease {
    /// The checkpoint as a sequence number; `None` for a sentinel.
    pub fn checkpoint_sequence_number(&self) -> Option<SequenceNumber> {
        self.checkpoint.parse().ok()
    }
}

/// Scans a lease table and reads each item raw (panics, naming the item and attribute, on an
/// item that is not a lease).
pub async fn raw_leases(client: &aws_sdk_dynamodb::Client, table: &str) -> Vec<RawLease> {
    let mut leases = Vec::new();
    let mut start_key = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .consistent_read(true)
            .set_exclusive_start_key(start_key)
            .send()
            .await
            .unwrap_or_else(|error| {
                panic!(
                    "scanning lease table {table}: {}",
                    aws_sdk_dynamodb::error::DisplayErrorContext(&error)
                )
            });
        for item in page.items() {
            leases.push(raw_lease(table, item));
        }
        match page.last_evaluated_key() {
            Some(key) if !key.is_empty() => start_key = Some(key.clone()),
            _ => break,
        }
    }
    leases.sort_by(|a, b| a.lease_key.cmp(&b.lease_key));
    leases
}

fn raw_lease(table: &str, item: &HashMap<String, AttributeValue>) -> RawLease {
    let key = item
        .get("leaseKey")
        .and_then(|value| value.as_s().ok())
        .unwrap_or_else(|| panic!("an item of lease table {table} has no leaseKey (S): {item:?}"))
        .clone();
    let text = |name: &str| -> Option<String> {
        item.get(name).map(|value| {
            value
                .as_s()
                .unwrap_or_else(|_| panic!("{table}/{key}: {name} is not a string: {value:?}"))
                .clone()
        })
    };
    let set = |name: &str| -> Vec<String> {
        let mut values = item.get(name).map_or_else(Vec::new, |value| {
            value
                .as_ss()
                .unwrap_or_else(|_| panic!("{table}/{key}: {name} is not a string set: {value:?}"))
                .clone()
        });
        values.sort();
        values
    };
    let counter = item
        .get("leaseCounter")
        .and_then(|value| value.as_n().ok())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("{table}/{key}: no leaseCounter (N)"));
    RawLease {
        shard_id: text("shardId").unwrap_or_else(|| panic!("{table}/{key}: no shardId")),
        lease_owner: text("leaseOwner"),
        lease_counter: counter,
        checkpoint: text("checkpoint").unwrap_or_else(|| panic!("{table}/{key}: no checkpoint")),
        parent_shard_ids: set("parentShardId"),
        child_shard_ids: set("childShardIds"),
        attribute_names: item.keys().cloned().collect(),
        lease_key: key,
    }
}

/// The raw leases by shard id.
pub fn leases_by_shard(leases: &[RawLease]) -> BTreeMap<String, RawLease> {
    leases
        .iter()
        .map(|lease| (lease.shard_id.clone(), lease.clone()))
        .collect()
}

/// One write a [`RecordingLeaseStore`] passed on, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseWrite {
    /// The lease's key.
    pub lease_key: String,
    /// What was asked.
    pub change: LeaseChange,
    /// The store's answer: `None` when the write succeeded.
    pub error: Option<LeaseError>,
    /// For a delete on a store that snapshots: the table's items, read raw just before it.
    pub table_before: Vec<RawLease>,
}

impl LeaseWrite {
    /// Whether the write failed because the lease was taken from its writer.
    pub fn lost(&self) -> bool {
        matches!(self.error, Some(LeaseError::LeaseLost { .. }))
    }
}

/// A lease store that passes every call to another and writes down every write it passed on,
/// with its answer, for tests to read and wait on (through [`LeaseRecorder`]'s methods).
pub type RecordingLeaseStore = Intercepted<dyn LeaseStore, LeaseRecorder>;

/// Records the writes passed on to `inner`.
pub fn recording_lease_store(inner: Arc<dyn LeaseStore>) -> RecordingLeaseStore {
    Intercepted::new(inner, LeaseRecorder::default())
}

/// The hooks of a [`RecordingLeaseStore`]: every write with its answer. Reads go unnoted.
#[derive(Default)]
pub struct LeaseRecorder {
    writes: watch::Sender<Vec<LeaseWrite>>,
    /// A table to read raw before each delete: the item a delete removes is gone afterwards.
    snapshot: Option<(aws_sdk_dynamodb::Client, String)>,
}

impl fmt::Debug for LeaseRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseRecorder")
            .field("writes", &self.writes.borrow().len())
            .finish_non_exhaustive()
    }
}

impl LeaseRecorder {
    /// Reads `table` raw before each delete, into [`LeaseWrite::table_before`].
    pub fn snapshot_before_deletes(
        mut self,
        client: aws_sdk_dynamodb::Client,
        table: &str,
    ) -> Self {
        self.snapshot = Some((client, table.to_owned()));
        self
    }

    /// The writes so far, in order.
    pub fn writes(&self) -> Vec<LeaseWrite> {
        self.writes.borrow().clone()
    }

    /// Waits until the writes so far satisfy `condition`, and returns them.
    pub async fn wait_for(
        &self,
        what: &str,
        mut condition: impl FnMut(&[LeaseWrite]) -> bool,
    ) -> Vec<LeaseWrite> {
        let mut writes = self.writes.subscribe();
        within(what, writes.wait_for(|writes| condition(writes)))
            .await
            .expect("the store outlives the wait")
            .clone()
    }
}

#[async_trait]
impl LeaseHooks for LeaseRecorder {
    /// The table before a delete, when snapshotting.
    type Note = Vec<RawLease>;

    async fn before_write(&self, _: &str, change: &LeaseChange) -> Vec<RawLease> {
        match (&self.snapshot, change) {
            (Some((client, table)), LeaseChange::Delete) => raw_leases(client, table).await,
            _ => Vec::new(),
        }
    }

    fn after_write(
        &self,
        table_before: Vec<RawLease>,
        lease_key: &str,
        change: LeaseChange,
        error: Option<&LeaseError>,
    ) {
        let write = LeaseWrite {
            lease_key: lease_key.to_owned(),
            change,
            error: error.cloned(),
            table_before,
        };
        self.writes.send_modify(|writes| writes.push(write));
    }
}

/// What a mapping told its observer, kept in order.
pub struct Observed {
    events: mpsc::UnboundedReceiver<MappingEvent>,
    seen: Vec<MappingEvent>,
}

impl Observed {
    /// An observer channel: give the sender to `EventSourceMapping::observe`.
    pub fn channel() -> (mpsc::UnboundedSender<MappingEvent>, Self) {
        let (sender, events) = mpsc::unbounded_channel();
        (
            sender,
            Self {
                events,
                seen: Vec::new(),
            },
        )
    }

    /// Takes in the events sent so far, and returns every event seen.
    pub fn events(&mut self) -> &[MappingEvent] {
        while let Ok(event) = self.events.try_recv() {
            self.seen.push(event);
        }
        &self.seen
    }

    /// Waits until the events seen satisfy `condition`.
    pub async fn wait_for(
        &mut self,
        what: &str,
        mut condition: impl FnMut(&[MappingEvent]) -> bool,
    ) -> &[MappingEvent] {
        self.events();
        within(what, async {
            while !condition(&self.seen) {
                match self.events.recv().await {
                    Some(event) => self.seen.push(event),
                    None => panic!("the mapping stopped before {what}"),
                }
            }
        })
        .await;
        &self.seen
    }

    /// Every record delivered so far, invocation by invocation.
    pub fn deliveries(&mut self) -> Vec<Delivery> {
        deliveries(self.events())
    }
}

/// The records of the `Invoked` events among `events`, in order.
pub fn deliveries(events: &[MappingEvent]) -> Vec<Delivery> {
    events
        .iter()
        .filter_map(|event| match event {
            MappingEvent::Invoked { shard_id, records } => Some(records.iter().map(
                |(sequence_number, partition_key)| Delivery {
                    shard_id: shard_id.clone(),
                    sequence_number: sequence_number.clone(),
                    partition_key: partition_key.to_string(),
                },
            )),
            _ => None,
        })
        .flatten()
        .collect()
}

/// Whether a mapping is idle with every shard checkpointed at `last`: it settled every record
/// up to the stream's last one.
pub fn idle_at(status: &MappingStatus, last: &Checkpoint) -> bool {
    status.is_idle()
        && status
            .shards
            .values()
            .all(|shard| shard.checkpoint.as_ref() == Some(last))
}

/// The arguments of `kinesis-esm run` that read kinesis-local and keep the leases in `table` at
/// dynalite.
pub fn local_aws_args(table: &str) -> [String; 6] {
    [
        "--kinesis-endpoint".to_owned(),
        kinesis_endpoint(),
        "--lease-table".to_owned(),
        table.to_owned(),
        "--dynamodb-endpoint".to_owned(),
        dynamodb_endpoint(),
    ]
}

/// `kinesis-esm run` with these arguments after `run`, as the tests here run it: from the tests'
/// folder, its logs as `kinesis-esm` chooses them, given [`TIMEOUT`] to end.
pub fn esm_run(args: &[&str]) -> KinesisEsm {
    KinesisEsm::new(["run"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .default_log()
        .timeout(TIMEOUT)
}

/// [`esm_run`]'s command, its output piped, killed if dropped.
pub async fn kinesis_esm_run(args: &[&str]) -> tokio::process::Command {
    let mut command = esm_run(args).command().await;
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// Reads a running `kinesis-esm`'s log until the ledger function has reported `batches`
/// batches, then kills the process with SIGKILL (`kill -9`) and checks a signal ended it.
pub async fn kill_after_ledger_batches(
    run: &mut tokio::process::Child,
    log: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
    batches: usize,
) {
    within("the first run's batches", async {
        let mut seen = 0;
        while seen < batches {
            match log.next_line().await.expect("the log can be read") {
                Some(line) if line.contains("ledger: ") => seen += 1,
                Some(_) => {}
                None => panic!("kinesis-esm ended after {seen} batches, before the kill"),
            }
        }
    })
    .await;
    run.start_kill().expect("SIGKILL is sent");
    let status = within("the killed process to end", run.wait())
        .await
        .expect("its status");
    assert_eq!(status.code(), None, "ended by a signal: {status}");
}

/// Runs `kinesis-esm run` with these arguments to its end ([`esm_run`]); `what` names it.
pub async fn run_kinesis_esm(what: &str, args: &[&str]) -> Run {
    within(what, esm_run(args).timeout(2 * TIMEOUT).output()).await
}

/// A gate a handler waits at, for a test to hold one invocation in flight as long as it needs.
#[derive(Debug)]
pub struct Gate {
    entered: watch::Sender<bool>,
    open: watch::Sender<bool>,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            entered: watch::Sender::new(false),
            open: watch::Sender::new(false),
        }
    }
}

impl Gate {
    /// Waits at the gate until it opens (at once if it is open), saying that it got there.
    pub async fn pass(&self) {
        self.entered.send_replace(true);
        let mut open = self.open.subscribe();
        let _ = open.wait_for(|open| *open).await;
    }

    /// Waits until a handler is at the gate (or has passed it).
    pub async fn wait_until_entered(&self, what: &str) {
        let mut entered = self.entered.subscribe();
        within(what, entered.wait_for(|entered| *entered))
            .await
            .expect("the gate outlives the wait");
    }

    /// Opens the gate for good.
    pub fn open(&self) {
        self.open.send_replace(true);
    }
}

/// The shipping function, waiting at `gate` before it handles the shipment `gated_id`.
pub fn ship_after_gate(
    gate: Arc<Gate>,
    gated_id: u64,
) -> impl Fn(&Shipment) -> std::pin::Pin<Box<dyn Future<Output = lambda_kinesis::HandlerOutcome> + Send>>
+ Send
+ Sync
+ 'static {
    move |shipment: &Shipment| {
        let gate = Arc::clone(&gate);
        let shipment = shipment.clone();
        Box::pin(async move {
            if shipment.id == gated_id {
                gate.pass().await;
            }
            shipping::ship(&shipping::Carriers, &shipment).await
        })
    }
}

/// A `kinesis-esm run` process started in the background, its log appended to a file (so a
/// restarted instance's log follows its predecessor's), its output otherwise discarded.
pub struct EsmProcess {
    child: tokio::process::Child,
}

impl EsmProcess {
    /// Starts `kinesis-esm run` with `args`, appending its log to `log`.
    pub async fn start(args: &[&str], log: &Path) -> Self {
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap_or_else(|error| panic!("opening {}: {error}", log.display()));
        let child = kinesis_esm_run(args)
            .await
            .stderr(Stdio::from(log_file))
            .stdout(Stdio::null())
            .spawn()
            .expect("kinesis-esm starts");
        Self { child }
    }

    /// Sends the signal `name` (`TERM`, `KILL`, `STOP`, `CONT`) with `kill`.
    pub async fn signal(&self, name: &str) {
        let pid = self.child.id().expect("the process is alive").to_string();
        let sent = tokio::process::Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .await
            .expect("kill runs");
        assert!(sent.success(), "SIG{name} reaches kinesis-esm {pid}");
    }

    /// Waits for the process to end; returns its exit code (`None` if a signal ended it).
    pub async fn wait(&mut self) -> Option<i32> {
        within("kinesis-esm to end", self.child.wait())
            .await
            .expect("its exit status")
            .code()
    }

    /// Its exit code if it has ended (`Some(None)` if a signal ended it), else `None`.
    pub fn ended(&mut self) -> Option<Option<i32>> {
        self.child
            .try_wait()
            .expect("the process's status can be read")
            .map(|status| status.code())
    }

    /// Waits at most `timeout` for it to end: its exit code as [`EsmProcess::ended`] says it,
    /// `None` if it still runs.
    pub async fn ended_within(&mut self, timeout: Duration) -> Option<Option<i32>> {
        tokio::time::timeout(timeout, self.child.wait())
            .await
            .ok()
            .map(|status| status.expect("its exit status").code())
    }

    /// Stops it gracefully (SIGTERM) and returns its exit code.
    pub async fn stop(&mut self) -> Option<i32> {
        self.signal("TERM").await;
        self.wait().await
    }
}
