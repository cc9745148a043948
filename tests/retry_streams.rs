//! Retry and dead-letter streams through the emulator (`docs/retry-streams.md`): the shipping
//! function mapped to `shipments` and to `shipments-retry`, publishing through the embedded
//! Kinesis served on loopback. A fedex shipment (a carrier the function does not know) goes to
//! the retry stream, is retried 3 times there and lands in `shipments-dlq`, while the shipments
//! behind it are booked in the first invocation; `kinesis-esm dlq` lists it, `dlq redrive` sends
//! it back to `shipments`. A publish the fault proxy fails holds the record: nothing is lost.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use end_to_end::aws::fault_proxy::{Fault, FaultProxy};
use end_to_end::run::sdk_client;
use end_to_end::{Observed, TestStream, config, kinesis_esm_binary, shard, shipment, within};
use kinesis_esm::config::StartingPosition;
use kinesis_esm::invoke::{InProcess, Invoker};
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::kinesis::http::{ServerHandle, serve};
use kinesis_esm::source::{IteratorPosition, Record, ShardSource};
use lambda_kinesis::retry::{Envelope, RetryPlan};

const PUT_RECORDS: &str = "Kinesis_20131202.PutRecords";

/// The shipping service's three streams in one embedded Kinesis, served on a free port.
struct Streams {
    shipments: TestStream,
    retry: TestStream,
    dead_letter: TestStream,
    server: ServerHandle,
}

impl Streams {
    async fn create() -> Self {
        let kinesis = EmbeddedKinesis::new();
        let shipments = TestStream::create_in(&kinesis, "shipments", 1);
        let retry = TestStream::create_in(&kinesis, "shipments-retry", 1);
        let dead_letter = TestStream::create_in(&kinesis, "shipments-dlq", 1);
        let any_port: SocketAddr = "127.0.0.1:0".parse().expect("an address");
        let server = serve(kinesis, any_port)
            .await
            .expect("serve the embedded Kinesis");
        Self {
            shipments,
            retry,
            dead_letter,
            server,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.server.local_addr())
    }
}

/// The shipping function with the template's retry streams (3 retries), publishing to
/// `endpoint`, in process.
fn function(endpoint: &str) -> Arc<dyn Invoker> {
    let template = |name: &str| match name {
        "RETRY_STREAM" => Some("shipments-retry".to_owned()),
        "MAX_RETRIES" => Some("3".to_owned()),
        "DEAD_LETTER_STREAM" => Some("shipments-dlq".to_owned()),
        _ => None,
    };
    let plan = RetryPlan::from_lookup(template).expect("the template's values");
    let adapter = shipping::function()
        .retry_plan(plan)
        .retry_client(sdk_client(endpoint));
    Arc::new(InProcess::service(adapter))
}

/// Every record of `stream`'s only shard.
async fn records(stream: &TestStream) -> Vec<Record> {
    let shard_id = stream.open_shards()[0].shard_id.clone();
    let iterator = stream
        .kinesis
        .shard_iterator(&stream.name, &shard_id, &IteratorPosition::TrimHorizon)
        .await
        .expect("an iterator");
    ShardSource::get_records(&stream.kinesis, &iterator, 1000)
        .await
        .expect("the records")
        .records
}

async fn envelopes(stream: &TestStream) -> Vec<Envelope> {
    records(stream)
        .await
        .iter()
        .map(|record| Envelope::from_slice(&record.data).expect("an envelope"))
        .collect()
}

/// A fedex shipment first, then five dhl shipments, on `shipments`.
fn put_shipments(streams: &Streams) -> String {
    let fedex = streams
        .shipments
        .put("shipment-1", shipment(1, "Keizersgracht 1", "fedex"))
        .sequence_number
        .to_string();
    for id in 2..=6 {
        streams
            .shipments
            .put(&format!("shipment-{id}"), shipment(id, "Damrak 2", "dhl"));
    }
    fedex
}

#[tokio::test]
async fn a_fedex_shipment_is_retried_three_times_then_dead_lettered_listed_and_redriven() {
    let streams = Streams::create().await;
    let fedex = put_shipments(&streams);
    let invoker = function(&streams.endpoint());
    let source = Observed::start(
        config("shipping", "shipments", StartingPosition::TrimHorizon),
        &streams.shipments,
        Arc::clone(&invoker),
    );
    let retries = Observed::start(
        config("shipping", "shipments-retry", StartingPosition::TrimHorizon),
        &streams.retry,
        invoker,
    );
    let source_shard = streams.shipments.open_shards()[0].shard_id.clone();
    let retry_shard = streams.retry.open_shards()[0].shard_id.clone();

    let status = source.wait_for_settled(&source_shard, 6).await;
    retries.wait_for_settled(&retry_shard, 3).await;
    within("the dead-letter record", async {
        while records(&streams.dead_letter).await.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    // The source shard moved on at once: one invocation, every shipment delivered once.
    let source_status = shard(&status, &source_shard);
    assert_eq!(
        (
            source_status.invocations,
            source_status.delivered,
            source_status.retries
        ),
        (1, 6, 0),
        "{source_status:#?}"
    );
    assert_eq!(source_status.held, None);
    // Three retries, attempts 1 to 3, each from the fedex shipment's place on `shipments`.
    let retried = envelopes(&streams.retry).await;
    assert_eq!(
        retried
            .iter()
            .map(|envelope| envelope.attempt)
            .collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    let dead = envelopes(&streams.dead_letter).await;
    assert_eq!(dead.len(), 1, "{dead:#?}");
    let dead = &dead[0];
    assert_eq!(dead.attempt, 3);
    assert_eq!(dead.reason, "the handler held it");
    assert_eq!(
        (
            dead.origin.stream.as_str(),
            dead.origin.shard_id.as_str(),
            dead.origin.sequence_number.as_str(),
            dead.origin.partition_key.as_str()
        ),
        (
            "shipments",
            source_shard.as_str(),
            fedex.as_str(),
            "shipment-1"
        )
    );
    assert_eq!(dead.data, shipment(1, "Keizersgracht 1", "fedex"));
    source.stop().await;
    retries.stop().await;

    // `kinesis-esm dlq` lists it, decoded. (The command runs as a process while this runtime's
    // one thread serves the embedded Kinesis: it is awaited, never waited for.)
    let binary = kinesis_esm_binary().await;
    let endpoint = streams.endpoint();
    let mut list = tokio::process::Command::new(binary);
    list.args(["dlq", "--stream", "shipments-dlq", "--endpoint", &endpoint])
        .kill_on_drop(true);
    let listed = within("kinesis-esm dlq", list.output())
        .await
        .expect("kinesis-esm dlq runs");
    let listed_text = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{listed:?}");
    let lines: Vec<&str> = listed_text.lines().collect();
    assert_eq!(lines.len(), 1, "{listed_text}");
    assert!(
        lines[0].contains(&format!(
            "from shipments {source_shard} {fedex}  key shipment-1  3 retries  the handler held it  data {{\"id\":1,"
        )),
        "{listed_text}"
    );

    // `kinesis-esm dlq redrive` sends it back to `shipments`, as its producer wrote it.
    let mut redrive = tokio::process::Command::new(binary);
    redrive
        .args([
            "dlq",
            "--stream",
            "shipments-dlq",
            "--endpoint",
            &endpoint,
            "redrive",
        ])
        .kill_on_drop(true);
    let redrive = within("kinesis-esm dlq redrive", redrive.output())
        .await
        .expect("kinesis-esm dlq redrive runs");
    assert!(redrive.status.success(), "{redrive:?}");
    let shipments = records(&streams.shipments).await;
    assert_eq!(shipments.len(), 7, "six put, one redriven");
    let redriven = &shipments[6];
    assert_eq!(&*redriven.partition_key, "shipment-1");
    assert_eq!(redriven.data, shipment(1, "Keizersgracht 1", "fedex"));
    assert!(
        String::from_utf8_lossy(&redrive.stdout).contains(&format!(
            "sent back to shipments {source_shard} {}",
            redriven.sequence_number
        )),
        "{redrive:?}"
    );
}

#[tokio::test]
async fn a_publish_that_fails_holds_the_shipment_and_loses_nothing() {
    let streams = Streams::create().await;
    let proxy = FaultProxy::start(&streams.endpoint()).await;
    // The publisher's five attempts at the first publish are throttled: the shipment is held.
    // Throttled as entries of answered requests, which the SDK does not retry itself (it
    // retries a throttled request, so that five such faults could be met in two attempts).
    for _ in 0..5 {
        proxy.inject(PUT_RECORDS, Fault::ThrottleEntries(vec![0]));
    }
    let fedex = put_shipments(&streams);
    let source = Observed::start(
        config("shipping", "shipments", StartingPosition::TrimHorizon),
        &streams.shipments,
        function(&proxy.endpoint()),
    );
    let source_shard = streams.shipments.open_shards()[0].shard_id.clone();

    let status = source.wait_for_settled(&source_shard, 6).await;

    assert_eq!(proxy.pending_faults(), 0, "every fault was met");
    let source_status = shard(&status, &source_shard);
    // Held (the dhl shipments behind it came again with it), then published once the faults
    // were used up. (How many deliveries that took depends on the machine's speed: the
    // invocation's deadline may stop it early.)
    assert!(source_status.invocations >= 2, "{source_status:#?}");
    assert_eq!(source_status.held, None, "{source_status:#?}");
    let retried = envelopes(&streams.retry).await;
    assert_eq!(retried.len(), 1, "published once: {retried:#?}");
    assert_eq!(retried[0].origin.sequence_number, fedex);
    assert_eq!(retried[0].attempt, 1);
    source.stop().await;
}
