//! Settling a 10,000-record event, from the event's JSON bytes in to the response's JSON bytes
//! out: through the adapter, and through the loop one would write by hand over
//! `aws_lambda_events`' `KinesisEvent`, in the same run.
//!
//! Run with `cargo bench -p lambda-kinesis`. Both paths read the bytes the way `lambda_runtime`
//! does (`serde_path_to_error` over `serde_json`), decode every record's data as a `Shipment`,
//! make the same decision without logging, stop at the same held record near the end, and
//! serialise the same response.

use std::hint::black_box;
use std::time::{Duration, Instant};

use aws_lambda_events::kinesis::KinesisEvent;
use aws_lambda_events::streams::KinesisEventResponse;
use lambda_kinesis::lambda_runtime::{Context, LambdaEvent};
use lambda_kinesis::wire::{BatchResponse, EventRecord, EventSource, KinesisBatch, write_event};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
use serde::{Deserialize, Serialize};

const RECORDS: usize = 10_000;
/// The record that is held, near the end, so that both responses name it.
const HELD: usize = 9_990;
const WARM_UP: usize = 5;
const ITERATIONS: usize = 60;

#[derive(Serialize, Deserialize)]
struct Shipment {
    id: u64,
    address: String,
    carrier: String,
}

fn decide(shipment: &Shipment) -> HandlerOutcome {
    if shipment.address.is_empty() {
        HandlerOutcome::drop()
    } else if shipment.carrier == "dhl" || shipment.carrier == "ups" {
        HandlerOutcome::ack()
    } else {
        HandlerOutcome::hold()
    }
}

async fn ship(shipment: &Shipment) -> HandlerOutcome {
    decide(shipment)
}

/// The event Lambda would send: 10,000 shipments of about 100 bytes each.
fn event_json() -> Vec<u8> {
    let records: Vec<(String, String, Vec<u8>)> = (0..RECORDS)
        .map(|index| {
            let shipment = Shipment {
                id: 1_000_000 + index as u64,
                address: format!(
                    "{} Harbour Road, Unit {}, Rotterdam 3011",
                    index % 997,
                    index % 13
                ),
                carrier: if index == HELD {
                    "fedex"
                } else {
                    ["dhl", "ups"][index % 2]
                }
                .to_owned(),
            };
            let sequence_number = format!(
                "49659105227831283741063251470458112{:021}",
                index * 6_553_600
            );
            let partition_key = format!("customer-{}", index % 64);
            let data = serde_json::to_vec(&shipment).expect("a shipment serialises");
            (sequence_number, partition_key, data)
        })
        .collect();
    let mut out = Vec::new();
    write_event(
        &mut out,
        &EventSource {
            stream_arn: "arn:aws:kinesis:eu-west-1:123456789012:stream/shipments",
            shard_id: "shardId-000000000000",
            region: "eu-west-1",
            invoke_identity_arn: "arn:aws:iam::123456789012:role/shipping-role",
        },
        records
            .iter()
            .enumerate()
            .map(
                |(index, (sequence_number, partition_key, data))| EventRecord {
                    sequence_number,
                    partition_key,
                    data,
                    approximate_arrival_millis: 1_767_225_600_000 + index as i64,
                },
            ),
    );
    out
}

/// Reads the payload as `lambda_runtime` does.
fn read<T: for<'de> Deserialize<'de>>(json: &[u8]) -> T {
    let deserializer = &mut serde_json::Deserializer::from_slice(json);
    serde_path_to_error::deserialize(deserializer).expect("the event is readable")
}

fn through_the_adapter<S>(
    service: &mut S,
    runtime: &tokio::runtime::Runtime,
    json: &[u8],
) -> Vec<u8>
where
    S: lambda_kinesis::tower::Service<LambdaEvent<KinesisBatch>, Response = BatchResponse>,
    S::Error: std::fmt::Debug,
{
    let batch: KinesisBatch = read(json);
    let response = runtime
        .block_on(async {
            std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
            service
                .call(LambdaEvent::new(batch, Context::default()))
                .await
        })
        .expect("the adapter answers");
    serde_json::to_vec(&response).expect("the response serialises")
}

fn by_hand(json: &[u8]) -> Vec<u8> {
    let event: KinesisEvent = read(json);
    let mut response = KinesisEventResponse::default();
    for record in &event.records {
        let Ok(shipment) = serde_json::from_slice::<Shipment>(&record.kinesis.data) else {
            continue; // undecodable: dropped, as the adapter does by default
        };
        if decide(&shipment) == HandlerOutcome::Hold {
            response.add_failure(record.kinesis.sequence_number.clone());
            break;
        }
    }
    serde_json::to_vec(&response).expect("the response serialises")
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn main() {
    let json = event_json();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime starts");
    let mut adapter = KinesisAdapter::new(ship);

    let from_adapter = through_the_adapter(&mut adapter, &runtime, &json);
    let from_hand = by_hand(&json);
    assert_eq!(
        String::from_utf8_lossy(&from_adapter),
        String::from_utf8_lossy(&from_hand),
        "both paths give the same response"
    );
    assert!(from_adapter.starts_with(br#"{"batchItemFailures":[{"itemIdentifier":"#));

    for _ in 0..WARM_UP {
        black_box(through_the_adapter(
            &mut adapter,
            &runtime,
            black_box(&json),
        ));
        black_box(by_hand(black_box(&json)));
    }
    // The two paths alternate, so that whatever else the machine does weighs on both alike.
    let mut adapter_times = Vec::with_capacity(ITERATIONS);
    let mut hand_times = Vec::with_capacity(ITERATIONS);
    for _ in 0..ITERATIONS {
        let started = Instant::now();
        black_box(through_the_adapter(
            &mut adapter,
            &runtime,
            black_box(&json),
        ));
        adapter_times.push(started.elapsed());
        let started = Instant::now();
        black_box(by_hand(black_box(&json)));
        hand_times.push(started.elapsed());
    }

    let adapter = median(adapter_times);
    let hand = median(hand_times);
    let per_record = |time: Duration| time.as_nanos() as f64 / RECORDS as f64;
    println!(
        "settle {RECORDS} records ({} bytes of event JSON), median of {ITERATIONS} runs after {WARM_UP} warm-up runs:",
        json.len()
    );
    println!(
        "  adapter (KinesisBatch + tower::Service):  {:>8.3} ms  ({:.0} ns/record)",
        adapter.as_secs_f64() * 1e3,
        per_record(adapter)
    );
    println!(
        "  by hand (aws_lambda_events KinesisEvent): {:>8.3} ms  ({:.0} ns/record)",
        hand.as_secs_f64() * 1e3,
        per_record(hand)
    );
    println!(
        "  the adapter is {:.2}x as fast",
        hand.as_secs_f64() / adapter.as_secs_f64()
    );
}
