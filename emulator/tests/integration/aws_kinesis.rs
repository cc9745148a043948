//! `SdkKinesis` against kinesis-local: shards and paging, iterators, resharding lineage.
//!
//! Run with `scripts/local-stack run -- cargo test --workspace --test integration aws_kinesis`.

use std::time::{Duration, SystemTime};

use crate::support::{kinesis_endpoint, unique_name, within_timeout};
use kinesis_esm::aws::{ReadPacing, SdkKinesis};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::{
    ChildShard, HashKeyRange, IteratorPosition, Record, ShardSource, SourceError,
};

const HALF_OF_THE_HASH_SPACE: u128 = 1 << 127;

async fn source() -> SdkKinesis {
    crate::support::init_logging();
    SdkKinesis::new(Some(&kinesis_endpoint()), "us-east-1")
        .await
        .unwrap()
        .with_read_pacing(ReadPacing::UNLIMITED)
}

/// A stream of its own for one test.
async fn stream(source: &SdkKinesis, prefix: &str, shards: i32) -> String {
    let name = unique_name(prefix);
    within_timeout("creating a stream", source.create_stream(&name, shards))
        .await
        .unwrap();
    name
}

/// Puts `count` records with partition keys `key-0`, `key-1`, ... on a one-shard stream.
async fn put(source: &SdkKinesis, stream: &str, count: usize) -> Vec<SequenceNumber> {
    let mut sequence_numbers = Vec::new();
    for index in 0..count {
        let (_, sequence_number) = source
            .put_record(stream, &format!("key-{index}"), format!("record {index}"))
            .await
            .unwrap();
        sequence_numbers.push(sequence_number);
    }
    sequence_numbers
}

/// Reads from `iterator` until `count` records came, or the shard ends.
async fn read(
    source: &SdkKinesis,
    iterator: String,
    count: usize,
) -> (Vec<Record>, Option<String>) {
    let mut records = Vec::new();
    let mut next = Some(iterator);
    within_timeout("reading records", async {
        while let Some(iterator) = next.take() {
            let output = source.get_records(&iterator, 2).await.unwrap();
            let empty = output.records.is_empty();
            records.extend(output.records);
            next = output.next_shard_iterator;
            if records.len() >= count && (empty || records.len() > count) {
                break;
            }
        }
    })
    .await;
    (records, next)
}

fn sequence_numbers(records: &[Record]) -> Vec<SequenceNumber> {
    records
        .iter()
        .map(|record| record.sequence_number.clone())
        .collect()
}

#[tokio::test]
async fn describes_a_stream() {
    let source = source().await;
    let before = SystemTime::now() - Duration::from_secs(60);
    let name = stream(&source, "describe", 1).await;
    let description = source.describe_stream(&name).await.unwrap();
    assert_eq!(description.name, name);
    assert!(
        description.arn.stream_name() == Some(name.as_str()),
        "{}",
        description.arn
    );
    assert!(description.created > before, "{:?}", description.created);
}

#[tokio::test]
async fn a_missing_stream_is_not_found() {
    let source = source().await;
    let name = unique_name("missing");
    assert_eq!(
        source.list_shards(&name).await,
        Err(SourceError::NotFound {
            what: format!("stream {name}")
        })
    );
    assert_eq!(
        source
            .shard_iterator(&name, "shardId-000000000000", &IteratorPosition::Latest)
            .await,
        Err(SourceError::NotFound {
            what: format!("shard shardId-000000000000 of stream {name}")
        })
    );
}

#[tokio::test]
async fn lists_every_shard_across_pages() {
    let source = source().await.with_list_shards_page_size(2);
    let name = stream(&source, "paging", 5).await;
    let shards = source.list_shards(&name).await.unwrap();
    let ids: Vec<&str> = shards.iter().map(|shard| shard.shard_id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "shardId-000000000000",
            "shardId-000000000001",
            "shardId-000000000002",
            "shardId-000000000003",
            "shardId-000000000004",
        ]
    );
    // The hash ranges cover the whole space, without gaps or overlaps.
    assert_eq!(shards[0].hash_key_range.starting_hash_key, 0);
    assert_eq!(shards[4].hash_key_range.ending_hash_key, u128::MAX);
    for pair in shards.windows(2) {
        assert_eq!(
            pair[0].hash_key_range.ending_hash_key + 1,
            pair[1].hash_key_range.starting_hash_key
        );
    }
    assert!(
        shards
            .iter()
            .all(|shard| !shard.is_closed() && shard.parents().count() == 0)
    );
}

#[tokio::test]
async fn iterators_of_each_type_start_where_they_say() {
    let source = source().await;
    let name = stream(&source, "iterators", 1).await;
    let shard = "shardId-000000000000";
    let latest = source
        .shard_iterator(&name, shard, &IteratorPosition::Latest)
        .await
        .unwrap();
    let put_three = put(&source, &name, 3).await;

    let at = |position: IteratorPosition| {
        let source = &source;
        let name = &name;
        async move { source.shard_iterator(name, shard, &position).await.unwrap() }
    };
    let (records, _) = read(&source, at(IteratorPosition::TrimHorizon).await, 3).await;
    assert_eq!(sequence_numbers(&records), put_three);
    assert_eq!(&*records[1].partition_key, "key-1");
    assert_eq!(&records[1].data[..], b"record 1");

    // LATEST taken before the puts sees them all; taken now, it sees none until the next put.
    let (records, _) = read(&source, latest, 3).await;
    assert_eq!(sequence_numbers(&records), put_three);
    let latest_now = at(IteratorPosition::Latest).await;
    let fourth = put(&source, &name, 1).await;
    let (records, _) = read(&source, latest_now, 1).await;
    assert_eq!(sequence_numbers(&records), fourth);

    let (records, _) = read(
        &source,
        at(IteratorPosition::AtSequenceNumber(put_three[1].clone())).await,
        3,
    )
    .await;
    assert_eq!(
        sequence_numbers(&records),
        [
            put_three[1].clone(),
            put_three[2].clone(),
            fourth[0].clone()
        ]
    );
    let (records, _) = read(
        &source,
        at(IteratorPosition::AfterSequenceNumber(put_three[1].clone())).await,
        2,
    )
    .await;
    assert_eq!(
        sequence_numbers(&records),
        [put_three[2].clone(), fourth[0].clone()]
    );
}

#[tokio::test]
async fn at_timestamp_starts_at_the_first_record_that_arrived_then() {
    let source = source().await;
    let name = stream(&source, "timestamp", 1).await;
    let shard = "shardId-000000000000";
    let first = put(&source, &name, 1).await;
    // Arrival times have millisecond precision: a pause makes the later records arrive
    // measurably later than the first.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let later = put(&source, &name, 2).await;
    let trim_horizon = source
        .shard_iterator(&name, shard, &IteratorPosition::TrimHorizon)
        .await
        .unwrap();
    let (all, _) = read(&source, trim_horizon, 3).await;
    assert_eq!(sequence_numbers(&all), [first, later.clone()].concat());

    let second_arrival = all[1].approximate_arrival;
    let iterator = source
        .shard_iterator(&name, shard, &IteratorPosition::AtTimestamp(second_arrival))
        .await
        .unwrap();
    let (records, _) = read(&source, iterator, 2).await;
    assert_eq!(sequence_numbers(&records), later);

    // A time older than every record starts at the oldest.
    let long_ago = all[0].approximate_arrival - Duration::from_secs(3600);
    let iterator = source
        .shard_iterator(&name, shard, &IteratorPosition::AtTimestamp(long_ago))
        .await
        .unwrap();
    let (records, _) = read(&source, iterator, 3).await;
    assert_eq!(sequence_numbers(&records), sequence_numbers(&all));
}

#[tokio::test]
async fn a_split_parent_ends_with_its_children() {
    let source = source().await;
    let name = stream(&source, "split", 1).await;
    let parent = "shardId-000000000000";
    let before_split = put(&source, &name, 3).await;
    source
        .split_shard(&name, parent, HALF_OF_THE_HASH_SPACE)
        .await
        .unwrap();

    let shards = source.list_shards(&name).await.unwrap();
    let ids: Vec<&str> = shards.iter().map(|shard| shard.shard_id.as_str()).collect();
    assert_eq!(
        ids,
        [parent, "shardId-000000000001", "shardId-000000000002"]
    );
    assert!(shards[0].is_closed(), "the parent is closed");
    for child in &shards[1..] {
        assert_eq!(child.parent_shard_id.as_deref(), Some(parent));
        assert_eq!(child.adjacent_parent_shard_id, None);
        assert!(!child.is_closed());
    }

    // Reading the parent from its start gives its records, then no next iterator and the
    // children, each with its hash keys.
    let iterator = source
        .shard_iterator(&name, parent, &IteratorPosition::TrimHorizon)
        .await
        .unwrap();
    let mut records = Vec::new();
    let mut next = Some(iterator);
    let mut children = Vec::new();
    within_timeout("reading the parent to its end", async {
        while let Some(iterator) = next.take() {
            let output = source.get_records(&iterator, 2).await.unwrap();
            records.extend(output.records);
            next = output.next_shard_iterator;
            children = output.child_shards;
        }
    })
    .await;
    assert_eq!(sequence_numbers(&records), before_split);
    assert_eq!(
        children,
        [
            ChildShard {
                shard_id: "shardId-000000000001".into(),
                parent_shards: vec![parent.into()],
                hash_key_range: HashKeyRange {
                    starting_hash_key: 0,
                    ending_hash_key: HALF_OF_THE_HASH_SPACE - 1
                },
            },
            ChildShard {
                shard_id: "shardId-000000000002".into(),
                parent_shards: vec![parent.into()],
                hash_key_range: HashKeyRange {
                    starting_hash_key: HALF_OF_THE_HASH_SPACE,
                    ending_hash_key: u128::MAX
                },
            },
        ]
    );

    // New records go to the children.
    let (shard, _) = source
        .put_record(&name, "after", "after the split")
        .await
        .unwrap();
    assert_ne!(shard, parent);
}

#[tokio::test]
async fn a_merged_child_names_both_parents() {
    let source = source().await;
    let name = stream(&source, "merge", 2).await;
    let (left, right) = ("shardId-000000000000", "shardId-000000000001");
    source.merge_shards(&name, left, right).await.unwrap();

    let shards = source.list_shards(&name).await.unwrap();
    let child = shards.last().unwrap();
    assert_eq!(child.shard_id, "shardId-000000000002");
    assert_eq!(child.parents().collect::<Vec<_>>(), [left, right]);
    assert_eq!(
        child.hash_key_range,
        HashKeyRange {
            starting_hash_key: 0,
            ending_hash_key: u128::MAX
        }
    );
    assert!(shards[0].is_closed() && shards[1].is_closed());

    for parent in [left, right] {
        let mut next = Some(
            source
                .shard_iterator(&name, parent, &IteratorPosition::TrimHorizon)
                .await
                .unwrap(),
        );
        let mut children = Vec::new();
        while let Some(iterator) = next.take() {
            let output = source.get_records(&iterator, 100).await.unwrap();
            next = output.next_shard_iterator;
            children = output.child_shards;
        }
        let child_ids: Vec<(&str, &[String])> = children
            .iter()
            .map(|child| (child.shard_id.as_str(), child.parent_shards.as_slice()))
            .collect();
        assert_eq!(
            child_ids,
            [(
                "shardId-000000000002",
                &[left.to_owned(), right.to_owned()][..]
            )],
            "the end of {parent}"
        );
    }
}

#[tokio::test]
async fn updating_the_shard_count_closes_the_old_shards() {
    let source = source().await;
    let name = stream(&source, "scale", 1).await;
    source.update_shard_count(&name, 2).await.unwrap();
    let shards = source.list_shards(&name).await.unwrap();
    let open: Vec<_> = shards.iter().filter(|shard| !shard.is_closed()).collect();
    assert_eq!(open.len(), 2);
    assert!(shards[0].is_closed());
    // Every open shard descends from the old one, and comes after it.
    assert!(
        open.iter()
            .all(|shard| shard.parents().any(|parent| parent == shards[0].shard_id))
    );
}

#[tokio::test]
async fn reads_are_paced_to_five_a_second_per_shard() {
    let source = SdkKinesis::new(Some(&kinesis_endpoint()), "us-east-1")
        .await
        .unwrap();
    let name = stream(&source, "paced", 1).await;
    let iterator = source
        .shard_iterator(
            &name,
            "shardId-000000000000",
            &IteratorPosition::TrimHorizon,
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let mut next = iterator;
    for _ in 0..6 {
        next = source
            .get_records(&next, 10)
            .await
            .unwrap()
            .next_shard_iterator
            .unwrap();
    }
    // Six reads hold five gaps of at least 200 ms.
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "six reads took only {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_bad_limit_is_refused_before_any_call() {
    let source = source().await;
    for limit in [0, 10_001] {
        assert!(matches!(
            source.get_records("s:shardId-000000000000:AAAA", limit).await,
            Err(SourceError::InvalidArgument { message }) if message.contains(&format!("limit {limit}"))
        ));
    }
}
