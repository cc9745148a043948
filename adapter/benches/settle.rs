//! Settling a 10,000-record event, from the event's JSON bytes in to the response's JSON bytes
//! out, several ways in the same run: through the adapter; through the loop one would write by hand
//! over `aws_lambda_events`' `KinesisEvent` (owned); and through the floor, the fastest serde
//! reader we could write by hand (the event and each record's data borrowed from the input bytes,
//! one reused buffer for base64). Then the adapter over an event of 10,000 KPL user records in 100
//! aggregates.
//!
//! The floor is not the fastest reader there is: the adapter's own scanner, which checks the JSON
//! as it goes, is faster than serde_json's borrowing deserializer. So that the adapter is also
//! shown against something it cannot beat by reading better, a fourth path finds each record's
//! fields by searching the text for their keys, checking nothing: a bound, not a reader.
//!
//! Run with `cargo bench -p lambda-kinesis`. The adapter is run as `KinesisAdapter::run` runs it:
//! `ReadBatchLayer` in front of a service that deserialises the invocation's body as
//! `lambda_runtime` does (`serde_path_to_error` over `serde_json`, inside `call`); it is also run
//! without the layer (as `lambda_runtime::run(adapter)` would), for comparison. The owned loop
//! reads the bytes as `lambda_runtime` does; the floor reads them with `serde_json` alone, which
//! is faster. Every path decodes every record's data as a `Shipment`, makes the same decision
//! without logging, stops at the same held record near the end, and serialises the same response.
//!
//! The ratios are of thread CPU time (`/proc/thread-self/schedstat`, read after a `sched_yield`
//! so that it is up to date; everything runs on the bench's one thread), so that they do not
//! depend on what else the machine runs: medians of rounds in which the paths alternate.
//! Wall-clock medians are printed beside them.

use std::hint::black_box;
use std::time::Instant;

use aws_lambda_events::kinesis::KinesisEvent;
use aws_lambda_events::streams::KinesisEventResponse;
use lambda_kinesis::aggregate::Aggregate;
use lambda_kinesis::lambda_runtime::{Context, LambdaEvent, LambdaInvocation};
use lambda_kinesis::tower::util::BoxService;
use lambda_kinesis::tower::{Layer as _, Service, service_fn};
use lambda_kinesis::wire::{
    AdapterError, BatchResponse, EventRecord, EventSource, KinesisBatch, ReadBatchLayer,
    write_event,
};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
use serde::{Deserialize, Serialize};

const RECORDS: usize = 10_000;
/// The aggregated event: `RECORDS` user records in this many aggregates.
const AGGREGATES: usize = 100;
/// The record that is held, near the end, so that both responses name it.
const HELD: usize = 9_990;
const WARM_UP: usize = 3;
/// Rounds, and runs of each path in a round: each path's figure is the median over the rounds of
/// its median in a round, each ratio the median over the rounds of the ratio in a round.
const ROUNDS: usize = 9;
const RUNS_PER_ROUND: usize = 7;
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

/// A `Service<LambdaInvocation>` answering the adapter's response: the adapter as it runs on
/// Lambda, up to where `lambda_runtime` serialises the response.
type Invoked = BoxService<LambdaInvocation, BatchResponse, AdapterError>;

/// The adapter behind what stands for `lambda_runtime`'s deserialisation: the body read into a
/// `LambdaEvent<KinesisBatch>` inside `call`, as `lambda_runtime` does; with `ReadBatchLayer` in
/// front when `layered`, as `KinesisAdapter::run` has it.
fn invoked<S>(mut adapter: S, layered: bool) -> Invoked
where
    S: Service<LambdaEvent<KinesisBatch>, Response = BatchResponse, Error = AdapterError>
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let runtime_like = service_fn(move |invocation: LambdaInvocation| {
        let batch: KinesisBatch = read(&invocation.body);
        adapter.call(LambdaEvent::new(batch, invocation.context))
    });
    match layered {
        true => BoxService::new(ReadBatchLayer.layer(runtime_like)),
        false => BoxService::new(runtime_like),
    }
}

fn through_the_adapter(
    service: &mut Invoked,
    runtime: &tokio::runtime::Runtime,
    json: &'static [u8],
) -> Vec<u8> {
    let invocation = LambdaInvocation {
        parts: http::Response::new(()).into_parts().0,
        body: json.into(),
        context: Context::default(),
    };
    let response = runtime
        .block_on(async {
            std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
            service.call(invocation).await
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

/// Not a reader but a bound under every reader: each record's sequence number and data found by
/// searching the text for their keys, nothing checked (not the JSON, not escapes, not which
/// object a key is in); then the floor's loop. Only for events laid out as Lambda writes them.
fn unchecked_search(json: &[u8], data: &mut Vec<u8>) -> Vec<u8> {
    use base64::Engine as _;
    const SEQUENCE_NUMBER: &str = r#""sequenceNumber":""#;
    const DATA: &str = r#""data":""#;
    let text = std::str::from_utf8(json).expect("the event is UTF-8");
    let string_after = |key: &str, from: usize| -> Option<(&str, usize)> {
        let start = from + text[from..].find(key)? + key.len();
        let end = start + text[start..].find('"')?;
        Some((&text[start..end], end + 1))
    };
    let mut response = KinesisEventResponse::default();
    let mut at = 0;
    while let Some((sequence_number, after)) = string_after(SEQUENCE_NUMBER, at) {
        let (base64, after) = string_after(DATA, after).expect("data after a sequence number");
        at = after;
        data.clear();
        if base64::engine::general_purpose::STANDARD
            .decode_vec(base64, data)
            .is_err()
        {
            continue;
        }
        let Ok(shipment) = serde_json::from_slice::<Shipment>(data) else {
            continue;
        };
        if decide(&shipment) == HandlerOutcome::Hold {
            response.add_failure(sequence_number);
            break;
        }
    }
    serde_json::to_vec(&response).expect("the response serialises")
}

/// This thread's CPU time, in nanoseconds: the first field of `/proc/thread-self/schedstat`.
///
/// The kernel brings that count up to date at each scheduler tick and whenever the thread leaves
/// the CPU, so it is read after a `sched_yield`: without it, it moves in steps of a tick (4 ms
/// on a 250 Hz kernel, about as long as a run).
fn thread_cpu_nanos(schedstat: &mut std::fs::File, text: &mut String) -> u64 {
    use std::io::{Read as _, Seek as _};
    std::thread::yield_now();
    text.clear();
    schedstat
        .rewind()
        .and_then(|()| schedstat.read_to_string(text))
        .expect("/proc/thread-self/schedstat is readable");
    text.split_whitespace()
        .next()
        .and_then(|nanos| nanos.parse().ok())
        .expect("schedstat starts with the thread's CPU time in nanoseconds")
}

/// What one run of a path took: thread CPU time and wall-clock time, in nanoseconds.
#[derive(Clone, Copy, Default)]
struct Took {
    cpu: f64,
    wall: f64,
}

/// Reads this thread's CPU time (see [`thread_cpu_nanos`]).
struct CpuClock {
    schedstat: std::fs::File,
    text: String,
}

impl CpuClock {
    fn new() -> Self {
        Self {
            schedstat: std::fs::File::open("/proc/thread-self/schedstat")
                .expect("/proc/thread-self/schedstat opens (Linux with schedstats)"),
            text: String::new(),
        }
    }

    fn measure(&mut self, run: &mut dyn FnMut()) -> Took {
        let cpu = thread_cpu_nanos(&mut self.schedstat, &mut self.text);
        let wall = Instant::now();
        run();
        let wall = wall.elapsed().as_nanos() as f64;
        let cpu = thread_cpu_nanos(&mut self.schedstat, &mut self.text) - cpu;
        Took {
            cpu: cpu as f64,
            wall,
        }
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_unstable_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn spread(samples: &[f64]) -> (f64, f64) {
    let low = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let high = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (low, high)
}

/// The median over rounds of each path's median run in the round, CPU and wall time.
struct Figures {
    /// Per round, per path.
    cpu: Vec<Vec<f64>>,
    wall: Vec<Vec<f64>>,
}

impl Figures {
    fn path_cpu(&self, path: usize) -> Vec<f64> {
        self.cpu.iter().map(|round| round[path]).collect()
    }
    fn path_wall(&self, path: usize) -> Vec<f64> {
        self.wall.iter().map(|round| round[path]).collect()
    }
    /// The ratio `numerator / denominator` of CPU times in each round.
    fn ratios(&self, numerator: usize, denominator: usize) -> Vec<f64> {
        self.cpu
            .iter()
            .map(|round| round[numerator] / round[denominator])
            .collect()
    }
}

/// Runs every path `RUNS_PER_ROUND` times a round, the paths alternating run by run so that
/// whatever else the machine does weighs on all alike, after `WARM_UP` runs of each.
fn rounds(paths: &mut [&mut dyn FnMut()]) -> Figures {
    for _ in 0..WARM_UP {
        for path in paths.iter_mut() {
            path();
        }
    }
    let mut clock = CpuClock::new();
    let mut figures = Figures {
        cpu: Vec::new(),
        wall: Vec::new(),
    };
    for _ in 0..ROUNDS {
        let mut runs = vec![Vec::with_capacity(RUNS_PER_ROUND); paths.len()];
        for _ in 0..RUNS_PER_ROUND {
            for (path, runs) in paths.iter_mut().zip(&mut runs) {
                runs.push(clock.measure(*path));
            }
        }
        let of = |pick: fn(&Took) -> f64| {
            runs.iter()
                .map(|runs| median(runs.iter().map(pick).collect()))
                .collect::<Vec<_>>()
        };
        figures.cpu.push(of(|took| took.cpu));
        figures.wall.push(of(|took| took.wall));
    }
    figures
}

/// The load average over the last minute, from `/proc/loadavg`.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

fn main() {
    let json: &'static [u8] = Box::leak(event_json().into_boxed_slice());
    let aggregated: &'static [u8] = Box::leak(aggregated_event_json().into_boxed_slice());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime starts");
    let adapter = KinesisAdapter::new(ship);
    let mut layered = invoked(adapter.clone(), true);
    let mut layered_for_aggregates = invoked(adapter.clone(), true);
    let mut unlayered = invoked(adapter, false);
    let mut buffer = Vec::new();
    let mut unchecked_buffer = Vec::new();

    let from_adapter = through_the_adapter(&mut layered, &runtime, json);
    let from_unlayered = through_the_adapter(&mut unlayered, &runtime, json);
    let from_hand = by_hand(json);
    let from_floor = floor(json, &mut buffer);
    assert_eq!(
        String::from_utf8_lossy(&from_adapter),
        String::from_utf8_lossy(&from_hand),
        "the adapter and the owned loop give the same response"
    );
    assert_eq!(from_unlayered, from_adapter, "with or without the layer");
    assert_eq!(from_floor, from_hand, "the floor gives the same response");
    assert_eq!(
        unchecked_search(json, &mut buffer),
        from_hand,
        "the unchecked search gives the same response"
    );
    assert!(from_adapter.starts_with(br#"{"batchItemFailures":[{"itemIdentifier":"#));
    let batch = KinesisBatch::from_json(aggregated).expect("the aggregated event is readable");
    assert_eq!(batch.len(), RECORDS, "every user record of every aggregate");
    assert_eq!(
        through_the_adapter(&mut layered_for_aggregates, &runtime, aggregated),
        br#"{"batchItemFailures":[]}"#,
        "every user record is acked"
    );

    const ADAPTER: usize = 0;
    const UNLAYERED: usize = 1;
    const OWNED: usize = 2;
    const FLOOR: usize = 3;
    const AGGREGATED: usize = 4;
    const UNCHECKED: usize = 5;
    let load_before = load_average();
    let started = Instant::now();
    let figures = {
        let mut adapter = || {
            black_box(through_the_adapter(&mut layered, &runtime, black_box(json)));
        };
        let mut unlayered = || {
            black_box(through_the_adapter(
                &mut unlayered,
                &runtime,
                black_box(json),
            ));
        };
        let mut owned = || {
            black_box(by_hand(black_box(json)));
        };
        let mut floor = || {
            black_box(floor(black_box(json), &mut buffer));
        };
        let mut aggregated = || {
            black_box(through_the_adapter(
                &mut layered_for_aggregates,
                &runtime,
                black_box(aggregated),
            ));
        };
        let mut unchecked = || {
            black_box(unchecked_search(black_box(json), &mut unchecked_buffer));
        };
        rounds(&mut [
            &mut adapter,
            &mut unlayered,
            &mut owned,
            &mut floor,
            &mut aggregated,
            &mut unchecked,
        ])
    };
    let elapsed = started.elapsed();
    let load_after = load_average();

    let millis = |nanos: f64| nanos / 1e6;
    let per_record = |nanos: f64| nanos / RECORDS as f64;
    println!(
        "settle {RECORDS} records ({} bytes of event JSON): thread CPU time, median over {ROUNDS} rounds of the median of {RUNS_PER_ROUND} runs (wall-clock time beside it)",
        json.len()
    );
    let line = |name: &str, path: usize| {
        let cpu = figures.path_cpu(path);
        let (low, high) = spread(&cpu);
        let cpu = median(cpu);
        println!(
            "  {name:<48} {:>8.3} ms CPU ({:>4.0} ns/record; rounds {:.3}..{:.3} ms), {:>8.3} ms wall",
            millis(cpu),
            per_record(cpu),
            millis(low),
            millis(high),
            millis(median(figures.path_wall(path))),
        );
        cpu
    };
    line("adapter (ReadBatchLayer, as KinesisAdapter::run)", ADAPTER);
    line("adapter without the layer (lambda_runtime::run)", UNLAYERED);
    line("owned loop (aws_lambda_events KinesisEvent)", OWNED);
    line("floor (borrowed event, reused buffer)", FLOOR);
    line("unchecked search (a bound, not a reader)", UNCHECKED);
    let speed_ups = figures.ratios(OWNED, ADAPTER);
    let over_floors = figures.ratios(ADAPTER, FLOOR);
    let (speed_up_low, speed_up_high) = spread(&speed_ups);
    let (over_floor_low, over_floor_high) = spread(&over_floors);
    let speed_up = median(speed_ups);
    let over_floor = median(over_floors);
    println!(
        "  by CPU time, the adapter is {speed_up:.2}x as fast as the owned loop (rounds {speed_up_low:.2}..{speed_up_high:.2}; {}: target >= {MIN_SPEED_UP}x)",
        verdict(speed_up >= MIN_SPEED_UP),
    );
    println!(
        "  and takes {over_floor:.2}x the floor's CPU time (rounds {over_floor_low:.2}..{over_floor_high:.2}; {}: target <= {MAX_OVER_FLOOR}x)",
        verdict(over_floor <= MAX_OVER_FLOOR),
    );
    println!(
        "  the layer spares the adapter {:.0}% of its CPU time; the adapter takes {:.2}x the unchecked search's",
        100.0 * (1.0 - median(figures.ratios(ADAPTER, UNLAYERED))),
        median(figures.ratios(ADAPTER, UNCHECKED)),
    );
    println!(
        "settle {RECORDS} KPL user records in {AGGREGATES} aggregates ({} bytes of event JSON), through the adapter:",
        aggregated.len()
    );
    let aggregated_cpu = line("adapter (ReadBatchLayer)", AGGREGATED);
    let per_second = RECORDS as f64 / (aggregated_cpu / 1e9);
    println!(
        "  {:.2}M user records per CPU second ({}: target >= {:.0}M/s)",
        per_second / 1e6,
        verdict(per_second >= MIN_USER_RECORDS_PER_SECOND),
        MIN_USER_RECORDS_PER_SECOND / 1e6,
    );
    println!(
        "load average {load_before} before, {load_after} after the {:.1} s of measuring, on {} CPUs (CPU time does not count waiting for a CPU; wall time does)",
        elapsed.as_secs_f64(),
        std::thread::available_parallelism().map_or(0, usize::from),
    );
}
