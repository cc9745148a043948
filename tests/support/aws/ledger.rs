//! The ledger fixture function (`tests/fixtures/functions/shipping-ledger`): its build, the
//! SAM templates that run it over a stream, and the deliveries it writes down.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::{Delivery, unique_name};
use crate::workspace_dir;

/// The ledger fixture's binary: not `bootstrap`, which is the shipping function's in the same
/// target folder.
const LEDGER_BINARY: &str = "shipping-ledger";

/// The ledger fixture function's crate (`tests/fixtures/functions/shipping-ledger`).
pub fn ledger_function_dir() -> PathBuf {
    workspace_dir().join("tests/fixtures/functions/shipping-ledger")
}

/// Builds the ledger fixture function once per test process, so that `kinesis-esm run` finds
/// it built (its own build of the function is then a quick no-op), and returns its binary (for
/// `run --prebuilt-dir`, which skips cargo altogether).
pub async fn build_ledger_function() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    crate::built(&BINARY, ledger_function_dir(), LEDGER_BINARY).await
}

/// A folder of its own under the system's temporary folder, removed when dropped.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates the folder.
    pub fn new(prefix: &str) -> Self {
        let path = std::env::temp_dir().join(unique_name(prefix));
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|error| panic!("creating {}: {error}", path.display()));
        Self(path)
    }

    /// A path inside the folder.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Keeps the folder (it is not removed) and returns its path.
    pub fn keep(self) -> PathBuf {
        let path = self.0.clone();
        std::mem::forget(self);
        path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A SAM template with one stream and the ledger fixture function reading it.
#[derive(Debug, Clone)]
pub struct LedgerTemplate {
    /// The stream's name (it must exist on kinesis-local already).
    pub stream: String,
    /// The stream's shard count.
    pub shards: u32,
    /// The mapping's `BatchSize`.
    pub batch_size: u32,
    /// Where the function writes down what it is delivered.
    pub ledger: PathBuf,
    /// How long the function takes per batch, in milliseconds.
    pub delay_ms: u64,
}

impl LedgerTemplate {
    /// The template of `stream` with `shards` shards, read `batch_size` records at a time by a
    /// function that takes `delay_ms` per batch; its ledger is set where it is written
    /// ([`LedgerTemplate::write_as`]).
    pub fn new(stream: &str, shards: u32, batch_size: u32, delay_ms: u64) -> Self {
        Self {
            stream: stream.to_owned(),
            shards,
            batch_size,
            ledger: PathBuf::new(),
            delay_ms,
        }
    }

    /// Writes the template of a run named `name` to `<name>.yaml` in `scratch`, its function
    /// writing down to `<name>.ledger` there; returns the template's path (as text, for an
    /// argument) and the ledger's.
    pub fn write_as(&self, scratch: &ScratchDir, name: &str) -> (String, PathBuf) {
        let template = scratch.join(&format!("{name}.yaml"));
        let ledger = scratch.join(&format!("{name}.ledger"));
        Self {
            ledger: ledger.clone(),
            ..self.clone()
        }
        .write(&template);
        (template.to_string_lossy().into_owned(), ledger)
    }

    /// Writes the template to `path`.
    pub fn write(&self, path: &Path) {
        self.write_with_event_stream(path, "", "!GetAtt Shipments.Arn");
    }

    /// Writes the template to `path`, its event reading through an enhanced fan-out consumer
    /// named `consumer` (an `AWS::Kinesis::StreamConsumer` of the stream, which `kinesis-esm
    /// run` registers where it is missing).
    pub fn write_through_consumer(&self, path: &Path, consumer: &str) {
        let resource = format!(
            r#"  Reader:
    Type: AWS::Kinesis::StreamConsumer
    Properties:
      ConsumerName: {consumer}
      StreamARN: !GetAtt Shipments.Arn
"#
        );
        self.write_with_event_stream(path, &resource, "!GetAtt Reader.ConsumerARN");
    }

    fn write_with_event_stream(&self, path: &Path, more_resources: &str, event_stream: &str) {
        let text = format!(
            r#"AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Shipments:
    Type: AWS::Kinesis::Stream
    Properties:
      Name: {stream}
      ShardCount: {shards}
{more_resources}  LedgerFunction:
    Type: AWS::Serverless::Function
    Metadata:
      BuildMethod: rust-cargolambda
      BuildProperties:
        Binary: {binary}
    Properties:
      FunctionName: shipping-ledger
      CodeUri: '{code_uri}'
      Handler: bootstrap
      Runtime: provided.al2023
      Timeout: 30
      Environment:
        Variables:
          DELIVERY_LEDGER: '{ledger}'
          LEDGER_DELAY_MS: "{delay_ms}"
      Events:
        Shipments:
          Type: Kinesis
          Properties:
            Stream: {event_stream}
            StartingPosition: TRIM_HORIZON
            BatchSize: {batch_size}
            FunctionResponseTypes:
              - ReportBatchItemFailures
"#,
            stream = self.stream,
            shards = self.shards,
            code_uri = ledger_function_dir().display(),
            binary = LEDGER_BINARY,
            ledger = self.ledger.display(),
            delay_ms = self.delay_ms,
            batch_size = self.batch_size,
        );
        std::fs::write(path, text)
            .unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
    }
}

/// The deliveries the ledger fixture wrote down, in order; none if it wrote nothing.
pub fn read_ledger(path: &Path) -> Vec<Delivery> {
    read_ledger_by_process(path)
        .into_iter()
        .map(|(delivery, _)| delivery)
        .collect()
}

/// The deliveries the ledger fixture wrote down, in order, each with the execution environment
/// (the function process: its id and start time, `<pid>-<nanoseconds>`) it was delivered to.
pub fn read_ledger_by_process(path: &Path) -> Vec<(Delivery, String)> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(error) => panic!("reading {}: {error}", path.display()),
    };
    text.lines()
        .enumerate()
        .map(|(index, line)| {
            let bad = || {
                panic!(
                    "{}:{}: `{line}` is not a ledger line",
                    path.display(),
                    index + 1
                )
            };
            let mut fields = line.split(' ');
            let (Some(shard_id), Some(sequence_number), Some(partition_key), Some(process), None) = (
                fields.next(),
                fields.next(),
                fields.next(),
                fields.next(),
                fields.next(),
            ) else {
                bad()
            };
            let delivery = Delivery {
                shard_id: shard_id.to_owned(),
                sequence_number: sequence_number.parse().unwrap_or_else(|_| bad()),
                partition_key: partition_key.to_owned(),
            };
            if process.is_empty() {
                bad();
            }
            (delivery, process.to_owned())
        })
        .collect()
}
