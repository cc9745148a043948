//! One 9 MiB record through each step it meets (issue 30): `PutRecord` into the embedded Kinesis
//! (a stream raised to `MaxRecordSizeInKiB` 10240), `GetRecords`, a mapping, and the adapter
//! decoding an event that carries it. Time and peak memory of each step; a bench, not a test.
//!
//! Run with `cargo bench -p kinesis-esm --bench large_record`.
//!
//! The mapping never invokes with it: its event (about 12 MiB once base64) is over Lambda's 6 MB
//! payload, so the mapping counts a failed invocation and, with `MaximumRetryAttempts: 0`,
//! discards it (`docs/event-source-mapping.md` §4.5); the mapping step is that, read to
//! checkpoint. The adapter step hands the adapter the event a function with no payload limit
//! would get, to show what decoding it costs.
//!
//! Peak memory is the process's resident high-water mark (`VmHWM`), reset before each step
//! through `/proc/self/clear_refs` (Linux), less what was resident before the step: what the
//! step added at its peak. Elsewhere it prints `n/a`.

use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::{InProcess, Invocation, Invoker};
use kinesis_esm::kinesis::{EmbeddedKinesis, PutRecordsEntry};
use kinesis_esm::lease::Checkpoint;
use kinesis_esm::mapping::EventSourceMapping;
use kinesis_esm::source::{IteratorPosition, Record};
use lambda_kinesis::HandlerOutcome;
use lambda_kinesis::wire::{EventRecord, EventSource, write_event};

mod support;

const STREAM: &str = "large-records";
const SHARD: &str = "shardId-000000000000";
const RECORD_BYTES: usize = 9 * 1024 * 1024;
/// A step that has not ended by then is broken, not slow.
const STEP_LIMIT: Duration = Duration::from_secs(120);

fn main() {
    let runtime = support::runtime();
    println!("large_record: one {RECORD_BYTES}-byte record");
    let kinesis = EmbeddedKinesis::new();
    kinesis.create_stream(STREAM, 1).expect("the stream");
    kinesis
        .update_max_record_size(STREAM, 10240)
        .expect("a 10 MiB limit");
    // A JSON string, so that the handler decodes the data as it would a real record's.
    let mut data = vec![b'x'; RECORD_BYTES];
    (data[0], data[RECORD_BYTES - 1]) = (b'"', b'"');
    let put = measure("PutRecord", || {
        kinesis
            .put_record(STREAM, PutRecordsEntry::new("large", data))
            .expect("the put")
    });
    let record = measure("GetRecords", || read_back(&kinesis));
    assert_eq!(record.sequence_number, put.sequence_number);
    assert_eq!(record.data.len(), RECORD_BYTES);
    let checkpoint = Checkpoint::SequenceNumber(put.sequence_number.clone());
    measure("the mapping (refused, discarded, checkpointed)", || {
        runtime.block_on(map_to_checkpoint(&kinesis, &checkpoint));
    });
    let decoded = measure("the adapter (event built, decoded, handled)", || {
        runtime.block_on(through_the_adapter(&record))
    });
    assert_eq!(decoded, RECORD_BYTES);
}

/// Runs `step`, prints its wall time and the memory it added at its peak, returns its result.
fn measure<T>(name: &str, step: impl FnOnce() -> T) -> T {
    let before = resident_kib("VmRSS");
    // Resets VmHWM to the current resident size; absent on other systems.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let started = Instant::now();
    let result = step();
    let elapsed = started.elapsed();
    let peak = match (reset, before, resident_kib("VmHWM")) {
        (true, Some(before), Some(peak)) => {
            format!("{:.1} MiB", peak.saturating_sub(before) as f64 / 1024.0)
        }
        _ => "n/a".to_owned(),
    };
    println!(
        "  {name}: {:.3} ms, peak memory added {peak}",
        elapsed.as_secs_f64() * 1e3
    );
    result
}

/// A line of `/proc/self/status` in KiB (`VmRSS`, `VmHWM`).
fn resident_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn read_back(kinesis: &EmbeddedKinesis) -> Record {
    let iterator = kinesis
        .get_shard_iterator(STREAM, SHARD, &IteratorPosition::TrimHorizon)
        .expect("an iterator");
    let mut output = kinesis.get_records(&iterator, 10).expect("the read");
    assert_eq!(output.records.len(), 1, "one record read back");
    output.records.remove(0)
}

/// A mapping with no retries, from the start of the shard until its checkpoint passes the record.
async fn map_to_checkpoint(kinesis: &EmbeddedKinesis, checkpoint: &Checkpoint) {
    let mut config = MappingConfig::new("large", STREAM, StartingPosition::TrimHorizon);
    config.maximum_retry_attempts = Some(0);
    let handler = |_: &String| async { HandlerOutcome::ack() };
    let invoker = Arc::new(InProcess::handler(handler));
    let mapping = EventSourceMapping::new(config, Arc::new(kinesis.clone()), invoker).start();
    let done = tokio::time::timeout(
        STEP_LIMIT,
        mapping.wait_for(|status| {
            status
                .shards
                .values()
                .any(|shard| shard.checkpoint.as_ref() == Some(checkpoint))
        }),
    )
    .await;
    let status = mapping.stop().await;
    assert!(done.is_ok(), "the mapping never passed the record");
    assert_eq!(status.totals().discarded, 1, "the record is discarded");
}

/// The event a function would get for `record`, through the adapter as a function runs it;
/// returns the bytes of data the handler saw.
async fn through_the_adapter(record: &Record) -> usize {
    let mut event = Vec::with_capacity(RECORD_BYTES * 4 / 3 + 1024);
    let source = EventSource {
        stream_arn: "arn:aws:kinesis:us-east-1:000000000000:stream/large-records",
        shard_id: SHARD,
        region: "us-east-1",
        invoke_identity_arn: "arn:aws:iam::000000000000:role/large",
    };
    let arrival = record.approximate_arrival.duration_since(UNIX_EPOCH);
    let one = EventRecord {
        sequence_number: record.sequence_number.as_str(),
        partition_key: &record.partition_key,
        data: &record.data,
        approximate_arrival_millis: arrival.map_or(0, |since| since.as_millis() as i64),
    };
    write_event(&mut event, &source, [one]);
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let handler = {
        let seen = Arc::clone(&seen);
        move |data: &String| {
            // The quotes are the JSON's, not the string's.
            seen.store(data.len() + 2, std::sync::atomic::Ordering::Relaxed);
            async { HandlerOutcome::ack() }
        }
    };
    let invoker = InProcess::handler(handler);
    let deadline = Duration::from_secs(60);
    invoker
        .invoke(Invocation::new(event, deadline))
        .await
        .expect("the adapter answers");
    seen.load(std::sync::atomic::Ordering::Relaxed)
}
