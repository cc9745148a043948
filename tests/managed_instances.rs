//! Lambda Managed Instances end to end: a template's capacity provider read by the template
//! reader, a function written on `lambda_runtime::run_concurrent` (the `concurrent-sleeper`
//! fixture) run through the Runtime API with `PerExecutionEnvironmentMaxConcurrency`, over a
//! stream of four shards. Fewer environments start than batches run at once, one environment
//! serves several invocations at once, and every record is delivered once, in order per shard
//! (`docs/managed-instances.md`).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use end_to_end::{Observed, TestStream, at, concurrent_sleeper_bootstrap, shard};
use kinesis_esm::invoke::runtime_api::{FunctionDefinition, RuntimeApi};
use kinesis_esm::invoke::{Invocation, InvokeError, InvokeOutcome, Invoker};
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

#[tokio::test]
async fn shards_share_environments_each_serving_several_batches_at_once_in_order() {
    let stream = TestStream::create("managed-instances", SHARDS);
    let template = template(&stream.name);
    let function = &template.functions[0];
    let managed = function
        .managed_instances
        .as_ref()
        .expect("the function is on Managed Instances");
    let mut last: BTreeMap<String, SequenceNumber> = BTreeMap::new();
    for id in 0..RECORDS {
        let put = stream.put(&format!("key-{id}"), format!("{{\"id\":{id}}}"));
        last.insert(put.shard_id.to_string(), put.sequence_number);
    }
    assert_eq!(last.len(), SHARDS as usize, "every shard got records");

    let mut definition =
        FunctionDefinition::new("SleeperFunction", concurrent_sleeper_bootstrap().await);
    definition.timeout = Duration::from_secs(10);
    definition
        .environment
        .insert("SLEEP_MS".to_owned(), "300".to_owned());
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
    let mut acked = 0;
    for (shard_id, sequence) in &last {
        let status = observed.wait_for_checkpoint(shard_id, &at(sequence)).await;
        acked = status.shards.values().map(|shard| shard.acked).sum::<u64>();
        assert!(shard(&status, shard_id).acked > 0);
    }
    observed.stop().await;
    api.shutdown().await;

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
