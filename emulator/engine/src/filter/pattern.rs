//! A filter's pattern as parsed (`parse.rs` reads it, `matching.rs` applies it): the fields
//! it addresses and the rules for their values.

use std::fmt;
use std::net::IpAddr;

use serde_json::Value;

/// The most characters one pattern may have (the API model's limit for `Pattern`).
pub const MAX_PATTERN_CHARS: usize = 4096;

/// The record metadata a pattern may address besides `data`, as the event names it.
pub const METADATA_KEYS: &[&str] = &[
    "partitionKey",
    "sequenceNumber",
    "approximateArrivalTimestamp",
    "kinesisSchemaVersion",
];

/// One filter's pattern, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    pub(super) root: Conjunction,
    /// Whether a field of the pattern lies under `data`: the record's data must then be JSON.
    pub(super) reads_data: bool,
}

/// Fields that must all match, and groups of alternatives (`$or`) of which one must match each.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Conjunction {
    pub(super) fields: Vec<Field>,
    pub(super) alternatives: Vec<Vec<Conjunction>>,
}

/// The rules for the values at one path, ORed. The path starts at the record: its first
/// segment is `data` or a metadata key.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Field {
    pub(super) path: Vec<String>,
    pub(super) rules: Vec<Rule>,
}

/// One rule of a field's array.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Rule {
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
pub(super) enum AnythingBut {
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
pub(super) struct Range {
    pub(super) lower: Option<Bound>,
    pub(super) upper: Option<Bound>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Bound {
    pub(super) value: f64,
    pub(super) inclusive: bool,
}

/// A wildcard pattern: literal pieces between `*`s.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Wildcard {
    /// The literal text between stars, in order; `n` stars make `n + 1` pieces.
    pub(super) pieces: Vec<String>,
}

/// An IPv4 or IPv6 network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Cidr {
    pub(super) network: IpAddr,
    pub(super) prefix_len: u8,
}

impl fmt::Display for Cidr {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.network, self.prefix_len)
    }
}
