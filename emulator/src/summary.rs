//! The summary printed when a run ends: per shard, what was delivered and where it stands.

use std::fmt::Write as _;

use crate::mapping::{MappingStatus, ShardPhase};

/// Renders a mapping's status as a table: one line per shard, then the records left on it.
pub fn render(status: &MappingStatus) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} <- stream {}",
        status.function_name, status.stream_name
    );
    let header = [
        "shard",
        "state",
        "delivered",
        "acked",
        "dropped",
        "discarded",
        "held",
        "invocations",
        "retries",
        "checkpoint",
    ];
    let mut rows: Vec<[String; 10]> = Vec::new();
    for shard in status.shards.values() {
        // The held record and the records read behind it: all of them come again.
        let held = if shard.held.is_some() {
            shard.unsettled.max(1)
        } else {
            0
        };
        rows.push([
            shard.shard_id.clone(),
            shard.phase.as_str().to_owned(),
            shard.delivered.to_string(),
            shard.acked.to_string(),
            shard.dropped.to_string(),
            shard.discarded.to_string(),
            held.to_string(),
            shard.invocations.to_string(),
            shard.retries.to_string(),
            shard
                .checkpoint
                .as_ref()
                .map_or_else(|| "-".to_owned(), ToString::to_string),
        ]);
    }
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let mut line = |cells: &[&str]| {
        let mut text = String::new();
        for (index, (cell, width)) in cells.iter().zip(widths).enumerate() {
            // Names are left-aligned, numbers right-aligned; the checkpoint ends the line.
            if index < 2 || index == cells.len() - 1 {
                let _ = write!(text, "{cell:<width$}  ");
            } else {
                let _ = write!(text, "{cell:>width$}  ");
            }
        }
        let _ = writeln!(out, "  {}", text.trim_end());
    };
    line(&header);
    for row in &rows {
        line(&row.each_ref().map(String::as_str));
    }
    for shard in status.shards.values() {
        if let Some(held) = &shard.held {
            let _ = writeln!(
                out,
                "  {}: held at {} after {} failed deliveries ({}); it and the {} records behind it come again",
                shard.shard_id,
                held.sequence_number,
                held.failed_deliveries,
                held.reason,
                shard.unsettled.saturating_sub(1),
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
    if !status.on_failure.is_empty() {
        let _ = writeln!(
            out,
            "  {} batch(es) discarded and sent to the on-failure destination",
            status.on_failure.len()
        );
    }
    if let Some(error) = &status.last_error {
        let _ = writeln!(out, "  last error: {error}");
    }
    out
}

/// Renders running mappings for `kinesis-esm status`: each stream's shards as a lineage tree
/// (children under their parents), with state, checkpoint, lease owner, held record and how far
/// behind the newest record the last read ended.
pub fn render_tree(statuses: &[MappingStatus]) -> String {
    let mut out = String::new();
    for status in statuses {
        let _ = writeln!(
            out,
            "{} <- stream {}",
            status.function_name, status.stream_name
        );
        let is_root = |shard: &crate::mapping::ShardStatus| {
            shard
                .parent_shard_ids
                .iter()
                .all(|parent| !status.shards.contains_key(parent))
        };
        for shard in status.shards.values().filter(|shard| is_root(shard)) {
            render_branch(&mut out, status, &shard.shard_id, 1);
        }
        out.push_str(&crate::metrics_report::text(status));
        if let Some(error) = &status.last_error {
            let _ = writeln!(out, "  last error: {error}");
        }
    }
    out
}

fn render_branch(out: &mut String, status: &MappingStatus, shard_id: &str, depth: usize) {
    let Some(shard) = status.shards.get(shard_id) else {
        return;
    };
    let indent = "  ".repeat(depth);
    let mut line = format!(
        "{indent}{}  {}  checkpoint {}",
        shard.shard_id,
        shard.phase.as_str(),
        shard
            .checkpoint
            .as_ref()
            .map_or_else(|| "-".to_owned(), ToString::to_string)
    );
    if let Some(owner) = &shard.lease_owner {
        let _ = write!(line, "  owner {owner}");
    }
    if let Some(held) = &shard.held {
        let _ = write!(
            line,
            "  held at {} ({} failed deliveries)",
            held.sequence_number, held.failed_deliveries
        );
    }
    if shard.phase == ShardPhase::Reading || shard.millis_behind_latest > 0 {
        let _ = write!(line, "  iterator age {} ms", shard.millis_behind_latest);
    }
    if shard.parent_shard_ids.len() > 1 {
        let _ = write!(
            line,
            "  (merged from {})",
            shard.parent_shard_ids.join(" + ")
        );
    }
    let _ = writeln!(out, "{line}");
    // A merged child is drawn under its first parent only.
    for child in status
        .shards
        .values()
        .filter(|child| child.parent_shard_ids.first().map(String::as_str) == Some(shard_id))
    {
        render_branch(out, status, &child.shard_id, depth + 1);
    }
}
