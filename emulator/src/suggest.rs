//! "Did you mean": the known name nearest to a mistyped one, for messages about a property,
//! resource, stream or function that the template or the command line does not have.

/// The known name `typed` is most likely a typo of, if one is close enough to be worth saying.
///
/// Compares without case (a `batchsize` for `BatchSize` is a typo too) by Damerau-Levenshtein
/// distance, so a swapped pair of letters (`ordres`) counts as one edit. A name is close when it is
/// at most two edits away and those edits are at most a third of the typed length: past that,
/// a suggestion for a short name (`Foo` for `Bar`) would be noise rather than help. The first
/// of equally near names wins, so the caller's order (the order the template declares them)
/// decides ties.
pub(crate) fn did_you_mean<'k>(
    typed: &str,
    known: impl IntoIterator<Item = &'k str>,
) -> Option<&'k str> {
    let typed_lower = typed.to_lowercase();
    let allowed = (typed.chars().count() / 3).clamp(1, 2);
    known
        .into_iter()
        .filter(|name| *name != typed)
        .map(|name| {
            let distance = strsim::damerau_levenshtein(&typed_lower, &name.to_lowercase());
            (distance, name)
        })
        .filter(|(distance, _)| *distance <= allowed)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// `did you mean NAME?`, to follow a message's list of known names, or nothing.
pub(crate) fn did_you_mean_hint<'k>(
    typed: &str,
    known: impl IntoIterator<Item = &'k str>,
) -> String {
    did_you_mean(typed, known)
        .map(|name| format!("; did you mean {name}?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[track_caller]
    fn check(typed: &str, known: &[&str], expected: Option<&str>) {
        assert_eq!(did_you_mean(typed, known.iter().copied()), expected);
    }

    #[test]
    fn a_dropped_letter_is_a_typo() {
        check(
            "BatchSze",
            &["Stream", "BatchSize", "StartingPosition"],
            Some("BatchSize"),
        );
        check("Timout", &["Timeout", "MemorySize"], Some("Timeout"));
    }

    #[test]
    fn swapped_letters_and_case_count_as_one_edit() {
        check("ordres", &["Shipments", "Orders"], Some("Orders"));
        check("batchsize", &["BatchSize"], Some("BatchSize"));
    }

    #[test]
    fn a_far_name_is_not_suggested() {
        check("Foo", &["Bar", "Baz"], None);
        check("ParallelisationFactor", &["Stream", "BatchSize"], None);
    }

    #[test]
    fn short_names_allow_one_edit_only() {
        check("Ab", &["Abc"], Some("Abc"));
        check("Ab", &["Xyz", "Acd"], None);
        check("Tag", &["Tags"], Some("Tags"));
    }

    #[test]
    fn the_nearest_name_wins_and_ties_keep_the_given_order() {
        check("Stram", &["Streams", "Stream"], Some("Stream"));
        check("Stremx", &["Streamx", "Stremxy"], Some("Streamx"));
    }
}
