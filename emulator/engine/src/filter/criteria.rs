//! A mapping's filters, ORed: which records reach the function.

use std::sync::Arc;

use kinesis_source::Record;

use super::matching;
use super::pattern::Pattern;
use super::projection;

/// The most filters one mapping takes: 5 by default, 10 with a raised quota
/// (`docs/filtering.md`, "Limits"). kinesis-esm accepts up to the raised quota.
pub const MAX_FILTERS: usize = 10;

/// A mapping's filters (`FilterCriteria.Filters`), ORed: a record is delivered if it matches
/// one of them. Without filters every record is delivered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterCriteria {
    // Shared: the mapping's configuration is cloned per batch.
    pub(super) patterns: Arc<[Pattern]>,
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
