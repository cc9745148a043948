//! The chaos run's verdict as pure functions of what it saw: the producer's records, the
//! ledger's deliveries in the order they happened, lease table snapshots, the final table. No
//! I/O, so each rule is unit tested on its own.
//!
//! **Per-key order under at-least-once delivery.** Kinesis keeps a partition key's records in
//! order within a shard, and Lambda reads a shard in order from its checkpoint; a reader that
//! takes a shard over (after a kill, a zombie's expiry, a graceful hand-over, a steal) starts
//! again from the last checkpoint, so records after it come twice. A run is then in order when:
//!
//! 1. **No overtaking:** no record is delivered before every earlier record of its key has been
//!    delivered at least once (a record skipped and delivered later would be lost in the
//!    meantime to a consumer keeping the newest state per key).
//! 2. **Replays run in order:** each reader (a function process, one execution environment)
//!    delivers a key's records one after the other: after record `i` comes `i + 1`; or a record
//!    at or before `i` (a replay from a checkpoint, which then goes on in order again); or a
//!    record further on when every record skipped was delivered by *another* reader in the
//!    meantime (it took the shard over and checkpointed them, and this reader took it back). A
//!    reader that jumps over records only it delivered skipped them in a replay.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

/// One delivery of the ledger: which record (its key and its number within the key, as the
/// producer numbered them) reached which reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyedDelivery {
    /// The producer's key.
    pub key: usize,
    /// The record's number within its key, from 0.
    pub index: u64,
    /// The function process it was delivered to.
    pub reader: u32,
}

/// A delivery that broke per-key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderViolation {
    /// Its place in the ledger (0-based).
    pub position: usize,
    /// The delivery.
    pub delivery: KeyedDelivery,
    /// Which rule it broke, in words.
    pub why: String,
}

/// The deliveries that broke per-key order (rules 1 and 2 of the module's text), in ledger order.
pub fn order_violations(deliveries: &[KeyedDelivery]) -> Vec<OrderViolation> {
    // Per key: how many of its first records have all been delivered (the frontier), and
    // which readers delivered each record.
    let mut frontier: HashMap<usize, u64> = HashMap::new();
    let mut delivered_by: HashMap<(usize, u64), HashSet<u32>> = HashMap::new();
    let mut previous: HashMap<(u32, usize), u64> = HashMap::new();
    let mut violations = Vec::new();
    for (position, &delivery) in deliveries.iter().enumerate() {
        let KeyedDelivery { key, index, reader } = delivery;
        let reached = frontier.entry(key).or_insert(0);
        let mut why = None;
        if index > *reached {
            why = Some(format!(
                "key {key}: record {index} delivered before record {reached} ever was"
            ));
        }
        if why.is_none()
            && let Some(&before) = previous.get(&(reader, key))
            && index > before + 1
        {
            let only_this_reader = (before + 1..index).find(|skipped| {
                delivered_by
                    .get(&(key, *skipped))
                    .is_none_or(|readers| readers.iter().all(|other| *other == reader))
            });
            if let Some(skipped) = only_this_reader {
                why = Some(format!(
                    "key {key}: reader {reader} went from record {before} to {index}, over \
                     record {skipped} that no other reader delivered in between"
                ));
            }
        }
        delivered_by.entry((key, index)).or_default().insert(reader);
        previous.insert((reader, key), index);
        while delivered_by.contains_key(&(key, *reached)) {
            *reached += 1;
        }
        if let Some(why) = why {
            violations.push(OrderViolation {
                position,
                delivery,
                why,
            });
        }
    }
    violations
}

/// How many records were published, delivered, more than once, and never.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Records the producer had accepted.
    pub published: usize,
    /// Deliveries (a record delivered twice counts twice).
    pub deliveries: usize,
    /// Records delivered more than once.
    pub delivered_more_than_once: usize,
    /// Deliveries beyond each record's first.
    pub repeated_deliveries: usize,
    /// Records never delivered.
    pub lost: usize,
    /// Deliveries of records the producer never published (must be none: a harness fault).
    pub unknown: usize,
}

/// Counts what `delivered` (record identities, in ledger order) did with `published`.
pub fn tally<R: Eq + std::hash::Hash>(published: &HashSet<R>, delivered: &[R]) -> Tally {
    let mut times: HashMap<&R, usize> = HashMap::new();
    let mut unknown = 0;
    for record in delivered {
        if published.contains(record) {
            *times.entry(record).or_insert(0) += 1;
        } else {
            unknown += 1;
        }
    }
    Tally {
        published: published.len(),
        deliveries: delivered.len(),
        delivered_more_than_once: times.values().filter(|&&count| count > 1).count(),
        repeated_deliveries: times.values().map(|count| count - 1).sum(),
        lost: published.len() - times.len(),
        unknown,
    }
}

/// A lease as the unread watch needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseView {
    /// The shard.
    pub shard_id: String,
    /// Its owner, if any.
    pub owner: Option<String>,
    /// Its checkpoint is `SHARD_END`: nothing more to read.
    pub at_shard_end: bool,
    /// Its parents' shards, by id.
    pub parents: Vec<String>,
}

/// The shards in `leases` that want a reader and have none: not at `SHARD_END`, no parent lease
/// still short of `SHARD_END` (a child waits for its parents by design), and owned by nobody or
/// by a worker that is not running (killed, stopped, or asleep: a zombie still owns its leases
/// until they expire).
pub fn unread_shards<'a>(leases: &'a [LeaseView], running: &HashSet<&str>) -> Vec<&'a str> {
    let by_shard: HashMap<&str, &LeaseView> = leases
        .iter()
        .map(|lease| (lease.shard_id.as_str(), lease))
        .collect();
    leases
        .iter()
        .filter(|lease| {
            let waiting_on_parents = lease.parents.iter().any(|parent| {
                by_shard
                    .get(parent.as_str())
                    .is_some_and(|parent| !parent.at_shard_end)
            });
            !lease.at_shard_end
                && !waiting_on_parents
                && lease
                    .owner
                    .as_deref()
                    .is_none_or(|owner| !running.contains(owner))
        })
        .map(|lease| lease.shard_id.as_str())
        .collect()
}

/// The longest stretch any shard went without a reader, from snapshots of the lease table.
#[derive(Debug, Clone, Default)]
pub struct UnreadWatch {
    since: BTreeMap<String, Duration>,
    /// The longest stretch seen so far, and its shard.
    pub longest: Option<(Duration, String)>,
}

impl UnreadWatch {
    /// Takes in the shards without a reader at `now` (time since the run began).
    pub fn look(&mut self, now: Duration, unread: &[&str]) {
        self.since
            .retain(|shard, _| unread.contains(&shard.as_str()));
        for shard in unread {
            let since = *self.since.entry((*shard).to_owned()).or_insert(now);
            let stretch = now - since;
            if self
                .longest
                .as_ref()
                .is_none_or(|(longest, _)| stretch > *longest)
            {
                self.longest = Some((stretch, (*shard).to_owned()));
            }
        }
    }
}

/// A shard of the stream at the run's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalShard {
    /// Its id.
    pub shard_id: String,
    /// Closed by a split or merge.
    pub closed: bool,
    /// The sequence number of the last record published to it, if any.
    pub last_record: Option<String>,
}

/// What is wrong with the final lease table: every open shard's lease at its last record
/// (`TRIM_HORIZON` if it has none), every closed shard's at `SHARD_END` or deleted (a finished
/// parent's lease goes once its children started).
pub fn final_lease_faults(
    shards: &[FinalShard],
    checkpoints: &BTreeMap<String, String>,
) -> Vec<String> {
    shards
        .iter()
        .filter_map(|shard| {
            let checkpoint = checkpoints.get(&shard.shard_id);
            let wanted = if shard.closed {
                "SHARD_END"
            } else {
                shard.last_record.as_deref().unwrap_or("TRIM_HORIZON")
            };
            match checkpoint {
                None if shard.closed => None,
                Some(checkpoint) if checkpoint == wanted => None,
                None => Some(format!(
                    "{}: no lease (wanted one at {wanted})",
                    shard.shard_id
                )),
                Some(checkpoint) => Some(format!(
                    "{}: lease at {checkpoint}, not at {wanted}",
                    shard.shard_id
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order violations in `deliveries`, written `key:index@reader` one after another
    /// (`0:2@1`: record 2 of key 0, delivered by reader 1).
    fn run(deliveries: &str) -> Vec<OrderViolation> {
        let deliveries: Vec<KeyedDelivery> = deliveries
            .split_whitespace()
            .map(|delivery| {
                let number = |text: &str| -> u64 {
                    text.parse()
                        .unwrap_or_else(|_| panic!("{delivery:?} is not key:index@reader"))
                };
                let (key, rest) = delivery.split_once(':').unwrap_or((delivery, ""));
                let (index, reader) = rest.split_once('@').unwrap_or((rest, ""));
                KeyedDelivery {
                    key: number(key) as usize,
                    index: number(index),
                    reader: number(reader) as u32,
                }
            })
            .collect();
        order_violations(&deliveries)
    }

    #[test]
    fn deliveries_in_key_order_or_replayed_from_a_checkpoint_are_in_order() {
        for (case, deliveries) in [
            ("keys interleaved", "0:0@1 1:0@1 0:1@1 1:1@2 0:2@1"),
            // Reader 1 delivers 0..=3, checkpointed 1, lost its lease; reader 2 replays from 2.
            (
                "another reader replays from the checkpoint",
                "0:0@1 0:1@1 0:2@1 0:3@1 0:2@2 0:3@2 0:4@2",
            ),
            (
                "the same reader replays after a retry",
                "0:0@1 0:1@1 0:0@1 0:1@1 0:2@1",
            ),
            // Reader 1 sleeps with record 3 in flight; reader 2 replays 2.., reader 1 wakes and
            // delivers 4 before its checkpoint is refused.
            (
                "a zombie delivers between the new owner's records",
                "0:0@1 0:1@1 0:2@1 0:3@1 0:2@2 0:4@1 0:3@2",
            ),
            // Reader 1 delivers 0..=1, reader 2 takes over with 2..=4, reader 1 takes it back.
            (
                "resuming after records another reader delivered",
                "0:0@1 0:1@1 0:2@2 0:3@2 0:4@2 0:5@1",
            ),
        ] {
            assert_eq!(run(deliveries), [], "{case}");
        }
    }

    #[test]
    fn deliveries_that_overtake_or_skip_a_record_are_out_of_order() {
        for (case, deliveries, position, why) in [
            (
                "a record before an earlier one was ever delivered",
                "0:0@1 0:2@1 0:1@1",
                1,
                "before record 1",
            ),
            (
                "a replay that skips records only its reader delivered",
                "0:0@1 0:1@1 0:2@1 0:3@1 0:1@1 0:3@1",
                5,
                "over record 2",
            ),
        ] {
            let violations = run(deliveries);
            assert_eq!(violations.len(), 1, "{case}: {violations:?}");
            assert_eq!(violations[0].position, position, "{case}");
            assert!(violations[0].why.contains(why), "{case}: {violations:?}");
        }
    }

    #[test]
    fn the_tally_counts_repeats_and_losses() {
        let published: HashSet<u32> = [1, 2, 3, 4].into();
        let tally = tally(&published, &[1, 2, 2, 2, 3, 9]);
        assert_eq!(
            tally,
            Tally {
                published: 4,
                deliveries: 6,
                delivered_more_than_once: 1,
                repeated_deliveries: 2,
                lost: 1,
                unknown: 1,
            }
        );
    }

    fn lease(shard: &str, owner: Option<&str>, at_shard_end: bool, parents: &[&str]) -> LeaseView {
        LeaseView {
            shard_id: shard.to_owned(),
            owner: owner.map(str::to_owned),
            at_shard_end,
            parents: parents.iter().map(|parent| (*parent).to_owned()).collect(),
        }
    }

    #[test]
    fn a_shard_is_unread_when_free_or_held_by_a_worker_not_running() {
        let leases = [
            lease("a", Some("w1"), false, &[]),
            lease("b", Some("w2"), false, &[]),
            lease("c", None, false, &[]),
            lease("d", None, true, &[]),
            lease("e", None, false, &["a"]),
        ];
        let running: HashSet<&str> = ["w1"].into();
        assert_eq!(unread_shards(&leases, &running), ["b", "c"]);
    }

    #[test]
    fn the_watch_keeps_the_longest_stretch_without_a_reader() {
        let mut watch = UnreadWatch::default();
        let at = Duration::from_millis;
        watch.look(at(0), &["a"]);
        watch.look(at(300), &["a", "b"]);
        watch.look(at(600), &["b"]);
        watch.look(at(700), &[]);
        watch.look(at(800), &["a"]);
        assert_eq!(watch.longest, Some((at(300), "a".to_owned())));
    }

    #[test]
    fn final_leases_are_at_the_last_record_or_shard_end() {
        let shards = [
            FinalShard {
                shard_id: "open".into(),
                closed: false,
                last_record: Some("7".into()),
            },
            FinalShard {
                shard_id: "empty".into(),
                closed: false,
                last_record: None,
            },
            FinalShard {
                shard_id: "parent".into(),
                closed: true,
                last_record: Some("3".into()),
            },
            FinalShard {
                shard_id: "deleted".into(),
                closed: true,
                last_record: None,
            },
        ];
        let mut checkpoints: BTreeMap<String, String> = [
            ("open", "7"),
            ("empty", "TRIM_HORIZON"),
            ("parent", "SHARD_END"),
        ]
        .map(|(shard, at)| (shard.to_owned(), at.to_owned()))
        .into();
        assert_eq!(
            final_lease_faults(&shards, &checkpoints),
            Vec::<String>::new()
        );
        checkpoints.insert("open".into(), "5".into());
        checkpoints.insert("parent".into(), "3".into());
        assert_eq!(
            final_lease_faults(&shards, &checkpoints),
            [
                "open: lease at 5, not at 7",
                "parent: lease at 3, not at SHARD_END"
            ]
        );
    }
}
