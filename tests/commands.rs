//! The everyday commands against a running `kinesis-esm run`, as the local loop of
//! `docs/running-locally.md` uses them: `put` publishes shipments to its Kinesis endpoint,
//! `status` shows a held shipment blocking its shard, `reshard split` closes the shard and its
//! children wait for it; and `events` writes event files shaped as Lambda's.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use end_to_end::run::{KinesisEsm, interrupt, sdk_client, statuses};
use end_to_end::{kinesis_esm_binary, shipping_bootstrap, workspace_dir, write_large_shipments};
use kinesis_esm::lease::Checkpoint;
use kinesis_esm::mapping::{MappingStatus, ShardPhase};
use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::settlement::RecordOutcome;
use lambda_kinesis::wire::{KinesisBatch, KinesisEvent};
use tokio::io::AsyncWriteExt as _;
use tokio::process::{Child, Command};

/// How long a command, or a state the test waits for, may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// A `kinesis-esm run` in the background, serving its Kinesis endpoint on a free port.
struct Emulator {
    child: Child,
    endpoint: String,
}

impl Emulator {
    async fn start() -> Self {
        shipping_bootstrap().await;
        // `run` says where its endpoint listens before anything else.
        let (child, endpoint) = KinesisEsm::run("template.yaml")
            // The held shipment stays held for the length of the test: its retries are slow.
            .args(["--retry-pause", "60s", "--max-retry-pause", "60s"])
            .log("warn")
            .timeout(COMMAND_TIMEOUT)
            .serving("Kinesis API at ")
            .await;
        Self { child, endpoint }
    }

    /// Runs `kinesis-esm <args> --endpoint <endpoint>`, feeding `stdin`; returns its stdout.
    async fn command(&self, args: &[&str], stdin: &str) -> String {
        let mut command = Command::new(kinesis_esm_binary().await);
        command
            .args(args)
            .args(["--endpoint", &self.endpoint])
            .current_dir(workspace_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("kinesis-esm starts");
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).await.unwrap();
        drop(input);
        let output = tokio::time::timeout(COMMAND_TIMEOUT, child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("kinesis-esm {args:?} took longer than {COMMAND_TIMEOUT:?}"))
            .unwrap();
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert!(
            output.status.success(),
            "kinesis-esm {args:?} failed: {}{stdout}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }

    /// Runs `kinesis-esm reshard --stream shipments <how>`; returns the lineage it answers.
    async fn reshard(&self, how: &[&str]) -> String {
        let args: Vec<&str> = ["reshard", "--stream", "shipments"]
            .into_iter()
            .chain(how.iter().copied())
            .collect();
        self.command(&args, "").await
    }

    /// Asks for the status of the run's mapping on `shipments` (the template maps the function
    /// to `shipments-retry` too) until it satisfies `condition`.
    async fn wait_for(
        &self,
        what: &str,
        condition: impl Fn(&MappingStatus) -> bool,
    ) -> MappingStatus {
        let started = std::time::Instant::now();
        loop {
            let statuses = statuses(&self.endpoint).await;
            assert!(statuses.len() <= 2, "two mappings: {statuses:#?}");
            if let Some(status) = statuses
                .into_iter()
                .find(|status| status.stream_name == "shipments")
                .filter(|status| condition(status))
            {
                return status;
            }
            assert!(started.elapsed() < COMMAND_TIMEOUT, "never {what}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Interrupts the run as Ctrl-C does; returns its exit code and summary.
    async fn interrupt(self) -> (Option<i32>, String) {
        interrupt(self.child, COMMAND_TIMEOUT).await
    }
}

fn shipment(id: u64, carrier: &str) -> String {
    format!(r#"{{"id":{id},"address":"Keizersgracht {id}, Amsterdam","carrier":"{carrier}"}}"#)
}

#[tokio::test]
async fn put_status_and_reshard_drive_a_running_emulator() {
    let emulator = Emulator::start().await;

    // `put` from arguments, then JSON lines from standard input: each record's shard and
    // sequence number come back.
    let put = emulator
        .command(
            &[
                "put",
                "--stream",
                "shipments",
                "--partition-key",
                "customer-17",
                &shipment(1, "dhl"),
            ],
            "",
        )
        .await;
    let lines = format!(
        "{{\"data\":{},\"partitionKey\":\"customer-42\"}}\n{{\"data\":{},\"partitionKey\":\"customer-42\"}}\n",
        shipment(2, "fedex"),
        shipment(3, "ups")
    );
    let put_stdin = emulator
        .command(&["put", "--stream", "shipments", "--file", "-"], &lines)
        .await;
    let placed: Vec<Vec<&str>> = put
        .lines()
        .chain(put_stdin.lines())
        .map(|line| line.split('\t').collect())
        .collect();
    assert_eq!(placed.len(), 3, "{put}{put_stdin}");
    assert!(
        placed
            .iter()
            .all(|fields| fields[0] == "shardId-000000000000"),
        "{placed:?}"
    );
    let held_sequence_number = placed[1][1];

    // The fedex shipment is held: its shard waits in front of it.
    let status = emulator
        .wait_for("held at the fedex shipment", |status| {
            status
                .shards
                .get("shardId-000000000000")
                .is_some_and(|shard| {
                    shard
                        .held
                        .as_ref()
                        .is_some_and(|held| held.sequence_number.as_str() == held_sequence_number)
                })
        })
        .await;
    let parent = &status.shards["shardId-000000000000"];
    assert_eq!(parent.phase, ShardPhase::Held);
    assert_eq!(
        parent.checkpoint,
        Some(Checkpoint::SequenceNumber(placed[0][1].parse().unwrap()))
    );
    let tree = emulator.command(&["status"], "").await;
    assert!(
        tree.contains(&format!("held at {held_sequence_number}")),
        "{tree}"
    );

    // Split the held shard: its children wait for it to reach SHARD_END.
    let lineage = emulator.reshard(&["split", "shardId-000000000000"]).await;
    assert_eq!(
        lineage,
        "shardId-000000000000\tclosed\t-\n\
         shardId-000000000001\topen\tfrom shardId-000000000000\n\
         shardId-000000000002\topen\tfrom shardId-000000000000\n"
    );
    let status = emulator
        .wait_for("children listed", |status| status.shards.len() == 3)
        .await;
    for child in ["shardId-000000000001", "shardId-000000000002"] {
        assert_eq!(
            status.shards[child].phase,
            ShardPhase::WaitingOnParents,
            "{status:#?}"
        );
        assert_eq!(status.shards[child].delivered, 0);
    }
    let tree = emulator.command(&["status"], "").await;
    assert!(
        tree.contains("    shardId-000000000001  waiting on parents"),
        "{tree}"
    );

    // Merge the two children back, then scale the stream to two open shards: each reshard
    // answers the lineage, and the new shards wait for their parents too.
    let lineage = emulator
        .reshard(&["merge", "shardId-000000000001", "shardId-000000000002"])
        .await;
    assert!(
        lineage.ends_with(
            "shardId-000000000003\topen\tfrom shardId-000000000001 + shardId-000000000002\n"
        ),
        "{lineage}"
    );
    let lineage = emulator.reshard(&["scale", "2"]).await;
    let open: Vec<&str> = lineage
        .lines()
        .filter(|line| line.contains("\topen\t"))
        .collect();
    assert_eq!(open.len(), 2, "{lineage}");
    let status = emulator
        .wait_for("the merged and scaled shards listed", |status| {
            status.shards.len() == lineage.lines().count()
        })
        .await;
    assert!(
        status
            .shards
            .values()
            .filter(|shard| shard.shard_id != "shardId-000000000000")
            .all(|shard| shard.phase == ShardPhase::WaitingOnParents && shard.delivered == 0),
        "{status:#?}"
    );

    // Ctrl-C: the run stops, reports the shard held, and exits 1.
    let (code, summary) = emulator.interrupt().await;
    assert_eq!(code, Some(1), "{summary}");
    assert!(
        summary.contains(&format!("held at {held_sequence_number}")),
        "{summary}"
    );
}

/// `put --file` with a 10 MiB records file: the records go to the running emulator in as many
/// `PutRecords` requests as Kinesis' limits need, and every one is delivered and booked.
#[tokio::test]
async fn put_publishes_a_file_larger_than_one_request() {
    let records = std::env::temp_dir().join(format!(
        "kinesis-esm-large-put-{}.jsonl",
        std::process::id()
    ));
    write_large_shipments(&records, 100);
    let emulator = Emulator::start().await;
    let path = records.to_str().expect("a UTF-8 temporary path");
    let put = emulator
        .command(&["put", "--stream", "shipments", "--file", path], "")
        .await;
    let _ = std::fs::remove_file(&records);
    let keys: Vec<&str> = put
        .lines()
        .map(|line| line.split('\t').nth(2).unwrap_or_default())
        .collect();
    let expected: Vec<String> = (1..=100).map(|id| format!("shipment-{id}")).collect();
    assert_eq!(keys, expected, "each record placed, in order:\n{put}");
    let status = emulator
        .wait_for("every record booked", |status| status.totals().acked == 100)
        .await;
    assert_eq!(status.totals().delivered, 100, "{status:#?}");
    assert!(
        status.shards.values().all(|shard| shard.held.is_none()),
        "{status:#?}"
    );
    let (code, _) = emulator.interrupt().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn events_are_shaped_as_lambdas_and_settle_as_the_records_would() {
    let folder = std::env::temp_dir().join(format!("kinesis-esm-events-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let lines = [shipment(1, "dhl"), shipment(2, "fedex"), shipment(3, "ups")]
        .map(|data| format!("{{\"data\":{data},\"partitionKey\":\"customer-17\"}}\n"))
        .concat();
    let output = Command::new(kinesis_esm_binary().await)
        .args(["events", "--file", "-", "--batch-size", "2", "--out"])
        .arg(&folder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = output;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .await
        .unwrap();
    let output = child.wait_with_output().await.unwrap();
    assert!(output.status.success());
    let written: Vec<&str> = std::str::from_utf8(&output.stdout)
        .unwrap()
        .lines()
        .collect();
    assert_eq!(written.len(), 2, "3 records in batches of 2: {written:?}");

    let mut sequence_numbers = Vec::new();
    let mut outcomes = Vec::new();
    for file in &written {
        let json = std::fs::read(Path::new(file)).unwrap();
        let text = String::from_utf8(json.clone()).unwrap();
        // Lambda's shape: a numeric arrival timestamp with three decimals, no encryptionType.
        assert!(!text.contains("encryptionType"), "{text}");
        let timestamp = text
            .split("\"approximateArrivalTimestamp\":")
            .nth(1)
            .unwrap();
        let fraction = timestamp
            .split(['}', ','])
            .next()
            .unwrap()
            .split('.')
            .nth(1)
            .unwrap();
        assert_eq!(fraction.len(), 3, "{text}");
        let event: KinesisEvent = serde_json::from_slice(&json).unwrap();
        sequence_numbers.extend(
            event
                .records
                .iter()
                .map(|record| record.kinesis.sequence_number.clone()),
        );
        let settlement = shipping::function()
            .settle(KinesisBatch::from_json(&json).unwrap(), &Context::default())
            .await;
        outcomes.extend(settlement.outcomes().iter().cloned());
    }
    assert!(
        sequence_numbers.windows(2).all(|pair| pair[0] < pair[1]),
        "{sequence_numbers:?}"
    );
    assert_eq!(outcomes[0], RecordOutcome::Acked);
    assert!(
        !outcomes[1].is_settled(),
        "the fedex shipment is held: {outcomes:?}"
    );
    let _ = std::fs::remove_dir_all(&folder);
}

/// `put` checks each record against the target stream's `MaxRecordSizeInKiB`: a 2 MiB record is
/// refused by its place on a stream at the default 1 MiB, with nothing published, and published
/// once `UpdateMaxRecordSize` raised the stream to 10 MiB.
#[tokio::test]
async fn put_honours_the_streams_max_record_size() {
    let records = std::env::temp_dir().join(format!(
        "kinesis-esm-2-mib-put-{}.jsonl",
        std::process::id()
    ));
    let large = "x".repeat(2 * 1024 * 1024);
    std::fs::write(
        &records,
        format!(
            "{{\"data\":\"small\",\"partitionKey\":\"a\"}}\n\
             {{\"data\":\"{large}\",\"partitionKey\":\"large\"}}\n"
        ),
    )
    .unwrap();
    let path = records.to_str().expect("a UTF-8 temporary path");
    let emulator = Emulator::start().await;
    let binary = kinesis_esm_binary().await;
    let put = |endpoint: &str| {
        let mut command = std::process::Command::new(binary);
        command.args([
            "put",
            "--stream",
            "shipments",
            "--file",
            path,
            "--endpoint",
            endpoint,
        ]);
        command
    };
    let refused = put(&emulator.endpoint).output().unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "record 2 of 2 (partition key `large`) holds 2097157 bytes of data and partition key; \
             stream shipments takes at most 1048576 (its MaxRecordSizeInKiB is 1024"
        ),
        "{stderr}"
    );
    assert!(refused.stdout.is_empty(), "nothing is published first");

    let client = sdk_client(&emulator.endpoint);
    let arn = client
        .describe_stream_summary()
        .stream_name("shipments")
        .send()
        .await
        .unwrap()
        .stream_description_summary()
        .unwrap()
        .stream_arn()
        .to_owned();
    client
        .update_max_record_size()
        .stream_arn(arn)
        .max_record_size_in_kib(10240)
        .send()
        .await
        .unwrap();
    let published = put(&emulator.endpoint).output().unwrap();
    let _ = std::fs::remove_file(&records);
    assert!(
        published.status.success(),
        "{}",
        String::from_utf8_lossy(&published.stderr)
    );
    let keys: Vec<String> = String::from_utf8_lossy(&published.stdout)
        .lines()
        .map(|line| line.split('\t').nth(2).unwrap_or_default().to_owned())
        .collect();
    assert_eq!(keys, ["a", "large"]);
}
