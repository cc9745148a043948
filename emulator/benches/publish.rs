//! `lambda_kinesis::publish::Publisher` against the embedded Kinesis served on loopback (one
//! function instance: one publisher, one `publish` call at a time), against raw `PutRecords` of
//! the same records through the same SDK client, in the same run.
//!
//! Workload: 5,000 shipments of about 100 bytes of JSON, each under its own partition key, to a
//! stream of 4 shards. The baseline sends them pre-serialized in requests of 500 entries; the
//! publisher serializes them, cuts its own requests (500 records, 5 MiB, one record per key) and
//! checks each entry's answer. The rounds alternate baseline and publisher (each goes first in
//! every other round), so that a change of the machine's load falls on both; it prints the median wall time of each, records per second
//! and the ratio publisher / baseline (1.0: the publisher costs nothing over the raw calls).
//! Wall time, not thread CPU time: the work is split between the client's and the server's
//! threads.
//!
//! Run with `cargo bench -p kinesis-esm --bench publish`.

use std::time::{Duration, Instant};

use aws_sdk_kinesis::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::PutRecordsRequestEntry;
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::kinesis::http;
use lambda_kinesis::publish::Publisher;
use serde::Serialize;
use support::median;

mod support;

const RECORDS: usize = 5_000;
const REQUEST: usize = 500;
const ROUNDS: usize = 9;
const STREAM: &str = "bench";

#[derive(Serialize)]
struct Shipment {
    id: u64,
    address: String,
    carrier: &'static str,
}

fn main() {
    let runtime = support::runtime();
    runtime.block_on(async {
        let kinesis = EmbeddedKinesis::new();
        kinesis.create_stream(STREAM, 4).expect("the stream");
        let server = http::serve(kinesis, "127.0.0.1:0".parse().expect("an address"))
            .await
            .expect("the endpoint starts");
        let config = aws_sdk_kinesis::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(server.endpoint_url())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("bench", "bench", None, None, "bench"))
            .build();
        let client = aws_sdk_kinesis::Client::from_conf(config);
        let shipments: Vec<Shipment> = (0..RECORDS as u64)
            .map(|id| Shipment {
                id,
                address: format!("Keizersgracht {id}, 1015 Amsterdam, the Netherlands"),
                carrier: "dhl",
            })
            .collect();
        let keyed: Vec<(String, &Shipment)> = shipments
            .iter()
            .map(|shipment| (format!("shipment-{}", shipment.id), shipment))
            .collect();
        let publisher = Publisher::with_client(client.clone(), STREAM);

        let mut baseline = Vec::new();
        let mut published = Vec::new();
        for round in 0..=ROUNDS {
            let raw_put = async {
                let started = Instant::now();
                raw_put_records(&client, &keyed).await;
                started.elapsed()
            };
            let publish = async {
                let started = Instant::now();
                let report = publisher
                    .publish(keyed.iter().map(|(key, shipment)| (key.clone(), *shipment)))
                    .await;
                assert!(report.is_complete(), "{:?}", report.unpublished().first());
                started.elapsed()
            };
            // Each goes first in every other round: the stream grows as the rounds go, and
            // neither should always meet the longer one.
            let (raw, ours) = if round % 2 == 0 {
                let raw = raw_put.await;
                (raw, publish.await)
            } else {
                let ours = publish.await;
                (raw_put.await, ours)
            };
            // Round 0 warms the connections and the stream up.
            if round > 0 {
                baseline.push(raw);
                published.push(ours);
            }
        }
        let raw = median(baseline);
        let ours = median(published);
        let per_second = |time: Duration| RECORDS as f64 / time.as_secs_f64();
        println!(
            "workload: {RECORDS} records of ~100 bytes, one partition key each, 4 shards; \
             median of {ROUNDS} rounds (wall time)"
        );
        println!(
            "raw PutRecords (baseline)  {:>9.1} ms  {:>9.0} records/s",
            raw.as_secs_f64() * 1e3,
            per_second(raw)
        );
        println!(
            "Publisher::publish          {:>9.1} ms  {:>9.0} records/s",
            ours.as_secs_f64() * 1e3,
            per_second(ours)
        );
        println!(
            "ratio publisher / baseline  {:.2}",
            ours.as_secs_f64() / raw.as_secs_f64()
        );
    });
}

/// The same records, serialized, in requests of [`REQUEST`] entries, one at a time.
async fn raw_put_records(client: &aws_sdk_kinesis::Client, keyed: &[(String, &Shipment)]) {
    for chunk in keyed.chunks(REQUEST) {
        let entries = chunk
            .iter()
            .map(|(key, shipment)| {
                PutRecordsRequestEntry::builder()
                    .partition_key(key)
                    .data(Blob::new(serde_json::to_vec(shipment).expect("JSON")))
                    .build()
                    .expect("data and key are set")
            })
            .collect();
        support::put_entries(client, STREAM, entries).await;
    }
}
