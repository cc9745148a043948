//! `ParallelizationFactor`'s rules as pure functions (`docs/event-source-mapping.md` §6): which
//! of a shard's concurrent batches (its *lanes*) a record goes to, what a lane's next batch
//! takes, when a lane may start it, and how far the shard's checkpoint may move while the lanes
//! settle their records in any order.

use std::collections::VecDeque;

use md5::{Digest, Md5};

/// The lane of a record with `partition_key` and `sequence_number`, among `lanes`: a key always
/// goes to the same lane, so the records of one key are delivered in shard order. AWS does not
/// document its hash; this is the one Kinesis routes keys to shards with (MD5), reduced modulo
/// the lane count.
///
/// A record with no partition key (an empty one: a stream with the `AUTO` record distribution
/// strategy takes records without a key, and a key is otherwise at least one character long) has
/// no per-key order to keep, so it is spread by the same hash of its sequence number instead of
/// piling every keyless record into one lane. The checkpoint needs nothing more: the ledger
/// already moves it only over records settled in every lane (`docs/event-source-mapping.md` §6).
pub(super) fn lane_of(partition_key: &str, sequence_number: &str, lanes: usize) -> usize {
    if lanes <= 1 {
        return 0;
    }
    let routed_by = if partition_key.is_empty() {
        sequence_number
    } else {
        partition_key
    };
    let digest = u128::from_be_bytes(Md5::digest(routed_by.as_bytes()).into());
    (digest % lanes as u128) as usize
}

/// How many of the records at the front of a queue make the next batch: up to `batch_size`
/// records, and no more than `max_bytes` of event (a first record always goes, however large:
/// the invocation then fails as on Lambda).
pub(super) fn batch_len(
    sizes: impl IntoIterator<Item = usize>,
    batch_size: usize,
    max_bytes: usize,
) -> usize {
    let mut bytes = 0;
    let mut count = 0;
    for size in sizes.into_iter().take(batch_size) {
        if count > 0 && bytes + size > max_bytes {
            break;
        }
        bytes += size;
        count += 1;
    }
    count
}

/// One record of a lane's queue: its place in the ledger, its event size, the record.
#[derive(Debug)]
struct Queued<T> {
    ticket: u64,
    size: usize,
    item: T,
}

/// One record the lanes took in, in shard order: where the checkpoint would move past it, its
/// event size, and whether its lane settled it.
#[derive(Debug)]
struct Entry<K> {
    key: K,
    size: usize,
    settled: bool,
}

/// A shard's concurrent batches (its *lanes*) with no I/O: the records taken in from the
/// reader's buffer, in shard order (the ledger), each lane's queue of records not yet handed to
/// a batch, which lanes have a batch in flight, and which of those failed.
///
/// Every lane runs on its own: it starts its next batch as soon as its last one is settled, while
/// the others still run, so a slow batch holds only its own keys. The ledger keeps the records
/// from the oldest unsettled one on: the checkpoint may move only over its settled prefix
/// ([`Self::settle`]), since a restart resumes after the checkpoint and must deliver every
/// unsettled record again. What the ledger holds is bounded ([`Self::admits`]), and a lane whose
/// batch failed pauses the shard: no lane starts a batch until it settles ([`Self::next_batch`]).
#[derive(Debug)]
pub(super) struct Lanes<K, T> {
    /// The ticket of the ledger's first entry.
    first_ticket: u64,
    ledger: VecDeque<Entry<K>>,
    /// The event bytes of the ledger's records.
    ledger_bytes: usize,
    queues: Vec<VecDeque<Queued<T>>>,
    busy: Vec<bool>,
    failing: Vec<bool>,
    max_records: usize,
    max_bytes: usize,
}

impl<K: Clone, T> Lanes<K, T> {
    /// `lanes` lanes, whose ledger holds at most `max_records` records and `max_bytes` of event
    /// (a first record is always taken in, however large).
    pub(super) fn new(lanes: usize, max_records: usize, max_bytes: usize) -> Self {
        Self {
            first_ticket: 0,
            ledger: VecDeque::new(),
            ledger_bytes: 0,
            queues: (0..lanes).map(|_| VecDeque::new()).collect(),
            busy: vec![false; lanes],
            failing: vec![false; lanes],
            max_records,
            max_bytes,
        }
    }

    /// Whether a record of `size` bytes may be taken in: the ledger is below its bounds.
    pub(super) fn admits(&self, size: usize) -> bool {
        self.ledger.is_empty()
            || (self.ledger.len() < self.max_records && self.ledger_bytes + size <= self.max_bytes)
    }

    /// Takes in the next record of the shard, for `lane`: `key` is what the checkpoint moves to
    /// once it and every record before it are settled.
    pub(super) fn admit(&mut self, lane: usize, key: K, size: usize, item: T) {
        let ticket = self.first_ticket + self.ledger.len() as u64;
        self.ledger.push_back(Entry {
            key,
            size,
            settled: false,
        });
        self.ledger_bytes += size;
        self.queues[lane].push_back(Queued { ticket, size, item });
    }

    /// Whether the shard is paused: a lane's batch failed and is not settled yet (AWS: "the event
    /// source mapping pauses processing for the affected shard until the error is resolved").
    pub(super) fn paused(&self) -> bool {
        self.failing.iter().any(|&failing| failing)
    }

    /// The next batch of `lane`, if it may start one: the lane has none in flight, records
    /// queued, and the shard is not paused. The lane is busy until [`Self::finished`]. Returns
    /// the records' tickets, to settle them by, and the records.
    pub(super) fn next_batch(
        &mut self,
        lane: usize,
        batch_size: usize,
        max_bytes: usize,
    ) -> Option<(Vec<u64>, Vec<T>)> {
        if self.busy[lane] || self.paused() || self.queues[lane].is_empty() {
            return None;
        }
        let queue = &mut self.queues[lane];
        let count = batch_len(
            queue.iter().map(|queued| queued.size),
            batch_size,
            max_bytes,
        );
        self.busy[lane] = true;
        Some(
            queue
                .drain(..count)
                .map(|queued| (queued.ticket, queued.item))
                .unzip(),
        )
    }

    /// `lane`'s batch failed an invocation: the shard pauses until the batch is settled.
    pub(super) fn failed(&mut self, lane: usize) {
        if self.busy[lane] {
            self.failing[lane] = true;
        }
    }

    /// `lane`'s batch is over: every record of it is settled (or the reader stops).
    pub(super) fn finished(&mut self, lane: usize) {
        self.busy[lane] = false;
        self.failing[lane] = false;
    }

    /// Marks the records of `tickets` settled, and returns the key of the last record of the
    /// ledger's settled prefix if the prefix grew: the checkpoint may move to it.
    pub(super) fn settle(&mut self, tickets: impl IntoIterator<Item = u64>) -> Option<K> {
        for ticket in tickets {
            let Some(index) = ticket.checked_sub(self.first_ticket) else {
                continue; // Settled before, and passed.
            };
            if let Some(entry) = self.ledger.get_mut(index as usize) {
                entry.settled = true;
            }
        }
        let mut passed = None;
        while self.ledger.front().is_some_and(|entry| entry.settled) {
            let entry = self.ledger.pop_front().expect("the front is there");
            self.ledger_bytes -= entry.size;
            self.first_ticket += 1;
            passed = Some(entry.key);
        }
        passed
    }

    /// Whether every record taken in is settled (and passed by the ledger).
    pub(super) fn is_settled(&self) -> bool {
        self.ledger.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_always_goes_to_the_same_lane() {
        for key in ["a", "shipment-17", "ünïcode"] {
            let lane = lane_of(key, "1", 7);
            assert!(lane < 7);
            // Whatever the record's sequence number: its key alone decides.
            assert!((0..100).all(|sequence| lane_of(key, &sequence.to_string(), 7) == lane));
        }
    }

    #[test]
    fn one_lane_takes_every_record() {
        assert_eq!(lane_of("anything", "1", 1), 0);
        assert_eq!(lane_of("", "1", 1), 0);
    }

    /// How `records` records routed by `lane` spread over `lanes` lanes.
    #[track_caller]
    fn check_spread(lanes: usize, records: usize, lane: impl Fn(usize) -> usize) {
        let mut counts = vec![0usize; lanes];
        for index in 0..records {
            counts[lane(index)] += 1;
        }
        // MD5 spreads evenly: every lane within 20 % of its share.
        let share = records / lanes;
        assert!(
            counts
                .iter()
                .all(|&count| count * 5 >= share * 4 && count * 5 <= share * 6),
            "{counts:?}"
        );
    }

    #[test]
    fn keys_spread_over_every_lane() {
        check_spread(10, 10_000, |index| {
            lane_of(&format!("key-{index}"), "1", 10)
        });
    }

    #[test]
    fn keyless_records_spread_over_every_lane_by_sequence_number() {
        // Consecutive sequence numbers of one shard, as Kinesis hands them out (long decimals
        // that differ in their middle digits).
        let sequence =
            |index: usize| format!("4959{:020}00000000000000000{index:06}0002", index * 7);
        check_spread(2, 1_000, |index| lane_of("", &sequence(index), 2));
        check_spread(10, 10_000, |index| lane_of("", &sequence(index), 10));
        // A keyless record's lane is fixed by its sequence number: a redelivery goes where the
        // first delivery went.
        assert_eq!(lane_of("", &sequence(3), 10), lane_of("", &sequence(3), 10));
    }

    #[test]
    fn a_batch_takes_records_up_to_the_batch_size_and_the_payload_limit() {
        // (record sizes, batch size, payload limit, records taken)
        let cases: [(&[usize], usize, usize, usize); 6] = [
            (&[1, 1, 1], 10, 100, 3),
            (&[1, 1, 1], 2, 100, 2),
            (&[60, 60, 60], 10, 100, 1),
            (&[40, 60, 1], 10, 100, 2),
            // A record larger than the limit still goes alone (the invocation fails as on Lambda).
            (&[500, 1], 10, 100, 1),
            (&[], 10, 100, 0),
        ];
        for (sizes, batch_size, max_bytes, taken) in cases {
            assert_eq!(
                batch_len(sizes.iter().copied(), batch_size, max_bytes),
                taken,
                "{sizes:?}, batch size {batch_size}, limit {max_bytes}"
            );
        }
    }

    /// Lanes over records named by their shard position, each of size 1.
    fn lanes_with(lanes: usize, routed: &[usize]) -> Lanes<usize, usize> {
        let mut board = Lanes::new(lanes, 100, 1_000);
        for (position, &lane) in routed.iter().enumerate() {
            board.admit(lane, position, 1, position);
        }
        board
    }

    #[test]
    fn a_lane_takes_its_own_records_in_shard_order() {
        let mut lanes = lanes_with(3, &[0, 1, 0, 2, 1, 0]);
        assert_eq!(
            lanes.next_batch(0, 10, 100),
            Some((vec![0, 2, 5], vec![0, 2, 5]))
        );
        assert_eq!(lanes.next_batch(1, 10, 100), Some((vec![1, 4], vec![1, 4])));
        assert_eq!(lanes.next_batch(2, 10, 100), Some((vec![3], vec![3])));
    }

    #[test]
    fn a_lane_starts_its_next_batch_while_the_others_still_run() {
        // Lane 0 holds records 0 and 1 (batch size 1); lane 1 holds records 2 and 3.
        let mut lanes = lanes_with(2, &[0, 0, 1, 1]);
        assert!(lanes.next_batch(0, 1, 100).is_some());
        assert!(lanes.next_batch(1, 1, 100).is_some());
        // One batch in flight per lane: a key's next batch waits for its last one.
        assert_eq!(lanes.next_batch(1, 1, 100), None);
        // Lane 1 settles its batch while lane 0's still runs: it starts its next one at once.
        assert_eq!(lanes.settle([2]), None);
        lanes.finished(1);
        assert_eq!(lanes.next_batch(1, 1, 100), Some((vec![3], vec![3])));
        // Lane 0's batch is still in flight: its next record waits.
        assert_eq!(lanes.next_batch(0, 1, 100), None);
    }

    #[test]
    fn the_checkpoint_moves_only_over_records_settled_in_every_lane() {
        // (tickets settled, then where the checkpoint may move): records 0..6, lane A has 0, 2,
        // 4 and lane B 1, 3, 5.
        let steps: [(&[u64], Option<usize>); 6] = [
            // Lane B settles all of its records first: record 0 is not settled, nothing moves.
            (&[1, 3, 5], None),
            // Lane A settles record 0 (a partial response): the prefix covers 0 and 1.
            (&[0], Some(1)),
            // Record 2 is held: nothing beyond it moves, however much else is settled.
            (&[4], None),
            // Record 2 settles (or is discarded): every record is settled.
            (&[2], Some(5)),
            // Settling again changes nothing.
            (&[2, 0], None),
            (&[], None),
        ];
        let mut lanes = lanes_with(2, &[0, 1, 0, 1, 0, 1]);
        for (step, (tickets, checkpoint)) in steps.into_iter().enumerate() {
            assert_eq!(
                lanes.settle(tickets.iter().copied()),
                checkpoint,
                "step {step}: settling {tickets:?}"
            );
        }
        assert!(lanes.is_settled());
    }

    #[test]
    fn what_is_taken_in_ahead_of_the_checkpoint_is_bounded() {
        // (records in the ledger, bytes in it, size of the next record, taken in): at most 4
        // records and 100 bytes.
        let cases = [
            (0, 0, 500, true), // A first record always goes, however large.
            (1, 10, 10, true),
            (3, 90, 10, true),
            (3, 90, 11, false),
            (4, 10, 1, false),
        ];
        for (records, bytes, size, admitted) in cases {
            let mut lanes: Lanes<usize, ()> = Lanes::new(2, 4, 100);
            for position in 0..records {
                lanes.admit(0, position, if position == 0 { bytes } else { 0 }, ());
            }
            assert_eq!(
                lanes.admits(size),
                admitted,
                "{records} records of {bytes} bytes, then {size}"
            );
        }
        // The bound is over the ledger, settled records behind an unsettled one included: they
        // are delivered again after a restart.
        let mut lanes = Lanes::new(2, 4, 100);
        for position in 0..4 {
            lanes.admit(position % 2, position, 1, ());
        }
        assert_eq!(lanes.settle([1, 2, 3]), None);
        assert!(!lanes.admits(1));
        assert_eq!(lanes.settle([0]), Some(3));
        assert!(lanes.admits(1));
    }

    #[test]
    fn a_failed_batch_pauses_every_lane_until_it_settles() {
        let mut lanes = lanes_with(3, &[0, 1, 2, 1, 2]);
        assert!(lanes.next_batch(0, 1, 100).is_some());
        assert!(lanes.next_batch(1, 1, 100).is_some());
        lanes.failed(0);
        assert!(lanes.paused());
        // Lane 1 finishes what it has; neither it nor lane 2 starts anything new.
        lanes.settle([1]);
        lanes.finished(1);
        assert_eq!(lanes.next_batch(1, 1, 100), None);
        assert_eq!(lanes.next_batch(2, 1, 100), None);
        // The failed batch settles (a retry succeeded, or it was discarded): the shard goes on.
        lanes.settle([0]);
        lanes.finished(0);
        assert!(!lanes.paused());
        assert_eq!(lanes.next_batch(1, 1, 100), Some((vec![3], vec![3])));
        assert_eq!(lanes.next_batch(2, 1, 100), Some((vec![2], vec![2])));
    }

    #[test]
    fn a_lane_with_no_batch_in_flight_cannot_fail() {
        let mut lanes = lanes_with(2, &[0]);
        lanes.failed(1);
        assert!(!lanes.paused());
    }
}
