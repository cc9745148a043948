//! `ParallelizationFactor`'s rules as pure functions (`docs/event-source-mapping.md` §6): which
//! of a shard's concurrent batches (its *lanes*) a record goes to, which records one round of
//! concurrent batches takes, and how far the shard's checkpoint may move while the lanes settle
//! their records in any order.

use md5::{Digest, Md5};

/// The lane of a record with `partition_key`, among `lanes`: a key always goes to the same lane,
/// so the records of one key are delivered in shard order. AWS does not document its hash; this
/// is the one Kinesis routes keys to shards with (MD5), reduced modulo the lane count.
pub(super) fn lane_of(partition_key: &str, lanes: usize) -> usize {
    if lanes <= 1 {
        return 0;
    }
    let digest = u128::from_be_bytes(Md5::digest(partition_key.as_bytes()).into());
    (digest % lanes as u128) as usize
}

/// One round of concurrent batches: the records it takes from the front of the buffer, and, for
/// each lane, the positions (among those records) of its batch, in shard order.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Round {
    pub(super) taken: usize,
    pub(super) lanes: Vec<Vec<usize>>,
}

/// Plans a round over the buffered records, each given as its lane and its size in the event:
/// the longest run from the front in which no lane's batch passes `batch_size` records or
/// `max_bytes` (a lane's first record always fits). The run stops at the first record whose lane
/// is full, so a round is always a prefix of the buffer: the records behind it wait for the next
/// round, and with them every later record of the same keys.
pub(super) fn plan_round(
    records: impl IntoIterator<Item = (usize, usize)>,
    lanes: usize,
    batch_size: usize,
    max_bytes: usize,
) -> Round {
    let mut positions = vec![Vec::new(); lanes];
    let mut bytes = vec![0; lanes];
    let mut taken = 0;
    for (lane, size) in records {
        let batch = &mut positions[lane];
        if batch.len() >= batch_size || (!batch.is_empty() && bytes[lane] + size > max_bytes) {
            break;
        }
        batch.push(taken);
        bytes[lane] += size;
        taken += 1;
    }
    Round {
        taken,
        lanes: positions,
    }
}

/// The records of a round, settled in any order by their lanes: the shard's checkpoint may move
/// only over the longest prefix of them that is settled, since a restart resumes after the
/// checkpoint and must deliver every unsettled record again.
#[derive(Debug)]
pub(super) struct SettledPrefix {
    settled: Vec<bool>,
    prefix: usize,
}

impl SettledPrefix {
    /// A round of `len` records, none settled.
    pub(super) fn new(len: usize) -> Self {
        Self {
            settled: vec![false; len],
            prefix: 0,
        }
    }

    /// Marks the records at `positions` settled, and returns the new length of the settled
    /// prefix if it grew: the checkpoint may move to the record before it.
    pub(super) fn settle(&mut self, positions: impl IntoIterator<Item = usize>) -> Option<usize> {
        for position in positions {
            self.settled[position] = true;
        }
        let before = self.prefix;
        while self.settled.get(self.prefix) == Some(&true) {
            self.prefix += 1;
        }
        (self.prefix > before).then_some(self.prefix)
    }

    /// How many records, from the round's first, are settled.
    pub(super) fn prefix(&self) -> usize {
        self.prefix
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_always_goes_to_the_same_lane() {
        for key in ["a", "shipment-17", "", "ünïcode"] {
            let lane = lane_of(key, 7);
            assert!(lane < 7);
            assert!((0..100).all(|_| lane_of(key, 7) == lane));
        }
    }

    #[test]
    fn one_lane_takes_every_key() {
        assert_eq!(lane_of("anything", 1), 0);
    }

    #[test]
    fn keys_spread_over_every_lane() {
        let mut counts = [0usize; 10];
        for index in 0..10_000 {
            counts[lane_of(&format!("key-{index}"), 10)] += 1;
        }
        // 1,000 expected per lane; MD5 spreads keys evenly.
        assert!(
            counts.iter().all(|&count| (800..1200).contains(&count)),
            "{counts:?}"
        );
    }

    #[test]
    fn a_round_gives_each_lane_its_records_in_shard_order() {
        let round = plan_round([(0, 1), (1, 1), (0, 1), (2, 1), (1, 1)], 3, 10, 100);
        assert_eq!(
            round,
            Round {
                taken: 5,
                lanes: vec![vec![0, 2], vec![1, 4], vec![3]],
            }
        );
    }

    #[test]
    fn a_round_stops_at_the_first_record_whose_lane_is_full() {
        // Lane 0 is full after two records: the third record of lane 0 and the lane-1 record
        // behind it wait for the next round, so the round stays a prefix of the buffer.
        let round = plan_round([(0, 1), (0, 1), (1, 1), (0, 1), (1, 1)], 2, 2, 100);
        assert_eq!(round.taken, 3);
        assert_eq!(round.lanes, vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn a_round_stops_where_a_lanes_event_would_pass_the_payload_limit() {
        let round = plan_round([(0, 60), (1, 60), (0, 60)], 2, 10, 100);
        assert_eq!(round.taken, 2);
        // A record larger than the limit still goes alone (the invocation fails as on Lambda).
        let round = plan_round([(0, 500), (1, 1)], 2, 10, 100);
        assert_eq!(round.taken, 2);
    }

    #[test]
    fn the_checkpoint_moves_only_over_records_settled_in_every_lane() {
        // Records 0..6; lane A has 0, 2, 4; lane B has 1, 3, 5.
        let mut settled = SettledPrefix::new(6);
        // Lane B settles all of its records first: record 0 is not settled, nothing moves.
        assert_eq!(settled.settle([1, 3, 5]), None);
        assert_eq!(settled.prefix(), 0);
        // Lane A settles record 0 (a partial response): the prefix covers 0 and 1.
        assert_eq!(settled.settle([0]), Some(2));
        // Record 2 is held: nothing beyond it moves, however much else is settled.
        assert_eq!(settled.settle([4]), None);
        assert_eq!(settled.prefix(), 2);
        // Record 2 settles (or is discarded): the whole round is settled.
        assert_eq!(settled.settle([2]), Some(6));
    }

    #[test]
    fn settling_a_record_twice_changes_nothing() {
        let mut settled = SettledPrefix::new(2);
        assert_eq!(settled.settle([0]), Some(1));
        assert_eq!(settled.settle([0]), None);
        assert_eq!(settled.prefix(), 1);
    }
}
