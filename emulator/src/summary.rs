//! What the emulator tells a user about a mapping: the summary printed when a run ends, the tree
//! of `kinesis-esm status`, and the live progress line of each shard.
//!
//! Records are counted apart from deliveries: every record read is acked, dropped (by the
//! handler), undecodable (dropped by the adapter, which could not decode it), discarded, filtered
//! out or held (read and not settled yet), once, however often it was delivered. So for a
//! run that starts at `TRIM_HORIZON` and reads every record, the records add up to what was
//! published. Retries are those `MaximumRetryAttempts` counts, apart from bisection splits.
//! Sequence numbers are shortened in tables ([`short_sequence_number`]); `--json` has them whole.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::SystemTime;

use esm_engine::invoke::{EnvironmentInFlight, NeverInitialised, SharedEnvironments};
use esm_engine::mapping::{MappingStatus, NextRetry, ShardPhase, ShardStatus};
use kinesis_source::time::millis_since_epoch;

mod counted;
mod invocations;
mod sequence_number;

pub(crate) use counted::counted;
pub use invocations::{duration_text, invocation_line, verdict_text};
pub use sequence_number::{checkpoint_cell, short_sequence_number};

/// How many of a shard's recent invocations the `status` tree shows, the newest; `--json` has
/// every one the status keeps.
const RECENT_IN_TREE: usize = 5;

/// What became of the records a shard read, each counted once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordCounts {
    /// Settled as handled.
    pub acked: u64,
    /// Reported as dropped by the handler.
    pub dropped: u64,
    /// Dropped by the function because it could not decode them.
    pub undecodable: u64,
    /// Given up by the mapping (retries used up, or too old).
    pub discarded: u64,
    /// Passed by `FilterCriteria`: never delivered.
    pub filtered: u64,
    /// Read and not settled: a held record and the records behind it, or a batch in flight when
    /// the mapping stopped. They come again.
    pub held: u64,
}

impl RecordCounts {
    /// The counts of one shard.
    pub fn of(shard: &ShardStatus) -> Self {
        Self {
            acked: shard.acked,
            dropped: shard.dropped,
            undecodable: shard.undecodable,
            discarded: shard.discarded,
            filtered: shard.filtered,
            held: shard.unsettled,
        }
    }

    /// Every record read.
    pub fn read(&self) -> u64 {
        self.acked + self.dropped + self.undecodable + self.discarded + self.filtered + self.held
    }
}

/// What a held shard's pause is for: "retry 3 of 5, next in 25 s", "retry 3, next in 25 s, no
/// retry limit" (`MaximumRetryAttempts: -1`), or "next try in 2.0 s, not a retry" when the last
/// invocation did not reach the function and nothing has been charged against the limit yet.
pub fn retry_wait(next: &NextRetry, now: SystemTime) -> String {
    let wait = wait_text(next.at_epoch_millis - millis_since_epoch(now));
    match (next.number, next.limit) {
        (0, _) => format!("next try in {wait}, not a retry"),
        (number, Some(limit)) => format!("retry {number} of {limit}, next in {wait}"),
        (number, None) => format!("retry {number}, next in {wait}, no retry limit"),
    }
}

/// A wait of `millis` milliseconds: tenths of a second under 10 s, whole seconds (rounded up)
/// from there.
fn wait_text(millis: i64) -> String {
    let millis = millis.max(0);
    if millis < 10_000 {
        format!("{:.1} s", millis as f64 / 1000.0)
    } else {
        format!("{} s", (millis as u64).div_ceil(1000))
    }
}

/// The records a mapping discarded and where they went, if it discarded any: "6 records in 1
/// batch discarded and sent to the on-failure destination Queue", or "... discarded (no
/// on-failure destination)".
pub fn discards_note(status: &MappingStatus) -> Option<String> {
    let records = status.totals().discarded;
    if records == 0 {
        return None;
    }
    let batches = status.on_failure.len() as u64;
    let discarded = format!(
        "{} in {} discarded",
        counted(records, "record", "records"),
        counted(batches, "batch", "batches")
    );
    Some(match &status.on_failure_destination {
        Some(destination) => {
            format!("{discarded} and sent to the on-failure destination {destination}")
        }
        None => format!("{discarded} (no on-failure destination)"),
    })
}

/// Where each discarded batch's record went ("    -> PATH", a file to read again with
/// `kinesis-esm failures`), and why the destination is failing while a shard waits for it.
pub fn destination_lines(status: &MappingStatus) -> String {
    let mut out = String::new();
    for delivered in &status.on_failure_deliveries {
        let _ = writeln!(out, "    -> {delivered}");
    }
    if let Some(error) = &status.destination_error {
        let _ = writeln!(out, "  on-failure destination failing: {error}");
    }
    out
}

/// A mapping's totals in one line: "12 records: 5 acked, 1 dropped, 6 discarded, 0 held; 48
/// deliveries in 7 invocations, 5 retries, 0 splits".
pub fn totals_line(status: &MappingStatus) -> String {
    let total = status.totals();
    let records = RecordCounts::of(&total);
    let filtered = if records.filtered > 0 {
        format!(", {} filtered out", records.filtered)
    } else {
        String::new()
    };
    format!(
        "{}: {} acked, {} dropped{}, {} discarded{filtered}, {} held; {} in {}, {}, {}",
        counted(records.read(), "record", "records"),
        records.acked,
        records.dropped,
        undecodable_text(records.undecodable),
        records.discarded,
        records.held,
        counted(total.delivered, "delivery", "deliveries"),
        counted(total.invocations, "invocation", "invocations"),
        counted(total.retries, "retry", "retries"),
        counted(total.splits, "split", "splits"),
    )
}

/// ", N undecodable", or nothing where no record was undecodable: most runs have none, and a
/// zero would only widen the line.
fn undecodable_text(undecodable: u64) -> String {
    if undecodable > 0 {
        format!(", {undecodable} undecodable")
    } else {
        String::new()
    }
}

/// The summary's line for a function that never initialised: the mapping's counts only say that
/// its records were discarded, not that no invocation ever reached the handler.
pub fn never_initialised_line(function: &str, failures: &NeverInitialised) -> String {
    let environments = match failures.environments {
        1 => "its 1 execution environment".to_owned(),
        n => format!("all {n} of its execution environments"),
    };
    format!(
        "{function} never initialised: {environments} failed before taking an invocation, \
         so none of its records reached the handler; the last failure: {}",
        failures.last_failure
    )
}

/// The summary's line for a function on Lambda Managed Instances: how many execution
/// environments served its batches, and how many batches one ran at once.
pub fn shared_environments_line(function: &str, used: &SharedEnvironments) -> String {
    format!(
        "{function} on Managed Instances: {} started, at most {} at once in one (of {} allowed)",
        counted(
            used.started,
            "execution environment",
            "execution environments"
        ),
        counted(used.most_in_flight as u64, "invocation", "invocations"),
        used.concurrency
    )
}

/// The status tree's line for a function on Managed Instances: its environments running now,
/// each with its invocations in flight ("environments: #1 2 in flight, #2 0 in flight").
fn environments_line(environments: &[EnvironmentInFlight]) -> Option<String> {
    if environments.is_empty() {
        return None;
    }
    let each: Vec<String> = environments
        .iter()
        .map(|environment| {
            format!(
                "#{} {} in flight",
                environment.number, environment.in_flight
            )
        })
        .collect();
    Some(format!("environments: {}", each.join(", ")))
}

/// The summary's last line for a run that resumed from stored checkpoints: what it counts began
/// with this run, while the checkpoints carry the runs before it.
pub fn resumed_note(store: &str) -> String {
    format!(
        "the counts are this run's: it resumed from the checkpoints kept in {store}, which \
         hold what earlier runs settled"
    )
}

/// Renders a mapping's status as a table: one line per shard, the totals, then the records left
/// on each shard and what was discarded.
pub fn render(status: &MappingStatus) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} <- stream {}",
        status.function_name, status.stream_name
    );
    // Filtered records only matter to a mapping with filters.
    let show_filtered = status.shards.values().any(|shard| shard.filtered > 0);
    // As undecodable records only matter where a producer wrote what the function cannot read.
    let show_undecodable = status.shards.values().any(|shard| shard.undecodable > 0);
    let mut header = vec!["shard", "state", "records", "acked", "dropped"];
    if show_undecodable {
        header.push("undecodable");
    }
    header.push("discarded");
    if show_filtered {
        header.push("filtered");
    }
    header.extend([
        "held",
        "deliveries",
        "invocations",
        "retries",
        "splits",
        "checkpoint",
    ]);
    let rows: Vec<Vec<String>> = status
        .shards
        .values()
        .map(|shard| {
            let records = RecordCounts::of(shard);
            let mut row = vec![
                shard.shard_id.clone(),
                shard.phase.as_str().to_owned(),
                records.read().to_string(),
                records.acked.to_string(),
                records.dropped.to_string(),
            ];
            if show_undecodable {
                row.push(records.undecodable.to_string());
            }
            row.push(records.discarded.to_string());
            if show_filtered {
                row.push(records.filtered.to_string());
            }
            row.extend([
                records.held.to_string(),
                shard.delivered.to_string(),
                shard.invocations.to_string(),
                shard.retries.to_string(),
                shard.splits.to_string(),
                checkpoint_cell(shard.checkpoint.as_ref()),
            ]);
            row
        })
        .collect();
    write_table(&mut out, &header, &rows);
    let _ = writeln!(out, "  {}", totals_line(status));
    for shard in status.shards.values() {
        if let Some(held) = &shard.held {
            let _ = writeln!(
                out,
                "  {}: held at {} after {} ({}); {}",
                shard.shard_id,
                held.sequence_number,
                counted(
                    u64::from(held.failed_deliveries),
                    "failed delivery",
                    "failed deliveries"
                ),
                held.reason,
                again_text(shard.unsettled.saturating_sub(1)),
            );
        } else if shard.phase == ShardPhase::WaitingOnParents {
            let _ = writeln!(
                out,
                "  {}: waiting for {} to reach SHARD_END",
                shard.shard_id,
                shard.parent_shard_ids.join(" and ")
            );
        }
    }
    out.push_str(&crate::metrics_report::text(status));
    if let Some(note) = discards_note(status) {
        let _ = writeln!(out, "  {note}");
    }
    out.push_str(&destination_lines(status));
    if let Some(error) = &status.last_error {
        let _ = writeln!(out, "  last error: {error}");
    }
    out
}

/// Writes `rows` under `header`, columns padded to their widest cell: names left-aligned,
/// numbers right-aligned, the checkpoint (last) left-aligned.
fn write_table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|cell| cell.len()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut line = |cells: &[&str]| {
        let mut text = String::new();
        for (index, (cell, &width)) in cells.iter().zip(&widths).enumerate() {
            if index < 2 || index == cells.len() - 1 {
                let _ = write!(text, "{cell:<width$}  ");
            } else {
                let _ = write!(text, "{cell:>width$}  ");
            }
        }
        let _ = writeln!(out, "  {}", text.trim_end());
    };
    line(header);
    for row in rows {
        line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
}

/// What comes again after a held record, with `behind` records behind it: "it and the 3
/// records behind it come again", "it and the record behind it come again", "it comes again".
fn again_text(behind: u64) -> String {
    match behind {
        0 => "it comes again".to_owned(),
        1 => "it and the record behind it come again".to_owned(),
        behind => format!("it and the {behind} records behind it come again"),
    }
}

/// What a held shard is doing, for the tree and the progress line: "held at N (2 failed
/// deliveries; retry 2 of 5, next in 25 s)". `sequence_number` is how to show the held record.
fn held_text(shard: &ShardStatus, now: SystemTime, short: bool) -> Option<String> {
    let held = shard.held.as_ref()?;
    let number = held.sequence_number.as_str();
    let number = if short {
        short_sequence_number(number)
    } else {
        Cow::Borrowed(number)
    };
    let mut text = format!(
        "held at {number} ({}",
        counted(
            u64::from(held.failed_deliveries),
            "failed delivery",
            "failed deliveries"
        )
    );
    if let Some(next) = &held.next_retry {
        let _ = write!(text, "; {}", retry_wait(next, now));
    }
    text.push(')');
    Some(text)
}

/// One shard's live progress line, redrawn while `run` works in a terminal.
pub fn progress_line(function_name: &str, shard: &ShardStatus, now: SystemTime) -> String {
    let records = RecordCounts::of(shard);
    let mut line = format!(
        "{function_name} {}  {:<17}  records {}  acked {}  dropped {}{}  discarded {}  held {}  \
         deliveries {}  retries {}",
        shard.shard_id,
        shard.phase.as_str(),
        records.read(),
        records.acked,
        records.dropped,
        match records.undecodable {
            0 => String::new(),
            count => format!("  undecodable {count}"),
        },
        records.discarded,
        records.held,
        shard.delivered,
        shard.retries,
    );
    if let Some(held) = held_text(shard, now, true) {
        let _ = write!(line, "  {held}");
    }
    line
}

/// Renders running mappings for `kinesis-esm status`: each stream's shards as a lineage tree
/// (children under their parents), with state, checkpoint, lease owner, held record (and the
/// retry it waits for), discards, how far behind the newest record the last read ended, and its
/// newest invocations (`RECENT_IN_TREE` of them, oldest first).
pub fn render_tree(statuses: &[MappingStatus], now: SystemTime) -> String {
    let mut out = String::new();
    for status in statuses {
        let _ = writeln!(
            out,
            "{} <- stream {}",
            status.function_name, status.stream_name
        );
        let is_root = |shard: &ShardStatus| {
            shard
                .parent_shard_ids
                .iter()
                .all(|parent| !status.shards.contains_key(parent))
        };
        for shard in status.shards.values().filter(|shard| is_root(shard)) {
            render_branch(&mut out, status, &shard.shard_id, 1, now);
        }
        if let Some(note) = discards_note(status) {
            let _ = writeln!(out, "  {note}");
        }
        if let Some(line) = environments_line(&status.environments) {
            let _ = writeln!(out, "  {line}");
        }
        out.push_str(&destination_lines(status));
        out.push_str(&crate::metrics_report::text(status));
        if let Some(error) = &status.last_error {
            let _ = writeln!(out, "  last error: {error}");
        }
    }
    out
}

fn render_branch(
    out: &mut String,
    status: &MappingStatus,
    shard_id: &str,
    depth: usize,
    now: SystemTime,
) {
    let Some(shard) = status.shards.get(shard_id) else {
        return;
    };
    let indent = "  ".repeat(depth);
    let mut line = format!(
        "{indent}{}  {}  checkpoint {}",
        shard.shard_id,
        shard.phase.as_str(),
        checkpoint_cell(shard.checkpoint.as_ref())
    );
    if let Some(owner) = &shard.lease_owner {
        let _ = write!(line, "  owner {owner}");
    }
    // The held record whole: it is the one a user looks up.
    if let Some(held) = held_text(shard, now, false) {
        let _ = write!(line, "  {held}");
    }
    if let Some(range) = &shard.last_discarded {
        let _ = write!(
            line,
            "  discarded {} (the last: {} to {}, {})",
            shard.discarded,
            short_sequence_number(range.first.as_str()),
            short_sequence_number(range.last.as_str()),
            range.condition
        );
    }
    if shard.phase == ShardPhase::Reading || shard.millis_behind_latest > 0 {
        let _ = write!(line, "  iterator age {} ms", shard.millis_behind_latest);
    }
    if let Some(replayed) = &shard.replayed {
        let _ = write!(line, "  {}", replayed_text(replayed));
    }
    if shard.parent_shard_ids.len() > 1 {
        let _ = write!(
            line,
            "  (merged from {})",
            shard.parent_shard_ids.join(" + ")
        );
    }
    let _ = writeln!(out, "{line}");
    let recent = &shard.recent_invocations;
    if !recent.is_empty() {
        let shown = recent.len().min(RECENT_IN_TREE);
        let _ = writeln!(
            out,
            "{indent}  the last {shown} of {}:",
            counted(shard.invocations, "invocation", "invocations")
        );
        for invocation in recent.iter().skip(recent.len() - shown) {
            let _ = writeln!(out, "{indent}    {}", invocation_line(invocation));
        }
    }
    // A merged child is drawn under its first parent only.
    for child in status
        .shards
        .values()
        .filter(|child| child.parent_shard_ids.first().map(String::as_str) == Some(shard_id))
    {
        render_branch(out, status, &child.shard_id, depth + 1, now);
    }
}

/// A shard's last replay, as `status` shows it: "replayed from X at T".
fn replayed_text(replayed: &esm_engine::mapping::replay::Replayed) -> String {
    let at = std::time::UNIX_EPOCH
        + std::time::Duration::from_millis(u64::try_from(replayed.at_epoch_millis).unwrap_or(0));
    format!(
        "replayed from {} at {} (checkpoint {} -> {})",
        replayed.from,
        kinesis_source::time::iso8601_millis(at),
        checkpoint_cell(Some(&replayed.previous_checkpoint)),
        checkpoint_cell(Some(&replayed.checkpoint))
    )
}

#[cfg(test)]
mod tests;
