//! Lambda's event filtering (`FilterCriteria`) over Kinesis records: which records reach the
//! function. The rules, with their public sources, are in `docs/filtering.md`.
//!
//! A filter is a pattern in Lambda's (EventBridge's) grammar. A record is delivered if it matches
//! at least one filter; a mapping without filters delivers every record. The pattern's `data`
//! key is matched against the record's data read as JSON (a record whose data is not JSON never
//! matches a pattern that addresses `data`); its other top-level keys address the record's
//! metadata as the event shows it (`partitionKey`, `sequenceNumber`,
//! `approximateArrivalTimestamp`, `kinesisSchemaVersion`).
//!
//! Parsing ([`Pattern::parse`]) refuses what Lambda refuses, saying where in the pattern;
//! matching is a pure function of the pattern and the record.

mod matching;
mod parse;
mod projection;
#[cfg(test)]
mod tests;

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use serde_json::Value;

use kinesis_source::Record;

/// The most filters one mapping takes: 5 by default, 10 with a raised quota
/// (`docs/filtering.md`, "Limits"). kinesis-esm accepts up to the raised quota.
pub const MAX_FILTERS: usize = 10;

/// The most characters one pattern may have (the API model's limit for `Pattern`).
pub const MAX_PATTERN_CHARS: usize = 4096;

/// The record metadata a pattern may address besides `data`, as the event names it.
pub const METADATA_KEYS: &[&str] = &[
    "partitionKey",
    "sequenceNumber",
    "approximateArrivalTimestamp",
    "kinesisSchemaVersion",
];

/// A mapping's filters (`FilterCriteria.Filters`), ORed: a record is delivered if it matches
/// one of them. Without filters every record is delivered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterCriteria {
    // Shared: the mapping's configuration is cloned per batch.
    patterns: Arc<[Pattern]>,
    /// What of a record's data the patterns read (nothing unless one addresses `data`).
    data: Arc<Option<projection::Projection>>,
}

impl FilterCriteria {
    /// The filters made of these patterns, at most [`MAX_FILTERS`] (the template reader checks).
    pub fn new(patterns: Vec<Pattern>) -> Self {
        let data = patterns
            .iter()
            .any(|pattern| pattern.reads_data)
            .then(|| projection::Projection::of(patterns.iter().map(|pattern| &pattern.root)));
        Self {
            patterns: patterns.into(),
            data: Arc::new(data),
        }
    }

    /// Whether there is no filter: every record is delivered.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// How many filters there are.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    /// Whether the record reaches the function. Its data is read as JSON at most once, only
    /// when a filter addresses `data`, and only the keys the filters name are kept
    /// (`projection.rs`).
    pub fn matches(&self, record: &Record) -> bool {
        if self.patterns.is_empty() {
            return true;
        }
        let data = self
            .data
            .as_ref()
            .as_ref()
            .and_then(|projection| projection.read(&record.data));
        let record = matching::RecordFields::new(record, data.as_ref());
        self.patterns
            .iter()
            .any(|pattern| matching::matches(pattern, &record))
    }
}

/// One filter's pattern, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    root: Conjunction,
    /// Whether a field of the pattern lies under `data`: the record's data must then be JSON.
    reads_data: bool,
}

/// Why a pattern is refused, and where in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}{reason}")]
pub struct PatternError {
    /// Where: `at data.Weather[0]: ` or `at line 1, column 9: `, empty for the whole pattern.
    at: String,
    reason: String,
}

impl PatternError {
    fn new(at: &str, reason: impl Into<String>) -> Self {
        Self {
            at: if at.is_empty() {
                String::new()
            } else {
                format!("at {at}: ")
            },
            reason: reason.into(),
        }
    }

    /// What is wrong, without the place.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl Pattern {
    /// Parses one filter's `Pattern` text, refusing what Lambda refuses.
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        parse::pattern(text)
    }
}

/// Fields that must all match, and groups of alternatives (`$or`) of which one must match each.
#[derive(Debug, Clone, PartialEq)]
struct Conjunction {
    fields: Vec<Field>,
    alternatives: Vec<Vec<Conjunction>>,
}

/// The rules for the values at one path, ORed. The path starts at the record: its first
/// segment is `data` or a metadata key.
#[derive(Debug, Clone, PartialEq)]
struct Field {
    path: Vec<String>,
    rules: Vec<Rule>,
}

/// One rule of a field's array.
#[derive(Debug, Clone, PartialEq)]
enum Rule {
    /// `null`: the value is JSON `null`.
    Null,
    /// A string, number or boolean: the value is equal (numbers by their JSON form).
    Equals(Value),
    /// `{"equals-ignore-case": "x"}`; held in lower case.
    EqualsIgnoreCase(String),
    /// `{"prefix": "x"}`, or `{"prefix": {"equals-ignore-case": "x"}}` (held in lower case).
    Prefix { text: String, ignore_case: bool },
    /// `{"suffix": "x"}`, or `{"suffix": {"equals-ignore-case": "x"}}` (held in lower case).
    Suffix { text: String, ignore_case: bool },
    /// `{"wildcard": "a*b"}`.
    Wildcard(Wildcard),
    /// `{"exists": true}` or `{"exists": false}`.
    Exists(bool),
    /// `{"numeric": [">", 0, "<=", 5]}`.
    Numeric(Range),
    /// `{"cidr": "10.0.0.0/24"}`.
    Cidr(Cidr),
    /// `{"anything-but": ...}`.
    AnythingBut(AnythingBut),
}

/// What `anything-but` excludes.
#[derive(Debug, Clone, PartialEq)]
enum AnythingBut {
    /// Strings or numbers.
    Values(Vec<Value>),
    /// Strings beginning with one of these.
    Prefixes(Vec<String>),
    /// Strings ending with one of these.
    Suffixes(Vec<String>),
    /// Strings equal to one of these ignoring case (held in lower case).
    EqualsIgnoreCase(Vec<String>),
    /// Strings matching one of these wildcards.
    Wildcards(Vec<Wildcard>),
}

/// A numeric range: `=` is both bounds inclusive at one value.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Range {
    lower: Option<Bound>,
    upper: Option<Bound>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Bound {
    value: f64,
    inclusive: bool,
}

/// A wildcard pattern: literal pieces between `*`s.
#[derive(Debug, Clone, PartialEq)]
struct Wildcard {
    /// The literal text between stars, in order; `n` stars make `n + 1` pieces.
    pieces: Vec<String>,
}

/// An IPv4 or IPv6 network.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cidr {
    network: IpAddr,
    prefix_len: u8,
}

impl fmt::Display for Cidr {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.network, self.prefix_len)
    }
}

/// Whether two JSON scalars are equal as Lambda compares them: strings and booleans by value,
/// numbers by their JSON form. serde_json keeps integers and fractions apart, so `300` and
/// `300.0` differ, as on Lambda (`docs/filtering.md`, "Numbers").
fn scalar_equals(value: &Value, expected: &Value) -> bool {
    value == expected
}
