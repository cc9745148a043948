//! Two reshards and more while records flow, on the embedded Kinesis (and, through
//! [`check_lifecycle`], on kinesis-local in `aws_resharding_twice`): every record is delivered,
//! per-key order holds, no settled record is delivered again however many shard syncs and lease
//! clean-ups pass, and the lease table ends with only the open shards' leases
//! (`docs/resharding.md`).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use end_to_end::TestStream;
use end_to_end::aws::{LocalAws, Observed, deliveries, within};
use kinesis_esm::aws::{ReadPacing, SdkKinesis};
use kinesis_esm::config::StartingPosition;
use kinesis_esm::invoke::InProcess;
use kinesis_esm::kinesis::{PutRecordsEntry, ScalingType};
use kinesis_esm::lease::{LeaseStore, MemoryLeaseStore};
use kinesis_esm::mapping::{EventSourceMapping, MappingEvent, MappingOptions};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::{Shard, ShardSource};
use lambda_kinesis::HandlerOutcome;
use serde_json::{Value, json};
use tokio::sync::watch;

/// How many partition keys the producer uses; `key-0` to `key-9` reach every quarter of the
/// hash key space.
const KEYS: u64 = 10;
/// The pause between two rounds of the producer (one record per key a round).
const PRODUCER_PACE: Duration = Duration::from_millis(20);
/// The coordinator's periods, short so that the test watches many of them in little time.
const SHARD_SYNC: Duration = Duration::from_millis(25);
const LEASE_CLEANUP: Duration = Duration::from_millis(50);
/// How long the test watches for settled records delivered again, once every record is
/// delivered: twenty lease clean-ups, forty shard syncs.
const WATCH: Duration = Duration::from_secs(1);

/// One reshard of a scenario; shards are named by their place among the open shards in hash
/// key order.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Reshard {
    /// Split the open shard at this place in the middle of its hash keys.
    Split(usize),
    /// Merge the open shard at this place with the next one.
    Merge(usize),
    /// `UpdateShardCount` to this many shards.
    Count(u32),
}

/// The Kinesis a scenario runs on.
pub(crate) enum Kinesis {
    /// A stream of the embedded Kinesis.
    Embedded(TestStream),
    /// A stream of kinesis-local.
    Local {
        /// The client.
        kinesis: Arc<SdkKinesis>,
        /// The stream's name.
        stream: String,
    },
}

impl Kinesis {
    /// A stream of kinesis-local with `shards` shards.
    pub(crate) async fn local(aws: &LocalAws, prefix: &str, shards: i32) -> Self {
        let stream = aws.create_stream(prefix, shards).await;
        Self::Local {
            kinesis: aws.source(ReadPacing::UNLIMITED).await,
            stream,
        }
    }

    fn source(&self) -> Arc<dyn ShardSource> {
        match self {
            Self::Embedded(stream) => Arc::new(stream.kinesis.clone()),
            Self::Local { kinesis, .. } => kinesis.clone(),
        }
    }

    fn stream_name(&self) -> &str {
        match self {
            Self::Embedded(stream) => &stream.name,
            Self::Local { stream, .. } => stream,
        }
    }

    async fn shards(&self) -> Vec<Shard> {
        match self {
            Self::Embedded(stream) => stream.shards(),
            Self::Local { kinesis, stream } => {
                within("listing shards", kinesis.list_shards(stream))
                    .await
                    .unwrap_or_else(|error| panic!("listing the shards of {stream}: {error}"))
            }
        }
    }

    async fn open_shards(&self) -> Vec<Shard> {
        let mut open: Vec<Shard> = self
            .shards()
            .await
            .into_iter()
            .filter(|shard| !shard.is_closed())
            .collect();
        open.sort_by_key(|shard| shard.hash_key_range.starting_hash_key);
        open
    }

    async fn reshard(&self, reshard: Reshard) {
        let open = self.open_shards().await;
        let name = self.stream_name();
        let result = match (self, reshard) {
            (_, Reshard::Split(at)) => {
                let range = open[at].hash_key_range;
                let middle = range.starting_hash_key
                    + (range.ending_hash_key - range.starting_hash_key) / 2
                    + 1;
                match self {
                    Self::Embedded(stream) => {
                        stream
                            .kinesis
                            .split_shard(name, &open[at].shard_id, &middle.to_string())
                    }
                    Self::Local { kinesis, .. } => {
                        within(
                            "splitting",
                            kinesis.split_shard(name, &open[at].shard_id, middle),
                        )
                        .await
                    }
                }
            }
            (Self::Embedded(stream), Reshard::Merge(at)) => {
                stream
                    .kinesis
                    .merge_shards(name, &open[at].shard_id, &open[at + 1].shard_id)
            }
            (Self::Local { kinesis, .. }, Reshard::Merge(at)) => {
                within(
                    "merging",
                    kinesis.merge_shards(name, &open[at].shard_id, &open[at + 1].shard_id),
                )
                .await
            }
            (Self::Embedded(stream), Reshard::Count(target)) => stream
                .kinesis
                .update_shard_count(name, target, ScalingType::UniformScaling)
                .map(drop),
            (Self::Local { kinesis, .. }, Reshard::Count(target)) => {
                let target = i32::try_from(target).expect("a small shard count");
                within(
                    "updating the shard count",
                    kinesis.update_shard_count(name, target),
                )
                .await
            }
        };
        result.unwrap_or_else(|error| panic!("{reshard:?} on {name}: {error}"));
    }

    /// Publishes one record per key, carrying its per-key `counter`; returns where each went.
    async fn publish_round(&self, counter: u64) -> Vec<Produced> {
        let records: Vec<(String, Vec<u8>)> = (0..KEYS)
            .map(|key| {
                let data = json!({ "key": key, "counter": counter }).to_string();
                (format!("key-{key}"), data.into_bytes())
            })
            .collect();
        let placed: Vec<(String, SequenceNumber)> = match self {
            Self::Embedded(stream) => records
                .iter()
                .map(|(key, data)| {
                    let put = stream
                        .kinesis
                        .put_record(
                            &stream.name,
                            PutRecordsEntry::new(key.as_str(), data.clone()),
                        )
                        .unwrap_or_else(|error| panic!("putting {key}: {error}"));
                    (put.shard_id.to_string(), put.sequence_number)
                })
                .collect(),
            Self::Local { kinesis, stream } => {
                let entries: Vec<(&str, &[u8])> = records
                    .iter()
                    .map(|(key, data)| (key.as_str(), data.as_slice()))
                    .collect();
                // One record at a time, so that a refused one never lets a later one of its key
                // overtake it.
                let mut placed = Vec::new();
                for entry in entries {
                    loop {
                        let outcome = within("publishing", kinesis.put_records(stream, &[entry]))
                            .await
                            .unwrap_or_else(|error| panic!("publishing to {stream}: {error}"));
                        if let Some(Ok(position)) = outcome.into_iter().next() {
                            placed.push(position);
                            break;
                        }
                    }
                }
                placed
            }
        };
        placed
            .into_iter()
            .zip(0..)
            .map(|((shard_id, sequence_number), key)| Produced {
                key,
                counter,
                position: (shard_id, sequence_number),
            })
            .collect()
    }
}

/// A record the producer published.
#[derive(Debug, Clone)]
struct Produced {
    key: u64,
    counter: u64,
    position: (String, SequenceNumber),
}

/// Publishes a round every [`PRODUCER_PACE`] until `stop` says so.
async fn produce(kinesis: Arc<Kinesis>, stop: watch::Receiver<bool>) -> Vec<Produced> {
    let mut produced = Vec::new();
    let mut counter = 0;
    while !*stop.borrow() {
        produced.extend(kinesis.publish_round(counter).await);
        counter += 1;
        tokio::time::sleep(PRODUCER_PACE).await;
    }
    produced
}

/// The shards that had a record delivered.
fn shards_delivered(events: &[MappingEvent]) -> HashSet<String> {
    deliveries(events)
        .into_iter()
        .map(|delivery| delivery.shard_id)
        .collect()
}

/// Runs `reshards` on `kinesis` one after the other while a producer publishes, each once every
/// open shard has had records delivered, with `instances` mappings sharing `leases`; then checks what the mapping delivered and what its
/// lease table holds. Returns how many times settled records were delivered again (printed
/// before it is checked to be 0, so that a run against other code can count them).
pub(crate) async fn check_lifecycle(
    kinesis: Kinesis,
    leases: Arc<dyn LeaseStore>,
    instances: usize,
    reshards: &[Reshard],
) -> usize {
    end_to_end::init_logging();
    let kinesis = Arc::new(kinesis);
    let mut config = end_to_end::config(
        "resharding-twice",
        kinesis.stream_name(),
        StartingPosition::TrimHorizon,
    );
    config.batch_size = 7;
    let ack = |_: &Value| std::future::ready(HandlerOutcome::ack());
    // One delivery log for every instance.
    let (observer, mut observed) = Observed::channel();
    let mappings: Vec<_> = (0..instances)
        .map(|instance| {
            EventSourceMapping::new(
                config.clone(),
                kinesis.source(),
                Arc::new(InProcess::handler(ack)),
            )
            .lease_store(Arc::clone(&leases))
            .options(MappingOptions {
                worker_id: format!("resharding-twice-{instance}"),
                poll_interval: Duration::from_millis(20),
                shard_sync_interval: SHARD_SYNC,
                lease_cleanup_interval: LEASE_CLEANUP,
                retry_backoff_initial: Duration::from_millis(5),
                retry_backoff_max: Duration::from_millis(50),
                // No stealing between live instances: a stolen lease's records after its last
                // checkpoint come again (at least once, `docs/lease-table.md` §6), and this test
                // counts any record delivered twice as a fault of the lease lifecycle across
                // resharding, which is what it checks.
                max_leases_to_steal: 0,
                ..MappingOptions::default()
            })
            .observe(observer.clone())
            .start()
        })
        .collect();
    drop(observer);
    let (stop_producing, producing) = watch::channel(false);
    let producer = tokio::spawn(produce(Arc::clone(&kinesis), producing));

    for step in reshards.iter().map(Some).chain([None]) {
        let open: Vec<String> = kinesis
            .open_shards()
            .await
            .into_iter()
            .map(|shard| shard.shard_id)
            .collect();
        observed
            .wait_for(&format!("records of every open shard {open:?}"), |events| {
                let delivered = shards_delivered(events);
                open.iter().all(|shard| delivered.contains(shard))
            })
            .await;
        if let Some(&reshard) = step {
            kinesis.reshard(reshard).await;
        }
    }
    stop_producing.send_replace(true);
    let produced = within("the producer", producer)
        .await
        .expect("the producer does not panic");
    let published: HashSet<&(String, SequenceNumber)> =
        produced.iter().map(|record| &record.position).collect();
    observed
        .wait_for("every published record to be delivered", |events| {
            let delivered: HashSet<_> = deliveries(events)
                .iter()
                .map(|delivery| delivery.position())
                .collect();
            published
                .iter()
                .all(|position| delivered.contains(*position))
        })
        .await;
    tokio::time::sleep(WATCH).await;

    let deliveries = observed.deliveries();
    let mut first_delivery: BTreeMap<(String, SequenceNumber), usize> = BTreeMap::new();
    for (index, delivery) in deliveries.iter().enumerate() {
        first_delivery.entry(delivery.position()).or_insert(index);
    }
    let delivered_again = deliveries.len() - first_delivery.len();
    println!(
        "{reshards:?}: {} records published, {} deliveries, {delivered_again} of them of records \
         delivered before",
        produced.len(),
        deliveries.len()
    );
    assert_eq!(
        delivered_again, 0,
        "{reshards:?}: settled records were delivered again"
    );
    for key in 0..KEYS {
        let mut of_key: Vec<&Produced> =
            produced.iter().filter(|record| record.key == key).collect();
        of_key.sort_by_key(|record| record.counter);
        let order: Vec<usize> = of_key
            .iter()
            .map(|record| first_delivery[&record.position])
            .collect();
        assert!(
            order.is_sorted(),
            "{reshards:?}: key-{key}'s records were first delivered out of publish order"
        );
    }

    let mut open: Vec<String> = kinesis
        .open_shards()
        .await
        .into_iter()
        .map(|shard| shard.shard_id)
        .collect();
    open.sort();
    let mut leased = Vec::new();
    let converged = within(
        "the lease table to hold only the open shards' leases",
        async {
            loop {
                leased = leases
                    .list_leases()
                    .await
                    .expect("the lease table can be listed")
                    .into_iter()
                    .map(|lease| lease.shard_id)
                    .collect::<Vec<_>>();
                leased.sort();
                if leased == open {
                    break true;
                }
                tokio::time::sleep(LEASE_CLEANUP).await;
            }
        },
    )
    .await;
    assert!(
        converged,
        "{reshards:?}: leases {leased:?}, open shards {open:?}"
    );
    for mapping in mappings {
        within("stopping a mapping", mapping.stop()).await;
    }
    delivered_again
}

/// [`check_lifecycle`] over a new stream `name` of `shards` shards in the embedded Kinesis, with
/// `instances` mappings sharing leases in memory.
async fn embedded_lifecycle(name: &str, shards: u32, instances: usize, reshards: &[Reshard]) {
    let stream = TestStream::create(name, shards);
    let leases = Arc::new(MemoryLeaseStore::new());
    check_lifecycle(Kinesis::Embedded(stream), leases, instances, reshards).await;
}

end_to_end::scenario_tests! {
    embedded_lifecycle {
        a_split_then_a_merge_of_its_children_delivers_nothing_twice(
            "split-merge",
            1,
            1,
            &[Reshard::Split(0), Reshard::Merge(0)],
        ),
        a_merge_then_a_split_of_its_child_delivers_nothing_twice(
            "merge-split",
            2,
            1,
            &[Reshard::Merge(0), Reshard::Split(0)],
        ),
        update_shard_count_1_2_4_2_with_two_instances_delivers_nothing_twice(
            "count-1-2-4-2",
            1,
            2,
            &[Reshard::Count(2), Reshard::Count(4), Reshard::Count(2)],
        ),
    }
}
