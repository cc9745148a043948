//! The span a record is handled in.

use crate::batch::RecordMeta;

/// The span a record is handled in, naming the record; `Span::none()` when nothing could
/// see it (see [`record_span_is_seen`]), so that a function without logs pays neither for the
/// span nor for reading its fields.
pub(super) fn record_span(record: &RecordMeta<'_>) -> tracing::Span {
    if !record_span_is_seen(tracing::dispatcher::has_been_set(), log::max_level()) {
        return tracing::Span::none();
    }
    tracing::info_span!(
        "record",
        shard_id = record.shard_id(),
        sequence_number = record.sequence_number(),
        sub_sequence_number = record.is_aggregated().then(|| record.sub_sequence_number()),
        partition_key = record.partition_key(),
    )
}

/// Whether an INFO span could reach anyone. A tracing subscriber, once one has been set,
/// decides for itself (`info_span!` asks it). Until then tracing hands spans to the `log` crate
/// (its `log` feature, which `lambda_runtime` turns on), and a span's lines reach a logger only
/// when `log`'s maximum level lets INFO through: below that, the span is as good as none.
fn record_span_is_seen(subscriber_set: bool, log_max_level: log::LevelFilter) -> bool {
    subscriber_set || log_max_level >= log::LevelFilter::Info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_span_is_made_only_when_a_subscriber_or_a_logger_can_see_it() {
        use log::LevelFilter::{Debug, Error, Info, Off, Trace, Warn};
        for level in [Off, Error, Warn, Info, Debug, Trace] {
            assert!(
                record_span_is_seen(true, level),
                "a subscriber, log at {level}"
            );
        }
        for level in [Info, Debug, Trace] {
            assert!(
                record_span_is_seen(false, level),
                "no subscriber, log at {level}"
            );
        }
        for level in [Off, Error, Warn] {
            assert!(
                !record_span_is_seen(false, level),
                "no subscriber, log at {level}"
            );
        }
    }
}
