//! Resharding while records flow through the embedded Kinesis: parents are read to their end
//! before their children start (`docs/resharding.md`), so order per partition key survives splits and
//! merges, and a held record in a parent holds its children back.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use end_to_end::{Observed, TestStream, config, shard, within};
use kinesis_esm::config::StartingPosition;
use kinesis_esm::invoke::InProcess;
use kinesis_esm::lease::Checkpoint;
use kinesis_esm::mapping::{MappingEvent, ShardPhase};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::Shard;
use lambda_kinesis::HandlerOutcome;
use serde_json::{Value, json};
use tokio::sync::watch;

/// How many partition keys the producers use. With MD5 routing, `key-0` to `key-9` reach every
/// quarter of the hash key space (the tests check it).
const KEYS: u64 = 10;

/// A record as it was published.
#[derive(Debug, Clone)]
struct Published {
    shard_id: Arc<str>,
    key: u64,
    counter: u64,
}

/// Publishes one record of `key` carrying its per-key `counter`; `hold` marks a record the
/// handler holds until the test releases it.
fn publish(
    stream: &TestStream,
    published: &mut BTreeMap<SequenceNumber, Published>,
    key: u64,
    counter: u64,
    hold: bool,
) {
    let data = json!({ "key": key, "counter": counter, "hold": hold }).to_string();
    let put = stream.put(&format!("key-{key}"), data);
    published.insert(
        put.sequence_number,
        Published {
            shard_id: put.shard_id,
            key,
            counter,
        },
    );
}

/// Splits `shard` in the middle of its hash key range.
fn split_in_the_middle(stream: &TestStream, shard: &Shard) {
    let range = shard.hash_key_range;
    let middle = range.starting_hash_key + (range.ending_hash_key - range.starting_hash_key) / 2;
    stream
        .kinesis
        .split_shard(&stream.name, &shard.shard_id, &(middle + 1).to_string())
        .unwrap_or_else(|error| panic!("splitting {}: {error}", shard.shard_id));
}

/// Checks what the observer saw against what was published:
/// - every published record was delivered;
/// - per partition key, records were first delivered in publish order;
/// - no child shard started, nor had a record delivered, before each of its parents ended.
#[track_caller]
fn check_order(
    events: &[MappingEvent],
    published: &BTreeMap<SequenceNumber, Published>,
    shards: &[Shard],
) {
    let mut first_deliveries: Vec<&Published> = Vec::new();
    let mut delivered: HashSet<&SequenceNumber> = HashSet::new();
    let mut ended: HashMap<&str, usize> = HashMap::new();
    let parents: HashMap<&str, Vec<&str>> = shards
        .iter()
        .map(|shard| (shard.shard_id.as_str(), shard.parents().collect()))
        .collect();
    for (index, event) in events.iter().enumerate() {
        let (shard_id, records) = match event {
            MappingEvent::ShardEnded { shard_id, .. } => {
                ended.insert(shard_id, index);
                continue;
            }
            MappingEvent::ShardStarted { shard_id, .. } => (shard_id, &[][..]),
            MappingEvent::Invoked { shard_id, records } => (shard_id, records.as_slice()),
            _ => continue,
        };
        for parent in parents.get(shard_id.as_str()).into_iter().flatten() {
            assert!(
                ended.contains_key(parent),
                "event {index} ({event:?}) of child {shard_id} came before its parent {parent} ended"
            );
        }
        for (sequence_number, _) in records {
            let record = published
                .get(sequence_number)
                .unwrap_or_else(|| panic!("{sequence_number} was delivered but never published"));
            assert_eq!(
                &*record.shard_id, shard_id,
                "{sequence_number} delivered from the wrong shard"
            );
            if delivered.insert(sequence_number) {
                first_deliveries.push(record);
            }
        }
    }
    let missing: Vec<&SequenceNumber> = published
        .keys()
        .filter(|sequence_number| !delivered.contains(sequence_number))
        .collect();
    assert!(missing.is_empty(), "never delivered: {missing:?}");
    let mut counters_by_key: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for record in first_deliveries {
        counters_by_key
            .entry(record.key)
            .or_default()
            .push(record.counter);
    }
    for (key, counters) in counters_by_key {
        let in_order: Vec<u64> = (0..counters.len() as u64).collect();
        assert_eq!(
            counters, in_order,
            "key-{key}: first deliveries out of publish order"
        );
    }
}

/// Asserts that every shard of the stream received records, so that each ordering rule was
/// actually exercised.
#[track_caller]
fn check_every_shard_was_written(
    published: &BTreeMap<SequenceNumber, Published>,
    shards: &[Shard],
) {
    let written: HashSet<&str> = published.values().map(|record| &*record.shard_id).collect();
    for shard in shards {
        assert!(
            written.contains(shard.shard_id.as_str()),
            "no record reached {}: the scenario does not test it",
            shard.shard_id
        );
    }
}

/// A producer task publishes rounds of records for every key while the test splits one shard
/// and then merges one of the split's children with its neighbour.
///
/// The handler holds its first invocations open until the producer is done, so that every
/// parent still has records to deliver when it is resharded: a child started too early would
/// show up at once as a delivery before its parent's end.
#[tokio::test]
async fn records_keep_their_order_through_a_split_and_a_merge() {
    const ROUNDS: u64 = 30;
    const SPLIT_AFTER: u64 = 10;
    const MERGE_AFTER: u64 = 20;
    let stream = TestStream::create("reshard-flow", 2);
    let (gate, gate_open) = watch::channel(false);
    let handler = move |_: &Value| {
        let mut gate_open = gate_open.clone();
        async move {
            let _ = gate_open.wait_for(|open| *open).await;
            HandlerOutcome::ack()
        }
    };
    let mut config = config("flow", &stream.name, StartingPosition::TrimHorizon);
    config.batch_size = 7;
    let mut observed = Observed::start(config, &stream, Arc::new(InProcess::handler(handler)));

    let (rounds_sender, mut rounds_done) = watch::channel(0);
    let (reshards_sender, reshards) = watch::channel(0);
    let producer_stream = stream.clone();
    let producer = tokio::spawn(async move {
        let mut published = BTreeMap::new();
        let mut reshards = reshards;
        for round in 0..ROUNDS {
            // The producer waits for each reshard to be done before it goes on, so that
            // records reach the new shards whatever the machine's speed.
            let reshards_before = match round {
                SPLIT_AFTER => 1,
                MERGE_AFTER => 2,
                _ => 0,
            };
            let _ = reshards.wait_for(|&done| done >= reshards_before).await;
            // Letting the mapping's tasks run between rounds makes records arrive while shards
            // are being read.
            tokio::task::yield_now().await;
            for key in 0..KEYS {
                publish(&producer_stream, &mut published, key, round, false);
            }
            rounds_sender.send_replace(round + 1);
        }
        published
    });

    within(
        "the producer's first rounds",
        rounds_done.wait_for(|&rounds| rounds >= SPLIT_AFTER),
    )
    .await
    .expect("the producer runs");
    let [left, right] = <[Shard; 2]>::try_from(stream.open_shards()).expect("two open shards");
    split_in_the_middle(&stream, &left);
    reshards_sender.send_replace(1);
    within(
        "the producer's middle rounds",
        rounds_done.wait_for(|&rounds| rounds >= MERGE_AFTER),
    )
    .await
    .expect("the producer runs");
    let open = stream.open_shards();
    let [_, left_upper, right_again] = open.as_slice() else {
        panic!("three open shards after the split: {open:#?}");
    };
    assert_eq!(right_again.shard_id, right.shard_id);
    stream
        .kinesis
        .merge_shards(&stream.name, &left_upper.shard_id, &right.shard_id)
        .expect("the split's upper child and the right shard are adjacent");
    reshards_sender.send_replace(2);
    let published = within("the producer", producer)
        .await
        .expect("the producer does not panic");
    let children_events: Vec<&MappingEvent> = observed
        .events()
        .iter()
        .filter(|event| {
            matches!(event, MappingEvent::ShardStarted { shard_id, .. } | MappingEvent::Invoked { shard_id, .. }
                if *shard_id != left.shard_id && *shard_id != right.shard_id)
        })
        .collect();
    assert!(
        children_events.is_empty(),
        "children started while their parents had records to deliver: {children_events:?}"
    );
    gate.send_replace(true);

    let total = published.len() as u64;
    let status = observed
        .wait_for("every record to be acked", |status| {
            status.totals().acked == total
        })
        .await;
    let shards = stream.shards();
    assert_eq!(
        shards.len(),
        5,
        "two shards, a split's two children, a merge's child"
    );
    check_every_shard_was_written(&published, &shards);
    check_order(observed.events(), &published, &shards);
    let merged = shards
        .iter()
        .find(|shard| shard.adjacent_parent_shard_id.is_some())
        .expect("the merge's child");
    assert_eq!(
        merged.parents().collect::<Vec<_>>(),
        [left_upper.shard_id.as_str(), right.shard_id.as_str()]
    );
    for parent in merged.parents() {
        assert_eq!(
            shard(&status, parent).checkpoint,
            Some(Checkpoint::ShardEnd),
            "{parent} was read to its end"
        );
    }
    observed.stop().await;
}

/// How a test reshards the shard holding a held record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reshard {
    /// Split it in two.
    Split,
    /// Merge it with its neighbour, which is read to its end meanwhile.
    Merge,
}

/// A record held in a shard that is then resharded keeps the new shards from starting until the
/// record is released (for a merge, although the other parent has ended); then the children run
/// and order per key holds across the reshard.
async fn a_held_record_in_a_parent_keeps_its_children_waiting(reshard: Reshard) {
    let (name, shards) = match reshard {
        Reshard::Split => ("held-parent-split", 1),
        Reshard::Merge => ("held-parent-merge", 2),
    };
    let stream = TestStream::create(name, shards);
    let released = Arc::new(AtomicBool::new(false));
    let handler = {
        let released = Arc::clone(&released);
        move |record: &Value| {
            let held = record["hold"] == true && !released.load(Ordering::SeqCst);
            std::future::ready(if held {
                HandlerOutcome::hold()
            } else {
                HandlerOutcome::ack()
            })
        }
    };
    // key-0's record of counter 2 is held; key-0 hashes into the upper half of the key space.
    let mut published = BTreeMap::new();
    for counter in 0..5 {
        for key in 0..KEYS {
            publish(
                &stream,
                &mut published,
                key,
                counter,
                key == 0 && counter == 2,
            );
        }
    }
    let (held, held_shard) = published
        .iter()
        .find(|(_, record)| record.key == 0 && record.counter == 2)
        .map(|(sequence_number, record)| (sequence_number.clone(), record.shard_id.to_string()))
        .expect("the held record was published");
    let mut config = config("held", &stream.name, StartingPosition::TrimHorizon);
    config.batch_size = 7;
    let mut observed = Observed::start(config, &stream, Arc::new(InProcess::handler(handler)));
    observed
        .wait_for("the marked record to be held", |status| {
            status
                .shards
                .get(&held_shard)
                .and_then(|shard| shard.held.as_ref())
                .is_some_and(|record| record.sequence_number == held)
        })
        .await;

    let open = stream.open_shards();
    match reshard {
        Reshard::Split => split_in_the_middle(&stream, &open[0]),
        Reshard::Merge => stream
            .kinesis
            .merge_shards(&stream.name, &open[0].shard_id, &open[1].shard_id)
            .expect("the stream's two shards are adjacent"),
    }
    for counter in 5..10 {
        for key in 0..KEYS {
            publish(&stream, &mut published, key, counter, false);
        }
    }
    let children: Vec<Shard> = stream.open_shards();
    let other_parents: Vec<String> = children
        .iter()
        .flat_map(Shard::parents)
        .filter(|parent| *parent != held_shard)
        .map(str::to_owned)
        .collect();
    assert_eq!(other_parents.len(), usize::from(reshard == Reshard::Merge));
    let status = observed
        .wait_for(
            "the children to be seen and the other parents to end",
            |status| {
                children
                    .iter()
                    .all(|child| status.shards.contains_key(&child.shard_id))
                    && other_parents.iter().all(|parent| {
                        status
                            .shards
                            .get(parent)
                            .is_some_and(|parent| parent.phase == ShardPhase::Ended)
                    })
            },
        )
        .await;
    // The decision not to start the children was taken when they were seen; a few more retries
    // of the held record give a wrongly started child time to show.
    let failed_then = shard(&status, &held_shard)
        .held
        .as_ref()
        .map_or(0, |held| held.failed_deliveries);
    let status = observed
        .wait_for("three more retries of the held record", |status| {
            status
                .shards
                .get(&held_shard)
                .and_then(|shard| shard.held.as_ref())
                .is_some_and(|held| held.failed_deliveries >= failed_then + 3)
        })
        .await;
    for child in &children {
        let child_status = shard(&status, &child.shard_id);
        assert_eq!(
            (child_status.phase, child_status.delivered),
            (ShardPhase::WaitingOnParents, 0),
            "{reshard:?}: {child:?} must wait for {held_shard}"
        );
    }
    let child_events: Vec<&MappingEvent> = observed
        .events()
        .iter()
        .filter(|event| match event {
            MappingEvent::ShardStarted { shard_id, .. }
            | MappingEvent::Invoked { shard_id, .. } => {
                children.iter().any(|child| child.shard_id == *shard_id)
            }
            _ => false,
        })
        .collect();
    assert!(
        child_events.is_empty(),
        "{reshard:?}: the children started: {child_events:?}"
    );

    released.store(true, Ordering::SeqCst);
    let total = published.len() as u64;
    let status = observed
        .wait_for("every record to be acked after the release", |status| {
            status.totals().acked == total
        })
        .await;
    assert_eq!(
        shard(&status, &held_shard).checkpoint,
        Some(Checkpoint::ShardEnd)
    );
    let shards = stream.shards();
    check_every_shard_was_written(&published, &shards);
    check_order(observed.events(), &published, &shards);
    observed.stop().await;
}

end_to_end::scenario_tests! {
    a_held_record_in_a_parent_keeps_its_children_waiting {
        a_held_record_keeps_the_children_of_a_split_waiting(Reshard::Split),
        a_held_record_keeps_the_child_of_a_merge_waiting_for_both_parents(Reshard::Merge),
    }
}
