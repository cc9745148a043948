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
