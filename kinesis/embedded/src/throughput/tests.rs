use std::time::{Duration, SystemTime};

use bytes::Bytes;

use super::*;
use crate::{ManualClock, PutRecordsEntry};

const MIB: usize = 1024 * 1024;

/// A clock at the start of a whole minute, so that on-demand windows line up with the test.
fn clock() -> ManualClock {
    ManualClock::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_040))
}

fn kinesis(clock: &ManualClock, throttle: bool) -> EmbeddedKinesis {
    EmbeddedKinesis::builder()
        .clock(clock.clone())
        .throttle(throttle)
        .build()
}

fn records(count: usize, data: &Bytes) -> Vec<PutRecordsEntry> {
    (0..count)
        .map(|position| PutRecordsEntry::new(format!("key-{position}"), data.clone()))
        .collect()
}

fn trim_horizon(kinesis: &EmbeddedKinesis, stream: &str, shard: &str) -> String {
    kinesis
        .get_shard_iterator(stream, shard, &IteratorPosition::TrimHorizon)
        .unwrap()
}

#[test]
fn records_past_a_shards_thousand_a_second_fail_one_by_one() {
    let clock = clock();
    let kinesis = kinesis(&clock, true);
    kinesis.create_stream("orders", 1).unwrap();
    let small = Bytes::from_static(b"{}");
    for _ in 0..2 {
        let results = kinesis
            .put_records_each("orders", records(400, &small))
            .unwrap();
        assert!(results.iter().all(Result::is_ok));
    }
    let results = kinesis
        .put_records_each("orders", records(400, &small))
        .unwrap();
    let (written, refused): (Vec<_>, Vec<_>) = results.iter().partition(|put| put.is_ok());
    assert_eq!((written.len(), refused.len()), (200, 200));
    // The entries past the limit are the ones that fail.
    assert!(results[..200].iter().all(Result::is_ok));
    assert_eq!(
        results[200],
        Err(ThroughputExceeded {
            shard_id: "shardId-000000000000".to_owned(),
            message: "Rate exceeded for shard shardId-000000000000 in stream orders under \
                      account 000000000000."
                .to_owned(),
        })
    );
    let read = kinesis
        .get_records(
            &trim_horizon(&kinesis, "orders", "shardId-000000000000"),
            10_000,
        )
        .unwrap();
    assert_eq!(read.records.len(), 1_000);

    clock.advance(Duration::from_millis(100));
    let results = kinesis
        .put_records_each("orders", records(150, &small))
        .unwrap();
    assert_eq!(results.iter().filter(|put| put.is_ok()).count(), 100);
}

#[test]
fn a_mebibyte_a_second_per_shard_and_put_records_is_all_or_nothing() {
    let clock = clock();
    let kinesis = kinesis(&clock, true);
    kinesis.create_stream("orders", 1).unwrap();
    let quarter = Bytes::from(vec![7_u8; MIB / 4 - 16]);
    kinesis.put_records("orders", records(3, &quarter)).unwrap();
    let refused = kinesis
        .put_records("orders", records(2, &quarter))
        .unwrap_err();
    assert!(
        matches!(&refused, SourceError::Throttled { message } if message.contains("shardId-000000000000")),
        "{refused:?}"
    );
    let refused = kinesis
        .put_record("orders", PutRecordsEntry::new("k", quarter.clone()))
        .map(drop);
    assert!(
        refused.is_ok(),
        "the fourth quarter still fits: {refused:?}"
    );
    let again = kinesis.put_record("orders", PutRecordsEntry::new("k", quarter.clone()));
    assert!(matches!(again, Err(SourceError::Throttled { .. })));
    let read = kinesis
        .get_records(
            &trim_horizon(&kinesis, "orders", "shardId-000000000000"),
            100,
        )
        .unwrap();
    assert_eq!(read.records.len(), 4, "the refused call wrote nothing");
}

#[test]
fn what_fails_on_a_shard_is_the_tail_of_what_the_call_sent_it() {
    let clock = clock();
    let kinesis = kinesis(&clock, true);
    kinesis.create_stream("orders", 1).unwrap();
    let big = PutRecordsEntry::new("k", vec![0_u8; MIB / 2]);
    let small = PutRecordsEntry::new("k", "{}");
    let results = kinesis
        .put_records_each("orders", vec![big.clone(), big, small.clone(), small])
        .unwrap();
    let admitted: Vec<bool> = results.iter().map(Result::is_ok).collect();
    // The second half-mebibyte does not fit (the key's byte counts too); the small records
    // after it would, but are refused with it, so that the shard's order holds on a resend.
    assert_eq!(admitted, [true, false, false, false]);
}

#[test]
fn each_shard_has_its_own_write_budget() {
    let clock = clock();
    let kinesis = kinesis(&clock, true);
    kinesis.create_stream("orders", 2).unwrap();
    let small = Bytes::from_static(b"x");
    let to_shard = |hash_key: &str| {
        (0..500)
            .map(|position| {
                PutRecordsEntry::new(format!("k{position}"), small.clone())
                    .with_explicit_hash_key(hash_key)
            })
            .collect::<Vec<_>>()
    };
    let upper = (1_u128 << 127).to_string();
    for hash_key in ["0", "0", upper.as_str(), upper.as_str()] {
        let results = kinesis
            .put_records_each("orders", to_shard(hash_key))
            .unwrap();
        assert!(results.iter().all(Result::is_ok), "{hash_key}");
    }
    let results = kinesis.put_records_each("orders", to_shard("0")).unwrap();
    assert!(results.iter().all(Result::is_err));
}

#[test]
fn standard_reads_take_five_calls_a_second_and_enhanced_fan_out_is_exempt() {
    let clock = clock();
    let kinesis = kinesis(&clock, true);
    kinesis.create_stream("orders", 1).unwrap();
    let iterator = trim_horizon(&kinesis, "orders", "shardId-000000000000");
    for _ in 0..5 {
        kinesis.get_records_limited(&iterator, 100).unwrap();
    }
    let throttled = kinesis.get_records_limited(&iterator, 100).unwrap_err();
    assert_eq!(
        throttled,
        SourceError::Throttled {
            message: "Rate exceeded for Shard - 000000000000/orders/shardId-000000000000"
                .to_owned()
        }
    );
    // The read enhanced fan-out makes is not counted.
    for _ in 0..20 {
        kinesis.get_records(&iterator, 100).unwrap();
    }
    clock.advance(Duration::from_millis(200));
    kinesis.get_records_limited(&iterator, 100).unwrap();
}

#[test]
fn a_read_of_many_bytes_keeps_the_next_reads_out_while_it_is_paid_for() {
    let clock = clock();
    let kinesis = kinesis(&clock, true);
    kinesis.create_stream("orders", 1).unwrap();
    let almost_mib = Bytes::from(vec![1_u8; MIB - 16]);
    for _ in 0..4 {
        kinesis
            .put_record("orders", PutRecordsEntry::new("k", almost_mib.clone()))
            .unwrap();
        clock.advance(Duration::from_secs(1));
    }
    let iterator = trim_horizon(&kinesis, "orders", "shardId-000000000000");
    let read = kinesis.get_records_limited(&iterator, 100).unwrap();
    assert_eq!(read.records.len(), 4);
    let next = read.next_shard_iterator.unwrap();
    // About 4 MiB at 2 MiB/s: the shard's reads are taken for the next 2 seconds.
    clock.advance(Duration::from_millis(1_990));
    assert!(matches!(
        kinesis.get_records_limited(&next, 100),
        Err(SourceError::Throttled { .. })
    ));
    clock.advance(Duration::from_millis(10));
    assert!(kinesis.get_records_limited(&next, 100).is_ok());
}

#[test]
fn get_shard_iterator_takes_five_calls_a_second_per_shard() {
    let clock = clock();
    let kinesis = kinesis(&clock, true);
    kinesis.create_stream("orders", 2).unwrap();
    let at_start = |shard: &str| {
        kinesis.get_shard_iterator_limited("orders", shard, &IteratorPosition::TrimHorizon)
    };
    for _ in 0..5 {
        at_start("shardId-000000000000").unwrap();
    }
    assert_eq!(
        at_start("shardId-000000000000").unwrap_err(),
        SourceError::Throttled {
            message: "Rate exceeded for shard shardId-000000000000 in stream orders under \
                      account 000000000000."
                .to_owned()
        }
    );
    at_start("shardId-000000000001").unwrap();
}

#[test]
fn control_calls_are_limited_per_account_and_per_stream() {
    let clock = clock();
    let kinesis = kinesis(&clock, true);
    kinesis.create_stream("orders", 1).unwrap();
    kinesis.create_stream("refunds", 1).unwrap();
    for stream in ["orders", "refunds"].iter().cycle().take(10) {
        kinesis
            .admit_api_call(ApiCall::DescribeStream, stream)
            .unwrap();
    }
    assert_eq!(
        kinesis.admit_api_call(ApiCall::DescribeStream, "orders"),
        Err(SourceError::LimitExceeded {
            message: "Rate exceeded for stream orders under account 000000000000.".to_owned()
        })
    );
    for _ in 0..20 {
        kinesis
            .admit_api_call(ApiCall::DescribeStreamSummary, "orders")
            .unwrap();
    }
    assert!(
        kinesis
            .admit_api_call(ApiCall::DescribeStreamSummary, "refunds")
            .is_err()
    );
    for _ in 0..1_000 {
        kinesis
            .admit_api_call(ApiCall::ListShards, "orders")
            .unwrap();
    }
    assert!(
        kinesis
            .admit_api_call(ApiCall::ListShards, "orders")
            .is_err()
    );
    kinesis
        .admit_api_call(ApiCall::ListShards, "refunds")
        .unwrap();
}

#[test]
fn without_throttle_nothing_is_limited() {
    let clock = clock();
    let kinesis = kinesis(&clock, false);
    kinesis.create_stream("orders", 1).unwrap();
    let small = Bytes::from_static(b"x");
    for _ in 0..4 {
        kinesis.put_records("orders", records(500, &small)).unwrap();
    }
    let iterator = trim_horizon(&kinesis, "orders", "shardId-000000000000");
    for _ in 0..20 {
        kinesis.get_records_limited(&iterator, 10).unwrap();
        kinesis
            .admit_api_call(ApiCall::DescribeStream, "orders")
            .unwrap();
    }
}

/// Writes `mib` records of almost 1 MiB to the shard holding hash key 0.
fn write_to_first_shard(kinesis: &EmbeddedKinesis, mib: usize) {
    let almost_mib = Bytes::from(vec![2_u8; MIB - 16]);
    for _ in 0..mib {
        kinesis
            .put_record(
                "orders",
                PutRecordsEntry::new("k", almost_mib.clone()).with_explicit_hash_key("0"),
            )
            .unwrap();
    }
}

#[test]
fn an_on_demand_stream_splits_a_shard_written_past_500_kib_a_second() {
    let clock = clock();
    let kinesis = kinesis(&clock, false);
    kinesis.create_stream("orders", 4).unwrap();
    kinesis.set_on_demand("orders", true).unwrap();
    // 500 KiB/s over a minute is 30,720,000 bytes: 29 records of almost 1 MiB stay below it,
    // the 30th passes it.
    write_to_first_shard(&kinesis, 29);
    assert_eq!(kinesis.list_shards("orders").unwrap().len(), 4);
    write_to_first_shard(&kinesis, 1);
    let shards = kinesis.list_shards("orders").unwrap();
    assert_eq!(shards.len(), 6);
    assert!(
        shards[0].ending_sequence_number.is_some(),
        "the hot shard closed"
    );
    for (child, starting_hash_key) in [
        (4, 0),
        (5, shards[0].hash_key_range.ending_hash_key / 2 + 1),
    ] {
        assert_eq!(
            shards[child].parent_shard_id.as_deref(),
            Some("shardId-000000000000")
        );
        assert_eq!(
            shards[child].hash_key_range.starting_hash_key,
            starting_hash_key
        );
    }
    // The parent reads to its end and names its children; the next write lands in a child.
    let mut iterator = trim_horizon(&kinesis, "orders", "shardId-000000000000");
    let mut read = 0;
    let children = loop {
        let output = kinesis.get_records(&iterator, 10).unwrap();
        read += output.records.len();
        match output.next_shard_iterator {
            Some(next) => iterator = next,
            None => break output.child_shards,
        }
    };
    assert_eq!(read, 30);
    assert_eq!(children.len(), 2);
    let put = kinesis
        .put_record(
            "orders",
            PutRecordsEntry::new("k", "{}").with_explicit_hash_key("0"),
        )
        .unwrap();
    assert_eq!(&*put.shard_id, "shardId-000000000004");
    let child = kinesis
        .get_records(
            &trim_horizon(&kinesis, "orders", "shardId-000000000004"),
            10,
        )
        .unwrap();
    assert_eq!(child.records[0].sequence_number, put.sequence_number);
}

#[test]
fn writes_spread_over_minutes_or_a_provisioned_stream_never_split() {
    let clock = clock();
    let kinesis = kinesis(&clock, false);
    kinesis.create_stream("orders", 4).unwrap();
    kinesis.set_on_demand("orders", true).unwrap();
    // 20 MiB in each of two minutes: never past the rate within one.
    write_to_first_shard(&kinesis, 20);
    clock.advance(Duration::from_secs(60));
    write_to_first_shard(&kinesis, 20);
    assert_eq!(kinesis.list_shards("orders").unwrap().len(), 4);

    // Back in PROVISIONED mode, the stream keeps its shards whatever is written.
    kinesis.set_on_demand("orders", false).unwrap();
    assert!(!kinesis.is_on_demand("orders").unwrap());
    clock.advance(Duration::from_secs(60));
    write_to_first_shard(&kinesis, 40);
    assert_eq!(kinesis.list_shards("orders").unwrap().len(), 4);
}
