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

mod criteria;
mod matching;
mod parse;
mod pattern;
mod projection;
#[cfg(test)]
mod tests;

pub use criteria::{FilterCriteria, MAX_FILTERS};
pub use parse::PatternError;
pub use pattern::{MAX_PATTERN_CHARS, METADATA_KEYS, Pattern};
