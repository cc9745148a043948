//! Options spelled as SAM CLI spells them, so that a SAM user's habits carry over.

use std::collections::BTreeMap;

/// Reads `--parameter-overrides` values as `sam deploy` and `sam local` take them: each
/// `Key=Value`, or CloudFormation's `ParameterKey=Key,ParameterValue=Value`. A later value for
/// the same key wins.
pub(super) fn parameter_overrides(values: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut overrides = BTreeMap::new();
    for value in values {
        let (key, parameter) = parameter_override(value)?;
        overrides.insert(key, parameter);
    }
    Ok(overrides)
}

fn parameter_override(text: &str) -> Result<(String, String), String> {
    let invalid = || {
        format!(
            "--parameter-overrides {text}: expected Key=Value or \
             ParameterKey=Key,ParameterValue=Value"
        )
    };
    if let Some(rest) = text.strip_prefix("ParameterKey=") {
        let (key, value) = rest.split_once(",ParameterValue=").ok_or_else(invalid)?;
        if key.is_empty() {
            return Err(invalid());
        }
        return Ok((key.to_owned(), value.to_owned()));
    }
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(invalid()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(values: &[&str], expected: Result<&[(&str, &str)], &str>) {
        let values: Vec<String> = values.iter().map(|value| (*value).to_owned()).collect();
        let expected = expected.map(|pairs| {
            pairs
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect::<BTreeMap<_, _>>()
        });
        assert_eq!(
            parameter_overrides(&values),
            expected.map_err(str::to_owned)
        );
    }

    #[test]
    fn both_of_sams_spellings_are_read() {
        check(
            &["Stage=prod", "ParameterKey=Size,ParameterValue=10"],
            Ok(&[("Size", "10"), ("Stage", "prod")]),
        );
        check(&["Url=http://x/?a=b"], Ok(&[("Url", "http://x/?a=b")]));
        check(&["Empty="], Ok(&[("Empty", "")]));
        check(&["Stage=dev", "Stage=prod"], Ok(&[("Stage", "prod")]));
    }

    #[test]
    fn anything_else_is_refused_with_the_expected_forms() {
        for bad in [
            "Stage",
            "=prod",
            "ParameterKey=Size",
            "ParameterKey=,ParameterValue=1",
        ] {
            check(
                &[bad],
                Err(&format!(
                    "--parameter-overrides {bad}: expected Key=Value or \
                     ParameterKey=Key,ParameterValue=Value"
                )),
            );
        }
    }
}
