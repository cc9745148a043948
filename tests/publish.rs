//! `lambda_kinesis::publish::Publisher` against the embedded Kinesis and kinesis-local, with
//! partial `PutRecords` failures injected by the fault proxy: only the throttled entries go
//! again, each partition key's records land in the order given, nothing is published twice, and
//! what cannot be published is reported.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use end_to_end::aws::fault_proxy::{Fault, FaultProxy};
use end_to_end::aws::{LocalAws, kinesis_endpoint, within};
use end_to_end::run::{read_every_shard, sdk_client};
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::kinesis::http::{ServerHandle, serve};
use lambda_kinesis::publish::Publisher;
use serde::{Deserialize, Serialize};

const PUT_RECORDS: &str = "Kinesis_20131202.PutRecords";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Booking {
    customer: String,
    n: u32,
}

/// The embedded Kinesis served on a free loopback port, with a stream of `shards` shards.
async fn embedded(stream: &str, shards: u32) -> ServerHandle {
    let kinesis = EmbeddedKinesis::new();
    kinesis
        .create_stream(stream, shards)
        .expect("create the stream");
    let any_port: SocketAddr = "127.0.0.1:0".parse().expect("an address");
    serve(kinesis, any_port)
        .await
        .expect("serve the embedded Kinesis")
}

/// Every record of `stream`, decoded, grouped by partition key in stream order.
async fn read_back(
    client: &aws_sdk_kinesis::Client,
    stream: &str,
) -> BTreeMap<String, Vec<Booking>> {
    let mut by_key: BTreeMap<String, Vec<Booking>> = BTreeMap::new();
    for record in read_every_shard(client, stream).await {
        let booking: Booking = serde_json::from_slice(record.data().as_ref()).expect("a booking");
        by_key
            .entry(record.partition_key().unwrap_or_default().to_owned())
            .or_default()
            .push(booking);
    }
    by_key
}

/// Three customers' bookings, interleaved: customer `c0` 0..count, `c1` 0..count, ...
fn bookings(customers: u32, count: u32) -> Vec<Booking> {
    (0..count)
        .flat_map(|n| {
            (0..customers).map(move |c| Booking {
                customer: format!("c{c}"),
                n,
            })
        })
        .collect()
}

fn keyed(bookings: &[Booking]) -> Vec<(String, &Booking)> {
    bookings
        .iter()
        .map(|booking| (booking.customer.clone(), booking))
        .collect()
}

/// The throttled entries alone go again, order per key is kept, nothing is published twice.
async fn partial_failures_are_sent_again_in_key_order(endpoint: &str, stream: &str) {
    let proxy = FaultProxy::start(endpoint).await;
    // The first request carries the first booking of c0, c1, c2: c0's and c2's are throttled.
    proxy.inject(PUT_RECORDS, Fault::ThrottleEntries(vec![0, 2]));
    // A later request is throttled whole.
    proxy.inject(PUT_RECORDS, Fault::throttled());
    let publisher = Publisher::with_client(sdk_client(&proxy.endpoint()), stream)
        .backoff(Duration::from_millis(10), Duration::from_millis(50));
    let sent = bookings(3, 4);

    let report = within("publishing", publisher.publish(keyed(&sent))).await;

    assert!(
        report.is_complete(),
        "unpublished: {:?}",
        report.unpublished()
    );
    assert_eq!(report.published().len(), sent.len());
    assert_eq!(proxy.pending_faults(), 0, "both faults were hit");
    // One booking per key per request: c0 and c2 send their first booking three times (throttled
    // in the first request, the second throttled whole), then one booking per request: 2 + 4.
    // c1's second booking went in the second request, and its last in the fifth.
    assert_eq!(proxy.calls(PUT_RECORDS).len(), 2 + 4);
    let landed = read_back(&sdk_client(endpoint), stream).await;
    for customer in ["c0", "c1", "c2"] {
        let expected: Vec<Booking> = sent
            .iter()
            .filter(|booking| booking.customer == customer)
            .cloned()
            .collect();
        assert_eq!(
            landed[customer], expected,
            "{customer}'s bookings, in order, once"
        );
    }
}

#[tokio::test]
async fn publisher_sends_the_throttled_entries_again_in_key_order_over_the_embedded_kinesis() {
    let stream = "bookings";
    let server = embedded(stream, 2).await;
    let endpoint = format!("http://{}", server.local_addr());
    partial_failures_are_sent_again_in_key_order(&endpoint, stream).await;
}

#[tokio::test]
async fn aws_publisher_sends_the_throttled_entries_again_in_key_order_over_kinesis_local() {
    let endpoint = kinesis_endpoint();
    // Created and waited for until active.
    let stream = LocalAws::connect().await.create_stream("bookings", 2).await;
    partial_failures_are_sent_again_in_key_order(&endpoint, &stream).await;
}

#[tokio::test]
async fn publisher_reports_a_record_throttled_every_time_and_leaves_its_key_unsent_behind_it() {
    let stream = "bookings";
    let server = embedded(stream, 1).await;
    let endpoint = format!("http://{}", server.local_addr());
    let proxy = FaultProxy::start(&endpoint).await;
    for _ in 0..3 {
        proxy.inject(PUT_RECORDS, Fault::ThrottleEntries(vec![0]));
    }
    let publisher = Publisher::with_client(sdk_client(&proxy.endpoint()), stream)
        .max_attempts(3)
        .backoff(Duration::from_millis(1), Duration::from_millis(5));
    let sent = bookings(2, 2);

    let report = within("publishing", publisher.publish(keyed(&sent))).await;

    let unpublished: Vec<String> = report
        .unpublished()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        unpublished,
        vec![
            "record 0 (partition key \"c0\") was not published to stream bookings: \
             ProvisionedThroughputExceededException after 3 tries: Rate exceeded for shard (injected)",
            "record 2 (partition key \"c0\") was not published to stream bookings: not sent, \
             since record 0 of the same partition key was not published (its order is kept)",
        ]
    );
    let landed = read_back(&sdk_client(&endpoint), stream).await;
    assert_eq!(landed.keys().collect::<Vec<_>>(), vec!["c1"]);
    assert_eq!(landed["c1"].len(), 2);
}

#[tokio::test]
async fn publisher_reports_a_missing_stream_after_one_try() {
    let server = embedded("bookings", 1).await;
    let endpoint = format!("http://{}", server.local_addr());
    let publisher: Publisher<Booking> =
        Publisher::with_client(sdk_client(&endpoint), "no-such-stream");
    let booking = Booking {
        customer: "c0".into(),
        n: 0,
    };

    let failure = within("publishing", publisher.publish_one("c0", &booking))
        .await
        .expect_err("no such stream");

    assert_eq!(failure.error_code(), Some("ResourceNotFoundException"));
    assert_eq!(failure.attempts(), 1);
    assert!(
        failure.to_string().starts_with(
            "record 0 (partition key \"c0\") was not published to stream no-such-stream: \
             ResourceNotFoundException after 1 try: "
        ),
        "{failure}"
    );
}

/// A stream raised to 10 MiB records takes a 2 MiB value from a publisher told so
/// (`max_record_size_kib`); a publisher left at the default 1 MiB reports the value unpublished
/// without sending it.
#[tokio::test]
async fn publisher_takes_records_up_to_the_limit_it_is_given() {
    let kinesis = EmbeddedKinesis::new();
    kinesis
        .create_stream("large", 1)
        .expect("create the stream");
    kinesis
        .update_max_record_size("large", 10240)
        .expect("raise the stream's record size");
    let any_port: SocketAddr = "127.0.0.1:0".parse().expect("an address");
    let server = serve(kinesis.clone(), any_port)
        .await
        .expect("serve the embedded Kinesis");
    let endpoint = format!("http://{}", server.local_addr());
    let booking = Booking {
        customer: "c".repeat(2 * 1024 * 1024),
        n: 0,
    };

    let default: Publisher<Booking> = Publisher::with_client(sdk_client(&endpoint), "large");
    let refused = within("publishing", default.publish_one("c0", &booking))
        .await
        .expect_err("over the default 1 MiB");
    assert_eq!(refused.attempts(), 0, "{refused}");

    let raised = default.clone().max_record_size_kib(10240);
    within("publishing", raised.publish_one("c0", &booking))
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
}
