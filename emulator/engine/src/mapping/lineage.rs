//! The lease lifecycle across resharding, as pure functions of the stream's shards and the lease
//! table: which shards get a lease, which may start, and which leases may go
//! (`docs/resharding.md`).
//!
//! The rules rest on one fact the lifecycle keeps true: every shard that was finished and lost its
//! lease still has a descendant with a lease. A lease is deleted only once each of its shard's
//! children has a lease that has checkpointed, and a shard without children (an open one) never
//! loses its lease while it is listed; so walking down from a finished shard always reaches a
//! lease. Hence "some descendant has a lease" marks a shard that must never be read again, at
//! whatever depth of resharding.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::config::StartingPosition;
use crate::lease::{Checkpoint, Lease};
use kinesis_source::Shard;

/// The parent/child links of a stream's shards, from `ListShards` and from the lease table.
pub(super) struct Lineage<'a> {
    children: HashMap<&'a str, HashSet<&'a str>>,
    listed: HashMap<&'a str, &'a Shard>,
}

impl<'a> Lineage<'a> {
    /// The links named by the listed shards (`ParentShardId`, `AdjacentParentShardId`) and by
    /// the leases (`parentShardId`, `childShardIds`), so that a link is known while either side
    /// still tells it.
    pub(super) fn new(shards: &'a [Shard], leases: &'a BTreeMap<String, Lease>) -> Self {
        let mut children: HashMap<&str, HashSet<&str>> = HashMap::new();
        for shard in shards {
            for parent in shard.parents() {
                children.entry(parent).or_default().insert(&shard.shard_id);
            }
        }
        for lease in leases.values() {
            for parent in &lease.parent_shard_ids {
                children.entry(parent).or_default().insert(&lease.shard_id);
            }
            for child in &lease.child_shard_ids {
                children.entry(&lease.shard_id).or_default().insert(child);
            }
        }
        let listed = shards
            .iter()
            .map(|shard| (shard.shard_id.as_str(), shard))
            .collect();
        Self { children, listed }
    }

    /// The shard's children, as far as they are known.
    fn children_of(&self, shard_id: &str) -> impl Iterator<Item = &'a str> + '_ {
        self.children.get(shard_id).into_iter().flatten().copied()
    }

    /// Whether some descendant of `shard_id` (a child, grandchild, ...) satisfies `wanted`.
    fn any_descendant(&self, shard_id: &str, wanted: impl Fn(&str) -> bool) -> bool {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut to_visit: Vec<&str> = self.children_of(shard_id).collect();
        while let Some(descendant) = to_visit.pop() {
            if !seen.insert(descendant) {
                continue;
            }
            if wanted(descendant) {
                return true;
            }
            to_visit.extend(self.children_of(descendant));
        }
        false
    }

    /// How many generations of listed parents lie above the shard (0 for a shard none of
    /// whose parents is listed).
    fn depth(&self, shard: &Shard, memo: &mut HashMap<&'a str, usize>) -> usize {
        if let Some(&depth) = memo.get(shard.shard_id.as_str()) {
            return depth;
        }
        let depth = shard
            .parents()
            .filter_map(|parent| self.listed.get(parent).copied())
            .map(|parent| 1 + self.depth(parent, memo))
            .max()
            .unwrap_or(0);
        if let Some(&listed) = self.listed.get(shard.shard_id.as_str()) {
            memo.insert(&listed.shard_id, depth);
        }
        depth
    }
}

/// The leases to create in one round, parents before children: for every listed shard that has
/// no lease and no descendant with a lease, at the position it starts from.
///
/// On an empty table (the mapping's first start) shards start where `starting_position` says,
/// and with `LATEST` closed shards get no lease: their records are older than "now". Later, a
/// shard without a lease is one that appeared through resharding and starts at `TRIM_HORIZON`,
/// as the KCL's children do. A shard with a leased descendant is never given one: either it was
/// read to its end and its lease cleaned up, or it was skipped on purpose at the first start.
pub(super) fn leases_to_create<'a>(
    shards: &'a [Shard],
    leases: &BTreeMap<String, Lease>,
    starting_position: &StartingPosition,
) -> Vec<(&'a Shard, Checkpoint)> {
    let lineage = Lineage::new(shards, leases);
    let first_start = leases.is_empty();
    let mut memo = HashMap::new();
    let mut ordered: Vec<(usize, &Shard)> = shards
        .iter()
        .map(|shard| (lineage.depth(shard, &mut memo), shard))
        .collect();
    ordered.sort_by_key(|(depth, _)| *depth);
    ordered
        .into_iter()
        .map(|(_, shard)| shard)
        .filter(|shard| {
            !leases.contains_key(&shard.shard_id)
                && !lineage.any_descendant(&shard.shard_id, |descendant| {
                    leases.contains_key(descendant)
                })
        })
        .filter_map(|shard| {
            let checkpoint = if !first_start {
                Checkpoint::TrimHorizon
            } else {
                match starting_position {
                    StartingPosition::Latest if shard.is_closed() => return None,
                    StartingPosition::Latest => Checkpoint::Latest,
                    StartingPosition::TrimHorizon => Checkpoint::TrimHorizon,
                    StartingPosition::AtTimestamp(_) => Checkpoint::AtTimestamp,
                }
            };
            Some((shard, checkpoint))
        })
        .collect()
}

/// Whether a reader may start on `lease`'s shard: it has not ended, and none of its parents has
/// a lease short of `SHARD_END`. A parent without a lease does not hold its child back (the KCL's
/// `BlockOnParentShardTask` does the same): it was finished and cleaned up, skipped at the first
/// start, or it aged out of the stream.
pub(super) fn may_start(lease: &Lease, leases: &BTreeMap<String, Lease>) -> bool {
    lease.checkpoint != Checkpoint::ShardEnd && parents_ended(lease, leases)
}

/// Whether every parent of `lease`'s shard that has a lease is at `SHARD_END`.
pub(super) fn parents_ended(lease: &Lease, leases: &BTreeMap<String, Lease>) -> bool {
    lease.parent_shard_ids.iter().all(|parent| {
        leases
            .get(parent)
            .is_none_or(|parent| parent.checkpoint == Checkpoint::ShardEnd)
    })
}

/// Why a lease may be deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Deletion {
    /// Its shard ended, each of its children has a lease that has checkpointed, and its own
    /// parents' leases are gone (the KCL's `LeaseCleanupManager`): nothing reads it again, and
    /// its children's leases keep it from being leased anew.
    Finished,
    /// Its shard is no longer listed, nor is any of its parents: it aged out of the stream's
    /// retention, with every record it held. (A child shard created after the listing was taken
    /// still has its listed parent, so its lease is never mistaken for one.)
    AgedOut,
}

/// The leases that may be deleted, and why.
pub(super) fn leases_to_delete<'a>(
    shards: &[Shard],
    leases: &'a BTreeMap<String, Lease>,
) -> Vec<(&'a Lease, Deletion)> {
    let lineage = Lineage::new(shards, leases);
    leases
        .values()
        .filter_map(|lease| {
            let shard_id = lease.shard_id.as_str();
            if !lineage.listed.contains_key(shard_id)
                && !lease
                    .parent_shard_ids
                    .iter()
                    .any(|parent| lineage.listed.contains_key(parent.as_str()))
            {
                return Some((lease, Deletion::AgedOut));
            }
            let mut children = lineage.children_of(shard_id).peekable();
            let finished = lease.checkpoint == Checkpoint::ShardEnd
                && children.peek().is_some()
                && children.all(|child| {
                    leases
                        .get(child)
                        .is_some_and(|child| !child.checkpoint.is_initial())
                })
                && lease
                    .parent_shard_ids
                    .iter()
                    .all(|parent| !leases.contains_key(parent));
            finished.then_some((lease, Deletion::Finished))
        })
        .collect()
}

/// The parent of a merge's child that has no lease yet, when `ending` (the other parent) reaches
/// its end: the child's lease must wait for it. Were the child's lease created first, that parent
/// would count as finished (a descendant has a lease) and never get one, and the child would start
/// before that parent's records were read. The KCL's `ShutdownTask` defers a merge child's lease
/// the same way.
pub(super) fn merge_parent_without_lease<'a>(
    ending: &str,
    child_parents: &'a [String],
    leases: &BTreeMap<String, Lease>,
) -> Option<&'a str> {
    child_parents
        .iter()
        .map(String::as_str)
        .find(|parent| *parent != ending && !leases.contains_key(*parent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinesis_source::HashKeyRange;

    /// A small deterministic generator (xorshift64*), so that each seed replays the same lineage.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, bound: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % bound
        }
    }

    /// A stream resharded at random and the lease table of the mapping that reads it, with what
    /// actually happened to each shard, to check the rules against.
    struct Simulation {
        rng: Rng,
        /// Every shard ever created, with whether `ListShards` still lists it.
        shards: Vec<(Shard, bool)>,
        leases: BTreeMap<String, Lease>,
        starting_position: StartingPosition,
        /// Shards read to their end (their reader wrote `SHARD_END`).
        ended: HashSet<String>,
        /// Shards a reader started on.
        started: HashSet<String>,
        /// Shards skipped on purpose at the first start (closed, `LATEST`) or aged out.
        skipped: HashSet<String>,
        synced: bool,
    }

    impl Simulation {
        fn new(seed: u64, starting_position: StartingPosition, shard_count: u128) -> Self {
            let width = u128::MAX / shard_count;
            let shards = (0..shard_count)
                .map(|index| {
                    let end = if index + 1 == shard_count {
                        u128::MAX
                    } else {
                        (index + 1) * width - 1
                    };
                    (shard(index as usize, None, None, index * width, end), true)
                })
                .collect();
            Self {
                rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
                shards,
                leases: BTreeMap::new(),
                starting_position,
                ended: HashSet::new(),
                started: HashSet::new(),
                skipped: HashSet::new(),
                synced: false,
            }
        }

        fn listed(&self) -> Vec<Shard> {
            self.shards
                .iter()
                .filter(|(_, listed)| *listed)
                .map(|(shard, _)| shard.clone())
                .collect()
        }

        fn open_in_hash_order(&self) -> Vec<usize> {
            let mut open: Vec<usize> = (0..self.shards.len())
                .filter(|&index| !self.shards[index].0.is_closed())
                .collect();
            open.sort_by_key(|&index| self.shards[index].0.hash_key_range.starting_hash_key);
            open
        }

        fn close(&mut self, index: usize) {
            self.shards[index].0.ending_sequence_number = Some("1".parse().unwrap());
        }

        /// Splits a random open shard, or merges two adjacent ones.
        fn reshard(&mut self) {
            let open = self.open_in_hash_order();
            let next_id = self.shards.len();
            if open.len() >= 2 && (open.len() >= 6 || self.rng.below(2) == 0) {
                let at = self.rng.below(open.len() - 1);
                let (left, right) = (open[at], open[at + 1]);
                let range = HashKeyRange {
                    starting_hash_key: self.shards[left].0.hash_key_range.starting_hash_key,
                    ending_hash_key: self.shards[right].0.hash_key_range.ending_hash_key,
                };
                let (left_id, right_id) = (
                    self.shards[left].0.shard_id.clone(),
                    self.shards[right].0.shard_id.clone(),
                );
                self.close(left);
                self.close(right);
                self.shards.push((
                    shard(
                        next_id,
                        Some(left_id),
                        Some(right_id),
                        range.starting_hash_key,
                        range.ending_hash_key,
                    ),
                    true,
                ));
            } else {
                let parent = open[self.rng.below(open.len())];
                let range = self.shards[parent].0.hash_key_range;
                let middle =
                    range.starting_hash_key + (range.ending_hash_key - range.starting_hash_key) / 2;
                let parent_id = self.shards[parent].0.shard_id.clone();
                self.close(parent);
                for (offset, (start, end)) in [
                    (range.starting_hash_key, middle),
                    (middle + 1, range.ending_hash_key),
                ]
                .into_iter()
                .enumerate()
                {
                    let child = shard(next_id + offset, Some(parent_id.clone()), None, start, end);
                    self.shards.push((child, true));
                }
            }
        }

        /// Stops listing the oldest listed closed shard, as retention does, if none of its
        /// parents is still listed (shards expire in the order they closed).
        fn age_out(&mut self) {
            let listed: HashSet<String> = self
                .listed()
                .into_iter()
                .map(|shard| shard.shard_id)
                .collect();
            let oldest = self.shards.iter().position(|(shard, is_listed)| {
                *is_listed && shard.is_closed() && !shard.parents().any(|p| listed.contains(p))
            });
            if let Some(index) = oldest {
                self.shards[index].1 = false;
                let shard_id = self.shards[index].0.shard_id.clone();
                if !self.ended.contains(&shard_id) {
                    self.skipped.insert(shard_id);
                }
            }
        }

        /// The shards whose `parents` include `parent`.
        fn children_of(&self, parent: &str) -> Vec<&Shard> {
            self.shards
                .iter()
                .map(|(shard, _)| shard)
                .filter(|shard| shard.parents().any(|p| p == parent))
                .collect()
        }

        fn descendants(&self, shard_id: &str) -> HashSet<String> {
            let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
            for (shard, _) in &self.shards {
                for parent in shard.parents() {
                    children.entry(parent).or_default().push(&shard.shard_id);
                }
            }
            let mut found = HashSet::new();
            let mut to_visit = vec![shard_id];
            while let Some(next) = to_visit.pop() {
                for &child in children.get(next).into_iter().flatten() {
                    if found.insert(child.to_owned()) {
                        to_visit.push(child);
                    }
                }
            }
            found
        }

        /// The reader's step on a random leased shard that may start: it starts (checkpoints a
        /// first batch), or, caught up on a closed shard, ends it as `ShardReader::end_shard`
        /// does. Returns whether anything changed.
        fn read(&mut self, pick: Option<usize>) -> bool {
            let runnable: Vec<String> = self
                .leases
                .values()
                .filter(|lease| may_start(lease, &self.leases))
                .filter(|lease| {
                    self.shards
                        .iter()
                        .any(|(s, l)| *l && s.shard_id == lease.shard_id)
                })
                .map(|lease| lease.shard_id.clone())
                .collect();
            if runnable.is_empty() {
                return false;
            }
            let pick = pick.unwrap_or_else(|| self.rng.below(runnable.len()));
            let shard_id = &runnable[pick % runnable.len()];
            let shard = self
                .shards
                .iter()
                .map(|(shard, _)| shard.clone())
                .find(|shard| shard.shard_id == *shard_id)
                .unwrap();
            let lease = &self.leases[shard_id];
            if lease.checkpoint.is_initial() {
                assert!(
                    !self.ended.contains(shard_id),
                    "{shard_id} was read again after its end"
                );
                for parent in shard.parents() {
                    assert!(
                        self.ended.contains(parent) || self.skipped.contains(parent),
                        "{shard_id} started before its parent {parent} ended"
                    );
                }
                self.started.insert(shard_id.clone());
                self.leases.get_mut(shard_id).unwrap().checkpoint =
                    Checkpoint::SequenceNumber("1".parse().unwrap());
                return true;
            }
            if !shard.is_closed() {
                return false;
            }
            let children: Vec<Shard> = self.children_of(shard_id).into_iter().cloned().collect();
            for child in &children {
                let parents: Vec<String> = child.parents().map(str::to_owned).collect();
                if merge_parent_without_lease(shard_id, &parents, &self.leases).is_some() {
                    return false;
                }
            }
            for child in &children {
                let mut lease =
                    Lease::new(&child.shard_id, &child.shard_id, Checkpoint::TrimHorizon);
                lease.parent_shard_ids = child.parents().map(str::to_owned).collect();
                self.leases.entry(child.shard_id.clone()).or_insert(lease);
            }
            let lease = self.leases.get_mut(shard_id).unwrap();
            lease.child_shard_ids = children.iter().map(|c| c.shard_id.clone()).collect();
            lease.checkpoint = Checkpoint::ShardEnd;
            assert!(
                self.ended.insert(shard_id.clone()),
                "{shard_id} ended twice"
            );
            true
        }

        /// A coordinator's round: creates and deletes what the rules say, checking each
        /// decision against what happened. `meanwhile` runs between the snapshot the rules read
        /// and the writes, as happens when another instance works on the same table.
        fn sync(&mut self, meanwhile: impl FnOnce(&mut Self)) -> bool {
            let listed = self.listed();
            let snapshot = self.leases.clone();
            let to_create: Vec<(Shard, Checkpoint)> =
                leases_to_create(&listed, &snapshot, &self.starting_position)
                    .into_iter()
                    .map(|(shard, checkpoint)| (shard.clone(), checkpoint))
                    .collect();
            let to_delete: Vec<(Lease, Deletion)> = leases_to_delete(&listed, &snapshot)
                .into_iter()
                .map(|(lease, why)| (lease.clone(), why))
                .collect();
            meanwhile(self);
            let mut changed = false;
            if !self.synced {
                self.synced = true;
                let closed_skipped = self.starting_position == StartingPosition::Latest;
                for (shard, _) in &self.shards {
                    if closed_skipped && shard.is_closed() {
                        self.skipped.insert(shard.shard_id.clone());
                    }
                }
            }
            for (shard, checkpoint) in to_create {
                let shard_id = &shard.shard_id;
                assert!(
                    !self.ended.contains(shard_id),
                    "{shard_id} was leased again after its end"
                );
                for descendant in self.descendants(shard_id) {
                    assert!(
                        !snapshot.contains_key(&descendant) && !self.ended.contains(&descendant),
                        "{shard_id} was leased although its descendant {descendant} has a lease or ended"
                    );
                }
                let mut lease = Lease::new(shard_id, shard_id, checkpoint);
                lease.parent_shard_ids = shard.parents().map(str::to_owned).collect();
                if !self.leases.contains_key(shard_id) {
                    self.leases.insert(shard_id.clone(), lease);
                    changed = true;
                }
            }
            for (lease, why) in to_delete {
                let shard_id = &lease.shard_id;
                match why {
                    Deletion::AgedOut => assert!(
                        !listed.iter().any(|shard| shard.shard_id == *shard_id),
                        "{shard_id} deleted as aged out while listed"
                    ),
                    Deletion::Finished => {
                        assert!(
                            self.ended.contains(shard_id),
                            "{shard_id} deleted before its end"
                        );
                        let children = self.children_of(shard_id);
                        assert!(!children.is_empty());
                        for child in children {
                            assert!(
                                self.started.contains(&child.shard_id),
                                "{shard_id} deleted before its child {} started",
                                child.shard_id
                            );
                        }
                    }
                }
                changed |= self.leases.remove(shard_id).is_some();
            }
            self.check_finished_shards_keep_a_leased_descendant();
            changed
        }

        /// Every shard that ended, and is listed, still has a leased descendant: the fact that
        /// keeps it from being leased again.
        fn check_finished_shards_keep_a_leased_descendant(&self) {
            for shard in self.listed() {
                let shard_id = &shard.shard_id;
                if self.ended.contains(shard_id) && !self.leases.contains_key(shard_id) {
                    assert!(
                        self.descendants(shard_id)
                            .iter()
                            .any(|descendant| self.leases.contains_key(descendant)),
                        "{shard_id} ended and has neither a lease nor a leased descendant"
                    );
                }
            }
        }
    }

    fn shard(
        index: usize,
        parent: Option<String>,
        adjacent_parent: Option<String>,
        starting_hash_key: u128,
        ending_hash_key: u128,
    ) -> Shard {
        Shard {
            shard_id: format!("shardId-{index:012}"),
            parent_shard_id: parent,
            adjacent_parent_shard_id: adjacent_parent,
            hash_key_range: HashKeyRange {
                starting_hash_key,
                ending_hash_key,
            },
            starting_sequence_number: "0".parse().unwrap(),
            ending_sequence_number: None,
        }
    }

    /// Runs one generated history: a few reshards before the first start, then reshards, reads,
    /// coordinator rounds of two instances (one of them on a stale snapshot) and, when
    /// `retention` says so, shards aging out; then no more resharding until nothing changes.
    #[track_caller]
    fn check_history(seed: u64, starting_position: StartingPosition, retention: bool) {
        let mut simulation = Simulation::new(seed, starting_position, 1 + seed as u128 % 3);
        for _ in 0..simulation.rng.below(3) {
            simulation.reshard();
        }
        simulation.sync(|_| {});
        let mut reshards = 0;
        for _ in 0..200 {
            match simulation.rng.below(10) {
                0 | 1 if reshards < 10 => {
                    simulation.reshard();
                    reshards += 1;
                }
                9 if retention => simulation.age_out(),
                2 | 3 => {
                    simulation.sync(|_| {});
                }
                4 => {
                    // Another instance's round, read before one reader step and written after.
                    simulation.sync(|simulation| {
                        simulation.read(None);
                    });
                }
                _ => {
                    simulation.read(None);
                }
            }
        }
        // Let everything settle: every runnable shard read, every round done.
        for _ in 0..1000 {
            let mut changed = simulation.sync(|_| {});
            let runnable = simulation.leases.len();
            for pick in 0..runnable {
                changed |= simulation.read(Some(pick));
            }
            if !changed {
                break;
            }
        }
        let open: Vec<String> = simulation
            .listed()
            .into_iter()
            .filter(|shard| !shard.is_closed())
            .map(|shard| shard.shard_id)
            .collect();
        let left: Vec<String> = simulation.leases.keys().cloned().collect();
        let mut expected = open.clone();
        expected.sort();
        assert_eq!(
            left, expected,
            "seed {seed}: only the open shards keep leases"
        );
        for shard_id in &open {
            assert!(
                simulation.started.contains(shard_id),
                "seed {seed}: {shard_id} never started"
            );
        }
        for (shard, _) in &simulation.shards {
            let shard_id = &shard.shard_id;
            if shard.is_closed() && !simulation.skipped.contains(shard_id) {
                assert!(
                    simulation.ended.contains(shard_id),
                    "seed {seed}: {shard_id} was never read to its end"
                );
            }
        }
    }

    /// How many histories each test generates.
    const SEEDS: u64 = 20;

    #[test]
    fn no_generated_lineage_leases_a_finished_shard_again() {
        for seed in 0..SEEDS {
            check_history(seed, StartingPosition::TrimHorizon, false);
            check_history(seed, StartingPosition::Latest, false);
        }
    }

    #[test]
    fn shards_that_age_out_lose_their_leases_and_hold_nothing_back() {
        for seed in 0..SEEDS {
            check_history(seed, StartingPosition::TrimHorizon, true);
        }
    }
}
