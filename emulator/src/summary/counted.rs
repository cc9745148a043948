//! A count and its noun, for the summary's sentences.

/// `count` and a noun, in the singular for 1.
pub(crate) fn counted(count: u64, singular: &str, plural: &str) -> String {
    format!("{count} {}", if count == 1 { singular } else { plural })
}
