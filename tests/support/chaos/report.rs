//! The chaos run's report: its figures, and the faults that break the guarantees.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::verdict::{OrderViolation, Tally};
use super::{ChaosPlan, TICK};

/// What a chaos run saw and what it makes of it.
#[derive(Debug)]
pub struct ChaosReport {
    /// The plan it ran.
    pub plan: ChaosPlan,
    /// What was done, and when.
    pub actions: Vec<String>,
    /// Published, delivered, repeated, lost.
    pub tally: Tally,
    /// Per-key order violations.
    pub order_violations: Vec<OrderViolation>,
    /// Checkpoint writes fencing refused (the reader's lease had been taken).
    pub refused_checkpoints: usize,
    /// Renewals fencing refused.
    pub refused_renewals: usize,
    /// The longest time a shard wanting a reader had none, and which.
    pub longest_unread: Option<(Duration, String)>,
    /// The final lease table: shard, checkpoint, owner.
    pub final_leases: Vec<(String, String, Option<String>)>,
    /// What is wrong with it.
    pub final_lease_faults: Vec<String>,
    /// How long the chaos, and the drain, took.
    pub chaos_took: Duration,
    /// How long the drain took (everything delivered, every lease at its end).
    pub drain_took: Duration,
    /// The run's folder (ledger, template, each instance's log), kept when the run was faulty.
    pub kept: Option<PathBuf>,
}

impl ChaosReport {
    /// What breaks the guarantees: records lost or unknown, keys out of order, leases short of
    /// their shard's end.
    pub fn faults(&self) -> Vec<String> {
        let mut faults = Vec::new();
        if self.tally.lost > 0 {
            faults.push(format!("{} records lost", self.tally.lost));
        }
        if self.tally.unknown > 0 {
            faults.push(format!(
                "{} deliveries of records never published",
                self.tally.unknown
            ));
        }
        faults.extend(
            self.order_violations.iter().map(|violation| {
                format!("ledger line {}: {}", violation.position + 1, violation.why)
            }),
        );
        faults.extend(self.final_lease_faults.iter().cloned());
        faults
    }
}

impl fmt::Display for ChaosReport {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plan = &self.plan;
        writeln!(
            formatter,
            "chaos over {}: seed {} (CHAOS_SEED={} replays the choices), {} instances, {} shards, \
             {:?} of chaos, failover {:?}",
            plan.kinesis,
            plan.seed,
            plan.seed,
            plan.instances,
            plan.shards,
            self.chaos_took,
            plan.failover
        )?;
        writeln!(formatter, "  actions: {}", self.actions.join("; "))?;
        let tally = &self.tally;
        writeln!(
            formatter,
            "  published {}, delivered {} ({} records more than once, {} repeated deliveries), \
             lost {}, per-key order violations {}",
            tally.published,
            tally.deliveries,
            tally.delivered_more_than_once,
            tally.repeated_deliveries,
            tally.lost,
            self.order_violations.len()
        )?;
        writeln!(
            formatter,
            "  refused by fencing: {} checkpoint writes, {} renewals",
            self.refused_checkpoints, self.refused_renewals
        )?;
        match &self.longest_unread {
            Some((stretch, shard)) => writeln!(
                formatter,
                "  longest time a shard had no reader: {stretch:.1?} ({shard}; sampled every \
                 table scan, about {TICK:?})"
            )?,
            None => writeln!(formatter, "  every shard always had a reader")?,
        }
        writeln!(formatter, "  drain: {:.1?}", self.drain_took)?;
        for (shard, checkpoint, owner) in &self.final_leases {
            writeln!(
                formatter,
                "  final lease {shard}: {checkpoint} (owner {owner:?})"
            )?;
        }
        for fault in self.faults() {
            writeln!(formatter, "  FAULT: {fault}")?;
        }
        if let Some(kept) = &self.kept {
            writeln!(
                formatter,
                "  kept for inspection: {} (the ledger, each instance's log)",
                kept.display()
            )?;
        }
        Ok(())
    }
}
