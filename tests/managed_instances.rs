//! Lambda Managed Instances end to end: a template's capacity provider read by the template
//! reader, a function written on `lambda_runtime::run_concurrent` (the `concurrent-sleeper`
//! fixture) run through the Runtime API with `PerExecutionEnvironmentMaxConcurrency`, over a
//! stream of four shards. Fewer environments start than batches run at once, one environment
//! serves several invocations at once, and every record is delivered once, in order per shard
//! (`docs/managed-instances.md`). The shipping function runs the same way through the real
//! `kinesis-esm run` (`tests/templates/cli/shipping-managed-instances.yaml`): its summary line,
//! `kinesis-esm status`' environments, and a held record that holds only its shard.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use end_to_end::run::{
    Running, cli_template, kinesis_esm_with, status_output, statuses, temp_file,
};
use end_to_end::{Observed, TestStream, at, concurrent_sleeper_bootstrap, shipping_bootstrap};
use kinesis_esm::invoke::runtime_api::{FunctionDefinition, RuntimeApi};
use kinesis_esm::invoke::{Invocation, InvokeError, InvokeOutcome, Invoker};
use kinesis_esm::mapping::MappingStatus;
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::template::{Template, TemplateOptions};

const SHARDS: u32 = 4;
const RECORDS: u64 = 80;
const CONCURRENCY: u32 = 3;

/// A template with a four-shard stream and a function on a capacity provider that runs up to
/// [`CONCURRENCY`] invocations in one environment.
fn template(stream: &str) -> Template {
    let text = format!(
        "Transform: AWS::Serverless-2016-10-31
Resources:
  Stream:
    Type: AWS::Kinesis::Stream
    Properties: {{Name: {stream}, ShardCount: {SHARDS}}}
  Fleet:
    Type: AWS::Serverless::CapacityProvider
  SleeperFunction:
    Type: AWS::Serverless::Function
    Properties:
      Handler: bootstrap
      Runtime: provided.al2023
      CapacityProviderConfig:
        Arn: !GetAtt Fleet.Arn
        PerExecutionEnvironmentMaxConcurrency: {CONCURRENCY}
      Events:
        Shipments:
          Type: Kinesis
          Properties:
            Stream: !GetAtt Stream.Arn
            StartingPosition: TRIM_HORIZON
            BatchSize: 5
"
    );
    Template::parse(format!("{stream}.yaml"), &text, &TemplateOptions::default())
        .unwrap_or_else(|error| panic!("the template was refused: {error}"))
}

/// What the invocations carried and what the function said of itself.
#[derive(Debug, Default)]
struct Seen {
    /// Each record delivered, as (shard, sequence number), in the order invocations began.
    records: Vec<(String, String)>,
    /// The most invocations the function's process said it held at once.
    most_in_flight: u64,
    /// The processes that answered.
    pids: HashSet<u64>,
}

/// The Runtime API invoker, watched: the records of each event, and each answer's counts.
struct Watched {
    api: Arc<RuntimeApi>,
    seen: Arc<Mutex<Seen>>,
}

#[async_trait]
impl Invoker for Watched {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeOutcome, InvokeError> {
        let event: serde_json::Value =
            serde_json::from_slice(&invocation.payload).expect("the event is JSON");
        let records = event["Records"].as_array().expect("the event has Records");
        {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            for record in records {
                let event_id = record["eventID"].as_str().expect("a record has an eventID");
                let (shard_id, _) = event_id.split_once(':').expect("shard:sequence");
                let sequence = record["kinesis"]["sequenceNumber"]
                    .as_str()
                    .expect("sequence");
                seen.records
                    .push((shard_id.to_owned(), sequence.to_owned()));
            }
        }
        let outcome = self.api.invoke(invocation).await?;
        if let InvokeOutcome::Response(body) = &outcome {
            let answer: serde_json::Value =
                serde_json::from_slice(body).expect("the fixture answers JSON");
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            let most = answer["mostInFlight"].as_u64().expect("mostInFlight");
            seen.most_in_flight = seen.most_in_flight.max(most);
            seen.pids.insert(answer["pid"].as_u64().expect("pid"));
        }
        Ok(outcome)
    }

    async fn shutdown(&self) {
        self.api.shutdown().await;
    }
}

/// Sequence numbers as numbers: a shorter one is smaller (never compared as text).
fn numeric(sequence: &str) -> (usize, &str) {
    (sequence.len(), sequence)
}

/// Puts [`RECORDS`] records over the stream's shards; gives each shard's last.
fn put_records(stream: &TestStream) -> BTreeMap<String, SequenceNumber> {
    let mut last = BTreeMap::new();
    for id in 0..RECORDS {
        let put = stream.put(&format!("key-{id}"), format!("{{\"id\":{id}}}"));
        last.insert(put.shard_id.to_string(), put.sequence_number);
    }
    assert_eq!(last.len(), SHARDS as usize, "every shard got records");
    last
}

/// What a run of the template's function left: its invoker, what it saw, the final status.
struct Run {
    api: Arc<RuntimeApi>,
    seen: Arc<Mutex<Seen>>,
    status: MappingStatus,
}

/// Runs the template's function through the Runtime API, each environment running the
/// template's `PerExecutionEnvironmentMaxConcurrency`, with `environment` added to its own,
/// until every shard's last record is checkpointed.
async fn run(test: &str, environment: &[(&str, &str)]) -> Run {
    let stream = TestStream::create(test, SHARDS);
    let template = template(&stream.name);
    let function = &template.functions[0];
    let managed = function
        .managed_instances
        .as_ref()
        .expect("the function is on Managed Instances");
    let last = put_records(&stream);
    let binary = concurrent_sleeper_bootstrap().await;
    let mut definition = FunctionDefinition::new("SleeperFunction", binary);
    definition.timeout = Duration::from_secs(10);
    definition
        .environment
        .insert("SLEEP_MS".to_owned(), "300".to_owned());
    for (name, value) in environment {
        definition
            .environment
            .insert((*name).to_owned(), (*value).to_owned());
    }
    let api = Arc::new(
        RuntimeApi::new(definition)
            .max_environments(SHARDS as usize)
            .per_environment_concurrency(managed.max_concurrency as usize),
    );
    let seen = Arc::new(Mutex::new(Seen::default()));
    let watched = Watched {
        api: Arc::clone(&api),
        seen: Arc::clone(&seen),
    };
    let observed = Observed::start(function.mappings[0].clone(), &stream, Arc::new(watched));
    for (shard_id, sequence) in &last {
        observed.wait_for_checkpoint(shard_id, &at(sequence)).await;
    }
    let status = observed.stop().await;
    api.shutdown().await;
    Run { api, seen, status }
}

#[tokio::test]
async fn shards_share_environments_each_serving_several_batches_at_once_in_order() {
    let Run { api, seen, status } = run("managed-instances", &[]).await;
    let acked: u64 = status.shards.values().map(|shard| shard.acked).sum();
    assert_eq!(acked, RECORDS);
    let seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
    let started = api.environments_started();
    assert!(
        (1..u64::from(SHARDS)).contains(&started),
        "{started} environments for {SHARDS} batches at once: a new one starts only when every \
         one is full, {CONCURRENCY} invocations each"
    );
    assert!(
        seen.most_in_flight >= 2,
        "the function never held two invocations at once ({} at most)",
        seen.most_in_flight
    );
    assert!(api.most_in_flight() >= 2 && api.most_in_flight() <= CONCURRENCY as usize);
    assert_eq!(
        seen.pids.len() as u64,
        started,
        "one process per environment"
    );
    check_once_in_order(&seen.records);
}

#[tokio::test]
async fn a_crashed_environment_fails_every_invocation_in_it_each_retried_by_its_shard() {
    let marker = std::env::temp_dir().join(test_support::unique_name("managed-instances-crash"));
    let marker_text = marker.to_string_lossy().into_owned();
    let crash = [("CRASH_ONCE_FILE", marker_text.as_str())];
    let Run { api, status, .. } = run("managed-instances-crash", &crash).await;
    assert!(marker.exists(), "the function never crashed");
    let _ = std::fs::remove_file(&marker);
    let acked: u64 = status.shards.values().map(|shard| shard.acked).sum();
    assert_eq!(acked, RECORDS, "every record is settled in the end");
    let discarded: u64 = status.shards.values().map(|shard| shard.discarded).sum();
    assert_eq!(discarded, 0);
    let retried: Vec<&str> = status
        .shards
        .values()
        .filter(|shard| shard.retries > 0)
        .map(|shard| shard.shard_id.as_str())
        .collect();
    assert!(
        retried.len() >= 2,
        "the crash failed the invocations of several shards in flight in its environment, \
         each retried by its own shard; retried: {retried:?}"
    );
    assert!(
        api.environments_started() >= 2,
        "the crashed environment was replaced"
    );
}

/// Every record delivered once, and each shard's in increasing sequence order.
#[track_caller]
fn check_once_in_order(records: &[(String, String)]) {
    assert_eq!(
        records.len() as u64,
        RECORDS,
        "a record was delivered twice or never"
    );
    let unique: HashSet<_> = records.iter().collect();
    assert_eq!(unique.len(), records.len(), "a record was delivered twice");
    let mut by_shard: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (shard_id, sequence) in records {
        by_shard.entry(shard_id).or_default().push(sequence);
    }
    for (shard_id, sequences) in by_shard {
        assert!(
            sequences
                .windows(2)
                .all(|pair| numeric(pair[0]) < numeric(pair[1])),
            "shard {shard_id} was delivered out of order: {sequences:?}"
        );
    }
}

/// How many shipments [`the_shipping_function_on_managed_instances_settles_every_record`] puts.
const SHIPMENTS: u64 = 40;

/// `kinesis-esm run` of the shipping function on a capacity provider, 4 invocations at once in
/// one environment, over 4 shards: every record is settled, and the summary says how many
/// environments served the shards' batches, never more than the shards, each with at most 4
/// invocations at once. How many start depends on timing, so only the bounds are checked.
#[tokio::test]
async fn the_shipping_function_on_managed_instances_settles_every_record() {
    shipping_bootstrap().await;
    let records = temp_file("managed-instances-shipments.jsonl", &shipments_file());
    let template = cli_template("shipping-managed-instances.yaml");
    let run = kinesis_esm_with(&template, &records, &[]).await;
    std::fs::remove_file(&records).expect("cleaned");
    assert_eq!(run.code, Some(0), "{run:#?}");
    let rows = run.shard_rows();
    assert_eq!(
        rows.len(),
        SHARDS as usize,
        "one row per shard:\n{}",
        run.stdout
    );
    let count = |column: &str| -> u64 {
        rows.iter()
            .map(|row| row[column].parse::<u64>().expect("a count"))
            .sum()
    };
    assert_eq!(count("records"), SHIPMENTS, "{}", run.stdout);
    assert_eq!(
        count("acked") + count("dropped"),
        SHIPMENTS,
        "{}",
        run.stdout
    );
    assert!(
        rows.iter().all(|row| row["records"] != "0"),
        "the shipments are spread over every shard:\n{}",
        run.stdout
    );
    check_managed_instances_line(&run.stdout);
}

/// The summary's line for the shipping function on Managed Instances: at most one environment
/// per shard (one batch in flight per shard), at most 4 invocations at once in one.
#[track_caller]
fn check_managed_instances_line(summary: &str) {
    let prefix = "ShippingFunction on Managed Instances: ";
    let line = summary
        .lines()
        .find_map(|line| line.trim().strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?}:\n{summary}"));
    let number_before = |words: &str| -> u64 {
        let (head, _) = line
            .split_once(words)
            .unwrap_or_else(|| panic!("{words:?} is not in {line:?}"));
        let number = head.split_whitespace().last().expect("a number");
        number
            .parse()
            .unwrap_or_else(|_| panic!("{number:?} in {line:?}"))
    };
    let started = number_before(" execution environment");
    assert!(
        (1..=u64::from(SHARDS)).contains(&started),
        "{started} environments for {SHARDS} shards: {line}"
    );
    let most = number_before(" invocation");
    assert!((1..=4).contains(&most), "{line}");
    assert!(line.ends_with("at once in one (of 4 allowed)"), "{line}");
}

/// [`SHIPMENTS`] shipments to book, one per partition key, as `kinesis-esm run --put` reads them.
fn shipments_file() -> String {
    (1..=SHIPMENTS)
        .map(|id| {
            let carrier = ["dhl", "ups"][id as usize % 2];
            format!(
                "{{\"partitionKey\": \"shipment-{id}\", \"data\": {{\"id\": {id}, \
                 \"address\": \"{id} Quay Street, Dublin\", \"carrier\": \"{carrier}\"}}}}\n"
            )
        })
        .collect()
}

/// While the run lasts, `kinesis-esm status --json` lists the shipping function's environments
/// (they stay once started), each with at most 4 invocations in flight, and the text status has
/// their line.
#[tokio::test]
async fn status_lists_the_environments_of_a_function_on_managed_instances() {
    shipping_bootstrap().await;
    let records = temp_file("managed-instances-status.jsonl", &shipments_file());
    let template = cli_template("shipping-managed-instances.yaml");
    let mut run = Running::start_with(&template, &records, &[]).await;
    let endpoint = run.kinesis_endpoint().await;
    let status = status_until_settled(&endpoint).await;
    std::fs::remove_file(&records).expect("cleaned");
    assert!(
        (1..=SHARDS as usize).contains(&status.environments.len()),
        "{:?}",
        status.environments
    );
    assert!(
        status
            .environments
            .iter()
            .all(|environment| environment.number >= 1 && environment.in_flight <= 4),
        "{:?}",
        status.environments
    );
    let tree = status_output(&endpoint, false)
        .await
        .expect("the text status");
    assert!(tree.contains("\n  environments: #"), "{tree}");
    run.send_sigterm();
    let ended = run.ended_within(Duration::from_secs(30)).await;
    assert_eq!(ended.code, Some(0), "{ended:#?}");
}

/// The one mapping's status, read until it has started and settled every shipment.
async fn status_until_settled(endpoint: &str) -> MappingStatus {
    let mut last = None;
    for _ in 0..300 {
        // The mapping starts once the function is built, after the endpoint is served.
        if let Some(status) = statuses(endpoint).await.into_iter().next() {
            let totals = status.totals();
            if totals.acked + totals.dropped == SHIPMENTS {
                return status;
            }
            last = Some(status);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the shipments were never all settled; the last status: {last:#?}");
}

/// A held record under Managed Instances holds only its shard: the shipping function cannot book
/// a fedex shipment and holds it (no retry cap), its shard stops there, and the other shards'
/// batches, served by the same environments, settle every record. The run ends with exit code 1
/// (a shard held).
#[tokio::test]
async fn a_held_record_holds_only_its_shard_while_the_others_share_the_environments() {
    shipping_bootstrap().await;
    let mut shipments = shipments_file();
    shipments.push_str(
        "{\"partitionKey\": \"shipment-fedex\", \"data\": {\"id\": 99, \"address\": \
         \"99 Quay Street, Dublin\", \"carrier\": \"fedex\"}}\n",
    );
    let records = temp_file("managed-instances-held.jsonl", &shipments);
    let template = cli_template("shipping-managed-instances.yaml");
    let pause = ["--retry-pause", "100ms", "--max-retry-pause", "100ms"];
    let run = kinesis_esm_with(&template, &records, &pause).await;
    std::fs::remove_file(&records).expect("cleaned");
    assert_eq!(run.code, Some(1), "{run:#?}");
    let rows = run.shard_rows();
    assert_eq!(rows.len(), SHARDS as usize, "{}", run.stdout);
    let count = |row: &BTreeMap<String, String>, column: &str| -> u64 {
        row[column].parse().expect("a count")
    };
    let (held, free): (Vec<_>, Vec<_>) = rows.iter().partition(|row| count(row, "held") > 0);
    assert_eq!(held.len(), 1, "one shard held:\n{}", run.stdout);
    assert_eq!(
        count(held[0], "held"),
        1,
        "the fedex shipment is its shard's last"
    );
    for row in free.iter().chain(&held) {
        assert_eq!(
            count(row, "acked") + count(row, "dropped") + count(row, "held"),
            count(row, "records"),
            "every record of every shard settled but the one held:\n{}",
            run.stdout
        );
    }
    let total: u64 = rows.iter().map(|row| count(row, "records")).sum();
    assert_eq!(total, SHIPMENTS + 1, "{}", run.stdout);
    check_managed_instances_line(&run.stdout);
}
