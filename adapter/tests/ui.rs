//! The compile errors of the most common handler mistakes, each with options of the adapter
//! set: the note that lists every valid shape still reaches the user. The expected errors are
//! in `tests/ui/*.stderr`; after a deliberate change to a diagnostic, regenerate them with
//! `TRYBUILD=overwrite cargo test -p lambda-kinesis --test ui` (and again with
//! `--features publish`) and read the diff.

#[test]
fn a_wrong_handler_shape_is_named_with_every_valid_shape() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}

/// The same with the retry options, which only the `publish` feature has.
#[cfg(feature = "publish")]
#[test]
fn a_wrong_handler_shape_is_named_with_the_retry_options_set() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/publish/*.rs");
}
