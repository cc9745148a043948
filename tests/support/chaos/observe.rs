//! What the chaos run does beside the instances: the producer numbering records per key, and
//! the watch of the lease table for shards without a reader.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::sync::watch;

use super::TICK;
use super::verdict::{self, LeaseView, UnreadWatch};
use crate::aws::{LocalAws, RawLease, leases_by_shard, shipment};

/// One record the producer had accepted.
#[derive(Debug, Clone)]
pub(super) struct Placed {
    pub(super) shard_id: String,
    pub(super) sequence_number: String,
    pub(super) key: usize,
    pub(super) index: u64,
}

/// The producer: one record per key a tick, numbered per key, until told to stop.
pub(super) async fn produce(
    aws: Arc<LocalAws>,
    stream: String,
    keys: usize,
    mut stop: watch::Receiver<bool>,
) -> Vec<Placed> {
    let mut placed = Vec::new();
    let mut next_index = vec![0_u64; keys];
    let mut next_id = 0;
    while !*stop.borrow() {
        // One record per key a call: a record Kinesis refuses is put again before the next
        // call, so none overtakes another of its key.
        let records: Vec<(String, Vec<u8>)> = (0..keys)
            .map(|key| {
                next_id += 1;
                let data = serde_json::to_vec(&shipment(next_id)).expect("a shipment is JSON");
                (format!("key-{key}"), data)
            })
            .collect();
        for (key, record) in aws.publish(&stream, &records).await.into_iter().enumerate() {
            placed.push(Placed {
                shard_id: record.shard_id,
                sequence_number: record.sequence_number.as_str().to_owned(),
                key,
                index: next_index[key],
            });
            next_index[key] += 1;
        }
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            _ = stop.changed() => {}
        }
    }
    placed
}

/// The lease table as the unread watch reads it.
fn lease_views(leases: &BTreeMap<String, RawLease>) -> Vec<LeaseView> {
    leases
        .values()
        .map(|lease| LeaseView {
            shard_id: lease.shard_id.clone(),
            owner: lease.lease_owner.clone(),
            at_shard_end: lease.checkpoint == "SHARD_END",
            parents: lease.parent_shard_ids.clone(),
        })
        .collect()
}

/// Looks at the lease table every tick until told to stop; `running` names the instances
/// whose mapping runs (not dead, not asleep, not starting).
pub(super) async fn watch_unread(
    aws: Arc<LocalAws>,
    table: String,
    running: Arc<Mutex<HashSet<String>>>,
    began: Instant,
    mut stop: watch::Receiver<bool>,
) -> UnreadWatch {
    let mut watch = UnreadWatch::default();
    while !*stop.borrow() {
        let leases = leases_by_shard(&aws.raw_leases(&table).await);
        let views = lease_views(&leases);
        {
            let running = running.lock().unwrap_or_else(PoisonError::into_inner);
            let running: HashSet<&str> = running.iter().map(String::as_str).collect();
            watch.look(began.elapsed(), &verdict::unread_shards(&views, &running));
        }
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            _ = stop.changed() => {}
        }
    }
    watch
}
