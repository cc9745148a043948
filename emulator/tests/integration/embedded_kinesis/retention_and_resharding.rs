//! Retention, and resharding's lineage: what the embedded Kinesis keeps, and how a split or merge reads.

use super::*;

// Retention.

#[test]
fn records_older_than_the_retention_period_are_not_returned() {
    let clock = ManualClock::new(start_time());
    // Iterators outlive the test, so that one issued early can be used after the trim.
    let kinesis = EmbeddedKinesis::builder()
        .clock(clock.clone())
        .iterator_ttl(48 * HOUR)
        .build();
    kinesis.create_stream(STREAM, 1).unwrap();
    put(&kinesis, "k", "old");
    clock.advance(HOUR);
    put(&kinesis, "k", "new");
    let trim_horizon = iterator(&kinesis, &shard(0), IteratorPosition::TrimHorizon);
    clock.set(start_time() + 24 * HOUR);
    assert_eq!(
        read_from(&kinesis, &shard(0), IteratorPosition::TrimHorizon),
        ["old", "new"]
    );
    clock.advance(Duration::from_millis(1));
    assert_eq!(
        read_from(&kinesis, &shard(0), IteratorPosition::TrimHorizon),
        ["new"]
    );
    // An iterator issued before the trim skips what was trimmed since.
    let (records, _) = drain(&kinesis, trim_horizon);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].data, "new".as_bytes());
}

#[test]
fn the_retention_period_is_configurable_and_changes_as_kinesis_allows() {
    let clock = ManualClock::new(start_time());
    let kinesis = EmbeddedKinesis::builder()
        .clock(clock.clone())
        .retention_period(Duration::from_secs(60))
        .build();
    kinesis.create_stream(STREAM, 1).unwrap();
    put(&kinesis, "k", "x");
    clock.advance(Duration::from_secs(61));
    assert!(read_from(&kinesis, &shard(0), IteratorPosition::TrimHorizon).is_empty());

    assert_err!(
        kinesis.increase_stream_retention_period(STREAM, 23),
        InvalidArgument
    );
    assert_err!(
        kinesis.increase_stream_retention_period(STREAM, 8761),
        InvalidArgument
    );
    kinesis
        .increase_stream_retention_period(STREAM, 48)
        .unwrap();
    assert_eq!(
        kinesis
            .describe_stream_summary(STREAM)
            .unwrap()
            .retention_period,
        48 * HOUR
    );
    assert_err!(
        kinesis.increase_stream_retention_period(STREAM, 24),
        InvalidArgument
    );
    assert_err!(
        kinesis.decrease_stream_retention_period(STREAM, 72),
        InvalidArgument
    );

    put(&kinesis, "k", "thirty hours old");
    clock.advance(30 * HOUR);
    assert_eq!(
        read_from(&kinesis, &shard(0), IteratorPosition::TrimHorizon),
        ["thirty hours old"]
    );
    kinesis
        .decrease_stream_retention_period(STREAM, 24)
        .unwrap();
    assert!(read_from(&kinesis, &shard(0), IteratorPosition::TrimHorizon).is_empty());
}

// Resharding.

#[test]
fn a_split_closes_the_parent_and_opens_two_children() {
    let (kinesis, _) = kinesis_with(1);
    let (_, before) = put(&kinesis, "a", "before");
    let middle = 1_u128 << 127;
    kinesis
        .split_shard(STREAM, &shard(0), &middle.to_string())
        .unwrap();
    let shards = kinesis.list_shards(STREAM).unwrap();
    check_lineage(&shards);
    let ids: Vec<&str> = shards.iter().map(|s| s.shard_id.as_str()).collect();
    assert_eq!(ids, [shard(0), shard(1), shard(2)]);
    let ending = shards[0].ending_sequence_number.clone().unwrap();
    assert!(before < ending);
    for (child, range) in shards[1..]
        .iter()
        .zip([(0, middle - 1), (middle, u128::MAX)])
    {
        assert_eq!(child.parent_shard_id.as_deref(), Some(shard(0).as_str()));
        assert_eq!(child.adjacent_parent_shard_id, None);
        assert_eq!(
            child.hash_key_range,
            HashKeyRange {
                starting_hash_key: range.0,
                ending_hash_key: range.1,
            }
        );
        assert!(!child.is_closed());
        assert!(ending < child.starting_sequence_number);
    }
}

#[test]
fn puts_after_a_split_land_only_in_the_children() {
    let (kinesis, _) = kinesis_with(1);
    put(&kinesis, "k", "before");
    kinesis
        .split_shard(STREAM, &shard(0), &(1_u128 << 100).to_string())
        .unwrap();
    let shards = kinesis.list_shards(STREAM).unwrap();
    let ending = shards[0].ending_sequence_number.clone().unwrap();
    for i in 0..200 {
        let key = format!("key-{i}");
        let output = kinesis.put_record(STREAM, entry(&key, "after")).unwrap();
        let hash = u128::from_str_radix(&md5_hex(&key), 16).unwrap();
        let owner = shards
            .iter()
            .find(|shard| !shard.is_closed() && shard.hash_key_range.contains(hash))
            .unwrap();
        assert_eq!(&*output.shard_id, owner.shard_id);
        assert!(ending < output.sequence_number);
    }
    // Explicit hash keys at the very bottom of the space go to the lower child too.
    check_explicit(&kinesis, "0", 1);
    assert_eq!(
        read_from(&kinesis, &shard(0), IteratorPosition::TrimHorizon),
        ["before"]
    );
}

/// The MD5 digest of `text` in hex, from a small independent implementation used only to
/// cross-check routing over many keys.
fn md5_hex(text: &str) -> String {
    let shifts: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    let constants: Vec<u32> = (0..64)
        .map(|i: i32| ((f64::from(i + 1)).sin().abs() * 4_294_967_296.0) as u32)
        .collect();
    let mut message = text.as_bytes().to_vec();
    let bit_length = (message.len() as u64).wrapping_mul(8);
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&bit_length.to_le_bytes());
    let mut state: [u32; 4] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];
    for block in message.chunks(64) {
        let words: Vec<u32> = block
            .chunks(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let [mut a, mut b, mut c, mut d] = state;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let rotated = a
                .wrapping_add(f)
                .wrapping_add(constants[i])
                .wrapping_add(words[g])
                .rotate_left(shifts[i]);
            (a, d, c) = (d, c, b);
            b = b.wrapping_add(rotated);
        }
        for (word, add) in state.iter_mut().zip([a, b, c, d]) {
            *word = word.wrapping_add(add);
        }
    }
    state
        .iter()
        .flat_map(|word| word.to_le_bytes())
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[test]
fn the_cross_check_md5_matches_known_digests() {
    assert_eq!(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(md5_hex("a"), "0cc175b9c0f1b6a831c399e269772661");
    assert_eq!(md5_hex("order-1"), "6e7f85a9d0fe9b5dfb504c6f2991d744");
}

#[test]
fn a_closed_shard_reads_to_its_end_then_names_its_children() {
    let (kinesis, _) = kinesis_with(1);
    for i in 0..5 {
        put(&kinesis, "a", &format!("r{i}"));
    }
    let early = iterator(&kinesis, &shard(0), IteratorPosition::TrimHorizon);
    kinesis
        .split_shard(STREAM, &shard(0), &(1_u128 << 127).to_string())
        .unwrap();
    let shards = kinesis.list_shards(STREAM).unwrap();
    let expected_children: Vec<ChildShard> = shards[1..]
        .iter()
        .map(|child| ChildShard {
            shard_id: child.shard_id.clone(),
            parent_shards: vec![shard(0)],
            hash_key_range: child.hash_key_range,
        })
        .collect();

    // Limit 2: two reads with more to come, then the last records with the end.
    let mut iterator = early;
    let mut sizes = Vec::new();
    let last = loop {
        let output = kinesis.get_records(&iterator, 2).unwrap();
        sizes.push(output.records.len());
        match &output.next_shard_iterator {
            Some(next) => {
                assert!(output.child_shards.is_empty());
                iterator = next.clone();
            }
            None => break output,
        }
    };
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(last.child_shards, expected_children);
    assert_eq!(last.millis_behind_latest, 0);

    // Iterators issued on the closed shard at LATEST, or at or after its ending sequence
    // number (which no record has), are at the end at once.
    let ending = shards[0].ending_sequence_number.clone().unwrap();
    for position in [
        IteratorPosition::Latest,
        IteratorPosition::AfterSequenceNumber(ending.clone()),
        IteratorPosition::AtSequenceNumber(ending),
    ] {
        let output = kinesis
            .get_records(&self::iterator(&kinesis, &shard(0), position), 10)
            .unwrap();
        assert!(output.records.is_empty());
        assert_eq!(output.next_shard_iterator, None);
        assert_eq!(output.child_shards, expected_children);
    }
}

#[test]
fn a_merge_closes_two_adjacent_shards_into_one_child() {
    let (kinesis, _) = kinesis_with(3);
    put(&kinesis, "a", "in shard 0");
    kinesis.merge_shards(STREAM, &shard(1), &shard(0)).unwrap();
    let shards = kinesis.list_shards(STREAM).unwrap();
    check_lineage(&shards);
    let child = &shards[3];
    assert_eq!(child.shard_id, shard(3));
    assert_eq!(child.parent_shard_id.as_deref(), Some(shard(1).as_str()));
    assert_eq!(
        child.adjacent_parent_shard_id.as_deref(),
        Some(shard(0).as_str())
    );
    assert_eq!(
        child.hash_key_range,
        HashKeyRange {
            starting_hash_key: 0,
            ending_hash_key: shards[1].hash_key_range.ending_hash_key,
        }
    );
    // Both parents end by naming the child with both its parents.
    let expected = vec![ChildShard {
        shard_id: shard(3),
        parent_shards: vec![shard(1), shard(0)],
        hash_key_range: child.hash_key_range,
    }];
    for parent in [0, 1] {
        let (records, last) = drain(
            &kinesis,
            iterator(&kinesis, &shard(parent), IteratorPosition::TrimHorizon),
        );
        assert_eq!(records.len(), usize::from(parent == 0));
        assert_eq!(last.next_shard_iterator, None);
        assert_eq!(last.child_shards, expected);
    }
    // New records with keys of either parent go to the child.
    assert_eq!(put(&kinesis, "a", "x").0, shard(3));
    assert_eq!(put(&kinesis, "c", "x").0, shard(3));
}

#[test]
fn only_adjacent_open_shards_merge() {
    let (kinesis, _) = kinesis_with(3);
    assert_err!(
        kinesis.merge_shards(STREAM, &shard(0), &shard(2)),
        InvalidArgument
    );
    assert_err!(
        kinesis.merge_shards(STREAM, &shard(1), &shard(1)),
        InvalidArgument
    );
    kinesis.merge_shards(STREAM, &shard(0), &shard(1)).unwrap();
    assert_err!(
        kinesis.merge_shards(STREAM, &shard(1), &shard(2)),
        ResourceInUse
    );
    assert_err!(kinesis.split_shard(STREAM, &shard(0), "5"), ResourceInUse);
    kinesis.merge_shards(STREAM, &shard(3), &shard(2)).unwrap();
    check_lineage(&kinesis.list_shards(STREAM).unwrap());
}

#[test]
fn a_split_key_must_lie_strictly_inside_the_shard() {
    let (kinesis, _) = kinesis_with(2);
    let second_start = 1_u128 << 127;
    for invalid in [
        "0".to_owned(),
        second_start.to_string(),
        "abc".to_owned(),
        "-5".to_owned(),
        "340282366920938463463374607431768211456".to_owned(),
    ] {
        assert_err!(
            kinesis.split_shard(STREAM, &shard(0), &invalid),
            InvalidArgument
        );
    }
    // The shard's last key is fine: the upper child then holds that one key.
    kinesis
        .split_shard(STREAM, &shard(0), &(second_start - 1).to_string())
        .unwrap();
    let shards = kinesis.list_shards(STREAM).unwrap();
    check_lineage(&shards);
    assert_eq!(
        shards[3].hash_key_range,
        HashKeyRange {
            starting_hash_key: second_start - 1,
            ending_hash_key: second_start - 1,
        }
    );
}

#[test]
fn update_shard_count_leaves_an_even_layout_with_real_lineage() {
    for (from, to) in [
        (1, 2),
        (2, 1),
        (2, 3),
        (3, 2),
        (3, 5),
        (4, 7),
        (5, 3),
        (8, 16),
        (16, 8),
        (6, 6),
    ] {
        let (kinesis, _) = kinesis_with(from);
        let keys: Vec<String> = (0..300).map(|i| format!("key-{i}")).collect();
        for key in &keys {
            put(&kinesis, key, key);
        }
        let output = kinesis
            .update_shard_count(STREAM, to, ScalingType::UniformScaling)
            .unwrap();
        assert_eq!(
            (output.current_shard_count, output.target_shard_count),
            (from, to)
        );
        assert_eq!(output.stream_arn, kinesis.stream_arn(STREAM));
        let shards = kinesis.list_shards(STREAM).unwrap();
        check_lineage(&shards);
        let mut open: Vec<HashKeyRange> = open_shards(&kinesis)
            .iter()
            .map(|s| s.hash_key_range)
            .collect();
        open.sort_by_key(|range| range.starting_hash_key);
        assert_eq!(open, even_ranges(u128::from(to)), "{from} -> {to}");
        // No record was lost: every shard, read to its end, holds the records put before.
        let mut read: Vec<String> = shards
            .iter()
            .flat_map(|s| read_from(&kinesis, &s.shard_id, IteratorPosition::TrimHorizon))
            .collect();
        read.sort();
        let mut expected = keys.clone();
        expected.sort();
        assert_eq!(read, expected, "{from} -> {to}");
    }
}

#[test]
fn update_shard_count_from_one_to_two_is_one_split_and_back_one_merge() {
    let (kinesis, _) = kinesis_with(1);
    kinesis
        .update_shard_count(STREAM, 2, ScalingType::UniformScaling)
        .unwrap();
    let shards = kinesis.list_shards(STREAM).unwrap();
    assert_eq!(shards.len(), 3);
    assert!(
        shards[1..]
            .iter()
            .all(|s| s.parent_shard_id.as_deref() == Some(shard(0).as_str()))
    );
    kinesis
        .update_shard_count(STREAM, 1, ScalingType::UniformScaling)
        .unwrap();
    let shards = kinesis.list_shards(STREAM).unwrap();
    assert_eq!(shards.len(), 4);
    assert_eq!(
        shards[3].parent_shard_id.as_deref(),
        Some(shard(1).as_str())
    );
    assert_eq!(
        shards[3].adjacent_parent_shard_id.as_deref(),
        Some(shard(2).as_str())
    );
}

#[test]
fn update_shard_count_keeps_to_kinesis_limits() {
    let (kinesis, _) = kinesis_with(4);
    let scale = |to| kinesis.update_shard_count(STREAM, to, ScalingType::UniformScaling);
    assert_err!(scale(9), LimitExceeded);
    assert_err!(scale(1), LimitExceeded);
    assert_err!(scale(0), InvalidArgument);
    scale(8).unwrap();
    scale(4).unwrap();
    scale(2).unwrap();
    assert_eq!("UNIFORM_SCALING".parse(), Ok(ScalingType::UniformScaling));
    assert_err!("uniform".parse::<ScalingType>(), InvalidArgument);

    let small = EmbeddedKinesis::builder().shard_limit(3).build();
    small.create_stream(STREAM, 2).unwrap();
    assert_err!(
        small.update_shard_count(STREAM, 4, ScalingType::UniformScaling),
        LimitExceeded
    );
    small
        .update_shard_count(STREAM, 3, ScalingType::UniformScaling)
        .unwrap();
}

#[test]
fn a_closed_shard_expires_one_retention_period_after_closing() {
    let (kinesis, clock) = kinesis_with(1);
    put(&kinesis, "k", "x");
    clock.advance(HOUR);
    kinesis
        .split_shard(STREAM, &shard(0), &(1_u128 << 127).to_string())
        .unwrap();
    clock.advance(24 * HOUR);
    assert_eq!(kinesis.list_shards(STREAM).unwrap().len(), 3);
    clock.advance(Duration::from_millis(1));
    let listed: Vec<String> = kinesis
        .list_shards(STREAM)
        .unwrap()
        .into_iter()
        .map(|s| s.shard_id)
        .collect();
    assert_eq!(listed, [shard(1), shard(2)]);
    assert_err!(
        kinesis.get_shard_iterator(STREAM, &shard(0), &IteratorPosition::TrimHorizon),
        NotFound
    );
}
