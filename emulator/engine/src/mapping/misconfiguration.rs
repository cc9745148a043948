//! The classic production misconfiguration, seen where only the emulator can see it: a function
//! that answers with `batchItemFailures` under a mapping without
//! `FunctionResponseTypes: [ReportBatchItemFailures]`. Lambda then ignores the answer and counts
//! the whole batch as a success (`docs/event-source-mapping.md` §1.1); so does the emulator, and
//! it says so once per mapping.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

/// The line a template needs for Lambda to read `batchItemFailures`.
pub(super) const TEMPLATE_LINE: &str = "FunctionResponseTypes: [ReportBatchItemFailures]";

/// The `itemIdentifier`s of a response's non-empty `batchItemFailures`, if it has one. Only
/// called for a mapping that ignores them, and only until it has warned.
pub(super) fn ignored_item_failures(body: &[u8]) -> Option<Vec<String>> {
    const KEY: &[u8] = b"batchItemFailures";
    // Most answers do not name the key at all: no need to parse them.
    if !body.windows(KEY.len()).any(|window| window == KEY) {
        return None;
    }
    let value: Value = serde_json::from_slice(body).ok()?;
    let failures = value.get("batchItemFailures")?.as_array()?;
    if failures.is_empty() {
        return None;
    }
    Some(
        failures
            .iter()
            .map(|failure| match failure.get("itemIdentifier") {
                Some(Value::String(id)) => id.clone(),
                Some(other) => other.to_string(),
                None => failure.to_string(),
            })
            .collect(),
    )
}

/// A warning given once per mapping.
#[derive(Debug, Default)]
pub(super) struct WarnOnce(AtomicBool);

impl WarnOnce {
    /// Whether the warning is still to be given; true once only.
    pub(super) fn first(&self) -> bool {
        !self.0.swap(true, Ordering::Relaxed)
    }

    /// Whether it was given already.
    pub(super) fn given(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(body: &str, expected: Option<&[&str]>) {
        let expected = expected.map(|ids| ids.iter().map(|id| (*id).to_owned()).collect());
        assert_eq!(ignored_item_failures(body.as_bytes()), expected, "{body}");
    }

    #[test]
    fn a_response_naming_records_is_noticed() {
        check(
            r#"{"batchItemFailures":[{"itemIdentifier":"49"},{"itemIdentifier":"51"}]}"#,
            Some(&["49", "51"]),
        );
        check(
            r#"{"batchItemFailures":[{"itemIdentifier":7}]}"#,
            Some(&["7"]),
        );
    }

    #[test]
    fn a_response_that_names_nothing_is_not() {
        // docs/event-source-mapping.md §1.4: an empty or null list, or no list, settles all anyway.
        for body in [
            "",
            "null",
            "{}",
            r#"{"batchItemFailures":[]}"#,
            r#"{"batchItemFailures":null}"#,
            "not json batchItemFailures",
        ] {
            check(body, None);
        }
    }

    #[test]
    fn the_warning_is_given_once() {
        let once = WarnOnce::default();
        assert!(!once.given());
        assert!(once.first());
        assert!(!once.first());
        assert!(once.given());
    }
}
