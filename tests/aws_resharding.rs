//! A split and a merge on kinesis-local while a producer keeps publishing, with the mapping's
//! leases in a DynamoDB table: parents are read to their end, their leases reach `SHARD_END`
//! with their children named (read raw, under the KCL's attribute names), children start only
//! after their parents ended, a parent's lease goes once its children have checkpointed (`docs/resharding.md`),
//! each partition key's records are first delivered in the order they were published, and
//! every record is delivered.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use end_to_end::aws::{
    LeaseChange, LeaseRecorder, LeaseWrite, LocalAws, Observed, Published, RawLease, shipment,
    within,
};
use kinesis_esm::aws::ReadPacing;
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::lease::LeaseStore;
use kinesis_esm::mapping::{EventSourceMapping, MappingEvent, MappingOptions};
use kinesis_esm::source::ShardSource as _;
use test_support::intercept::Intercepted;
use tokio::sync::watch;

const KEYS: usize = 10;
/// The pause between two rounds of the producer (one record per key a round): its pace, so
/// that records keep arriving while the stream is resharded.
const PRODUCER_PACE: Duration = Duration::from_millis(100);
const SHARD_0: &str = "shardId-000000000000";
const SHARD_1: &str = "shardId-000000000001";

/// The attributes every lease item has, as the KCL names them (`docs/lease-table.md` §1).
const KCL_ATTRIBUTES: [&str; 8] = [
    "leaseKey",
    "shardId",
    "leaseCounter",
    "checkpoint",
    "checkpointSubSequenceNumber",
    "ownerSwitchesSinceCheckpoint",
    "startingHashKey",
    "endingHashKey",
];

/// A record the producer published: which key, which round.
#[derive(Debug, Clone)]
struct Produced {
    key: usize,
    round: u64,
    published: Published,
}

/// Publishes one record per key per round until `stop` says so; returns them all.
async fn produce(aws: Arc<LocalAws>, stream: String, stop: watch::Receiver<bool>) -> Vec<Produced> {
    let mut produced = Vec::new();
    let mut round = 0;
    while !*stop.borrow() {
        let records: Vec<(String, Vec<u8>)> = (0..KEYS)
            .map(|key| {
                let shipment = shipment(round * KEYS as u64 + key as u64);
                (format!("key-{key}"), serde_json::to_vec(&shipment).unwrap())
            })
            .collect();
        let published = aws.publish(&stream, &records).await;
        produced.extend(
            published
                .into_iter()
                .enumerate()
                .map(|(key, published)| Produced {
                    key,
                    round,
                    published,
                }),
        );
        round += 1;
        tokio::time::sleep(PRODUCER_PACE).await;
    }
    produced
}

fn index_of(events: &[MappingEvent], wanted: impl Fn(&MappingEvent) -> bool) -> Option<usize> {
    events.iter().position(wanted)
}

fn ended(events: &[MappingEvent], shard: &str) -> Option<usize> {
    index_of(
        events,
        |event| matches!(event, MappingEvent::ShardEnded { shard_id, .. } if shard_id == shard),
    )
}

fn started(events: &[MappingEvent], shard: &str) -> Option<usize> {
    index_of(
        events,
        |event| matches!(event, MappingEvent::ShardStarted { shard_id, .. } if shard_id == shard),
    )
}

fn delivered_from(events: &[MappingEvent], shard: &str) -> usize {
    events
        .iter()
        .map(|event| match event {
            MappingEvent::Invoked { shard_id, records } if shard_id == shard => records.len(),
            _ => 0,
        })
        .sum()
}

/// The shards `list_shards` names with `parent` among their parents.
async fn children_of(aws: &LocalAws, stream: &str, parent: &str) -> Vec<String> {
    let shards = within("listing shards", aws.kinesis().list_shards(stream))
        .await
        .unwrap();
    shards
        .iter()
        .filter(|shard| shard.parents().any(|p| p == parent))
        .map(|shard| shard.shard_id.clone())
        .collect()
}

fn shard_of_key(lease_key: &str) -> &str {
    lease_key.rsplit(':').next().unwrap_or(lease_key)
}

/// Checks a parent's lease as it stood just before its deletion: `SHARD_END`, its children
/// named, every child checkpointed past its start, its own parents already gone.
#[track_caller]
fn check_deleted_parent(deletion: &LeaseWrite, children: &[String], parents: &[&str]) {
    let parent = shard_of_key(&deletion.lease_key);
    let table: BTreeMap<&str, &RawLease> = deletion
        .table_before
        .iter()
        .map(|lease| (lease.shard_id.as_str(), lease))
        .collect();
    let item = table
        .get(parent)
        .unwrap_or_else(|| panic!("{parent} was in the table before its deletion"));
    assert_eq!(item.checkpoint, "SHARD_END", "{item:#?}");
    let mut expected_children = children.to_vec();
    expected_children.sort();
    assert_eq!(item.child_shard_ids, expected_children, "{item:#?}");
    for name in KCL_ATTRIBUTES {
        assert!(
            item.attribute_names.contains(name),
            "{parent} lacks {name}: {item:#?}"
        );
    }
    assert!(item.attribute_names.contains("childShardIds"));
    for child in children {
        let child_item = table
            .get(child.as_str())
            .unwrap_or_else(|| panic!("{child}'s lease exists when {parent}'s goes"));
        // A child that started has a sequence number, or SHARD_END if it already ended too.
        assert!(
            !matches!(
                child_item.checkpoint.as_str(),
                "TRIM_HORIZON" | "LATEST" | "AT_TIMESTAMP"
            ),
            "{child} has checkpointed before {parent}'s lease goes: {child_item:#?}"
        );
        assert!(child_item.parent_shard_ids.contains(&parent.to_owned()));
        assert!(child_item.attribute_names.contains("parentShardId"));
    }
    for grandparent in parents {
        assert!(
            !table.contains_key(grandparent),
            "{parent}'s lease goes after its own parent {grandparent}'s"
        );
    }
}

#[tokio::test]
async fn a_split_and_a_merge_while_records_flow_keep_order_and_lose_nothing() {
    let aws = Arc::new(LocalAws::connect().await);
    let stream = aws.create_stream("reshard", 2).await;
    let table = aws.lease_table("reshard").await;
    let leases = Arc::new(Intercepted::new(
        Arc::new(aws.lease_store(&table).await) as Arc<dyn LeaseStore>,
        LeaseRecorder::default().snapshot_before_deletes(aws.dynamodb().clone(), &table),
    ));
    let mut config = MappingConfig::new("shipping", &stream, StartingPosition::TrimHorizon);
    config.batch_size = 10;
    config.report_batch_item_failures = true;
    let (observer, mut observed) = Observed::channel();
    let mapping = EventSourceMapping::new(
        config,
        aws.source(ReadPacing::UNLIMITED).await,
        Arc::new(InProcess::service(shipping::function())),
    )
    .lease_store(leases.clone())
    .options(MappingOptions {
        worker_id: "resharding-worker".to_owned(),
        poll_interval: Duration::from_millis(200),
        shard_sync_interval: Duration::from_millis(250),
        lease_cleanup_interval: Duration::from_millis(250),
        retry_backoff_initial: Duration::from_millis(20),
        retry_backoff_max: Duration::from_millis(200),
        ..MappingOptions::default()
    })
    .observe(observer)
    .start();

    let (stop_producing, producing) = watch::channel(false);
    let producer = tokio::spawn(produce(aws.clone(), stream.clone(), producing));
    observed
        .wait_for("records of both shards", |events| {
            delivered_from(events, SHARD_0) >= 10 && delivered_from(events, SHARD_1) >= 10
        })
        .await;

    // Split shard 0 at the middle of its hash keys.
    let shards = aws.kinesis().list_shards(&stream).await.unwrap();
    let range = shards
        .iter()
        .find(|shard| shard.shard_id == SHARD_0)
        .unwrap()
        .hash_key_range;
    let middle = range.starting_hash_key + (range.ending_hash_key - range.starting_hash_key) / 2;
    within(
        "splitting shard 0",
        aws.kinesis().split_shard(&stream, SHARD_0, middle + 1),
    )
    .await
    .unwrap();
    let split_children = children_of(&aws, &stream, SHARD_0).await;
    assert_eq!(split_children.len(), 2, "{split_children:?}");
    observed
        .wait_for(
            "shard 0's end, and records of both its children",
            |events| {
                ended(events, SHARD_0).is_some()
                    && split_children
                        .iter()
                        .all(|child| delivered_from(events, child) > 0)
            },
        )
        .await;

    // Merge the upper child of the split with shard 1, its neighbour.
    let shards = aws.kinesis().list_shards(&stream).await.unwrap();
    let upper = shards
        .iter()
        .filter(|shard| split_children.contains(&shard.shard_id))
        .max_by_key(|shard| shard.hash_key_range.starting_hash_key)
        .unwrap()
        .shard_id
        .clone();
    let lower = split_children
        .iter()
        .find(|child| **child != upper)
        .unwrap()
        .clone();
    within(
        "merging shards",
        aws.kinesis().merge_shards(&stream, &upper, SHARD_1),
    )
    .await
    .unwrap();
    let merged = children_of(&aws, &stream, SHARD_1).await;
    assert_eq!(merged.len(), 1, "{merged:?}");
    let merged = merged[0].clone();
    assert_eq!(
        children_of(&aws, &stream, &upper).await,
        std::slice::from_ref(&merged)
    );
    observed
        .wait_for(
            "both merge parents' end, and records of the merged shard",
            |events| {
                ended(events, &upper).is_some()
                    && ended(events, SHARD_1).is_some()
                    && delivered_from(events, &merged) >= KEYS
            },
        )
        .await;

    stop_producing.send_replace(true);
    let produced = within("the producer", producer).await.unwrap();
    let published: HashSet<_> = produced
        .iter()
        .map(|record| record.published.position())
        .collect();
    observed
        .wait_for("every published record to be delivered", |events| {
            let delivered: HashSet<_> = end_to_end::aws::deliveries(events)
                .iter()
                .map(|delivery| delivery.position())
                .collect();
            published.is_subset(&delivered)
        })
        .await;
    let deleted = |writes: &[LeaseWrite], shard: &str| {
        writes
            .iter()
            .find(|write| {
                write.change == LeaseChange::Delete
                    && write.error.is_none()
                    && shard_of_key(&write.lease_key) == shard
            })
            .cloned()
    };
    let writes = leases
        .wait_for("the three parents' leases to be deleted", |writes| {
            [SHARD_0, &upper, SHARD_1]
                .iter()
                .all(|parent| deleted(writes, parent).is_some())
        })
        .await;
    within("stopping the mapping", mapping.stop()).await;
    let events = observed.events().to_vec();

    // Each parent was read to its end before it ended: every record published to it delivered.
    let deliveries = end_to_end::aws::deliveries(&events);
    for parent in [SHARD_0, &upper, SHARD_1] {
        let end = ended(&events, parent).unwrap();
        let delivered_before_its_end: HashSet<_> = end_to_end::aws::deliveries(&events[..end])
            .iter()
            .map(|delivery| delivery.position())
            .collect();
        for record in produced
            .iter()
            .filter(|record| record.published.shard_id == parent)
        {
            assert!(
                delivered_before_its_end.contains(&record.published.position()),
                "{parent} ended before its record {:?} was delivered",
                record.published
            );
        }
        match &events[end] {
            MappingEvent::ShardEnded {
                child_shard_ids, ..
            } => {
                let expected = if parent == SHARD_0 {
                    split_children.clone()
                } else {
                    vec![merged.clone()]
                };
                let mut named = child_shard_ids.clone();
                named.sort();
                let mut expected = expected;
                expected.sort();
                assert_eq!(named, expected, "{parent}'s children");
            }
            other => panic!("{other:?}"),
        }
    }

    // Children start after every parent ended, and nothing of theirs is delivered before.
    let lineage: [(&str, Vec<&str>); 3] = [
        (&lower, vec![SHARD_0]),
        (&upper, vec![SHARD_0]),
        (&merged, vec![upper.as_str(), SHARD_1]),
    ];
    for (child, parents) in &lineage {
        let start = started(&events, child).unwrap_or_else(|| panic!("{child} started"));
        let first_delivery = index_of(
            &events,
            |event| matches!(event, MappingEvent::Invoked { shard_id, .. } if shard_id == child),
        )
        .unwrap();
        for parent in parents {
            let end = ended(&events, parent).unwrap();
            assert!(start > end, "{child} started before {parent} ended");
            assert!(
                first_delivery > end,
                "{child} delivered before {parent} ended"
            );
        }
    }

    // Per partition key, first deliveries come in publish order.
    let mut first_delivery: HashMap<_, usize> = HashMap::new();
    for (index, delivery) in deliveries.iter().enumerate() {
        first_delivery.entry(delivery.position()).or_insert(index);
    }
    for key in 0..KEYS {
        let mut rounds: Vec<&Produced> =
            produced.iter().filter(|record| record.key == key).collect();
        rounds.sort_by_key(|record| record.round);
        let order: Vec<usize> = rounds
            .iter()
            .map(|record| first_delivery[&record.published.position()])
            .collect();
        assert!(
            order.is_sorted(),
            "key-{key}: first deliveries out of publish order: {order:?}"
        );
    }
    for shard in [SHARD_0, SHARD_1, &lower, &upper, &merged] {
        assert!(
            produced
                .iter()
                .any(|record| record.published.shard_id == shard),
            "the producer's keys reach every shard, {shard} too"
        );
    }

    // The parents' leases went only once their children had checkpointed, and after their own
    // parents' (read raw just before each deletion).
    check_deleted_parent(&deleted(&writes, SHARD_0).unwrap(), &split_children, &[]);
    check_deleted_parent(
        &deleted(&writes, &upper).unwrap(),
        std::slice::from_ref(&merged),
        &[SHARD_0],
    );
    check_deleted_parent(
        &deleted(&writes, SHARD_1).unwrap(),
        std::slice::from_ref(&merged),
        &[],
    );
    let left: Vec<String> = aws
        .raw_leases(&table)
        .await
        .into_iter()
        .map(|lease| lease.shard_id)
        .collect();
    let mut expected = vec![lower.clone(), merged.clone()];
    expected.sort();
    assert_eq!(left, expected, "only the open shards keep leases");
    let mut per_shard: BTreeMap<&str, usize> = BTreeMap::new();
    for record in &produced {
        *per_shard
            .entry(record.published.shard_id.as_str())
            .or_default() += 1;
    }
    println!(
        "resharding: {} records published while shard 0 split and {upper} merged with shard 1, \
         {} deliveries; records per shard {per_shard:?}",
        produced.len(),
        deliveries.len()
    );
}
