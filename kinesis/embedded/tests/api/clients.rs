//! boto3 and the aws CLI v1 against the embedded Kinesis served over the Kinesis API: the
//! clients Python users and shell scripts point at a local Kinesis.
//!
//! Run with `cargo test -p embedded-kinesis --test api clients::`. The first run
//! installs the pinned boto3 and awscli into `.local/venv` through
//! `emulator/tests/clients/python-tools` (it needs python3 and PyPI); later runs find them
//! there.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use crate::support::serve_loopback;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use embedded_kinesis::http::ServerHandle;
use embedded_kinesis::{EmbeddedKinesis, ManualClock, PutRecordsEntry};
use serde_json::Value;

/// How long one client run may take: the boto3 suite starts Python once and makes about a
/// hundred calls.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);
/// When the timed stream's first record arrived, in epoch seconds; the second arrived ten
/// seconds later, and the endpoint's clock stands still there.
const TIMED_START: u64 = 1_700_000_000;
const TIMED_STREAM: &str = "timed";
const QUARTER: u128 = 1 << 126;

/// The project virtualenv with the pinned boto3 and aws CLI, installed on first use.
pub(crate) fn venv() -> &'static Path {
    static VENV: OnceLock<PathBuf> = OnceLock::new();
    VENV.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/python-tools");
        let output = std::process::Command::new(&script)
            .output()
            .unwrap_or_else(|error| panic!("could not run {}: {error}", script.display()));
        assert!(
            output.status.success(),
            "{} failed ({}):\n{}",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
    })
}

/// An endpoint whose clock stands still after putting the timed stream's two records.
async fn serve() -> (ServerHandle, EmbeddedKinesis) {
    let clock = ManualClock::new(SystemTime::UNIX_EPOCH + Duration::from_secs(TIMED_START));
    let kinesis = EmbeddedKinesis::builder().clock(clock.clone()).build();
    kinesis.create_stream(TIMED_STREAM, 1).unwrap();
    kinesis
        .put_record(TIMED_STREAM, PutRecordsEntry::new("k", "early"))
        .unwrap();
    clock.advance(Duration::from_secs(10));
    kinesis
        .put_record(TIMED_STREAM, PutRecordsEntry::new("k", "late"))
        .unwrap();
    let server = serve_loopback(kinesis.clone()).await;
    (server, kinesis)
}

/// A command of the virtualenv with an environment of its own: fixed credentials and region,
/// no AWS configuration files, no instance metadata.
pub(crate) fn command(program: &str, endpoint: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(venv().join("bin").join(program));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env!("CARGO_TARGET_TMPDIR"))
        .env("LANG", "C.UTF-8")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("KINESIS_ENDPOINT_URL", endpoint)
        .kill_on_drop(true);
    command
}

pub(crate) async fn finish(what: &str, command: &mut tokio::process::Command) -> Output {
    tokio::time::timeout(CLIENT_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {CLIENT_TIMEOUT:?}"))
        .unwrap_or_else(|error| panic!("could not run {what}: {error}"))
}

/// Runs the unittest suite `tests/clients/{script}` against `endpoint` (with `env` besides the
/// endpoint's), and checks that it ran `tests` tests and that every one passed.
pub(crate) async fn check_python_suite(
    endpoint: &str,
    script: &str,
    env: &[(&str, String)],
    tests: usize,
) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(script);
    let mut command = command("python", endpoint);
    command
        .arg(&path)
        .envs(env.iter().map(|(name, value)| (name, value)));
    let output = finish(script, &mut command).await;
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{script} failed:\n{report}");
    // unittest reports on stderr; a suite that found no tests must not pass for one that ran.
    assert!(
        report.contains(&format!("Ran {tests} tests")) && report.contains("\nOK"),
        "{report}"
    );
}

#[tokio::test]
async fn boto3_flows_pass() {
    let (server, _kinesis) = serve().await;
    let env = [
        ("TIMED_STREAM", TIMED_STREAM.to_owned()),
        ("TIMED_START", TIMED_START.to_string()),
    ];
    check_python_suite(&server.endpoint_url(), "test_boto3.py", &env, 4).await;
}

/// The aws CLI against one endpoint.
struct Cli {
    endpoint: String,
}

impl Cli {
    /// Runs `aws kinesis <args>`: its JSON output (`null` when it prints nothing), or its
    /// error text.
    async fn kinesis(&self, args: &[&str]) -> Result<Value, String> {
        let output = finish(
            &format!("aws kinesis {}", args.join(" ")),
            command("aws", &self.endpoint)
                .args(["--endpoint-url", &self.endpoint, "--output", "json"])
                .arg("kinesis")
                .args(args),
        )
        .await;
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).into_owned());
        }
        let stdout = String::from_utf8(output.stdout).unwrap();
        if stdout.trim().is_empty() {
            Ok(Value::Null)
        } else {
            Ok(serde_json::from_str(&stdout).unwrap_or_else(|error| {
                panic!("aws kinesis {args:?} printed no JSON ({error}): {stdout}")
            }))
        }
    }

    async fn ok(&self, args: &[&str]) -> Value {
        self.kinesis(args)
            .await
            .unwrap_or_else(|error| panic!("aws kinesis {args:?} failed: {error}"))
    }

    async fn iterator(&self, stream: &str, shard: &str, position: &[&str]) -> String {
        let mut args = vec![
            "get-shard-iterator",
            "--stream-name",
            stream,
            "--shard-id",
            shard,
            "--shard-iterator-type",
        ];
        args.extend_from_slice(position);
        self.ok(&args).await["ShardIterator"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Reads a shard until it ends or a read comes back empty: the decoded data and the last
    /// answer.
    async fn read_to_end(&self, iterator: String) -> (Vec<String>, Value) {
        let mut data = Vec::new();
        let mut iterator = iterator;
        loop {
            let answer = self
                .ok(&["get-records", "--shard-iterator", &iterator, "--limit", "2"])
                .await;
            let records = answer["Records"].as_array().unwrap();
            data.extend(records.iter().map(|record| decode(&record["Data"])));
            match answer.get("NextShardIterator").and_then(Value::as_str) {
                Some(next) if !records.is_empty() => iterator = next.to_owned(),
                _ => return (data, answer),
            }
        }
    }
}

/// The CLI prints `Data` as base64.
fn decode(data: &Value) -> String {
    String::from_utf8(STANDARD.decode(data.as_str().unwrap()).unwrap()).unwrap()
}

fn shard_id(number: u32) -> String {
    format!("shardId-{number:012}")
}

#[tokio::test]
async fn aws_cli_flows_pass() {
    venv();
    let (server, kinesis) = serve().await;
    let cli = Cli {
        endpoint: server.endpoint_url(),
    };
    let stream = "cli-flow";
    let hash = |key: u128| key.to_string();

    assert_eq!(
        cli.ok(&[
            "create-stream",
            "--stream-name",
            stream,
            "--shard-count",
            "2"
        ])
        .await,
        Value::Null
    );
    cli.ok(&["wait", "stream-exists", "--stream-name", stream])
        .await;
    let summary = cli
        .ok(&["describe-stream-summary", "--stream-name", stream])
        .await;
    assert_eq!(
        summary["StreamDescriptionSummary"]["StreamStatus"],
        "ACTIVE"
    );
    assert_eq!(summary["StreamDescriptionSummary"]["OpenShardCount"], 2);

    // One record and a batch; the CLI base64-encodes `--data` and `Data=` itself.
    let put = cli
        .ok(&[
            "put-record",
            "--stream-name",
            stream,
            "--partition-key",
            "key-0",
            "--data",
            "zero",
            "--explicit-hash-key",
            "0",
        ])
        .await;
    assert_eq!(put["ShardId"], shard_id(0));
    let batch = cli
        .ok(&[
            "put-records",
            "--stream-name",
            stream,
            "--records",
            "Data=one,PartitionKey=key-1,ExplicitHashKey=1",
            "Data=two,PartitionKey=key-2,ExplicitHashKey=2",
        ])
        .await;
    assert_eq!(batch["FailedRecordCount"], 0);
    let second = batch["Records"][0]["SequenceNumber"]
        .as_str()
        .unwrap()
        .to_owned();

    let shard0 = shard_id(0);
    let everything = cli.iterator(stream, &shard0, &["TRIM_HORIZON"]).await;
    assert_eq!(cli.read_to_end(everything).await.0, ["zero", "one", "two"]);
    let at = cli
        .iterator(
            stream,
            &shard0,
            &["AT_SEQUENCE_NUMBER", "--starting-sequence-number", &second],
        )
        .await;
    assert_eq!(cli.read_to_end(at).await.0, ["one", "two"]);
    let after = cli
        .iterator(
            stream,
            &shard0,
            &[
                "AFTER_SEQUENCE_NUMBER",
                "--starting-sequence-number",
                &second,
            ],
        )
        .await;
    assert_eq!(cli.read_to_end(after).await.0, ["two"]);
    let latest = cli.iterator(stream, &shard0, &["LATEST"]).await;
    cli.ok(&[
        "put-record",
        "--stream-name",
        stream,
        "--partition-key",
        "key-3",
        "--data",
        "three",
        "--explicit-hash-key",
        "3",
    ])
    .await;
    assert_eq!(cli.read_to_end(latest).await.0, ["three"]);
    let five_seconds_in = (TIMED_START + 5).to_string();
    let at_timestamp = cli
        .iterator(
            TIMED_STREAM,
            &shard0,
            &["AT_TIMESTAMP", "--timestamp", &five_seconds_in],
        )
        .await;
    assert_eq!(cli.read_to_end(at_timestamp).await.0, ["late"]);

    // Split shard 0 at a quarter (2 and 3), merge 3 with 1 (into 4).
    cli.ok(&[
        "split-shard",
        "--stream-name",
        stream,
        "--shard-to-split",
        &shard0,
        "--new-starting-hash-key",
        &hash(QUARTER),
    ])
    .await;
    cli.ok(&[
        "merge-shards",
        "--stream-name",
        stream,
        "--shard-to-merge",
        &shard_id(3),
        "--adjacent-shard-to-merge",
        &shard_id(1),
    ])
    .await;
    let listed = cli.ok(&["list-shards", "--stream-name", stream]).await;
    let lineage: Vec<(String, Value, Value)> = listed["Shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|shard| {
            (
                shard["ShardId"].as_str().unwrap().to_owned(),
                shard["ParentShardId"].clone(),
                shard["AdjacentParentShardId"].clone(),
            )
        })
        .collect();
    assert_eq!(
        lineage,
        [
            (shard_id(0), Value::Null, Value::Null),
            (shard_id(1), Value::Null, Value::Null),
            (shard_id(2), Value::from(shard_id(0)), Value::Null),
            (shard_id(3), Value::from(shard_id(0)), Value::Null),
            (
                shard_id(4),
                Value::from(shard_id(3)),
                Value::from(shard_id(1))
            ),
        ]
    );
    assert_eq!(
        listed,
        cli.ok(&["list-shards", "--stream-arn", &kinesis.stream_arn(stream)])
            .await
    );

    let parent = cli.iterator(stream, &shard0, &["TRIM_HORIZON"]).await;
    let (data, end) = cli.read_to_end(parent).await;
    assert_eq!(data, ["zero", "one", "two", "three"]);
    assert_eq!(end.get("NextShardIterator"), None);
    let children: Vec<(&str, &Value)> = end["ChildShards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|child| (child["ShardId"].as_str().unwrap(), &child["ParentShards"]))
        .collect();
    let only_parent = Value::from(vec![shard_id(0)]);
    assert_eq!(
        children,
        [
            (shard_id(2).as_str(), &only_parent),
            (shard_id(3).as_str(), &only_parent)
        ]
    );
    let merged = cli.iterator(stream, &shard_id(1), &["TRIM_HORIZON"]).await;
    let (_, end) = cli.read_to_end(merged).await;
    assert_eq!(end.get("NextShardIterator"), None);
    assert_eq!(
        end["ChildShards"][0]["ParentShards"],
        Value::from(vec![shard_id(3), shard_id(1)])
    );

    // Errors come back under their Kinesis names.
    let missing = cli
        .kinesis(&["describe-stream-summary", "--stream-name", "missing"])
        .await
        .expect_err("a missing stream");
    assert!(
        missing.contains("(ResourceNotFoundException)")
            && missing.contains("Stream missing under account 000000000000 not found"),
        "{missing}"
    );
    let in_use = cli
        .kinesis(&[
            "create-stream",
            "--stream-name",
            stream,
            "--shard-count",
            "1",
        ])
        .await
        .expect_err("a second stream of the same name");
    assert!(in_use.contains("(ResourceInUseException)"), "{in_use}");
    let bad_iterator = cli
        .kinesis(&["get-records", "--shard-iterator", "bm90IGFuIGl0ZXJhdG9y"])
        .await
        .expect_err("an iterator the endpoint never issued");
    assert!(
        bad_iterator.contains("(InvalidArgumentException)"),
        "{bad_iterator}"
    );

    cli.ok(&["delete-stream", "--stream-name", stream]).await;
    assert_eq!(kinesis.list_streams(), [TIMED_STREAM]);
}

/// boto3 for what Kinesis added lately: 10 MiB records, keyless records on an `AUTO` stream,
/// and the store-and-echo operations (`tests/clients/test_boto3_2026.py`).
#[tokio::test]
async fn boto3_takes_large_records_keyless_records_and_the_newer_operations() {
    let (server, _kinesis) = serve().await;
    check_python_suite(&server.endpoint_url(), "test_boto3_2026.py", &[], 6).await;
}
