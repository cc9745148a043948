use super::*;

#[test]
fn tagged_iterators_round_trip_and_leave_foreign_ones_alone() {
    let encoded = TaggedIterator::encode("orders", "shardId-000000000001", "AAAA/b+c==");
    assert_eq!(
        TaggedIterator::decode(&encoded),
        Some(TaggedIterator {
            stream: "orders",
            shard_id: "shardId-000000000001",
            iterator: "AAAA/b+c=="
        })
    );
    assert_eq!(TaggedIterator::decode("AAAAAAAAAAGM3/mYYCyf+Pij3=="), None);
    assert_eq!(TaggedIterator::decode("a::b"), None);
}

#[track_caller]
fn check_order(shards: &[(&str, &[&str])], expected: &[&str]) {
    let shards = shards
        .iter()
        .map(|(id, parents)| Shard {
            shard_id: (*id).to_owned(),
            parent_shard_id: parents.first().map(|parent| (*parent).to_owned()),
            adjacent_parent_shard_id: parents.get(1).map(|parent| (*parent).to_owned()),
            hash_key_range: HashKeyRange {
                starting_hash_key: 0,
                ending_hash_key: u128::MAX,
            },
            starting_sequence_number: "1".parse().unwrap(),
            ending_sequence_number: None,
        })
        .collect();
    let ordered: Vec<String> = parents_first(shards)
        .into_iter()
        .map(|shard| shard.shard_id)
        .collect();
    assert_eq!(ordered, expected);
}

#[test]
fn shards_come_after_their_parents() {
    check_order(&[("a", &[]), ("b", &["a"])], &["a", "b"]);
    check_order(
        &[("c", &["a", "b"]), ("b", &[]), ("a", &[])],
        &["b", "a", "c"],
    );
    check_order(
        &[("d", &["c"]), ("c", &["a"]), ("a", &[])],
        &["a", "c", "d"],
    );
    // A parent that has expired (not listed) does not hold its child back.
    check_order(&[("b", &["gone"]), ("a", &[])], &["b", "a"]);
}

#[track_caller]
fn check_error(code: &str, status: u16, reshapes: bool, expected: SourceError) {
    let error = classify_service_error(code, status, reshapes, "m".into(), "stream s".into());
    assert_eq!(error, expected);
}

#[test]
fn error_codes_map_to_kinesis_terms() {
    let throttled = SourceError::Throttled {
        message: "m".into(),
    };
    check_error(
        "ExpiredIteratorException",
        400,
        false,
        SourceError::ExpiredIterator,
    );
    check_error(
        "ProvisionedThroughputExceededException",
        400,
        false,
        throttled.clone(),
    );
    check_error("LimitExceededException", 400, false, throttled.clone());
    check_error(
        "LimitExceededException",
        400,
        true,
        SourceError::LimitExceeded {
            message: "m".into(),
        },
    );
    check_error(
        "ResourceNotFoundException",
        400,
        false,
        SourceError::NotFound {
            what: "stream s".into(),
        },
    );
    check_error("", 429, false, throttled);
    check_error(
        "",
        500,
        false,
        SourceError::Service {
            message: "m".into(),
        },
    );
    check_error(
        "InternalFailureException",
        500,
        false,
        SourceError::Service {
            message: "m".into(),
        },
    );
}

#[test]
fn pacing_keeps_five_reads_a_second_and_two_mib_a_second() {
    let pacing = ReadPacing::KINESIS_LIMITS;
    let start = Instant::now();
    let mut pacer = ShardPacer::from(start);
    let waits: Vec<u128> = (0..6)
        .map(|_| pacer.book(start, &pacing).as_millis())
        .collect();
    assert_eq!(waits, [0, 200, 400, 600, 800, 1000]);

    let mut pacer = ShardPacer::from(start);
    assert_eq!(pacer.book(start, &pacing), Duration::ZERO);
    pacer.record_read(start, 10 * 1024 * 1024, &pacing);
    assert_eq!(
        pacer.book(start, &pacing),
        Duration::from_secs(5),
        "after a 10 MiB read the shard rests 5 s"
    );
    let later = start + Duration::from_secs(60);
    assert_eq!(
        pacer.book(later, &pacing),
        Duration::ZERO,
        "rest is not saved up"
    );
}

#[test]
fn times_read_through_an_f64_round_to_the_millisecond() {
    let call = Call::read("GetRecords", "orders", None);
    let read = DateTime::from_secs_f64(1_700_000_000.123);
    assert_ne!(
        read.subsec_nanos(),
        123_000_000,
        "the SDK's reading is inexact"
    );
    assert_eq!(
        system_time(&read, &call),
        Ok(SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123))
    );
}

#[test]
fn unlimited_pacing_never_waits() {
    let start = Instant::now();
    let mut pacer = ShardPacer::from(start);
    pacer.record_read(start, 100 * 1024 * 1024, &ReadPacing::UNLIMITED);
    assert_eq!(pacer.book(start, &ReadPacing::UNLIMITED), Duration::ZERO);
    assert_eq!(pacer.book(start, &ReadPacing::UNLIMITED), Duration::ZERO);
}
