//! Lambda's event source mapping metrics end to end (`docs/event-source-mapping.md`, "Metrics"): a
//! template with `MetricsConfig: {Metrics: [EventCount]}`, the shipping function in process over
//! the embedded Kinesis, and `/metrics` scraped over HTTP as Prometheus scrapes it. The numbers
//! must be what the run did: what was published, filtered, delivered and discarded.
//!
//! NOT YET REGISTERED in `main.rs` (`mod metrics;`): written at the end of a session whose machine
//! was too loaded to compile it; add the line once `cargo test -p end-to-end --test end_to_end --
//! metrics` has been seen to pass.

use std::collections::BTreeMap;
use std::sync::Arc;

use end_to_end::{Observed, TestStream, at, one_shard_mapping, shipment};
use kinesis_esm::config::MappingConfig;
use kinesis_esm::endpoint::{SideDocument, serve_with};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::metrics_report::{METRICS_PATH, PROMETHEUS_CONTENT_TYPE, prometheus};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const SHARD: &str = "shardId-000000000000";

/// The only mapping of a one-shard template on `stream`, with `MetricsConfig` and `properties`
/// (lines of the event's properties, indented as they are).
fn mapping_with_metrics(stream: &str, properties: &str) -> MappingConfig {
    one_shard_mapping(
        stream,
        &format!(
            "            BatchSize: 10
            FunctionResponseTypes: [ReportBatchItemFailures]
            MetricsConfig:
              Metrics: [EventCount]
{properties}"
        ),
    )
}

/// Serves the mapping's metrics at `/metrics` beside the Kinesis API, as `kinesis-esm run`
/// does, scrapes them once over HTTP and returns each sample by name and labels.
async fn scrape(observed: &Observed, stream: &TestStream) -> BTreeMap<String, u64> {
    let status = observed.mapping.status_receiver();
    let document = SideDocument::new(METRICS_PATH, PROMETHEUS_CONTENT_TYPE, move || {
        prometheus(&[status.borrow().clone()]).into_bytes()
    });
    let server = serve_with(
        stream.kinesis.clone(),
        "127.0.0.1:0".parse().unwrap(),
        vec![document],
    )
    .await
    .expect("the endpoint listens");
    let mut connection = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .expect("the endpoint accepts");
    connection
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    connection.read_to_string(&mut response).await.unwrap();
    server.stop().await;
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("content-type: {PROMETHEUS_CONTENT_TYPE}")),
        "{head}"
    );
    body.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (sample, value) = line.rsplit_once(' ').expect("a sample and its value");
            (sample.to_owned(), value.parse().expect("a whole number"))
        })
        .collect()
}

/// The value of the mapping counter `name` among `samples`.
fn counter(samples: &BTreeMap<String, u64>, stream: &str, name: &str) -> u64 {
    let key = format!(
        "kinesis_esm_{name}_event_count_total{{function=\"ShippingFunction\",stream=\"{stream}\"}}"
    );
    *samples
        .get(&key)
        .unwrap_or_else(|| panic!("no sample {key} in {samples:#?}"))
}

/// The six event counts, in the order Lambda's documentation lists them.
fn event_counts(samples: &BTreeMap<String, u64>, stream: &str) -> [u64; 6] {
    [
        "polled",
        "filtered_out",
        "invoked",
        "failed_invoke",
        "dropped",
        "on_failure_destination_delivered",
    ]
    .map(|name| counter(samples, stream, name))
}

#[tokio::test]
async fn metrics_count_what_was_polled_filtered_and_invoked() {
    let stream = TestStream::create("metrics-filter", 1);
    let config = mapping_with_metrics(
        &stream.name,
        r#"            FilterCriteria:
              Filters:
                - Pattern: '{"data": {"carrier": [{"anything-but": ["ups"]}]}}'
"#,
    );
    let mut last = None;
    for id in 0..10_u64 {
        let carrier = if matches!(id, 3 | 7) { "ups" } else { "dhl" };
        last = Some(
            stream
                .put(&format!("order-{id}"), shipment(id, "1 Main St", carrier))
                .sequence_number,
        );
    }
    let observed = Observed::start(
        config,
        &stream,
        Arc::new(InProcess::service(shipping::function())),
    );
    observed
        .wait_for_checkpoint(SHARD, &at(&last.expect("records were put")))
        .await;
    let status = observed
        .wait_for("the shard to be caught up", |status| status.is_idle())
        .await;
    let samples = scrape(&observed, &stream).await;
    assert_eq!(
        event_counts(&samples, &stream.name),
        [10, 2, 8, 0, 0, 0],
        "polled, filtered out, invoked, failed, dropped, delivered to the destination"
    );
    // What the status counted independently of the metrics agrees.
    let totals = status.totals();
    assert_eq!((totals.delivered, totals.filtered), (8, 2));
    // The shard's IteratorAge is served, and is the status' own.
    let age_key = format!(
        "kinesis_esm_iterator_age_milliseconds{{function=\"ShippingFunction\",stream=\"{}\",shard=\"{SHARD}\"}}",
        stream.name
    );
    let shard_age = status.shards[SHARD].metrics.iterator_age_millis;
    assert_eq!(samples.get(&age_key).copied(), shard_age, "{samples:#?}");
    assert!(shard_age.is_some());
    observed.stop().await;
}

/// A held shipment behind three good ones, no retries: the function is invoked with all four
/// (a partial response naming the held one), then with the held one alone, which is then
/// discarded: sent to the destination when there is one, dropped otherwise.
async fn check_discard(name: &str, destination: bool) {
    let stream = TestStream::create(name, 1);
    let mut properties = "            MaximumRetryAttempts: 0\n".to_owned();
    if destination {
        properties.push_str(
            "            DestinationConfig: {OnFailure: {Destination: 'arn:aws:sqs:us-east-1:123456789012:failures'}}\n",
        );
    }
    let config = mapping_with_metrics(&stream.name, &properties);
    for id in 0..3_u64 {
        stream.put(&format!("order-{id}"), shipment(id, "1 Main St", "dhl"));
    }
    // A carrier the function does not know: it holds the shipment.
    let held = stream
        .put("order-3", shipment(3, "1 Main St", "fedex"))
        .sequence_number;
    let observed = Observed::start(
        config,
        &stream,
        Arc::new(InProcess::service(shipping::function())),
    );
    observed.wait_for_checkpoint(SHARD, &at(&held)).await;
    let status = observed
        .wait_for("the held batch to be discarded", |status| {
            status.totals().discarded == 1 && status.is_idle()
        })
        .await;
    let samples = scrape(&observed, &stream).await;
    let (dropped, delivered) = if destination { (0, 1) } else { (1, 0) };
    assert_eq!(
        event_counts(&samples, &stream.name),
        [4, 0, 5, 5, dropped, delivered],
        "polled, filtered out, invoked, failed, dropped, delivered to the destination"
    );
    assert_eq!(status.totals().invocations, 2);
    observed.stop().await;
}

end_to_end::scenario_tests! {
    check_discard {
        a_discarded_batch_counts_as_delivered_to_the_destination("metrics-destination", true),
        a_discarded_batch_without_a_destination_counts_as_dropped("metrics-dropped", false),
    }
}
