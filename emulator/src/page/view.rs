//! What the page shows, as pure functions of the mappings' configuration and status: the JSON
//! document each `status` event carries. The page's script draws it and decides nothing.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

use crate::summary;
use esm_engine::config::{MappingConfig, StartingPosition};
use esm_engine::mapping::{InvocationVerdict, MappingStatus, ShardStatus};
use kinesis_source::sequence::SequenceNumber;

/// How many on-failure records of a mapping the page shows (the newest).
const ON_FAILURE_SHOWN: usize = 10;

/// A mapping's settings as the page lists them: name and value.
pub(crate) type Settings = std::sync::Arc<[(&'static str, String)]>;

/// The settings of a mapping the page lists, in the template's words.
pub(crate) fn settings(config: &MappingConfig) -> Vec<(&'static str, String)> {
    let starting_position = match config.starting_position {
        StartingPosition::TrimHorizon => "TRIM_HORIZON".to_owned(),
        StartingPosition::Latest => "LATEST".to_owned(),
        StartingPosition::AtTimestamp(at) => {
            format!("AT_TIMESTAMP {}", kinesis_source::time::iso8601_millis(at))
        }
    };
    let or_none = |value: Option<String>| value.unwrap_or_else(|| "-1 (no limit)".to_owned());
    vec![
        ("StartingPosition", starting_position),
        ("BatchSize", config.batch_size.to_string()),
        (
            "MaximumBatchingWindowInSeconds",
            config.maximum_batching_window.as_secs().to_string(),
        ),
        (
            "MaximumRetryAttempts",
            or_none(config.maximum_retry_attempts.map(|n| n.to_string())),
        ),
        (
            "MaximumRecordAgeInSeconds",
            or_none(
                config
                    .maximum_record_age
                    .map(|age| age.as_secs().to_string()),
            ),
        ),
        (
            "BisectBatchOnFunctionError",
            config.bisect_batch_on_function_error.to_string(),
        ),
        (
            "FunctionResponseTypes",
            if config.report_batch_item_failures {
                "ReportBatchItemFailures".to_owned()
            } else {
                "(none)".to_owned()
            },
        ),
        (
            "ParallelizationFactor",
            config.parallelization_factor.to_string(),
        ),
        (
            "FilterCriteria",
            format!("{} filters", config.filter_criteria.len()),
        ),
        (
            "OnFailure",
            config
                .on_failure_destination
                .clone()
                .unwrap_or_else(|| "(none)".to_owned()),
        ),
        (
            "Timeout",
            format!("{} s", config.function_timeout.as_secs()),
        ),
        (
            "MetricsConfig",
            if config.event_count_metrics {
                "EventCount".to_owned()
            } else {
                // As on Lambda: without it /metrics has no event counts, which looks broken
                // to someone who has not read the template.
                "(none: no event-count metrics on /metrics, as on Lambda)".to_owned()
            },
        ),
    ]
}

/// A held record as the page shows it: what the reader would deliver again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HeldRecordView {
    /// Its partition key.
    pub(crate) partition_key: String,
    /// Its data, decoded.
    pub(crate) data: RecordData,
}

/// A record's data as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum RecordData {
    /// JSON, pretty-printed.
    Json(String),
    /// UTF-8 text that is not JSON.
    Text(String),
    /// Anything else, as base64.
    Base64(String),
}

/// Decodes a record's data for showing: JSON pretty-printed, else text, else base64.
pub(crate) fn decode_data(data: &[u8]) -> RecordData {
    if serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok()
        && let Ok(text) = std::str::from_utf8(data)
    {
        return RecordData::Json(indent_json(text));
    }
    match std::str::from_utf8(data) {
        Ok(text) if !text.chars().any(|c| c.is_control() && !c.is_whitespace()) => {
            RecordData::Text(text.to_owned())
        }
        _ => RecordData::Base64(base64::engine::general_purpose::STANDARD.encode(data)),
    }
}

/// Indents valid JSON text two spaces a level, keeping its keys in the order written (a
/// `serde_json::Value` would sort them).
fn indent_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = text.trim().chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                while chars.next_if(|next| next.is_whitespace()).is_some() {}
                out.push(c);
                if let Some(&close @ ('}' | ']')) = chars.peek() {
                    out.push(close);
                    chars.next();
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            _ if c.is_whitespace() => {}
            _ => out.push(c),
        }
    }
    out
}

/// Each shard's depth in its lineage: 0 for a shard with no parent the mapping knows, else one
/// more than its deepest parent. The page draws parents above their children by it.
pub(crate) fn lineage_depths(shards: &BTreeMap<String, ShardStatus>) -> BTreeMap<&str, usize> {
    fn depth<'a>(
        id: &'a str,
        shards: &'a BTreeMap<String, ShardStatus>,
        depths: &mut BTreeMap<&'a str, usize>,
        path: usize,
    ) -> usize {
        if let Some(&known) = depths.get(id) {
            return known;
        }
        // A lineage longer than the shards known would be a cycle: Kinesis makes none, and
        // the bound keeps a broken listing from recursing without end.
        let found = match shards.get(id) {
            Some(shard) if path <= shards.len() => shard
                .parent_shard_ids
                .iter()
                .filter(|parent| shards.contains_key(parent.as_str()))
                .map(|parent| depth(parent, shards, depths, path + 1) + 1)
                .max()
                .unwrap_or(0),
            _ => 0,
        };
        depths.insert(id, found);
        found
    }
    let mut depths = BTreeMap::new();
    for id in shards.keys() {
        depth(id, shards, &mut depths, 0);
    }
    depths
}

/// Held records looked up so far, by shard id and sequence number.
pub(crate) type HeldRecords = BTreeMap<(String, SequenceNumber), HeldRecordView>;

/// One mapping as a `status` event shows it.
pub(crate) fn mapping_view(
    settings: &[(&'static str, String)],
    status: &MappingStatus,
    held: &HeldRecords,
) -> Value {
    let depths = lineage_depths(&status.shards);
    let shards: Vec<Value> = status
        .shards
        .values()
        .map(|shard| shard_view(shard, depths[shard.shard_id.as_str()], held))
        .collect();
    let skip = status.on_failure.len().saturating_sub(ON_FAILURE_SHOWN);
    serde_json::json!({
        "function": status.function_name,
        "stream": status.stream_name,
        "settings": settings,
        "synced": status.synced,
        "lastError": status.last_error,
        "onFailureDestination": status.on_failure_destination,
        "onFailureCount": status.on_failure.len(),
        "onFailure": status.on_failure[skip..],
        "shards": shards,
        "environments": status.environments.iter().map(|environment| serde_json::json!({
            "number": environment.number,
            "inFlight": environment.in_flight,
        })).collect::<Vec<_>>(),
    })
}

fn shard_view(shard: &ShardStatus, depth: usize, held: &HeldRecords) -> Value {
    let held_view = shard.held.as_ref().map(|record| {
        serde_json::json!({
            "sequenceNumber": record.sequence_number.as_str(),
            "reason": record.reason,
            "failedDeliveries": record.failed_deliveries,
            "retriesCapped": record.retries_capped,
            "nextRetry": record.next_retry.as_ref().map(|next| serde_json::json!({
                "number": next.number,
                "limit": next.limit,
                "atEpochMillis": next.at_epoch_millis,
            })),
            "record": held.get(&(shard.shard_id.clone(), record.sequence_number.clone())),
        })
    });
    serde_json::json!({
        "id": shard.shard_id,
        "parents": shard.parent_shard_ids,
        "depth": depth,
        "phase": shard.phase.as_str(),
        "checkpoint": shard.checkpoint.as_ref().map(ToString::to_string),
        // Shortened by the summary's rule, so that the page and the terminal read alike.
        "checkpointShort": summary::checkpoint_cell(shard.checkpoint.as_ref()),
        "owner": shard.lease_owner,
        // Every record read, as the summary's `records` column counts it.
        "records": summary::RecordCounts::of(shard).read(),
        "delivered": shard.delivered,
        "acked": shard.acked,
        "dropped": shard.dropped,
        "undecodable": shard.undecodable,
        "discarded": shard.discarded,
        "filtered": shard.filtered,
        "invocations": shard.invocations,
        "retries": shard.retries,
        "unsettled": shard.unsettled,
        "iteratorAgeMillis": shard.metrics.iterator_age_millis,
        "millisBehindLatest": shard.millis_behind_latest,
        "held": held_view,
        "recent": recent_view(shard),
    })
}

/// A shard's recent invocations as the page's table lists them, newest first: range, size,
/// duration and verdict in words (the `status` tree's), the verdict's kind to style the row by,
/// and the record an answer held at, whole, to match it to the held record.
fn recent_view(shard: &ShardStatus) -> Vec<Value> {
    shard
        .recent_invocations
        .iter()
        .rev()
        .map(|invocation| {
            let held_at = match &invocation.verdict {
                InvocationVerdict::HeldAt {
                    sequence_number, ..
                } => Some(sequence_number.as_str()),
                _ => None,
            };
            serde_json::json!({
                "first": invocation.first.as_str(),
                "firstShort": summary::short_sequence_number(invocation.first.as_str()),
                "last": invocation.last.as_str(),
                "lastShort": summary::short_sequence_number(invocation.last.as_str()),
                "records": invocation.records,
                "atEpochMillis": invocation.at_epoch_millis,
                "duration": summary::duration_text(invocation.duration_micros),
                "kind": invocation.verdict.kind(),
                "verdict": summary::verdict_text(invocation),
                "heldAt": held_at,
                "discarded": invocation.discarded,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use esm_engine::invoke::EnvironmentInFlight;

    fn shard(id: &str, parents: &[&str]) -> (String, ShardStatus) {
        let status = ShardStatus {
            shard_id: id.to_owned(),
            parent_shard_ids: parents.iter().map(|&parent| parent.to_owned()).collect(),
            ..ShardStatus::default()
        };
        (id.to_owned(), status)
    }

    #[test]
    fn children_sit_one_below_their_deepest_parent() {
        let shards: BTreeMap<String, ShardStatus> = [
            shard("shardId-000000000000", &[]),
            shard("shardId-000000000001", &[]),
            shard("shardId-000000000002", &["shardId-000000000000"]),
            shard("shardId-000000000003", &["shardId-000000000000"]),
            // A merge of a child and a root: below the child.
            shard(
                "shardId-000000000004",
                &["shardId-000000000003", "shardId-000000000001"],
            ),
            // A parent past retention is not known: the child is a root.
            shard("shardId-000000000005", &["shardId-000000000099"]),
        ]
        .into_iter()
        .collect();
        let depths = lineage_depths(&shards);
        let found: Vec<usize> = depths.values().copied().collect();
        assert_eq!(found, [0, 0, 1, 1, 2, 0]);
    }

    #[test]
    fn a_cycle_in_a_broken_listing_ends() {
        let shards: BTreeMap<String, ShardStatus> = [shard("a", &["b"]), shard("b", &["a"])]
            .into_iter()
            .collect();
        let depths = lineage_depths(&shards);
        assert_eq!(depths.len(), 2);
    }

    #[test]
    fn json_data_is_pretty_printed_in_the_order_written() {
        assert_eq!(
            decode_data(br#"{"id":2,"carrier":"fedex"}"#),
            RecordData::Json("{\n  \"id\": 2,\n  \"carrier\": \"fedex\"\n}".to_owned())
        );
        let nested = br#" {"to": {"street" : "a, b: [c]", "lines": [ ]}, "tags": ["x\"}", {}], "n": -1.5e3} "#;
        let RecordData::Json(pretty) = decode_data(nested) else {
            panic!("JSON")
        };
        assert_eq!(
            pretty,
            "{\n  \"to\": {\n    \"street\": \"a, b: [c]\",\n    \"lines\": []\n  },\n  \
             \"tags\": [\n    \"x\\\"}\",\n    {}\n  ],\n  \"n\": -1.5e3\n}"
        );
        // Still the same JSON.
        let again: Value = serde_json::from_str(&pretty).unwrap();
        assert_eq!(again, serde_json::from_slice::<Value>(nested).unwrap());
        assert_eq!(decode_data(b"42"), RecordData::Json("42".to_owned()));
    }

    #[test]
    fn text_that_is_not_json_is_shown_as_text_and_bytes_as_base64() {
        assert_eq!(
            decode_data(b"not json\n"),
            RecordData::Text("not json\n".to_owned())
        );
        assert_eq!(
            decode_data(&[0, 159, 146, 150]),
            RecordData::Base64("AJ+Slg==".to_owned())
        );
        assert_eq!(
            decode_data(b"bell\x07"),
            RecordData::Base64("YmVsbAc=".to_owned())
        );
    }

    #[test]
    fn a_held_shard_shows_its_record_once_looked_up() {
        let (id, mut status) = shard("shardId-000000000000", &[]);
        let sequence_number: SequenceNumber =
            "49000000000000000000000000000000000000000000000000000001"
                .parse()
                .unwrap();
        status.held = Some(esm_engine::mapping::HeldRecord {
            sequence_number: sequence_number.clone(),
            failed_deliveries: 1,
            reason: "the function held it".to_owned(),
            retries_capped: true,
            next_retry: None,
        });
        let mapping = MappingStatus {
            function_name: "ShippingFunction".to_owned(),
            stream_name: "shipments".to_owned(),
            shards: [(id.clone(), status)].into_iter().collect(),
            ..MappingStatus::default()
        };
        let unknown = mapping_view(&[], &mapping, &HeldRecords::new());
        assert_eq!(unknown["shards"][0]["held"]["record"], Value::Null);
        let held: HeldRecords = [(
            (id, sequence_number),
            HeldRecordView {
                partition_key: "customer-42".to_owned(),
                data: RecordData::Text("x".to_owned()),
            },
        )]
        .into_iter()
        .collect();
        let known = mapping_view(&[], &mapping, &held);
        assert_eq!(
            known["shards"][0]["held"]["record"],
            serde_json::json!({"partitionKey": "customer-42", "data": {"text": "x"}})
        );
        assert_eq!(known["shards"][0]["phase"], "waiting on parents");
    }

    #[test]
    fn a_function_on_managed_instances_shows_its_environments_in_flight() {
        let standard = MappingStatus::default();
        assert_eq!(
            mapping_view(&[], &standard, &HeldRecords::new())["environments"],
            serde_json::json!([])
        );
        let managed = MappingStatus {
            environments: vec![
                EnvironmentInFlight {
                    number: 1,
                    in_flight: 3,
                },
                EnvironmentInFlight {
                    number: 4,
                    in_flight: 0,
                },
            ],
            ..MappingStatus::default()
        };
        assert_eq!(
            mapping_view(&[], &managed, &HeldRecords::new())["environments"],
            serde_json::json!([{"number": 1, "inFlight": 3}, {"number": 4, "inFlight": 0}])
        );
    }

    #[test]
    fn recent_invocations_are_listed_newest_first_with_the_record_held_at() {
        let (id, mut status) = shard("shardId-000000000000", &[]);
        let number = |n: &str| -> SequenceNumber { n.parse().unwrap() };
        let invocation = |first: &str, verdict| esm_engine::mapping::RecentInvocation {
            first: number(first),
            last: number("13"),
            records: 4,
            at_epoch_millis: 1_000,
            duration_micros: 1_500,
            verdict,
            discarded: false,
        };
        status
            .recent_invocations
            .push(invocation("10", InvocationVerdict::AllAcked { dropped: 0 }));
        status.recent_invocations.push(invocation(
            "11",
            InvocationVerdict::HeldAt {
                sequence_number: number("12"),
                settled: 1,
            },
        ));
        let mapping = MappingStatus {
            shards: [(id, status)].into_iter().collect(),
            ..MappingStatus::default()
        };
        let view = mapping_view(&[], &mapping, &HeldRecords::new());
        assert_eq!(
            view["shards"][0]["recent"],
            serde_json::json!([
                {"first": "11", "firstShort": "11", "last": "13", "lastShort": "13",
                 "records": 4, "atEpochMillis": 1000,
                 "duration": "1.5 ms", "kind": "held_at",
                 "verdict": "held at 12 (1 settled before it)", "heldAt": "12",
                 "discarded": false},
                {"first": "10", "firstShort": "10", "last": "13", "lastShort": "13",
                 "records": 4, "atEpochMillis": 1000,
                 "duration": "1.5 ms", "kind": "all_acked", "verdict": "all acked",
                 "heldAt": null, "discarded": false},
            ])
        );
    }

    /// A sequence number of the embedded Kinesis: stream, counter and shard, zero-padded.
    fn embedded(counter: u64, shard: u64) -> SequenceNumber {
        format!("49{:010}{counter:034}{shard:010}", 1_764_650_000_u64)
            .parse()
            .unwrap()
    }

    #[test]
    fn sequence_numbers_are_shortened_by_the_summarys_rule() {
        let (id, mut status) = shard("shardId-000000000000", &[]);
        status.checkpoint = Some(esm_engine::lease::Checkpoint::SequenceNumber(embedded(
            12, 0,
        )));
        status
            .recent_invocations
            .push(esm_engine::mapping::RecentInvocation {
                first: embedded(10, 0),
                last: embedded(12, 0),
                records: 3,
                at_epoch_millis: 1_000,
                duration_micros: 1_500,
                verdict: InvocationVerdict::AllAcked { dropped: 0 },
                discarded: false,
            });
        let (other_id, mut other) = shard("shardId-000000000001", &[]);
        other.checkpoint = Some(esm_engine::lease::Checkpoint::TrimHorizon);
        let mapping = MappingStatus {
            shards: [(id, status), (other_id, other)].into_iter().collect(),
            ..MappingStatus::default()
        };
        let view = mapping_view(&[], &mapping, &HeldRecords::new());
        let shard = &view["shards"][0];
        assert_eq!(shard["checkpointShort"], "4917…120000000000");
        assert_eq!(
            shard["checkpointShort"],
            summary::checkpoint_cell(mapping.shards["shardId-000000000000"].checkpoint.as_ref())
        );
        assert_eq!(shard["recent"][0]["firstShort"], "4917…100000000000");
        assert_eq!(shard["recent"][0]["lastShort"], "4917…120000000000");
        assert_eq!(view["shards"][1]["checkpointShort"], "TRIM_HORIZON");
    }
}
