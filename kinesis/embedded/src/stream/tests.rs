//! The stream's own invariants: shard ids and what one stream holds and answers.

use super::*;

#[test]
fn shard_ids_read_back() {
    assert_eq!(shard_id(7), "shardId-000000000007");
    assert_eq!(shard_index("shardId-000000000007"), Some(7));
    for foreign in [
        "shardId-7",
        "shard-000000000007",
        "shardId-00000000000x",
        "",
    ] {
        assert_eq!(shard_index(foreign), None, "{foreign}");
    }
}

#[test]
fn the_arena_keeps_each_records_bytes_and_leaves_large_data_where_it_is() {
    let mut arena = DataArena::default();
    // Enough small records to fill several chunks, of sizes that do not divide a chunk.
    let small: Vec<Bytes> = (0..2_000_u32)
        .map(|i| Bytes::from(vec![(i % 251) as u8; 1 + (i as usize * 7) % 97]))
        .collect();
    let kept: Vec<Bytes> = small.iter().map(|data| arena.keep(data.clone())).collect();
    assert_eq!(kept, small);
    for (data, kept) in small.iter().zip(&kept) {
        assert_ne!(data.as_ptr(), kept.as_ptr(), "small data is copied");
    }
    // Neighbours lie next to each other within a chunk.
    assert_eq!(
        kept[1].as_ptr(),
        kept[0].as_ptr().wrapping_add(kept[0].len())
    );
    let large = Bytes::from(vec![9_u8; DataArena::LARGEST_COPIED + 1]);
    let kept_large = arena.keep(large.clone());
    assert_eq!(
        kept_large.as_ptr(),
        large.as_ptr(),
        "large data keeps its allocation"
    );
    let largest = Bytes::from(vec![8_u8; DataArena::LARGEST_COPIED]);
    assert_eq!(arena.keep(largest.clone()), largest);
    assert_eq!(arena.keep(Bytes::new()), Bytes::new());
    // Text larger than a chunk (never a partition key, which is at most 1 KiB) gets a
    // chunk of its own size.
    let long = vec![7_u8; DataArena::CHUNK_BYTES * 2 + 1];
    assert_eq!(arena.copy(&long), long);
    assert_eq!(arena.copy(b"key"), Bytes::from_static(b"key"));
    // Dropping the arena leaves the kept records whole.
    drop(arena);
    assert_eq!(kept, small);
}

#[test]
fn budget_refuses_past_its_limit_and_takes_shards_back() {
    let budget = ShardBudget::new(3, "000000000000".to_owned());
    budget.reserve(2).unwrap();
    assert!(matches!(
        budget.reserve(2),
        Err(SourceError::LimitExceeded { .. })
    ));
    budget.release(1);
    budget.reserve(2).unwrap();
}
