//! Helpers shared by the end-to-end tests: building binaries, streams of the embedded Kinesis,
//! mappings with short timings, and what an observer saw.
//!
//! Every wait goes through [`within`], which fails the test after [`TIMEOUT`] instead of hanging.

pub mod aws;
pub mod cargo_lambda;
pub mod chaos;
pub mod run;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::function::{build_function, executable_in_messages};
use kinesis_esm::invoke::runtime_api::{FunctionDefinition, RuntimeApi};
use kinesis_esm::invoke::{InProcess, Invoker};
use kinesis_esm::kinesis::{EmbeddedKinesis, PutRecordOutput, PutRecordsEntry};
use kinesis_esm::lease::{Checkpoint, LeaseStore, MemoryLeaseStore};
use kinesis_esm::mapping::{
    EventSourceMapping, MappingEvent, MappingOptions, MappingStatus, RunningMapping, ShardStatus,
};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::Shard;
use kinesis_esm::template::{Template, TemplateOptions};
use tokio::sync::mpsc;

/// How long any one wait of a test may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// How long a mapping may run before the whole test binary is aborted. The tests' runtime has one
/// thread: a mapping task that never yields starves it, timers included, so [`TIMEOUT`] could
/// never fire. This limit is kept by a thread of its own.
pub const WATCHDOG: Duration = Duration::from_secs(120);

pub use test_support::{init_logging, within_time};

/// Awaits `future`, failing the test if it takes longer than [`TIMEOUT`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    within_time(TIMEOUT, what, future).await
}

/// The workspace's root folder.
pub fn workspace_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lies inside the workspace")
}

/// A file or folder of `tests/fixtures`.
pub fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(relative)
}

/// Builds binary `binary` of the crate in `crate_dir` once per test run, off the async runtime.
/// Builds are not bounded by [`TIMEOUT`]: a cold build of the emulator takes minutes.
pub(crate) async fn built(
    cell: &'static OnceLock<PathBuf>,
    crate_dir: PathBuf,
    binary: &'static str,
) -> &'static Path {
    once_per_run(cell, move || {
        build_function(&crate_dir, binary, false).unwrap_or_else(|error| {
            panic!(
                "building {binary} of {} failed: {error}",
                crate_dir.display()
            )
        })
    })
    .await
}

/// The binary `build` makes, made once per test run (kept in `cell`), off the async runtime.
async fn once_per_run(
    cell: &'static OnceLock<PathBuf>,
    build: impl FnOnce() -> PathBuf + Send + 'static,
) -> &'static Path {
    tokio::task::spawn_blocking(move || cell.get_or_init(build).as_path())
        .await
        .expect("building does not panic")
}

/// The `concurrent-sleeper` fixture's binary: a function on `lambda_runtime`'s
/// `run_concurrent`, for Lambda Managed Instances.
pub async fn concurrent_sleeper_bootstrap() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    built(
        &BINARY,
        workspace_dir().join("tests/fixtures/functions/concurrent-sleeper"),
        // Not `bootstrap`: in a target folder shared with other functions' builds, its binary
        // would overwrite theirs.
        "concurrent-sleeper",
    )
    .await
}

/// The shipping function's own `bootstrap`, as Lambda runs it.
pub async fn shipping_bootstrap() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    built(
        &BINARY,
        workspace_dir().join("functions/shipping"),
        "bootstrap",
    )
    .await
}

/// The `kinesis-esm` command, as `cargo test --workspace` builds it for the emulator's own
/// integration tests. A `cargo build` of the emulator alone would resolve its dependencies'
/// features without the workspace's dev-dependencies (tokio's `test-util`, for one) and compile
/// some sixty crates again while the tests wait; asking the workspace's test build for the same
/// binary is a no-op after `cargo test --workspace`, and builds what is missing otherwise.
pub async fn kinesis_esm_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    once_per_run(&BINARY, || {
        workspace_test_binary("integration", "kinesis-esm")
    })
    .await
}

/// The binary `binary` that the workspace's test build makes for the integration test `test`
/// (cargo builds a package's binaries for its integration tests), built if need be.
fn workspace_test_binary(test: &str, binary: &str) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = std::process::Command::new(cargo)
        .current_dir(workspace_dir())
        .args(["test", "--workspace", "--no-run", "--test", test])
        .arg("--message-format=json-render-diagnostics")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "building the workspace's tests for {binary} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    executable_in_messages(&output.stdout, binary)
        .unwrap_or_else(|| panic!("cargo's test build named no executable {binary}"))
}

/// Reads a started `kinesis-esm`'s log (its stderr, piped) until a line says `marker` (for
/// example `"Kinesis API at "`), and returns the word after it: the address it serves. The rest
/// of the log is read on in the background and dropped, so that the process never blocks on a
/// full pipe. Fails the test, with the lines read, if the process ends first or takes longer
/// than `limit` (a start builds the function, which takes a while on a busy machine).
pub async fn served_address(
    child: &mut tokio::process::Child,
    marker: &str,
    limit: Duration,
) -> String {
    use tokio::io::AsyncBufReadExt;
    let stderr = child.stderr.take().expect("kinesis-esm's stderr is piped");
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let mut before = Vec::new();
    let address = within_time(limit, &format!("kinesis-esm to log {marker:?}"), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.split(marker).nth(1) {
                return rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
            }
            before.push(line);
        }
        panic!(
            "kinesis-esm ended before logging {marker:?}; its log:\n{}",
            before.join("\n")
        );
    })
    .await;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    address
}

/// The `canned-answer` fixture function (`tests/fixtures/functions/canned-answer`).
pub async fn canned_answer_bootstrap() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    built(&BINARY, fixture("functions/canned-answer"), "bootstrap").await
}

/// How a test's mapping reaches the function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// In this process: `InProcess::service(shipping::function())`.
    InProcess,
    /// The function's own `bootstrap` binary under the Lambda Runtime API.
    RuntimeApi,
}

impl Via {
    /// A short name, for stream names.
    pub fn name(self) -> &'static str {
        match self {
            Self::InProcess => "in-process",
            Self::RuntimeApi => "runtime-api",
        }
    }

    /// The shipping function, reached this way.
    pub async fn shipping(self) -> Arc<dyn Invoker> {
        match self {
            Self::InProcess => Arc::new(InProcess::service(shipping::function())),
            Self::RuntimeApi => {
                let function = FunctionDefinition::new("shipping", shipping_bootstrap().await);
                Arc::new(RuntimeApi::new(function))
            }
        }
    }
}

/// The mapping's knobs, short enough that a test waits milliseconds where Lambda waits seconds.
pub fn fast_options() -> MappingOptions {
    MappingOptions {
        poll_interval: Duration::from_millis(20),
        shard_sync_interval: Duration::from_millis(10),
        retry_backoff_initial: Duration::from_millis(5),
        retry_backoff_max: Duration::from_millis(20),
        ..MappingOptions::default()
    }
}

/// A mapping config as the shipping template has it: partial batch responses on, retries
/// unlimited unless the test says otherwise.
pub fn config(function: &str, stream: &str, starting_position: StartingPosition) -> MappingConfig {
    let mut config = MappingConfig::new(function, stream, starting_position);
    config.batch_size = 10;
    config.report_batch_item_failures = true;
    config
}

/// A shipment's JSON, as producers publish it.
pub fn shipment(id: u64, address: &str, carrier: &str) -> Bytes {
    let shipment = shipping::Shipment {
        id,
        address: address.to_owned(),
        carrier: carrier.to_owned(),
    };
    Bytes::from(serde_json::to_vec(&shipment).expect("a shipment serialises"))
}

/// Writes `count` shipments as JSON lines to `path`, each about 104 KiB (its address is long),
/// under the partition keys `shipment-<id>`: 100 of them make a file over 10 MiB, twice what one
/// `PutRecords` request may carry.
pub fn write_large_shipments(path: &Path, count: u64) {
    use std::io::Write as _;
    let address = "Keizersgracht ".repeat(7_600);
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(path)
            .unwrap_or_else(|error| panic!("creating {}: {error}", path.display())),
    );
    for id in 1..=count {
        let data = shipment(id, &address, shipping::CARRIERS[0]);
        let data = std::str::from_utf8(&data).expect("a shipment is JSON text");
        writeln!(file, r#"{{"data":{data},"partitionKey":"shipment-{id}"}}"#)
            .and_then(|()| file.flush())
            .unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
    }
}

/// A stream of an embedded Kinesis.
#[derive(Debug, Clone)]
pub struct TestStream {
    /// The Kinesis holding it.
    pub kinesis: EmbeddedKinesis,
    /// Its name.
    pub name: String,
}

impl TestStream {
    /// Creates stream `name` with `shards` shards in a new embedded Kinesis.
    pub fn create(name: &str, shards: u32) -> Self {
        Self::create_in(&EmbeddedKinesis::new(), name, shards)
    }

    /// Creates stream `name` with `shards` shards in `kinesis`.
    pub fn create_in(kinesis: &EmbeddedKinesis, name: &str, shards: u32) -> Self {
        kinesis
            .create_stream(name, shards)
            .unwrap_or_else(|error| panic!("creating stream {name}: {error}"));
        Self {
            kinesis: kinesis.clone(),
            name: name.to_owned(),
        }
    }

    /// The stream's shards, parents before children.
    pub fn shards(&self) -> Vec<Shard> {
        self.kinesis
            .list_shards(&self.name)
            .unwrap_or_else(|error| panic!("listing the shards of {}: {error}", self.name))
    }

    /// The open shards, in hash key order.
    pub fn open_shards(&self) -> Vec<Shard> {
        let mut open: Vec<Shard> = self
            .shards()
            .into_iter()
            .filter(|shard| !shard.is_closed())
            .collect();
        open.sort_by_key(|shard| shard.hash_key_range.starting_hash_key);
        open
    }

    /// Puts a record routed by its partition key.
    pub fn put(&self, partition_key: &str, data: impl Into<Bytes>) -> PutRecordOutput {
        self.kinesis
            .put_record(&self.name, PutRecordsEntry::new(partition_key, data))
            .unwrap_or_else(|error| panic!("putting {partition_key} on {}: {error}", self.name))
    }

    /// Puts a record on the open shard `shard_id` (by an explicit hash key inside its range).
    pub fn put_on(
        &self,
        shard_id: &str,
        partition_key: &str,
        data: impl Into<Bytes>,
    ) -> SequenceNumber {
        let shard = self
            .shards()
            .into_iter()
            .find(|shard| shard.shard_id == shard_id)
            .unwrap_or_else(|| panic!("stream {} has no shard {shard_id}", self.name));
        let entry = PutRecordsEntry::new(partition_key, data)
            .with_explicit_hash_key(shard.hash_key_range.starting_hash_key.to_string());
        let put = self
            .kinesis
            .put_record(&self.name, entry)
            .unwrap_or_else(|error| panic!("putting {partition_key} on {shard_id}: {error}"));
        assert_eq!(
            &*put.shard_id, shard_id,
            "the explicit hash key chose the shard"
        );
        put.sequence_number
    }
}

/// Aborts the process unless dropped within [`WATCHDOG`].
struct Watchdog {
    _done: std::sync::mpsc::Sender<()>,
}

impl Watchdog {
    fn new(what: String) -> Self {
        let (done, dropped) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = dropped.recv_timeout(WATCHDOG)
            {
                eprintln!(
                    "{what} still runs after {WATCHDOG:?}: a task that never yields has starved the \
                     test's runtime; aborting"
                );
                std::process::abort();
            }
        });
        Self { _done: done }
    }
}

/// A started mapping with what its observer saw.
pub struct Observed {
    /// The mapping.
    pub mapping: RunningMapping,
    /// Its events so far, in the order they were sent.
    events: Vec<MappingEvent>,
    receiver: mpsc::UnboundedReceiver<MappingEvent>,
    _watchdog: Watchdog,
}

impl Observed {
    /// Starts a mapping over `stream` with [`fast_options`] and a fresh memory lease store.
    pub fn start(config: MappingConfig, stream: &TestStream, invoker: Arc<dyn Invoker>) -> Self {
        Self::start_with_leases(config, stream, invoker, Arc::new(MemoryLeaseStore::new()))
    }

    /// Starts a mapping over `stream` with [`fast_options`], keeping checkpoints in `leases`.
    pub fn start_with_leases(
        config: MappingConfig,
        stream: &TestStream,
        invoker: Arc<dyn Invoker>,
        leases: Arc<dyn LeaseStore>,
    ) -> Self {
        init_logging();
        let watchdog = Watchdog::new(format!(
            "the mapping of {} to {}",
            config.stream_name, config.function_name
        ));
        let (sender, receiver) = mpsc::unbounded_channel();
        let mapping = EventSourceMapping::new(config, Arc::new(stream.kinesis.clone()), invoker)
            .lease_store(leases)
            .options(fast_options())
            .observe(sender)
            .start();
        Self {
            mapping,
            events: Vec::new(),
            receiver,
            _watchdog: watchdog,
        }
    }

    /// Waits until the status satisfies `condition`; fails the test after [`TIMEOUT`], showing
    /// the last status.
    pub async fn wait_for(
        &self,
        what: &str,
        condition: impl FnMut(&MappingStatus) -> bool,
    ) -> MappingStatus {
        match tokio::time::timeout(TIMEOUT, self.mapping.wait_for(condition)).await {
            Ok(status) => status,
            Err(_) => panic!(
                "timed out after {TIMEOUT:?} waiting for {what}; the status is {:#?}",
                self.mapping.status()
            ),
        }
    }

    /// Waits until shard `shard_id`'s checkpoint is `checkpoint`.
    pub async fn wait_for_checkpoint(
        &self,
        shard_id: &str,
        checkpoint: &Checkpoint,
    ) -> MappingStatus {
        self.wait_for(
            &format!("{shard_id} to checkpoint at {checkpoint}"),
            |status| {
                status
                    .shards
                    .get(shard_id)
                    .is_some_and(|shard| shard.checkpoint.as_ref() == Some(checkpoint))
            },
        )
        .await
    }

    /// Waits until shard `shard_id` has acked `acked` records and holds none unsettled.
    pub async fn wait_for_settled(&self, shard_id: &str, acked: u64) -> MappingStatus {
        self.wait_for(
            &format!("{shard_id} to settle with {acked} records acked"),
            |status| {
                status
                    .shards
                    .get(shard_id)
                    .is_some_and(|shard| shard.acked == acked && shard.unsettled == 0)
            },
        )
        .await
    }

    /// Every event sent so far, in order.
    pub fn events(&mut self) -> &[MappingEvent] {
        while let Ok(event) = self.receiver.try_recv() {
            self.events.push(event);
        }
        &self.events
    }

    /// The records of each invocation on `shard_id`, in order.
    pub fn invocations_on(&mut self, shard_id: &str) -> Vec<Vec<SequenceNumber>> {
        self.events()
            .iter()
            .filter_map(|event| match event {
                MappingEvent::Invoked {
                    shard_id: shard,
                    records,
                } if shard == shard_id => Some(
                    records
                        .iter()
                        .map(|(sequence_number, _)| sequence_number.clone())
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    }

    /// How many times each record was delivered, over every shard.
    pub fn delivery_counts(&mut self) -> HashMap<SequenceNumber, usize> {
        let mut counts = HashMap::new();
        for event in self.events() {
            if let MappingEvent::Invoked { records, .. } = event {
                for (sequence_number, _) in records {
                    *counts.entry(sequence_number.clone()).or_default() += 1;
                }
            }
        }
        counts
    }

    /// Stops the mapping and returns its final status.
    pub async fn stop(self) -> MappingStatus {
        within("the mapping to stop", self.mapping.stop()).await
    }
}

/// The only mapping of a one-shard template on `stream`, read by the template reader as
/// `kinesis-esm run` reads it: a Kinesis event from `TRIM_HORIZON` with `properties` (YAML lines
/// of the event's `Properties`, indented 12 spaces as they stand in the template).
pub fn one_shard_mapping(stream: &str, properties: &str) -> MappingConfig {
    let text = format!(
        r#"Transform: AWS::Serverless-2016-10-31
Resources:
  Stream:
    Type: AWS::Kinesis::Stream
    Properties: {{Name: {stream}, ShardCount: 1}}
  ShippingFunction:
    Type: AWS::Serverless::Function
    Properties:
      Handler: bootstrap
      Runtime: provided.al2023
      Events:
        ShipmentsStream:
          Type: Kinesis
          Properties:
            Stream: !GetAtt Stream.Arn
            StartingPosition: TRIM_HORIZON
{properties}"#
    );
    let template = Template::parse(format!("{stream}.yaml"), &text, &TemplateOptions::default())
        .unwrap_or_else(|error| panic!("the template was refused: {error}"));
    template.functions[0].mappings[0].clone()
}

/// The fields of a JSON record a test can know in advance: an object of each `(name, pointer)`'s
/// value in `record` (`null` where it has none).
pub fn json_fields(record: &serde_json::Value, fields: &[(&str, &str)]) -> serde_json::Value {
    fields
        .iter()
        .map(|(name, pointer)| {
            let value = record.pointer(pointer).cloned();
            ((*name).to_owned(), value.unwrap_or(serde_json::Value::Null))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// One shard's status; fails the test if the mapping does not know the shard.
#[track_caller]
pub fn shard<'a>(status: &'a MappingStatus, shard_id: &str) -> &'a ShardStatus {
    status
        .shards
        .get(shard_id)
        .unwrap_or_else(|| panic!("the mapping does not know shard {shard_id}: {status:#?}"))
}

/// The checkpoint at a record.
pub fn at(sequence_number: &SequenceNumber) -> Checkpoint {
    Checkpoint::SequenceNumber(sequence_number.clone())
}

/// Tests that each run one scenario with their own arguments: `scenario_tests! { check {
/// a_case(1, "a"), another_case(2, "b") } }` makes `#[tokio::test] async fn a_case() {
/// check(1, "a").await }` and so on, so that a failure names its case and the cases still run
/// side by side.
#[macro_export]
macro_rules! scenario_tests {
    ($($scenario:ident { $($name:ident ( $($arg:expr),* $(,)? )),+ $(,)? })+) => {
        $($(
            #[tokio::test]
            async fn $name() {
                $scenario($($arg),*).await;
            }
        )+)+
    };
}
