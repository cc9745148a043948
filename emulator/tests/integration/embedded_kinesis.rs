//! The embedded Kinesis against the Kinesis semantics it promises (`docs/kinesis.md`): routing, sequence
//! numbers, iterators, limits, retention, resharding lineage and waking readers.
//!
//! Run with `cargo test --workspace --test integration embedded_kinesis`.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use kinesis_esm::kinesis::{
    EmbeddedKinesis, MAX_GET_RECORDS_BYTES, MAX_RECORD_BYTES, ManualClock, PutRecordsEntry,
    ScalingType, StreamStatus,
};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::{
    ChildShard, GetRecordsOutput, HashKeyRange, IteratorPosition, Record, Shard, ShardSource,
    SourceError,
};

/// Fails unless `$result` is an error of the named `SourceError` variant.
macro_rules! assert_err {
    ($result:expr, $variant:ident) => {
        match $result {
            Err(SourceError::$variant { .. }) => {}
            other => panic!("expected {}, got {other:?}", stringify!($variant)),
        }
    };
}

const STREAM: &str = "orders";
const HOUR: Duration = Duration::from_secs(3600);

fn start_time() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// An embedded Kinesis on a manual clock, with `shards` shards in `STREAM`.
fn kinesis_with(shards: u32) -> (EmbeddedKinesis, ManualClock) {
    let clock = ManualClock::new(start_time());
    let kinesis = EmbeddedKinesis::builder().clock(clock.clone()).build();
    kinesis.create_stream(STREAM, shards).unwrap();
    (kinesis, clock)
}

fn shard(index: u32) -> String {
    format!("shardId-{index:012}")
}

fn entry(key: &str, data: &str) -> PutRecordsEntry {
    PutRecordsEntry::new(key, Bytes::copy_from_slice(data.as_bytes()))
}

fn put(kinesis: &EmbeddedKinesis, key: &str, data: &str) -> (String, SequenceNumber) {
    let output = kinesis.put_record(STREAM, entry(key, data)).unwrap();
    (output.shard_id.to_string(), output.sequence_number)
}

fn iterator(kinesis: &EmbeddedKinesis, shard_id: &str, position: IteratorPosition) -> String {
    kinesis
        .get_shard_iterator(STREAM, shard_id, &position)
        .unwrap()
}

/// Reads from `iterator` until caught up or at the end of a closed shard; returns the records
/// and the last output.
fn drain(kinesis: &EmbeddedKinesis, mut iterator: String) -> (Vec<Record>, GetRecordsOutput) {
    let mut records = Vec::new();
    loop {
        let output = kinesis.get_records(&iterator, 10_000).unwrap();
        records.extend(output.records.iter().cloned());
        match &output.next_shard_iterator {
            Some(next) if !output.records.is_empty() => iterator = next.clone(),
            _ => return (records, output),
        }
    }
}

fn read_from(kinesis: &EmbeddedKinesis, shard_id: &str, position: IteratorPosition) -> Vec<String> {
    let (records, _) = drain(kinesis, iterator(kinesis, shard_id, position));
    records
        .iter()
        .map(|record| String::from_utf8(record.data.to_vec()).unwrap())
        .collect()
}

fn open_shards(kinesis: &EmbeddedKinesis) -> Vec<Shard> {
    let shards = kinesis.list_shards(STREAM).unwrap();
    shards
        .into_iter()
        .filter(|shard| !shard.is_closed())
        .collect()
}

/// `floor(i * 2^128 / n)`, computed in two 64-bit halves rather than the way the Kinesis
/// computes it.
fn even_boundary(i: u128, n: u128) -> u128 {
    let high = (i << 64) / n;
    let low = (((i << 64) % n) << 64) / n;
    (high << 64) + low
}

fn even_ranges(n: u128) -> Vec<HashKeyRange> {
    (0..n)
        .map(|i| HashKeyRange {
            starting_hash_key: even_boundary(i, n),
            ending_hash_key: if i + 1 == n {
                u128::MAX
            } else {
                even_boundary(i + 1, n) - 1
            },
        })
        .collect()
}

/// Checks what every `ListShards` answer must satisfy: ids in creation order with parents
/// first; the open shards tile the hash key space without overlap; a split's children split
/// their parent's range, a merge's child covers its two adjacent parents; parents are closed
/// and end below their children's start.
#[track_caller]
fn check_lineage(shards: &[Shard]) {
    let by_id = |id: &str| {
        shards
            .iter()
            .position(|shard| shard.shard_id == id)
            .unwrap_or_else(|| panic!("parent {id} is not listed"))
    };
    for (position, shard) in shards.iter().enumerate() {
        assert!(
            position == 0 || shards[position - 1].shard_id < shard.shard_id,
            "{shards:#?}"
        );
        let parents: Vec<&Shard> = shard.parents().map(|id| &shards[by_id(id)]).collect();
        for parent in &parents {
            assert!(
                shards.iter().position(|s| s.shard_id == parent.shard_id) < Some(position),
                "parent {} listed after child {}",
                parent.shard_id,
                shard.shard_id
            );
            let ending = parent
                .ending_sequence_number
                .as_ref()
                .expect("closed parent");
            assert!(ending < &shard.starting_sequence_number);
        }
        match parents.as_slice() {
            [] => {}
            [parent] => {
                let siblings: Vec<&Shard> = shards
                    .iter()
                    .filter(|s| s.parent_shard_id.as_deref() == Some(&parent.shard_id))
                    .filter(|s| s.adjacent_parent_shard_id.is_none())
                    .collect();
                assert_eq!(siblings.len(), 2, "a split has two children");
                assert_eq!(
                    siblings[0].hash_key_range.starting_hash_key,
                    parent.hash_key_range.starting_hash_key
                );
                assert_eq!(
                    siblings[0].hash_key_range.ending_hash_key + 1,
                    siblings[1].hash_key_range.starting_hash_key
                );
                assert_eq!(
                    siblings[1].hash_key_range.ending_hash_key,
                    parent.hash_key_range.ending_hash_key
                );
            }
            [parent, adjacent] => {
                let (low, high) = if parent.hash_key_range.starting_hash_key
                    < adjacent.hash_key_range.starting_hash_key
                {
                    (parent, adjacent)
                } else {
                    (adjacent, parent)
                };
                assert_eq!(
                    low.hash_key_range.ending_hash_key + 1,
                    high.hash_key_range.starting_hash_key
                );
                assert_eq!(
                    shard.hash_key_range,
                    HashKeyRange {
                        starting_hash_key: low.hash_key_range.starting_hash_key,
                        ending_hash_key: high.hash_key_range.ending_hash_key,
                    }
                );
            }
            _ => unreachable!("a shard has at most two parents"),
        }
    }
    let mut open: Vec<HashKeyRange> = shards
        .iter()
        .filter(|shard| !shard.is_closed())
        .map(|shard| shard.hash_key_range)
        .collect();
    open.sort_by_key(|range| range.starting_hash_key);
    assert_eq!(open[0].starting_hash_key, 0);
    assert_eq!(open[open.len() - 1].ending_hash_key, u128::MAX);
    for pair in open.windows(2) {
        assert_eq!(pair[0].ending_hash_key + 1, pair[1].starting_hash_key);
    }
}

// Streams.

#[test]
fn a_new_stream_is_active_with_kinesis_identity() {
    let clock = ManualClock::new(start_time());
    let kinesis = EmbeddedKinesis::builder()
        .region("eu-west-1")
        .account_id("123456789012")
        .clock(clock)
        .build();
    kinesis.create_stream("payments", 3).unwrap();
    let summary = kinesis.describe_stream_summary("payments").unwrap();
    assert_eq!(summary.name, "payments");
    assert_eq!(
        summary.arn,
        "arn:aws:kinesis:eu-west-1:123456789012:stream/payments"
    );
    assert_eq!(summary.status, StreamStatus::Active);
    assert_eq!(summary.status.as_str(), "ACTIVE");
    assert_eq!(summary.created, start_time());
    assert_eq!(summary.retention_period, 24 * HOUR);
    assert_eq!(summary.open_shard_count, 3);
    // The ARN names the stream as well as its name does.
    assert_eq!(
        kinesis.describe_stream_summary(&summary.arn).unwrap(),
        summary
    );
    assert_err!(
        kinesis.describe_stream_summary("arn:aws:kinesis:us-east-1:123456789012:stream/payments"),
        NotFound
    );
}

#[test]
fn the_default_identity_is_us_east_1_and_account_zero() {
    let kinesis = EmbeddedKinesis::new();
    kinesis.create_stream(STREAM, 1).unwrap();
    assert_eq!(
        kinesis.describe_stream_summary(STREAM).unwrap().arn,
        "arn:aws:kinesis:us-east-1:000000000000:stream/orders"
    );
}

#[test]
fn new_shards_split_the_hash_key_space_evenly() {
    for count in [1, 2, 3, 5, 8] {
        let (kinesis, _) = kinesis_with(count);
        let shards = kinesis.list_shards(STREAM).unwrap();
        let ids: Vec<String> = shards.iter().map(|s| s.shard_id.clone()).collect();
        assert_eq!(ids, (0..count).map(shard).collect::<Vec<_>>());
        let ranges: Vec<HashKeyRange> = shards.iter().map(|s| s.hash_key_range).collect();
        assert_eq!(ranges, even_ranges(u128::from(count)));
        for shard in &shards {
            assert_eq!(shard.parents().count(), 0);
            assert!(!shard.is_closed());
            assert_eq!(shard.starting_sequence_number.as_str().len(), 56);
        }
    }
}

#[test]
fn streams_are_listed_created_once_and_deleted() {
    let (kinesis, _) = kinesis_with(1);
    kinesis.create_stream("alpha", 1).unwrap();
    kinesis.create_stream("zulu.v2_x-y", 2).unwrap();
    assert_eq!(kinesis.list_streams(), ["alpha", "orders", "zulu.v2_x-y"]);
    assert_err!(kinesis.create_stream("alpha", 1), ResourceInUse);
    kinesis.delete_stream("alpha").unwrap();
    assert_eq!(kinesis.list_streams(), ["orders", "zulu.v2_x-y"]);
    assert_err!(kinesis.describe_stream_summary("alpha"), NotFound);
    assert_err!(kinesis.delete_stream("alpha"), NotFound);
}

#[test]
fn invalid_stream_requests_are_refused() {
    let kinesis = EmbeddedKinesis::new();
    assert_err!(kinesis.create_stream("", 1), InvalidArgument);
    assert_err!(kinesis.create_stream("has space", 1), InvalidArgument);
    assert_err!(kinesis.create_stream(&"s".repeat(129), 1), InvalidArgument);
    assert_err!(kinesis.create_stream("empty", 0), InvalidArgument);
    kinesis.create_stream(&"s".repeat(128), 1).unwrap();
}

#[test]
fn the_account_shard_limit_counts_open_shards_of_all_streams() {
    let kinesis = EmbeddedKinesis::builder().shard_limit(4).build();
    kinesis.create_stream("one", 3).unwrap();
    assert_err!(kinesis.create_stream("two", 2), LimitExceeded);
    kinesis.create_stream("two", 1).unwrap();
    assert_err!(kinesis.split_shard("two", &shard(0), "1000"), LimitExceeded);
    kinesis.delete_stream("one").unwrap();
    kinesis.split_shard("two", &shard(0), "1000").unwrap();
    kinesis.create_stream("three", 2).unwrap();
}

#[test]
fn unknown_streams_and_shards_are_not_found() {
    let (kinesis, _) = kinesis_with(2);
    let any = &IteratorPosition::TrimHorizon;
    assert_err!(kinesis.list_shards("nope"), NotFound);
    assert_err!(kinesis.put_record("nope", entry("k", "v")), NotFound);
    assert_err!(kinesis.put_records("nope", vec![entry("k", "v")]), NotFound);
    assert_err!(kinesis.get_shard_iterator("nope", &shard(0), any), NotFound);
    assert_err!(kinesis.get_shard_iterator(STREAM, &shard(2), any), NotFound);
    assert_err!(
        kinesis.get_shard_iterator(STREAM, "shardId-1", any),
        NotFound
    );
    assert_err!(kinesis.split_shard("nope", &shard(0), "5"), NotFound);
    assert_err!(kinesis.split_shard(STREAM, &shard(9), "5"), NotFound);
    assert_err!(kinesis.merge_shards(STREAM, &shard(0), &shard(9)), NotFound);
    assert_err!(
        kinesis.update_shard_count("nope", 1, ScalingType::UniformScaling),
        NotFound
    );
    assert_err!(
        kinesis.increase_stream_retention_period("nope", 48),
        NotFound
    );
    // The message names the shard and the stream.
    let error = kinesis
        .get_shard_iterator(STREAM, &shard(7), any)
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("shardId-000000000007") && message.contains("orders"),
        "{message}"
    );
}

// Putting: routing and sequence numbers.

#[test]
fn partition_keys_route_by_md5_into_the_shard_whose_range_holds_it() {
    // MD5 digests computed elsewhere; with four even shards, shard = digest >> 126.
    let known: [(&str, u128); 6] = [
        ("a", 0x0cc175b9c0f1b6a831c399e269772661),
        ("hello", 0x5d41402abc4b2a76b9719d911017c592),
        ("order-1", 0x6e7f85a9d0fe9b5dfb504c6f2991d744),
        ("b", 0x92eb5ffee6ae2fec3ad71c777531578f),
        ("e", 0xe1671797c52e15f763380b45e841ec32),
        ("z", 0xfbade9e36a3f36d3d676c1b808451dd7),
    ];
    let (kinesis, _) = kinesis_with(4);
    for (key, digest) in known {
        let (shard_id, _) = put(&kinesis, key, "x");
        assert_eq!(shard_id, shard((digest >> 126) as u32), "{key}");
    }
    // With three shards the boundaries are not powers of two: check against the listed ranges.
    kinesis.create_stream("three", 3).unwrap();
    let shards = kinesis.list_shards("three").unwrap();
    for (key, digest) in known {
        let output = kinesis.put_record("three", entry(key, "x")).unwrap();
        let expected = shards
            .iter()
            .find(|shard| shard.hash_key_range.contains(digest))
            .unwrap();
        assert_eq!(&*output.shard_id, expected.shard_id, "{key}");
    }
}

#[track_caller]
fn check_explicit(kinesis: &EmbeddedKinesis, explicit: &str, expected_shard: u32) {
    let output = kinesis
        .put_record(STREAM, entry("a", "x").with_explicit_hash_key(explicit))
        .unwrap();
    assert_eq!(&*output.shard_id, shard(expected_shard), "{explicit}");
}

#[test]
fn an_explicit_hash_key_overrides_the_partition_key() {
    let (kinesis, _) = kinesis_with(4);
    let quarter = 1_u128 << 126;
    check_explicit(&kinesis, "0", 0);
    check_explicit(&kinesis, &(quarter - 1).to_string(), 0);
    check_explicit(&kinesis, &quarter.to_string(), 1);
    check_explicit(&kinesis, &(2 * quarter).to_string(), 2);
    check_explicit(&kinesis, &u128::MAX.to_string(), 3);
    for invalid in [
        "",
        "abc",
        "-1",
        "01",
        "1.5",
        "340282366920938463463374607431768211456",
    ] {
        assert_err!(
            kinesis.put_record(STREAM, entry("a", "x").with_explicit_hash_key(invalid)),
            InvalidArgument
        );
    }
}

#[test]
fn sequence_numbers_grow_within_a_shard_and_compare_as_numbers() {
    let (kinesis, _) = kinesis_with(2);
    let mut last_in_shard: std::collections::HashMap<String, SequenceNumber> = Default::default();
    for round in 0..50 {
        let batch: Vec<PutRecordsEntry> = (0..7)
            .map(|i| entry(&format!("key-{round}-{i}"), "x"))
            .collect();
        let mut outputs = kinesis.put_records(STREAM, batch).unwrap();
        outputs.push(kinesis.put_record(STREAM, entry("single", "x")).unwrap());
        for output in outputs {
            let digits = output.sequence_number.as_str();
            assert_eq!(digits.len(), 56, "{digits}");
            // Parsing again checks the API's pattern: digits, no leading zero.
            assert_eq!(
                digits.parse::<SequenceNumber>().unwrap(),
                output.sequence_number
            );
            if let Some(previous) = last_in_shard.get(&*output.shard_id) {
                assert!(previous < &output.sequence_number);
            }
            last_in_shard.insert(output.shard_id.to_string(), output.sequence_number);
        }
    }
    assert_eq!(last_in_shard.len(), 2);
}

#[test]
fn records_read_back_as_put_with_millisecond_arrival_times() {
    let (kinesis, clock) = kinesis_with(1);
    clock.advance(Duration::from_micros(123_456));
    let outputs = kinesis
        .put_records(STREAM, vec![entry("k1", "one"), entry("k2", "two")])
        .unwrap();
    let (records, last) = drain(
        &kinesis,
        iterator(&kinesis, &shard(0), IteratorPosition::TrimHorizon),
    );
    assert_eq!(records.len(), 2);
    for (record, (output, (key, data))) in records
        .iter()
        .zip(outputs.iter().zip([("k1", "one"), ("k2", "two")]))
    {
        assert_eq!(record.sequence_number, output.sequence_number);
        assert_eq!(&*record.partition_key, key);
        assert_eq!(record.data, data.as_bytes());
        assert_eq!(
            record.approximate_arrival,
            start_time() + Duration::from_millis(123)
        );
    }
    assert_eq!(last.millis_behind_latest, 0);
    assert!(last.next_shard_iterator.is_some());
}

#[test]
fn concurrent_producers_keep_every_shard_in_order() {
    let (kinesis, _) = kinesis_with(3);
    std::thread::scope(|scope| {
        for producer in 0..4 {
            let kinesis = kinesis.clone();
            scope.spawn(move || {
                for batch in 0..25 {
                    let records = (0..20)
                        .map(|i| entry(&format!("{producer}-{batch}-{i}"), "x"))
                        .collect();
                    kinesis.put_records(STREAM, records).unwrap();
                }
            });
        }
    });
    let mut total = 0;
    for index in 0..3 {
        let (records, _) = drain(
            &kinesis,
            iterator(&kinesis, &shard(index), IteratorPosition::TrimHorizon),
        );
        assert!(
            records
                .windows(2)
                .all(|pair| pair[0].sequence_number < pair[1].sequence_number)
        );
        total += records.len();
    }
    assert_eq!(total, 4 * 25 * 20);
}

// Limits.

#[test]
fn put_records_carries_1_to_500_records() {
    let (kinesis, _) = kinesis_with(1);
    let batch = |count: usize| (0..count).map(|i| entry(&i.to_string(), "x")).collect();
    assert_err!(kinesis.put_records(STREAM, batch(0)), InvalidArgument);
    assert_err!(kinesis.put_records(STREAM, batch(501)), InvalidArgument);
    assert_eq!(kinesis.put_records(STREAM, batch(500)).unwrap().len(), 500);
}

#[test]
fn partition_keys_have_1_to_256_characters() {
    let (kinesis, _) = kinesis_with(1);
    assert_err!(kinesis.put_record(STREAM, entry("", "x")), InvalidArgument);
    assert_err!(
        kinesis.put_record(STREAM, entry(&"k".repeat(257), "x")),
        InvalidArgument
    );
    kinesis
        .put_record(STREAM, entry(&"k".repeat(256), "x"))
        .unwrap();
    // Characters, not bytes: 256 two-byte characters are fine.
    kinesis
        .put_record(STREAM, entry(&"é".repeat(256), "x"))
        .unwrap();
}

#[test]
fn a_record_holds_at_most_1_mib_and_a_put_records_call_5_mib() {
    let (kinesis, _) = kinesis_with(1);
    let sized = |key: &str, size: usize| {
        PutRecordsEntry::new(key, Bytes::from(vec![7_u8; size - key.len()]))
    };
    kinesis
        .put_record(STREAM, sized("k", MAX_RECORD_BYTES))
        .unwrap();
    assert_err!(
        kinesis.put_record(STREAM, sized("k", MAX_RECORD_BYTES + 1)),
        InvalidArgument
    );
    let five_mib = (0..5)
        .map(|i| sized(&i.to_string(), MAX_RECORD_BYTES))
        .collect();
    kinesis.put_records(STREAM, five_mib).unwrap();
    let over = (0..6)
        .map(|i| sized(&i.to_string(), MAX_RECORD_BYTES))
        .collect();
    assert_err!(kinesis.put_records(STREAM, over), InvalidArgument);
}

#[test]
fn a_put_records_call_with_one_bad_record_writes_nothing() {
    let (kinesis, _) = kinesis_with(1);
    let records = vec![entry("good", "1"), entry("", "2"), entry("good", "3")];
    assert_err!(kinesis.put_records(STREAM, records), InvalidArgument);
    let records = vec![
        entry("good", "1"),
        entry("good", "2").with_explicit_hash_key("x"),
    ];
    assert_err!(kinesis.put_records(STREAM, records), InvalidArgument);
    assert!(read_from(&kinesis, &shard(0), IteratorPosition::TrimHorizon).is_empty());
}

#[test]
fn get_records_limit_is_1_to_10000() {
    let (kinesis, _) = kinesis_with(1);
    let iterator = iterator(&kinesis, &shard(0), IteratorPosition::TrimHorizon);
    assert_err!(kinesis.get_records(&iterator, 0), InvalidArgument);
    assert_err!(kinesis.get_records(&iterator, 10_001), InvalidArgument);
    kinesis.get_records(&iterator, 10_000).unwrap();
    kinesis.get_records(&iterator, 1).unwrap();
}

#[test]
fn get_records_stops_at_10_mib_and_continues_from_there() {
    let (kinesis, _) = kinesis_with(1);
    let big = |i: usize| {
        let key = format!("k{i:02}");
        PutRecordsEntry::new(
            key.clone(),
            Bytes::from(vec![1_u8; MAX_RECORD_BYTES - key.len()]),
        )
    };
    for chunk in 0..3 {
        kinesis
            .put_records(STREAM, (chunk * 4..chunk * 4 + 4).map(big).collect())
            .unwrap();
    }
    let first = kinesis
        .get_records(
            &iterator(&kinesis, &shard(0), IteratorPosition::TrimHorizon),
            100,
        )
        .unwrap();
    assert_eq!(
        first.records.len(),
        MAX_GET_RECORDS_BYTES / MAX_RECORD_BYTES
    );
    let rest = kinesis
        .get_records(first.next_shard_iterator.as_ref().unwrap(), 100)
        .unwrap();
    assert_eq!(rest.records.len(), 2);
    assert_eq!(&*rest.records[0].partition_key, "k10");
}

#[test]
fn get_records_pages_by_limit_and_keeps_its_place_when_empty() {
    let (kinesis, clock) = kinesis_with(1);
    for i in 0..25 {
        put(&kinesis, "k", &i.to_string());
    }
    clock.advance(Duration::from_secs(5));
    let mut iterator = iterator(&kinesis, &shard(0), IteratorPosition::TrimHorizon);
    let mut sizes = Vec::new();
    let mut behind = Vec::new();
    for _ in 0..4 {
        let output = kinesis.get_records(&iterator, 10).unwrap();
        sizes.push(output.records.len());
        behind.push(output.millis_behind_latest);
        iterator = output.next_shard_iterator.unwrap();
    }
    assert_eq!(sizes, [10, 10, 5, 0]);
    // The records waiting were put five seconds ago; once caught up, 0.
    assert_eq!(behind, [5000, 5000, 0, 0]);
    // The empty read's iterator still points at the end: a new record is read next.
    put(&kinesis, "k", "late");
    let output = kinesis.get_records(&iterator, 10).unwrap();
    assert_eq!(output.records.len(), 1);
    assert_eq!(output.records[0].data, "late".as_bytes());
}

// Iterators.

#[test]
fn every_iterator_type_starts_where_kinesis_says() {
    let (kinesis, _) = kinesis_with(1);
    let sequence: Vec<SequenceNumber> = ["r0", "r1", "r2"]
        .iter()
        .map(|data| put(&kinesis, "k", data).1)
        .collect();
    let check = |position: IteratorPosition, expected: &[&str]| {
        let iterator = iterator(&kinesis, &shard(0), position.clone());
        put(&kinesis, "k", "later");
        let (records, _) = drain(&kinesis, iterator);
        let data: Vec<String> = records
            .iter()
            .map(|r| String::from_utf8(r.data.to_vec()).unwrap())
            .filter(|data| data.starts_with('r'))
            .collect();
        assert_eq!(data, expected, "{position:?}");
        let laters = records.iter().filter(|r| r.data == "later").count();
        assert!(
            laters >= 1,
            "{position:?} reads records put after it was issued"
        );
    };
    check(IteratorPosition::TrimHorizon, &["r0", "r1", "r2"]);
    check(IteratorPosition::Latest, &[]);
    check(
        IteratorPosition::AtSequenceNumber(sequence[1].clone()),
        &["r1", "r2"],
    );
    check(
        IteratorPosition::AfterSequenceNumber(sequence[1].clone()),
        &["r2"],
    );
    check(
        IteratorPosition::AfterSequenceNumber(sequence[2].clone()),
        &[],
    );
}

#[test]
fn latest_reads_only_records_put_after_it_was_issued() {
    let (kinesis, _) = kinesis_with(1);
    put(&kinesis, "k", "before");
    let latest = iterator(&kinesis, &shard(0), IteratorPosition::Latest);
    put(&kinesis, "k", "after");
    let (records, _) = drain(&kinesis, latest);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].data, "after".as_bytes());
}

#[test]
fn at_timestamp_finds_the_first_record_at_or_after_the_time() {
    let (kinesis, clock) = kinesis_with(1);
    let at = |millis: u64| start_time() + Duration::from_millis(millis);
    for (millis, data) in [(1_000, "t1000"), (2_000, "t2000"), (3_000, "t3000")] {
        clock.set(at(millis));
        put(&kinesis, "k", data);
    }
    let check = |time: SystemTime, expected: &[&str]| {
        let read = read_from(&kinesis, &shard(0), IteratorPosition::AtTimestamp(time));
        assert_eq!(read, expected, "{time:?}");
    };
    check(at(2_000), &["t2000", "t3000"]);
    check(at(1_500), &["t2000", "t3000"]);
    check(at(2_000) + Duration::from_micros(1), &["t3000"]);
    check(start_time(), &["t1000", "t2000", "t3000"]);
    check(SystemTime::UNIX_EPOCH, &["t1000", "t2000", "t3000"]);
    // After the last record: nothing yet, then the records that arrive at or after the time.
    let after_last = iterator(
        &kinesis,
        &shard(0),
        IteratorPosition::AtTimestamp(at(3_500)),
    );
    let empty = kinesis.get_records(&after_last, 100).unwrap();
    assert!(empty.records.is_empty());
    clock.set(at(4_000));
    put(&kinesis, "k", "t4000");
    let (records, _) = drain(&kinesis, empty.next_shard_iterator.unwrap());
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].data, "t4000".as_bytes());
    // Older than the trim horizon: the oldest record still kept.
    clock.set(at(1_500) + 24 * HOUR);
    check(start_time(), &["t2000", "t3000", "t4000"]);
}

#[test]
fn sequence_numbers_of_another_shard_or_stream_are_refused() {
    let (kinesis, _) = kinesis_with(4);
    let (shard_id, sequence_number) = put(&kinesis, "a", "x");
    assert_eq!(shard_id, shard(0));
    for position in [
        IteratorPosition::AtSequenceNumber(sequence_number.clone()),
        IteratorPosition::AfterSequenceNumber(sequence_number.clone()),
    ] {
        let error = kinesis
            .get_shard_iterator(STREAM, &shard(1), &position)
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("encodes shardId-000000000000, while it was used in a call to a shard with shardId-000000000001"),
            "{error}"
        );
    }
    let foreign: SequenceNumber = "49590338271490256608559692538361571095921575989136588898"
        .parse()
        .unwrap();
    assert_err!(
        kinesis.get_shard_iterator(
            STREAM,
            &shard(0),
            &IteratorPosition::AtSequenceNumber(foreign)
        ),
        InvalidArgument
    );
    assert_err!(
        kinesis.get_shard_iterator(
            STREAM,
            &shard(0),
            &IteratorPosition::AtSequenceNumber("7".parse().unwrap())
        ),
        InvalidArgument
    );
}

#[test]
fn iterators_expire_five_minutes_after_issue() {
    let (kinesis, clock) = kinesis_with(1);
    put(&kinesis, "k", "x");
    let first = iterator(&kinesis, &shard(0), IteratorPosition::TrimHorizon);
    clock.advance(Duration::from_secs(4 * 60));
    let next = kinesis
        .get_records(&first, 1)
        .unwrap()
        .next_shard_iterator
        .unwrap();
    clock.advance(Duration::from_secs(60));
    kinesis.get_records(&first, 1).unwrap();
    clock.advance(Duration::from_millis(1));
    assert_err!(kinesis.get_records(&first, 1), ExpiredIterator);
    // The iterator a read hands out is new: it lives five minutes from that read.
    kinesis.get_records(&next, 1).unwrap();
    clock.advance(Duration::from_secs(4 * 60));
    assert_err!(kinesis.get_records(&next, 1), ExpiredIterator);
}

#[test]
fn the_iterator_lifetime_is_configurable() {
    let clock = ManualClock::new(start_time());
    let kinesis = EmbeddedKinesis::builder()
        .clock(clock.clone())
        .iterator_ttl(Duration::from_secs(1))
        .build();
    kinesis.create_stream(STREAM, 1).unwrap();
    let iterator = iterator(&kinesis, &shard(0), IteratorPosition::Latest);
    clock.advance(Duration::from_millis(1_001));
    assert_err!(kinesis.get_records(&iterator, 1), ExpiredIterator);
}

#[test]
fn iterators_die_with_their_stream() {
    let (kinesis, _) = kinesis_with(1);
    let iterator = iterator(&kinesis, &shard(0), IteratorPosition::TrimHorizon);
    kinesis.delete_stream(STREAM).unwrap();
    assert_err!(kinesis.get_records(&iterator, 1), NotFound);
    // A new stream of the same name does not honour the old stream's iterators.
    kinesis.create_stream(STREAM, 1).unwrap();
    assert_err!(kinesis.get_records(&iterator, 1), NotFound);
}

#[test]
fn text_that_is_not_an_iterator_is_refused() {
    let (kinesis, _) = kinesis_with(1);
    for garbage in ["", "AAAA", "definitely not an iterator"] {
        assert_err!(kinesis.get_records(garbage, 1), InvalidArgument);
    }
}

mod readers;
mod retention_and_resharding;
