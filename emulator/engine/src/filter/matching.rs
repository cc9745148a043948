//! Whether a record matches a parsed pattern (`docs/filtering.md`, "How values match").
//!
//! A field's path is followed through the record's JSON: arrays are transparent at every step
//! (a path reaches into every element), and a key written with dots in the record (`"a.b"`)
//! is the same as nested keys. What the path reaches are its leaf values: strings, numbers,
//! booleans and nulls. Objects are not leaf values, so `exists` is about leaves.

use std::borrow::Cow;
use std::net::IpAddr;
use std::ops::ControlFlow;

use serde_json::{Number, Value};

use super::pattern::{AnythingBut, Cidr, Conjunction, Field, Pattern, Range, Rule, Wildcard};
use kinesis_source::Record;
use kinesis_source::time::millis_since_epoch;

/// What a pattern can address in one record.
pub(super) struct RecordFields<'a> {
    record: &'a Record,
    /// The data as JSON, when it is JSON and a pattern reads it.
    data: Option<&'a Value>,
}

impl<'a> RecordFields<'a> {
    pub(super) fn new(record: &'a Record, data: Option<&'a Value>) -> Self {
        Self { record, data }
    }

    /// The value of a top-level field, as the event shows it.
    fn top(&self, name: &str) -> Option<Cow<'a, Value>> {
        match name {
            "data" => self.data.map(Cow::Borrowed),
            "partitionKey" => Some(Cow::Owned(Value::String(
                self.record.partition_key.to_string(),
            ))),
            "sequenceNumber" => Some(Cow::Owned(Value::String(
                self.record.sequence_number.as_str().to_owned(),
            ))),
            "approximateArrivalTimestamp" => {
                let seconds = millis_since_epoch(self.record.approximate_arrival) as f64 / 1000.0;
                Number::from_f64(seconds).map(|number| Cow::Owned(Value::Number(number)))
            }
            "kinesisSchemaVersion" => Some(Cow::Owned(Value::String("1.0".to_owned()))),
            _ => None,
        }
    }
}

pub(super) fn matches(pattern: &Pattern, record: &RecordFields<'_>) -> bool {
    // A pattern on `data` drops a record whose data is not JSON.
    if pattern.reads_data && record.data.is_none() {
        return false;
    }
    conjunction_matches(&pattern.root, record)
}

fn conjunction_matches(conjunction: &Conjunction, record: &RecordFields<'_>) -> bool {
    conjunction
        .fields
        .iter()
        .all(|field| field_matches(field, record))
        && conjunction.alternatives.iter().all(|alternatives| {
            alternatives
                .iter()
                .any(|alternative| conjunction_matches(alternative, record))
        })
}

fn field_matches(field: &Field, record: &RecordFields<'_>) -> bool {
    let mut found = false;
    let mut matched = false;
    if let Some(top) = record.top(&field.path[0]) {
        let _ = visit_leaves(&top, &field.path[1..], &mut |leaf| {
            found = true;
            if field.rules.iter().any(|rule| rule_matches(rule, leaf)) {
                matched = true;
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
    }
    matched || (!found && field.rules.contains(&Rule::Exists(false)))
}

/// Calls `visit` with every leaf value at `path` under `value`, until it breaks.
fn visit_leaves<'v>(
    value: &'v Value,
    path: &[String],
    visit: &mut impl FnMut(&'v Value) -> ControlFlow<()>,
) -> ControlFlow<()> {
    match value {
        Value::Array(items) => {
            for item in items {
                visit_leaves(item, path, visit)?;
            }
            ControlFlow::Continue(())
        }
        Value::Object(map) => {
            let Some(first) = path.first() else {
                return ControlFlow::Continue(());
            };
            if let Some(inner) = map.get(first) {
                visit_leaves(inner, &path[1..], visit)?;
            }
            for (key, inner) in map {
                if let Some(joined) = dotted_key_length(key, path) {
                    visit_leaves(inner, &path[joined..], visit)?;
                }
            }
            ControlFlow::Continue(())
        }
        leaf if path.is_empty() => visit(leaf),
        _ => ControlFlow::Continue(()),
    }
}

/// How many segments of `path` a record key with dots stands for (`"a.b"` for `a`, `b`: 2).
fn dotted_key_length(key: &str, path: &[String]) -> Option<usize> {
    let mut rest = key.strip_prefix(path.first()?.as_str())?;
    for (index, segment) in path.iter().enumerate().skip(1) {
        rest = rest.strip_prefix('.')?.strip_prefix(segment.as_str())?;
        if rest.is_empty() {
            return Some(index + 1);
        }
    }
    None
}

fn rule_matches(rule: &Rule, leaf: &Value) -> bool {
    match rule {
        Rule::Null => leaf.is_null(),
        Rule::Equals(expected) => scalar_equals(leaf, expected),
        Rule::EqualsIgnoreCase(text) => leaf
            .as_str()
            .is_some_and(|value| equals_ignore_case(value, text)),
        Rule::Prefix { text, ignore_case } => leaf
            .as_str()
            .is_some_and(|value| has_prefix(value, text, *ignore_case)),
        Rule::Suffix { text, ignore_case } => leaf
            .as_str()
            .is_some_and(|value| has_suffix(value, text, *ignore_case)),
        Rule::Wildcard(wildcard) => leaf.as_str().is_some_and(|value| wildcard.matches(value)),
        Rule::Exists(exists) => *exists,
        Rule::Numeric(range) => leaf.as_f64().is_some_and(|value| range.contains(value)),
        Rule::Cidr(cidr) => leaf
            .as_str()
            .and_then(|value| value.parse::<IpAddr>().ok())
            .is_some_and(|address| cidr.contains(address)),
        Rule::AnythingBut(excluded) => !is_excluded(excluded, leaf),
    }
}

/// Whether `anything-but` excludes the value. Its string forms exclude strings only: any other
/// value passes them.
fn is_excluded(excluded: &AnythingBut, leaf: &Value) -> bool {
    match excluded {
        AnythingBut::Values(values) => values.iter().any(|value| scalar_equals(leaf, value)),
        AnythingBut::Prefixes(prefixes) => leaf.as_str().is_some_and(|value| {
            prefixes
                .iter()
                .any(|prefix| value.starts_with(prefix.as_str()))
        }),
        AnythingBut::Suffixes(suffixes) => leaf.as_str().is_some_and(|value| {
            suffixes
                .iter()
                .any(|suffix| value.ends_with(suffix.as_str()))
        }),
        AnythingBut::EqualsIgnoreCase(texts) => leaf
            .as_str()
            .is_some_and(|value| texts.iter().any(|text| equals_ignore_case(value, text))),
        AnythingBut::Wildcards(wildcards) => leaf
            .as_str()
            .is_some_and(|value| wildcards.iter().any(|wildcard| wildcard.matches(value))),
    }
}

/// Whether `value` equals `lower`, a text already in lower case, ignoring case.
fn equals_ignore_case(value: &str, lower: &str) -> bool {
    value.chars().flat_map(char::to_lowercase).eq(lower.chars())
}

fn has_prefix(value: &str, prefix: &str, ignore_case: bool) -> bool {
    if !ignore_case {
        return value.starts_with(prefix);
    }
    let mut chars = value.chars().flat_map(char::to_lowercase);
    prefix
        .chars()
        .all(|expected| chars.next() == Some(expected))
}

fn has_suffix(value: &str, suffix: &str, ignore_case: bool) -> bool {
    if ignore_case {
        value.to_lowercase().ends_with(suffix)
    } else {
        value.ends_with(suffix)
    }
}

impl Range {
    fn contains(&self, value: f64) -> bool {
        let above = self
            .lower
            .is_none_or(|lower| value > lower.value || (lower.inclusive && value == lower.value));
        let below = self
            .upper
            .is_none_or(|upper| value < upper.value || (upper.inclusive && value == upper.value));
        above && below
    }
}

impl Wildcard {
    fn matches(&self, value: &str) -> bool {
        let (first, rest) = self.pieces.split_first().expect("a wildcard has a piece");
        let Some((last, middle)) = rest.split_last() else {
            return value == first;
        };
        let Some(mut remaining) = value.strip_prefix(first.as_str()) else {
            return false;
        };
        // Each middle piece is taken at its first place: leaving more text to the pieces after
        // it can only help them match.
        for piece in middle {
            let Some(at) = remaining.find(piece.as_str()) else {
                return false;
            };
            remaining = &remaining[at + piece.len()..];
        }
        remaining.len() >= last.len() && remaining.ends_with(last.as_str())
    }
}

impl Cidr {
    fn contains(&self, address: IpAddr) -> bool {
        match (self.network, address) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix_len))
                    .unwrap_or(0);
                u32::from(network) & mask == u32::from(address) & mask
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix_len))
                    .unwrap_or(0);
                u128::from(network) & mask == u128::from(address) & mask
            }
            _ => false,
        }
    }
}

/// Whether two JSON scalars are equal as Lambda compares them: strings and booleans by value,
/// numbers by their JSON form. serde_json keeps integers and fractions apart, so `300` and
/// `300.0` differ, as on Lambda (`docs/filtering.md`, "Numbers").
fn scalar_equals(value: &Value, expected: &Value) -> bool {
    value == expected
}
