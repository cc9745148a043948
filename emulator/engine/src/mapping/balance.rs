//! Which leases a worker takes in one round of its coordinator: the KCL lease taker's balancing
//! (`docs/lease-table.md` §6), as a pure function of what the lease table shows.
//!
//! Workers find each other through the table alone: the live workers are the owners of leases
//! that have not expired, plus this worker. Each aims at its fair share, the shards to read
//! divided by the live workers, rounded up. Below it, a worker takes free leases (unowned, or
//! expired) first; only when there are none does it steal from the most loaded worker, a bounded
//! number per round, and only leases that worker holds above the fair share. A stolen lease's
//! owner finds out at its next lease write, which the taken lease's new counter refuses.

/// Where a lease this worker could read stands, as this round sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Standing<'a> {
    /// Nobody reads it: unowned, expired, or this worker's own without a reader.
    Free,
    /// This worker reads it.
    Ours,
    /// Another worker holds it and, as far as this worker can tell, is alive.
    HeldBy(&'a str),
    /// Another worker took it while this worker's reader of it still runs: that reader stops at
    /// its next lease write. It counts for its new owner, and is never taken back before the
    /// reader has stopped: a second reader of one shard in this worker would fence the first,
    /// whose exit would then be taken for the second's, and the two would take the lease from
    /// each other round after round, the checkpoint never moving.
    Leaving(&'a str),
}

/// What one round takes: free leases, and leases stolen from a live worker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Takes<'a> {
    /// Free leases to take, by shard id.
    pub(super) free: Vec<&'a str>,
    /// Leases to take from their live owner, by shard id.
    pub(super) stolen: Vec<&'a str>,
    /// How many workers are live, this one included.
    pub(super) live_workers: usize,
}

/// The leases this worker takes this round, of `leases` (each shard it could read, by id, with
/// its standing), stealing at most `max_steals` of them.
///
/// Free leases are taken in the order given; a stolen lease is the most loaded worker's last, in
/// the order given, so that two rounds that see the same table choose the same.
pub(super) fn leases_to_take<'a>(
    leases: &[(&'a str, Standing<'a>)],
    max_steals: usize,
) -> Takes<'a> {
    let mut held_by_others: Vec<(&str, usize)> = Vec::new();
    let mut ours = 0;
    for (_, standing) in leases {
        match standing {
            Standing::Free => {}
            Standing::Ours => ours += 1,
            Standing::HeldBy(owner) | Standing::Leaving(owner) => {
                match held_by_others.iter_mut().find(|(o, _)| o == owner) {
                    Some((_, count)) => *count += 1,
                    None => held_by_others.push((owner, 1)),
                }
            }
        }
    }
    let live_workers = held_by_others.len() + 1;
    let mut takes = Takes {
        live_workers,
        ..Takes::default()
    };
    let target = fair_share(leases.len(), live_workers);
    let Some(needed) = target.checked_sub(ours).filter(|&needed| needed > 0) else {
        return takes;
    };
    takes.free = leases
        .iter()
        .filter(|(_, standing)| *standing == Standing::Free)
        .map(|(shard_id, _)| *shard_id)
        .take(needed)
        .collect();
    if !takes.free.is_empty() {
        // The KCL steals only when nothing is free.
        return takes;
    }
    // The most loaded worker; of equals, the first in name order, so that every thief picks the
    // same victim.
    let Some(&(victim, victim_count)) = held_by_others
        .iter()
        .min_by(|(a, a_count), (b, b_count)| b_count.cmp(a_count).then(a.cmp(b)))
    else {
        return takes;
    };
    let steals = steal_count(victim_count, target, needed).min(max_steals);
    takes.stolen = leases
        .iter()
        .rev()
        .filter(|(_, standing)| *standing == Standing::HeldBy(victim))
        .map(|(shard_id, _)| *shard_id)
        .take(steals)
        .collect();
    takes
}

/// A worker's fair share of `leases` among `workers`: rounded up, and at least one (the KCL's
/// target, without its `maxLeasesForWorker` cap, which is unbounded by default).
pub(super) fn fair_share(leases: usize, workers: usize) -> usize {
    if leases == 0 {
        return 0;
    }
    leases.div_ceil(workers.max(1)).max(1)
}

/// How many leases to steal from a victim holding `victim_count`, for a thief `needed` short of
/// `target`: what the victim holds above the target, or one when the victim is at the target and
/// the thief is more than one short (the KCL's rule; without it, 4 leases among 3 workers held
/// 2, 2, 0 would never move). Neither leaves the victim below the rounded-down fair share: a
/// victim at the target while the thief is two short means some lease is free, and a round with
/// a free lease steals nothing.
fn steal_count(victim_count: usize, target: usize, needed: usize) -> usize {
    if victim_count < target {
        return 0;
    }
    let above_target = victim_count - target;
    match needed.min(above_target) {
        0 if needed > 1 => 1,
        steals => steals,
    }
}

#[cfg(test)]
mod tests {
    use super::Standing::{Free, HeldBy, Leaving, Ours};
    use super::*;

    /// Shard ids `s0`, `s1`, ... for the standings given.
    fn table<'a>(standings: &[Standing<'a>]) -> Vec<(&'a str, Standing<'a>)> {
        const IDS: [&str; 12] = [
            "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
        ];
        IDS.iter().copied().zip(standings.iter().copied()).collect()
    }

    /// The KCL's target: ceil(leases / workers), at least one.
    #[test]
    fn the_fair_share_is_rounded_up() {
        for (leases, workers, share) in [
            (0, 1, 0),
            (8, 1, 8),
            (8, 2, 4),
            (8, 3, 3),
            (4, 3, 2),
            (2, 5, 1),
            (9, 3, 3),
        ] {
            assert_eq!(
                fair_share(leases, workers),
                share,
                "{leases} among {workers}"
            );
        }
    }

    /// Each row: the table as this worker sees it, what it takes free, what it steals, how many
    /// workers it counts.
    #[test]
    fn leases_are_taken_as_the_kcl_lease_taker_takes_them() {
        let a = HeldBy("a");
        let b = HeldBy("b");
        /// Why, the table, taken free, stolen, live workers.
        type Row<'a> = (
            &'a str,
            Vec<Standing<'a>>,
            Vec<&'a str>,
            Vec<&'a str>,
            usize,
        );
        let rows: Vec<Row> = vec![
            (
                "alone, every free lease is ours to take",
                vec![Free; 8],
                vec!["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"],
                vec![],
                1,
            ),
            (
                "another worker's live leases count it: we take only our share of the free ones",
                vec![a, a, Free, Free, Free, Free, Free, Free],
                vec!["s2", "s3", "s4", "s5"],
                vec![],
                2,
            ),
            (
                "expired leases first: nothing is stolen while a lease is free",
                vec![a, a, a, a, a, a, a, Free],
                vec!["s7"],
                vec![],
                2,
            ),
            (
                "nothing free: one lease is stolen from the most loaded worker",
                vec![a, a, a, a, a, a, a, a],
                vec![],
                vec!["s7"],
                2,
            ),
            (
                "at most one steal a round, however far below the share",
                vec![a, a, a, a, a, a, a, Ours],
                vec![],
                vec!["s6"],
                2,
            ),
            (
                "at the fair share, nothing is taken",
                vec![a, a, a, a, Ours, Ours, Ours, Ours],
                vec![],
                vec![],
                2,
            ),
            (
                "above the fair share, nothing is taken, not even free leases",
                vec![Free, a, a, Ours, Ours, Ours, Ours, Ours],
                vec![],
                vec![],
                2,
            ),
            (
                "a lease whose reader here still stops counts for its new owner, and stays there",
                vec![a, a, a, Leaving("a")],
                vec![],
                vec!["s2"],
                2,
            ),
            (
                "the victim is the most loaded worker",
                vec![a, a, a, b, b, b, b, Ours],
                vec![],
                vec!["s6"],
                3,
            ),
            (
                "of equally loaded workers, the first by name",
                vec![b, b, b, b, a, a, a, a],
                vec![],
                vec!["s7"],
                3,
            ),
            (
                "one short of the share, and the victim at it: nothing (8 among 3: 3, 3, 2)",
                vec![a, a, a, b, b, b, Ours, Ours],
                vec![],
                vec![],
                3,
            ),
            (
                "two short, and the victim at the share: one, down to the share rounded down",
                vec![a, a, b, b],
                vec![],
                vec!["s1"],
                3,
            ),
            (
                "a worker whose leases all expired is not counted",
                vec![Free, Free, Free, Free, Ours, Ours, Ours, Ours],
                vec!["s0", "s1", "s2", "s3"],
                vec![],
                1,
            ),
        ];
        for (why, standings, free, stolen, live_workers) in rows {
            assert_eq!(
                leases_to_take(&table(&standings), 1),
                Takes {
                    free,
                    stolen,
                    live_workers
                },
                "{why}"
            );
        }
    }

    #[test]
    fn more_steals_a_round_take_no_more_than_the_victim_holds_above_the_share() {
        let a = HeldBy("a");
        let takes = leases_to_take(&table(&[a, a, a, a, a, a, a, a]), 10);
        assert_eq!(takes.stolen, ["s7", "s6", "s5", "s4"]);
        let takes = leases_to_take(&table(&[a, a, a, a, a, Ours, Ours]), 10);
        assert_eq!(
            takes.stolen,
            ["s4"],
            "7 among 2: the share is 4, `a` keeps 4"
        );
    }

    /// Rounds of every worker against one table end balanced, and no round leaves a victim
    /// below the share rounded down.
    #[test]
    fn rounds_of_stealing_end_at_the_fair_share_and_never_below_it() {
        for (shards, workers) in [(8, 2), (8, 3), (4, 3), (10, 4), (12, 5), (3, 2)] {
            let names: Vec<String> = (0..workers).map(|w| format!("w{w}")).collect();
            // Worker 0 took everything before the others started.
            let mut owners: Vec<usize> = vec![0; shards];
            let ids: Vec<String> = (0..shards).map(|s| format!("s{s:02}")).collect();
            for _round in 0..shards * workers {
                for me in 0..workers {
                    let view: Vec<(&str, Standing)> = ids
                        .iter()
                        .zip(&owners)
                        .map(|(id, &owner)| {
                            let standing = if owner == me {
                                Ours
                            } else {
                                HeldBy(names[owner].as_str())
                            };
                            (id.as_str(), standing)
                        })
                        .collect();
                    let takes = leases_to_take(&view, 1);
                    assert!(takes.free.is_empty());
                    for stolen in takes.stolen {
                        let index = ids.iter().position(|id| id == stolen).unwrap();
                        let victim = owners[index];
                        owners[index] = me;
                        let left = owners.iter().filter(|&&o| o == victim).count();
                        assert!(
                            left >= shards / workers,
                            "{shards} among {workers}: {} left with {left}",
                            names[victim]
                        );
                    }
                }
            }
            let mut counts: Vec<usize> = (0..workers)
                .map(|w| owners.iter().filter(|&&o| o == w).count())
                .collect();
            counts.sort_unstable();
            let (least, most) = (counts[0], counts[workers - 1]);
            assert!(
                most - least <= 1,
                "{shards} among {workers} ended {counts:?}"
            );
        }
    }
}
