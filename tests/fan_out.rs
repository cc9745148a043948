//! `kinesis-esm run` with a template whose event reads through an enhanced fan-out consumer
//! (`tests/templates/cli/shipping-fan-out.yaml`): the run registers the declared consumer, and
//! its records are pushed by `SubscribeToShard` to the same batching, retries, checkpoints and
//! shard order as polling. Over the embedded Kinesis (subscribed in process), and over
//! `--kinesis-endpoint` against `kinesis-esm serve` (subscribed through `aws-sdk-kinesis`).
//! And, with the mapping as a library, a reader whose lease is stolen closes its subscription.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use end_to_end::run::{KinesisEsm, statuses};
use end_to_end::shipping_bootstrap;
use kinesis_esm::aws::SdkKinesis;
use kinesis_esm::config::StartingPosition;
use kinesis_esm::invoke::InProcess;
use kinesis_esm::kinesis::{EmbeddedKinesis, PutRecordsEntry};
use kinesis_esm::lease::Checkpoint;
use kinesis_esm::lease::{LeaseStore as _, MemoryLeaseStore};
use kinesis_esm::mapping::{EventSourceMapping, MappingOptions};
use kinesis_esm::mapping::{MappingStatus, ShardPhase};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::fan_out::{FanOutSource, ShardEvent, ShardSubscriber, Subscription};
use kinesis_esm::source::{IteratorPosition, SourceError};
use tokio::process::Child;

/// How long a state the test waits for may take.
const TIMEOUT: Duration = Duration::from_secs(60);

const TEMPLATE: &str = "tests/templates/cli/shipping-fan-out.yaml";
const PARENT: &str = "shardId-000000000000";

/// Starts `kinesis-esm <args>` and returns it with the URL it says it serves at (`marker`
/// precedes the URL on its standard error).
async fn start(command: KinesisEsm, marker: &str) -> (Child, String) {
    command.log("warn").timeout(TIMEOUT).serving(marker).await
}

/// `kinesis-esm run` of [`TEMPLATE`], retrying a held record after 300 ms.
fn run_fan_out_template() -> KinesisEsm {
    KinesisEsm::run(TEMPLATE).args(["--retry-pause", "300ms", "--max-retry-pause", "300ms"])
}

/// The run's one mapping's status, asked until it satisfies `condition`.
async fn wait_for(
    status_url: &str,
    what: &str,
    condition: impl Fn(&MappingStatus) -> bool,
) -> MappingStatus {
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = statuses(status_url)
            .await
            .into_iter()
            .next()
            .filter(|status| condition(status))
        {
            return status;
        }
        assert!(started.elapsed() < TIMEOUT, "never {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn shipment(id: u64, carrier: &str) -> Vec<u8> {
    format!(r#"{{"id":{id},"address":"Keizersgracht {id}, Amsterdam","carrier":"{carrier}"}}"#)
        .into_bytes()
}

async fn put(kinesis: &SdkKinesis, id: u64, carrier: &str) -> SequenceNumber {
    kinesis
        .put_record("shipments", "customer-17", shipment(id, carrier))
        .await
        .expect("the record is put")
        .1
}

/// Drives one run: a held shipment retried then given up, the checkpoint after each settled
/// record, a split whose children are read only after the parent's end.
async fn held_retried_checkpointed_and_split(kinesis: &SdkKinesis, status_url: &str) {
    let booked = put(kinesis, 1, "dhl").await;
    let held = put(kinesis, 2, "fedex").await;
    let after = put(kinesis, 3, "ups").await;

    // The fedex shipment is held: its shard waits in front of it, checkpointed at dhl.
    let status = wait_for(status_url, "held at the fedex shipment", |status| {
        status.shards.get(PARENT).is_some_and(|shard| {
            shard
                .held
                .as_ref()
                .is_some_and(|record| record.sequence_number == held)
        })
    })
    .await;
    assert_eq!(
        status.shards[PARENT].checkpoint,
        Some(Checkpoint::SequenceNumber(booked))
    );
    // Retried twice, then given up: the ups shipment behind it is booked.
    let status = wait_for(status_url, "past the fedex shipment", |status| {
        status.shards.get(PARENT).is_some_and(|shard| {
            shard.checkpoint == Some(Checkpoint::SequenceNumber(after.clone()))
        })
    })
    .await;
    let parent = &status.shards[PARENT];
    // The batch retried from fedex is given up whole: ups with it, if it came in that batch.
    assert!(parent.acked >= 1 && parent.discarded >= 1, "{parent:#?}");
    assert_eq!(parent.acked + parent.discarded, 3, "{parent:#?}");
    assert_eq!(parent.retries, 2, "{parent:#?}");

    // A split: the parent ends, then its children deliver what was put after it.
    kinesis
        .split_shard("shipments", PARENT, 1_u128 << 127)
        .await
        .expect("the shard splits");
    for id in 4..8 {
        put(kinesis, id, "dhl").await;
    }
    let status = wait_for(status_url, "the children read", |status| {
        status.shards.len() == 3
            && status
                .shards
                .values()
                .filter(|shard| shard.shard_id != PARENT)
                .map(|shard| shard.acked)
                .sum::<u64>()
                == 4
    })
    .await;
    let parent = &status.shards[PARENT];
    assert_eq!(parent.phase, ShardPhase::Ended, "{status:#?}");
    assert_eq!(parent.checkpoint, Some(Checkpoint::ShardEnd));
}

/// Interrupts a process as Ctrl-C does and returns its standard output.
async fn interrupt(child: Child) -> String {
    end_to_end::run::interrupt(child, TIMEOUT).await.1
}

/// The consumers of the stream, as `ListStreamConsumers` names them, once there is one (the
/// run registers them after building the function).
async fn consumers(kinesis: &SdkKinesis) -> Vec<String> {
    let started = std::time::Instant::now();
    loop {
        let names = list_consumers(kinesis).await;
        if !names.is_empty() || started.elapsed() > TIMEOUT {
            return names;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn list_consumers(kinesis: &SdkKinesis) -> Vec<String> {
    let arn = kinesis
        .client()
        .describe_stream_summary()
        .stream_name("shipments")
        .send()
        .await
        .unwrap()
        .stream_description_summary
        .unwrap()
        .stream_arn;
    kinesis
        .client()
        .list_stream_consumers()
        .stream_arn(arn)
        .send()
        .await
        .unwrap()
        .consumers
        .unwrap_or_default()
        .into_iter()
        .map(|consumer| consumer.consumer_name)
        .collect()
}

#[tokio::test]
async fn a_mapping_reads_the_embedded_kinesis_through_its_declared_consumer() {
    shipping_bootstrap().await;
    let (run, url) = start(run_fan_out_template(), "Kinesis API at ").await;
    let kinesis = SdkKinesis::new(Some(&url), "us-east-1").await.unwrap();
    // The run registered the template's consumer on its endpoint.
    assert_eq!(consumers(&kinesis).await, vec!["shipping-reader"]);
    held_retried_checkpointed_and_split(&kinesis, &url).await;
    let summary = interrupt(run).await;
    assert!(summary.contains("shipments"), "{summary}");
}

#[tokio::test]
async fn a_mapping_reads_another_kinesis_through_its_consumer_with_the_sdk() {
    shipping_bootstrap().await;
    let serve = KinesisEsm::new([
        "serve",
        "--stream",
        "shipments:1",
        "--listen",
        "127.0.0.1:0",
    ]);
    let (serve, kinesis_url) = start(serve, "Kinesis API at ").await;
    let run = run_fan_out_template().args(["--kinesis-endpoint", &kinesis_url]);
    let (run, status_url) = start(run, "status at ").await;
    let kinesis = SdkKinesis::new(Some(&kinesis_url), "us-east-1")
        .await
        .unwrap();
    assert_eq!(consumers(&kinesis).await, vec!["shipping-reader"]);
    held_retried_checkpointed_and_split(&kinesis, &status_url).await;
    interrupt(run).await;
    interrupt(serve).await;
}

/// Counts the subscriptions made through the embedded Kinesis' own subscriber that are still
/// open (made and not dropped).
struct Counting {
    inner: kinesis_esm::kinesis::http::LocalFanOut,
    open: Arc<AtomicUsize>,
}

struct Counted {
    inner: Box<dyn Subscription>,
    open: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl Subscription for Counted {
    async fn next_event(&mut self) -> Result<Option<ShardEvent>, SourceError> {
        self.inner.next_event().await
    }
}

#[async_trait::async_trait]
impl ShardSubscriber for Counting {
    async fn subscribe(
        &self,
        consumer_arn: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<Box<dyn Subscription>, SourceError> {
        let inner = self
            .inner
            .subscribe(consumer_arn, shard_id, position)
            .await?;
        self.open.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(Counted {
            inner,
            open: Arc::clone(&self.open),
        }))
    }
}

#[tokio::test]
async fn a_reader_whose_lease_is_stolen_closes_its_subscription() {
    let kinesis = EmbeddedKinesis::new();
    kinesis.create_stream("stolen", 1).unwrap();
    let local = kinesis_esm::kinesis::http::LocalFanOut::new(kinesis.clone());
    let arn = local.ensure_consumer("stolen", "reader").await.unwrap();
    let open = Arc::new(AtomicUsize::new(0));
    let source = FanOutSource::new(
        Arc::new(kinesis.clone()),
        Arc::new(Counting {
            inner: local,
            open: Arc::clone(&open),
        }),
        arn,
    );
    let leases = Arc::new(MemoryLeaseStore::new());
    let mapping = EventSourceMapping::new(
        end_to_end::config("shipping", "stolen", StartingPosition::TrimHorizon),
        Arc::new(source),
        Arc::new(InProcess::service(shipping::function())),
    )
    .lease_store(Arc::clone(&leases) as _)
    // The thief never renews: the lease stays its own for 15 s, a renewal period (5 s) after
    // the steal is when the reader finds out.
    .options(MappingOptions {
        failover_time: Duration::from_secs(15),
        ..end_to_end::fast_options()
    })
    .start();
    kinesis
        .put_record(
            "stolen",
            PutRecordsEntry::new("k", end_to_end::shipment(1, "1 Quay Street", "dhl")),
        )
        .unwrap();
    tokio::time::timeout(
        TIMEOUT,
        mapping.wait_for(|status| status.totals().acked == 1),
    )
    .await
    .expect("the shipment is booked");
    assert_eq!(open.load(Ordering::SeqCst), 1, "one subscription, reading");

    let lease = leases.list_leases().await.unwrap().remove(0);
    leases.take_lease(&lease, "another-worker").await.unwrap();
    // The reader finds out at its next lease write (a renewal) and stops; its subscription
    // must close then, not stream on to nobody.
    let started = std::time::Instant::now();
    while open.load(Ordering::SeqCst) != 0 {
        assert!(
            started.elapsed() < TIMEOUT,
            "the subscription of a stolen shard is still open: {:#?}",
            mapping.status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    mapping.stop().await;
}
