//! Reading a function's answer the way Lambda reads it (`docs/event-source-mapping.md` §1).
//!
//! Lambda parses the partial batch response leniently at the top and strictly inside: a missing
//! or null `batchItemFailures` is success, but an item without a usable `itemIdentifier` fails
//! the whole batch. `KinesisEventResponse` cannot be used: it rejects `{}` and `null` lists.

use serde_json::Value;

use kinesis_source::sequence::SequenceNumber;

/// What a normal return of the function means for its batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every record succeeded: the checkpoint moves past the batch.
    Success,
    /// The records before `first_failed` (an index into the batch) succeeded; that record and
    /// every one behind it come again.
    PartialFailure {
        /// The index of the lowest reported record.
        first_failed: usize,
    },
    /// The response is unusable: the whole batch failed, as with a function error.
    Failure {
        /// What was wrong with the response.
        reason: String,
    },
}

/// What the function's response says, for a batch whose records have `sequence_numbers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResponse {
    /// How the batch settles.
    pub verdict: Verdict,
    /// The records the function reported as dropped (the `lambda-kinesis` extension,
    /// `lambda_kinesis::wire::EXTENSION`), as indices into the batch. Lambda ignores the
    /// extension; the emulator only counts it.
    pub dropped: Vec<usize>,
    /// Those of `dropped` the adapter dropped because it could not decode them.
    pub undecodable: Vec<usize>,
}

impl ReadResponse {
    /// The drops among the first `settled` records (those the checkpoint passes).
    pub fn drops_before(&self, settled: usize) -> DropCounts {
        let undecodable = self.undecodable.iter().filter(|&&i| i < settled).count() as u64;
        let dropped = self.dropped.iter().filter(|&&i| i < settled).count() as u64;
        DropCounts {
            dropped: dropped.saturating_sub(undecodable),
            undecodable,
        }
    }
}

/// How many settled records a function retired without an ack, by why: the handler dropped
/// them, or the adapter could not decode them. Counted apart so that a producer writing a
/// format the function does not read shows as such, not as the handler's choice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DropCounts {
    /// Dropped by the handler.
    pub dropped: u64,
    /// Dropped because the adapter could not decode them.
    pub undecodable: u64,
}

impl DropCounts {
    /// Every drop, whatever its reason.
    pub fn total(self) -> u64 {
        self.dropped + self.undecodable
    }
}

impl std::ops::AddAssign for DropCounts {
    fn add_assign(&mut self, other: Self) {
        self.dropped += other.dropped;
        self.undecodable += other.undecodable;
    }
}

/// Reads a function's response body. With `report_batch_item_failures` off, Lambda ignores the
/// body entirely: a normal return is success.
pub fn read_response(
    body: &[u8],
    sequence_numbers: &[SequenceNumber],
    report_batch_item_failures: bool,
) -> ReadResponse {
    let value = if body.iter().all(u8::is_ascii_whitespace) {
        // An empty body is how a runtime returns nothing: Lambda reads it as null.
        Value::Null
    } else {
        match serde_json::from_slice::<Value>(body) {
            Ok(value) => value,
            Err(error) if report_batch_item_failures => {
                return ReadResponse {
                    verdict: Verdict::Failure {
                        reason: format!("the response is not JSON: {error}"),
                    },
                    dropped: Vec::new(),
                    undecodable: Vec::new(),
                };
            }
            Err(_) => Value::Null,
        }
    };
    let dropped = records_of(
        lambda_kinesis::wire::dropped_sequence_numbers(&value),
        sequence_numbers,
    );
    let undecodable = records_of(
        lambda_kinesis::wire::undecodable_sequence_numbers(&value),
        sequence_numbers,
    );
    let verdict = if report_batch_item_failures {
        verdict(&value, sequence_numbers)
    } else {
        Verdict::Success
    };
    ReadResponse {
        verdict,
        dropped,
        undecodable,
    }
}

fn verdict(value: &Value, sequence_numbers: &[SequenceNumber]) -> Verdict {
    let failure = |reason: String| Verdict::Failure { reason };
    let failures = match value {
        // `null`, `""` and `[]` are "null EventResponse": success.
        Value::Null => return Verdict::Success,
        Value::String(text) if text.is_empty() => return Verdict::Success,
        Value::Array(items) if items.is_empty() => return Verdict::Success,
        // A missing (or misspelt) top-level key is an empty response: success.
        Value::Object(object) => match object.get("batchItemFailures") {
            None | Some(Value::Null) => return Verdict::Success,
            Some(Value::Array(items)) => items,
            Some(other) => {
                return failure(format!("`batchItemFailures` is not a list: {other}"));
            }
        },
        other => {
            return failure(format!(
                "the response is not a partial batch response: {other}"
            ));
        }
    };
    let mut lowest: Option<usize> = None;
    for item in failures {
        let identifier = match item.get("itemIdentifier") {
            Some(Value::String(identifier)) if !identifier.is_empty() => identifier,
            Some(Value::String(_)) => return failure("an `itemIdentifier` is empty".to_owned()),
            Some(other) => return failure(format!("an `itemIdentifier` is not a string: {other}")),
            None => {
                return failure(format!(
                    "a batch item failure has no `itemIdentifier`: {item}"
                ));
            }
        };
        let position = identifier
            .parse::<SequenceNumber>()
            .ok()
            .and_then(|sequence_number| sequence_numbers.binary_search(&sequence_number).ok());
        let Some(position) = position else {
            return failure(format!(
                "`itemIdentifier` {identifier} is not a record of the batch"
            ));
        };
        lowest = Some(lowest.map_or(position, |lowest| lowest.min(position)));
    }
    match lowest {
        None => Verdict::Success,
        Some(first_failed) => Verdict::PartialFailure { first_failed },
    }
}

/// The batch indices of the records `listed` names; names of no record of the batch are skipped.
fn records_of<'a>(
    listed: impl Iterator<Item = &'a str>,
    sequence_numbers: &[SequenceNumber],
) -> Vec<usize> {
    listed
        .filter_map(|text| text.parse::<SequenceNumber>().ok())
        .filter_map(|sequence_number| sequence_numbers.binary_search(&sequence_number).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> Vec<SequenceNumber> {
        ["9", "10", "11"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect()
    }

    #[track_caller]
    fn check(body: &str, expected: Verdict) {
        let read = read_response(body.as_bytes(), &batch(), true);
        assert_eq!(read.verdict, expected, "response {body}");
    }

    #[track_caller]
    fn check_failure(body: &str, reason_fragment: &str) {
        match read_response(body.as_bytes(), &batch(), true).verdict {
            Verdict::Failure { reason } => {
                assert!(reason.contains(reason_fragment), "{body}: {reason}")
            }
            other => panic!("{body} should fail the batch, gave {other:?}"),
        }
    }

    #[test]
    fn lambdas_success_shapes() {
        for (body, verdict) in [
            (r#"{"batchItemFailures":[]}"#, Verdict::Success),
            (r#"{"batchItemFailures":null}"#, Verdict::Success),
            ("{}", Verdict::Success),
            (
                r#"{"batchItemFailure":[{"itemIdentifier":"10"}]}"#,
                Verdict::Success,
            ),
            ("null", Verdict::Success),
            (r#""""#, Verdict::Success),
            ("[]", Verdict::Success),
            ("", Verdict::Success),
        ] {
            check(body, verdict);
        }
    }

    #[test]
    fn lambdas_failure_shapes() {
        for (body, reason) in [
            (r#"{"batchItemFailures":[{"itemIdentifier":""}]}"#, "empty"),
            (
                r#"{"batchItemFailures":[{"itemIdentifier":null}]}"#,
                "not a string",
            ),
            (
                r#"{"batchItemFailures":[{"foo":123}]}"#,
                "no `itemIdentifier`",
            ),
            (
                r#"{"batchItemFailures":[{"foo":null}]}"#,
                "no `itemIdentifier`",
            ),
            (
                r#"{"batchItemFailures":[{"itemIdentifier":123}]}"#,
                "not a string",
            ),
            (
                r#"{"batchItemFailures":[{"itemIdentifier":"12"}]}"#,
                "not a record of the batch",
            ),
            (
                r#"{"batchItemFailures":[{"itemIdentifier":"abc"}]}"#,
                "not a record of the batch",
            ),
        ] {
            check_failure(body, reason);
        }
    }

    #[test]
    fn undocumented_shapes_fail_the_batch() {
        for (body, reason) in [
            ("garbage", "not JSON"),
            (r#""abc""#, "not a partial batch response"),
            ("5", "not a partial batch response"),
            (r#"{"batchItemFailures":"x"}"#, "not a list"),
        ] {
            check_failure(body, reason);
        }
    }

    #[test]
    fn the_lowest_reported_record_wins() {
        for (body, verdict) in [
            (
                r#"{"batchItemFailures":[{"itemIdentifier":"11"}]}"#,
                Verdict::PartialFailure { first_failed: 2 },
            ),
            (
                r#"{"batchItemFailures":[{"itemIdentifier":"11"},{"itemIdentifier":"10"}]}"#,
                Verdict::PartialFailure { first_failed: 1 },
            ),
            (
                r#"{"batchItemFailures":[{"itemIdentifier":"9"}]}"#,
                Verdict::PartialFailure { first_failed: 0 },
            ),
        ] {
            check(body, verdict);
        }
    }

    #[test]
    fn without_report_batch_item_failures_the_body_is_ignored() {
        for body in [
            r#"{"batchItemFailures":[{"itemIdentifier":"10"}]}"#,
            "garbage",
            r#"[{"foo":1}]"#,
        ] {
            assert_eq!(
                read_response(body.as_bytes(), &batch(), false).verdict,
                Verdict::Success,
                "{body}"
            );
        }
    }

    #[test]
    fn reads_the_dropped_extension() {
        let body = r#"{"batchItemFailures":[],"lambdaKinesis":{"dropped":["10","99","x"]}}"#;
        assert_eq!(
            read_response(body.as_bytes(), &batch(), true).dropped,
            vec![1]
        );
    }

    #[test]
    fn undecodable_records_are_counted_apart_from_the_handlers_drops() {
        let body = r#"{"lambdaKinesis":{"dropped":["9","10","11"],"undecodable":["10","11"]}}"#;
        let read = read_response(body.as_bytes(), &batch(), true);
        assert_eq!(
            (read.dropped, read.undecodable.clone()),
            (vec![0, 1, 2], vec![1, 2])
        );
        let read = read_response(body.as_bytes(), &batch(), true);
        let counts = |settled| {
            let DropCounts {
                dropped,
                undecodable,
            } = read.drops_before(settled);
            (dropped, undecodable)
        };
        assert_eq!(counts(3), (1, 2));
        assert_eq!(
            counts(2),
            (1, 1),
            "the drops behind the hold are not counted"
        );
        assert_eq!(counts(0), (0, 0));
    }
}
