//! The mappings' metrics as people and scrapers read them: lines for the run's summary and
//! `kinesis-esm status`, and the Prometheus text exposition format served at [`METRICS_PATH`]
//! (`docs/event-source-mapping.md`, "Metrics", names every metric).

use std::fmt::Write as _;

use esm_engine::mapping::MappingStatus;
use esm_engine::mapping::metrics::EventCounts;

/// Where the run's endpoint serves the metrics for scraping.
pub const METRICS_PATH: &str = "/metrics";

/// The content type of the Prometheus text exposition format, version 0.0.4.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The event-count metrics as Prometheus counters, in the order of [`EventCounts::named`]:
/// each counter's name and help, which names Lambda's metric it stands for.
const EVENT_COUNTERS: [(&str, &str); 6] = [
    (
        "kinesis_esm_polled_event_count_total",
        "Records read from the stream (Lambda's PolledEventCount).",
    ),
    (
        "kinesis_esm_filtered_out_event_count_total",
        "Records read that no filter matched (Lambda's FilteredOutEventCount).",
    ),
    (
        "kinesis_esm_invoked_event_count_total",
        "Records of invocations that reached the function, retries included (Lambda's InvokedEventCount).",
    ),
    (
        "kinesis_esm_failed_invoke_event_count_total",
        "Records of invocations that failed (Lambda's FailedInvokeEventCount).",
    ),
    (
        "kinesis_esm_dropped_event_count_total",
        "Records discarded with no on-failure destination (Lambda's DroppedEventCount).",
    ),
    (
        "kinesis_esm_on_failure_destination_delivered_event_count_total",
        "Records discarded and sent to the on-failure destination (Lambda's OnFailureDestinationDeliveredEventCount).",
    ),
];

const ITERATOR_AGE: &str = "kinesis_esm_iterator_age_milliseconds";

/// The mapping's metrics as summary lines, each indented by two spaces: the event counts when
/// its `MetricsConfig` asks for them, and each shard's `IteratorAge` once it has one.
pub fn text(status: &MappingStatus) -> String {
    let mut out = String::new();
    if let Some(counts) = status.event_counts() {
        let counts: Vec<String> = counts
            .named()
            .iter()
            .map(|(name, count)| format!("{name} {count}"))
            .collect();
        let _ = writeln!(out, "  metrics: {}", counts.join(", "));
    }
    let ages: Vec<String> = status
        .shards
        .values()
        .filter_map(|shard| {
            let age = shard.metrics.iterator_age_millis?;
            Some(format!("{} {age} ms", shard.shard_id))
        })
        .collect();
    if !ages.is_empty() {
        let _ = writeln!(out, "  IteratorAge: {}", ages.join(", "));
    }
    out
}

/// Every mapping's metrics in the Prometheus text exposition format: the event counts of each
/// mapping whose `MetricsConfig` asks for them, labelled by function and stream, and each
/// shard's `IteratorAge`, labelled by shard too. A family with no sample is left out (its
/// `# HELP` alone reads as a broken exporter); a mapping without `MetricsConfig` is named in a
/// comment saying why its event counts are missing.
pub fn prometheus(statuses: &[MappingStatus]) -> String {
    let mut out = String::new();
    let counted: Vec<(&MappingStatus, EventCounts)> = statuses
        .iter()
        .filter_map(|status| Some((status, status.event_counts()?)))
        .collect();
    let uncounted: Vec<String> = statuses
        .iter()
        .filter(|status| status.event_counts().is_none())
        .map(|status| {
            label_value(&format!(
                "{} <- {}",
                status.function_name, status.stream_name
            ))
        })
        .collect();
    if !uncounted.is_empty() {
        let _ = writeln!(
            out,
            "# No event-count metrics for {}: as on Lambda, a mapping counts them only when its \
             MetricsConfig is {{Metrics: [EventCount]}}.",
            uncounted.join(", ")
        );
    }
    if !counted.is_empty() {
        for (index, (name, help)) in EVENT_COUNTERS.into_iter().enumerate() {
            family(&mut out, name, "counter", help);
            for (status, counts) in &counted {
                let (_, count) = counts.named()[index];
                let _ = writeln!(out, "{name}{{{}}} {count}", mapping_labels(status));
            }
        }
    }
    let ages: Vec<String> = statuses
        .iter()
        .flat_map(|status| status.shards.values().map(move |shard| (status, shard)))
        .filter_map(|(status, shard)| {
            let age = shard.metrics.iterator_age_millis?;
            Some(format!(
                "{ITERATOR_AGE}{{{},shard=\"{}\"}} {age}",
                mapping_labels(status),
                label_value(&shard.shard_id)
            ))
        })
        .collect();
    if !ages.is_empty() {
        family(
            &mut out,
            ITERATOR_AGE,
            "gauge",
            "Age of the last record of the shard's last batch when it was sent, in milliseconds (Lambda's IteratorAge).",
        );
        for line in ages {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn mapping_labels(status: &MappingStatus) -> String {
    format!(
        "function=\"{}\",stream=\"{}\"",
        label_value(&status.function_name),
        label_value(&status.stream_name)
    )
}

/// A label value escaped as the exposition format asks: backslash, double quote and line feed.
fn label_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for char in value.chars() {
        match char {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            _ => escaped.push(char),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;
    use esm_engine::mapping::ShardStatus;
    use esm_engine::mapping::metrics::ShardMetrics;

    fn mapping(event_counts: Option<EventCounts>, iterator_age: Option<u64>) -> MappingStatus {
        let shard_id = "shardId-000000000000".to_owned();
        let shard = ShardStatus {
            shard_id: shard_id.clone(),
            metrics: ShardMetrics {
                event_counts,
                iterator_age_millis: iterator_age,
            },
            ..ShardStatus::default()
        };
        MappingStatus {
            function_name: "Shipping\"Function".to_owned(),
            stream_name: "shipments".to_owned(),
            shards: [(shard_id, shard)].into(),
            event_count_metrics: event_counts.is_some(),
            ..MappingStatus::default()
        }
    }

    fn counts() -> EventCounts {
        EventCounts {
            polled: 10,
            filtered_out: 2,
            invoked: 8,
            failed_invoke: 1,
            dropped: 0,
            on_failure_destination_delivered: 3,
        }
    }

    #[test]
    fn the_exposition_has_a_counter_per_event_count_and_a_gauge_per_shard() {
        let text = prometheus(&[mapping(Some(counts()), Some(42))]);
        let labels = r#"function="Shipping\"Function",stream="shipments""#;
        for line in [
            "# TYPE kinesis_esm_polled_event_count_total counter".to_owned(),
            format!("kinesis_esm_polled_event_count_total{{{labels}}} 10"),
            format!("kinesis_esm_filtered_out_event_count_total{{{labels}}} 2"),
            format!("kinesis_esm_invoked_event_count_total{{{labels}}} 8"),
            format!("kinesis_esm_failed_invoke_event_count_total{{{labels}}} 1"),
            format!("kinesis_esm_dropped_event_count_total{{{labels}}} 0"),
            format!("kinesis_esm_on_failure_destination_delivered_event_count_total{{{labels}}} 3"),
            "# TYPE kinesis_esm_iterator_age_milliseconds gauge".to_owned(),
            format!(
                "kinesis_esm_iterator_age_milliseconds{{{labels},shard=\"shardId-000000000000\"}} 42"
            ),
        ] {
            assert!(
                text.lines().any(|got| got == line),
                "no line {line} in\n{text}"
            );
        }
    }

    #[test]
    fn without_metrics_config_only_the_iterator_age_is_exposed_and_a_comment_says_why() {
        let text = prometheus(&[mapping(None, Some(42))]);
        let samples: Vec<&str> = text.lines().filter(|line| !line.starts_with('#')).collect();
        assert_eq!(samples.len(), 1, "{text}");
        assert!(samples[0].starts_with("kinesis_esm_iterator_age_milliseconds{"));
        assert!(
            !text.contains("event_count"),
            "no family without samples: {text}"
        );
        assert!(
            text.starts_with(
                "# No event-count metrics for Shipping\\\"Function <- shipments: as on Lambda, a \
                 mapping counts them only when its MetricsConfig is {Metrics: [EventCount]}.\n"
            ),
            "{text}"
        );
        // Before the first invocation: no family at all, only the comment.
        let empty = prometheus(&[mapping(None, None)]);
        assert_eq!(empty.lines().count(), 1, "{empty}");
    }

    #[test]
    fn a_run_with_no_mapping_exposes_nothing() {
        assert_eq!(prometheus(&[]), "");
    }

    #[test]
    fn label_values_escape_what_the_format_asks() {
        assert_eq!(label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    }

    #[test]
    fn the_summary_lines_name_lambdas_metrics() {
        assert_eq!(
            text(&mapping(Some(counts()), Some(42))),
            "  metrics: PolledEventCount 10, FilteredOutEventCount 2, InvokedEventCount 8, \
             FailedInvokeEventCount 1, DroppedEventCount 0, \
             OnFailureDestinationDeliveredEventCount 3\n  IteratorAge: shardId-000000000000 42 ms\n"
        );
        assert_eq!(text(&mapping(None, None)), "");
    }
}
