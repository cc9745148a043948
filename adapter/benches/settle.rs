//! Settling a 10,000-record event, from the event's JSON bytes in to the response's JSON bytes
//! out, three ways in the same run: through the adapter; through the loop one would write by hand
//! over `aws_lambda_events`' `KinesisEvent` (owned); and through the fastest reader we could
//! write by hand, the floor (the event and each record's data borrowed from the input bytes, one
//! reused buffer for base64). Then the adapter over an event of 10,000 KPL user records in 100
//! aggregates.
//!
//! Run with `cargo bench -p lambda-kinesis`. The adapter and the owned loop read the bytes the
//! way `lambda_runtime` does (`serde_path_to_error` over `serde_json`); the floor reads them
//! with `serde_json` alone, which is faster. Every path decodes every record's data as a
//! `Shipment`, makes the same decision without logging, stops at the same held record near the
//! end, and serialises the same response.

use std::hint::black_box;
use std::time::{Duration, Instant};

use aws_lambda_events::kinesis::KinesisEvent;
use aws_lambda_events::streams::KinesisEventResponse;
use lambda_kinesis::aggregate::Aggregate;
use lambda_kinesis::lambda_runtime::{Context, LambdaEvent};
use lambda_kinesis::wire::{BatchResponse, EventRecord, EventSource, KinesisBatch, write_event};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
use serde::{Deserialize, Serialize};

const RECORDS: usize = 10_000;
/// The aggregated event: `RECORDS` user records in this many aggregates.
const AGGREGATES: usize = 100;
/// The record that is held, near the end, so that both responses name it.
const HELD: usize = 9_990;
const WARM_UP: usize = 5;
const ITERATIONS: usize = 60;
/// The targets of issue 11: the adapter at least this many times as fast as the owned loop,
/// within this factor of the floor, and at least this many aggregated user records a second.
/// The bench reports against them; it asserts nothing about speed.
const MIN_SPEED_UP: f64 = 3.5;
const MAX_OVER_FLOOR: f64 = 1.25;
const MIN_USER_RECORDS_PER_SECOND: f64 = 1e6;

fn verdict(met: bool) -> &'static str {
    if met { "PASS" } else { "FAIL" }
}

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

/// The `index`th shipment's partition key and JSON; the one at `held` goes by a carrier that
/// is not known, so it is held.
fn shipment(index: usize, held: Option<usize>) -> (String, Vec<u8>) {
    let shipment = Shipment {
        id: 1_000_000 + index as u64,
        address: format!(
            "{} Harbour Road, Unit {}, Rotterdam 3011",
            index % 997,
            index % 13
        ),
        carrier: if Some(index) == held {
            "fedex"
        } else {
            ["dhl", "ups"][index % 2]
        }
        .to_owned(),
    };
    let partition_key = format!("customer-{}", index % 64);
    let data = serde_json::to_vec(&shipment).expect("a shipment serialises");
    (partition_key, data)
}

fn sequence_number(index: usize) -> String {
    format!(
        "49659105227831283741063251470458112{:021}",
        index * 6_553_600
    )
}

/// The event Lambda would send: 10,000 shipments of about 100 bytes each.
fn event_json() -> Vec<u8> {
    let records: Vec<(String, String, Vec<u8>)> = (0..RECORDS)
        .map(|index| {
            let (partition_key, data) = shipment(index, Some(HELD));
            (sequence_number(index), partition_key, data)
        })
        .collect();
    write_records(&records)
}

/// The 10,000 shipments again, none held, as KPL user records in 100 aggregates of 100.
fn aggregated_event_json() -> Vec<u8> {
    let per_aggregate = RECORDS / AGGREGATES;
    let records: Vec<(String, String, Vec<u8>)> = (0..AGGREGATES)
        .map(|aggregate_index| {
            let mut aggregate = Aggregate::new();
            for index in aggregate_index * per_aggregate..(aggregate_index + 1) * per_aggregate {
                let (partition_key, data) = shipment(index, None);
                aggregate.add(&partition_key, None, &data);
            }
            let partition_key = aggregate.partition_key().unwrap_or_default().to_owned();
            (
                sequence_number(aggregate_index),
                partition_key,
                aggregate.to_bytes(),
            )
        })
        .collect();
    write_records(&records)
}

fn write_records(records: &[(String, String, Vec<u8>)]) -> Vec<u8> {
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

/// The floor: the event read with every string borrowed from the input bytes, only the fields
/// the loop needs, and one buffer for every record's base64.
#[derive(Deserialize)]
struct BorrowedEvent<'a> {
    #[serde(rename = "Records", borrow)]
    records: Vec<BorrowedRecord<'a>>,
}

#[derive(Deserialize)]
struct BorrowedRecord<'a> {
    #[serde(borrow)]
    kinesis: BorrowedKinesis<'a>,
}

#[derive(Deserialize)]
struct BorrowedKinesis<'a> {
    #[serde(rename = "sequenceNumber")]
    sequence_number: &'a str,
    data: &'a str,
}

fn floor(json: &[u8], data: &mut Vec<u8>) -> Vec<u8> {
    use base64::Engine as _;
    let event: BorrowedEvent<'_> = serde_json::from_slice(json).expect("the event is readable");
    let mut response = KinesisEventResponse::default();
    for record in &event.records {
        data.clear();
        if base64::engine::general_purpose::STANDARD
            .decode_vec(record.kinesis.data, data)
            .is_err()
        {
            continue;
        }
        let Ok(shipment) = serde_json::from_slice::<Shipment>(data) else {
            continue;
        };
        if decide(&shipment) == HandlerOutcome::Hold {
            response.add_failure(record.kinesis.sequence_number);
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
    let aggregated = aggregated_event_json();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime starts");
    let mut adapter = KinesisAdapter::new(ship);
    let mut buffer = Vec::new();

    let from_adapter = through_the_adapter(&mut adapter, &runtime, &json);
    let from_hand = by_hand(&json);
    let from_floor = floor(&json, &mut buffer);
    assert_eq!(
        String::from_utf8_lossy(&from_adapter),
        String::from_utf8_lossy(&from_hand),
        "the adapter and the owned loop give the same response"
    );
    assert_eq!(from_floor, from_hand, "the floor gives the same response");
    assert!(from_adapter.starts_with(br#"{"batchItemFailures":[{"itemIdentifier":"#));
    let batch = KinesisBatch::from_json(&aggregated).expect("the aggregated event is readable");
    assert_eq!(batch.len(), RECORDS, "every user record of every aggregate");
    assert_eq!(
        through_the_adapter(&mut adapter, &runtime, &aggregated),
        br#"{"batchItemFailures":[]}"#,
        "every user record is acked"
    );

    let mut run_adapter = || {
        black_box(through_the_adapter(
            &mut adapter,
            &runtime,
            black_box(&json),
        ))
    };
    let mut adapter_times = Vec::with_capacity(ITERATIONS);
    let mut hand_times = Vec::with_capacity(ITERATIONS);
    let mut floor_times = Vec::with_capacity(ITERATIONS);
    let mut aggregated_times = Vec::with_capacity(ITERATIONS);
    // The paths alternate, so that whatever else the machine does weighs on all alike.
    for iteration in 0..WARM_UP + ITERATIONS {
        let measure = iteration >= WARM_UP;
        let started = Instant::now();
        run_adapter();
        let adapter_time = started.elapsed();
        let started = Instant::now();
        black_box(by_hand(black_box(&json)));
        let hand_time = started.elapsed();
        let started = Instant::now();
        black_box(floor(black_box(&json), &mut buffer));
        let floor_time = started.elapsed();
        if measure {
            adapter_times.push(adapter_time);
            hand_times.push(hand_time);
            floor_times.push(floor_time);
        }
    }
    for iteration in 0..WARM_UP + ITERATIONS {
        let started = Instant::now();
        black_box(through_the_adapter(
            &mut adapter,
            &runtime,
            black_box(&aggregated),
        ));
        if iteration >= WARM_UP {
            aggregated_times.push(started.elapsed());
        }
    }

    let adapter = median(adapter_times);
    let hand = median(hand_times);
    let floor = median(floor_times);
    let aggregated_time = median(aggregated_times);
    let per_record = |time: Duration| time.as_nanos() as f64 / RECORDS as f64;
    let millis = |time: Duration| time.as_secs_f64() * 1e3;
    println!(
        "settle {RECORDS} records ({} bytes of event JSON), median of {ITERATIONS} runs after {WARM_UP} warm-up runs:",
        json.len()
    );
    println!(
        "  adapter (KinesisBatch + tower::Service):   {:>8.3} ms  ({:.0} ns/record)",
        millis(adapter),
        per_record(adapter)
    );
    println!(
        "  owned loop (aws_lambda_events KinesisEvent): {:>6.3} ms  ({:.0} ns/record)",
        millis(hand),
        per_record(hand)
    );
    println!(
        "  floor (borrowed event, reused buffer):     {:>8.3} ms  ({:.0} ns/record)",
        millis(floor),
        per_record(floor)
    );
    let speed_up = hand.as_secs_f64() / adapter.as_secs_f64();
    let over_floor = adapter.as_secs_f64() / floor.as_secs_f64();
    println!(
        "  the adapter is {speed_up:.2}x as fast as the owned loop ({}: target >= {MIN_SPEED_UP}x), and takes {over_floor:.2}x the floor's time ({}: target <= {MAX_OVER_FLOOR}x)",
        verdict(speed_up >= MIN_SPEED_UP),
        verdict(over_floor <= MAX_OVER_FLOOR),
    );
    println!(
        "settle {RECORDS} KPL user records in {AGGREGATES} aggregates ({} bytes of event JSON), median of {ITERATIONS} runs:",
        aggregated.len()
    );
    let per_second = RECORDS as f64 / aggregated_time.as_secs_f64();
    println!(
        "  adapter: {:>8.3} ms  ({:.0} ns/user record, {:.2}M user records/s; {}: target >= {:.0}M/s)",
        millis(aggregated_time),
        per_record(aggregated_time),
        per_second / 1e6,
        verdict(per_second >= MIN_USER_RECORDS_PER_SECOND),
        MIN_USER_RECORDS_PER_SECOND / 1e6,
    );
    println!(
        "(figures from a loaded machine say little: compare them with the load average, `uptime`)"
    );
}
