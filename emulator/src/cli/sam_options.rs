//! Options spelled as SAM CLI spells them, so that a SAM user's habits carry over.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

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

/// `--env-vars FILE`, the JSON file `sam local invoke` and `sam local start-lambda` read:
/// `{"Parameters": {"VAR": "value"}, "FunctionLogicalId": {"VAR": "value"}}`. The `Parameters`
/// object applies to every function, a function's own object (by logical id, else by function
/// name) over it; as SAM does, only variables the template declares in the function's
/// `Environment.Variables` take a value from the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EnvVarsFile {
    /// The file, as given, for messages.
    path: PathBuf,
    /// The `Parameters` object: for every function.
    every_function: BTreeMap<String, String>,
    /// The other objects, by the key that names their function.
    functions: BTreeMap<String, BTreeMap<String, String>>,
}

/// What the file gives one function.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct EnvVarsForFunction {
    /// The file's values for the variables the template declares.
    pub(super) values: BTreeMap<String, String>,
    /// The file's variables the template does not declare, which SAM leaves out too.
    pub(super) undeclared: Vec<String>,
}

impl EnvVarsFile {
    /// Reads the file at `path`.
    pub(super) fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("--env-vars {}: {error}", path.display()))?;
        Self::parse(path, &text)
    }

    /// Reads `text`, the file at `path`. Like SAM, it refuses a file that is not a JSON object
    /// of objects; it writes values as SAM writes them to Lambda: numbers as written, booleans
    /// as `true`/`false`, and null, arrays and objects as the empty string.
    pub(super) fn parse(path: &Path, text: &str) -> Result<Self, String> {
        let at = |place: &str| format!("--env-vars {}{place}", path.display());
        let value: Value = serde_json::from_str(text).map_err(|error| {
            let message = error.to_string();
            // serde_json ends its message with the position, which is said first instead.
            let message = message
                .rsplit_once(" at line ")
                .map_or(message.as_str(), |(message, _)| message);
            format!(
                "{}: invalid JSON: {message}",
                at(&format!(":{}:{}", error.line(), error.column()))
            )
        })?;
        let Value::Object(objects) = value else {
            return Err(format!(
                "{}: expected a JSON object such as {{\"Parameters\": {{\"VAR\": \"value\"}}, \
                 \"FunctionLogicalId\": {{\"VAR\": \"value\"}}}}, not {}",
                at(""),
                json_kind(&value)
            ));
        };
        let mut file = Self {
            path: path.to_owned(),
            every_function: BTreeMap::new(),
            functions: BTreeMap::new(),
        };
        for (key, variables) in objects {
            let Value::Object(variables) = variables else {
                return Err(format!(
                    "{}: {key} must be an object of variables ({{\"VAR\": \"value\"}}), not {}",
                    at(""),
                    json_kind(&variables)
                ));
            };
            let variables = variables
                .into_iter()
                .map(|(name, value)| (name, lambda_value(&value)))
                .collect();
            if key == "Parameters" {
                file.every_function = variables;
            } else {
                file.functions.insert(key, variables);
            }
        }
        Ok(file)
    }

    /// The file's keys that name none of `functions` (logical id, function name), which SAM
    /// passes over without a word.
    pub(super) fn unknown_keys<'a>(
        &'a self,
        functions: &[(&str, &str)],
    ) -> impl Iterator<Item = &'a str> {
        let known: Vec<(String, String)> = functions
            .iter()
            .map(|(logical_id, name)| ((*logical_id).to_owned(), (*name).to_owned()))
            .collect();
        self.functions
            .keys()
            .map(String::as_str)
            .filter(move |key| {
                !known
                    .iter()
                    .any(|(logical_id, name)| key == logical_id || key == name)
            })
    }

    /// What the file gives the function `logical_id` (named `function_name`), whose template
    /// declares the variables `declared`.
    pub(super) fn for_function<'a>(
        &self,
        logical_id: &str,
        function_name: &str,
        declared: impl IntoIterator<Item = &'a String>,
    ) -> EnvVarsForFunction {
        let mut file_values = self.every_function.clone();
        // SAM takes the first non-empty object among the function's names, logical id first.
        let own = [logical_id, function_name]
            .into_iter()
            .filter_map(|key| self.functions.get(key))
            .find(|variables| !variables.is_empty());
        if let Some(own) = own {
            file_values.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let declared: Vec<&String> = declared.into_iter().collect();
        let mut result = EnvVarsForFunction::default();
        for (name, value) in file_values {
            if declared.contains(&&name) {
                result.values.insert(name, value);
            } else {
                result.undeclared.push(name);
            }
        }
        result
    }

    /// The file, as given.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

/// A JSON value as SAM passes it to Lambda's environment.
fn lambda_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Bool(true) => "true".to_owned(),
        Value::Bool(false) => "false".to_owned(),
        Value::Number(number) => number.to_string(),
        // Unresolved intrinsics, in SAM's reading: blank.
        Value::Null | Value::Array(_) | Value::Object(_) => String::new(),
    }
}

/// What kind of JSON value `value` is, for a message.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_file(text: &str) -> Result<EnvVarsFile, String> {
        EnvVarsFile::parse(Path::new("env.json"), text)
    }

    fn declared(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    fn pairs(values: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
        values
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect()
    }

    #[test]
    fn a_functions_own_object_wins_over_parameters_for_declared_variables_only() {
        let file = env_file(
            r#"{"Parameters": {"STAGE": "dev", "TABLE": "shared", "EXTRA": "x"},
                "ShippingFunction": {"TABLE": "local-shipments"}}"#,
        )
        .unwrap();
        let given = file.for_function(
            "ShippingFunction",
            "shipping",
            &declared(&["STAGE", "TABLE", "UNSET"]),
        );
        assert_eq!(
            pairs(&given.values),
            [("STAGE", "dev"), ("TABLE", "local-shipments")]
        );
        assert_eq!(given.undeclared, ["EXTRA"]);
        // Another function gets only the Parameters.
        let other = file.for_function("Other", "other", &declared(&["TABLE"]));
        assert_eq!(pairs(&other.values), [("TABLE", "shared")]);
    }

    #[test]
    fn a_function_is_found_by_logical_id_first_then_by_its_name() {
        let file = env_file(r#"{"shipping": {"A": "by-name"}, "Ship": {"A": "by-id"}}"#).unwrap();
        let given = file.for_function("Ship", "shipping", &declared(&["A"]));
        assert_eq!(pairs(&given.values), [("A", "by-id")]);
        let file = env_file(r#"{"Ship": {}, "shipping": {"A": "by-name"}}"#).unwrap();
        let given = file.for_function("Ship", "shipping", &declared(&["A"]));
        assert_eq!(
            pairs(&given.values),
            [("A", "by-name")],
            "an empty object falls through"
        );
    }

    #[test]
    fn values_are_written_as_sam_writes_them() {
        let file = env_file(
            r#"{"Parameters": {"N": 10, "F": 1.5, "T": true, "B": false, "Z": null, "L": [1], "O": {"a": 1}}}"#,
        )
        .unwrap();
        let given = file.for_function("F", "F", &declared(&["N", "F", "T", "B", "Z", "L", "O"]));
        assert_eq!(
            pairs(&given.values),
            [
                ("B", "false"),
                ("F", "1.5"),
                ("L", ""),
                ("N", "10"),
                ("O", ""),
                ("T", "true"),
                ("Z", "")
            ]
        );
    }

    #[test]
    fn keys_naming_no_function_are_listed() {
        let file =
            env_file(r#"{"Parameters": {}, "Ship": {}, "shipping": {}, "Typo": {}}"#).unwrap();
        let unknown: Vec<&str> = file.unknown_keys(&[("Ship", "shipping")]).collect();
        assert_eq!(unknown, ["Typo"]);
    }

    #[test]
    fn a_malformed_file_is_refused_with_its_position_or_key() {
        for (text, expected) in [
            (
                "{\n  \"Parameters\": {\"A\": \"1\",}\n}",
                "--env-vars env.json:2:27: invalid JSON: trailing comma",
            ),
            (
                "[]",
                "--env-vars env.json: expected a JSON object such as {\"Parameters\": \
                 {\"VAR\": \"value\"}, \"FunctionLogicalId\": {\"VAR\": \"value\"}}, not an array",
            ),
            (
                r#"{"Ship": "TABLE=x"}"#,
                "--env-vars env.json: Ship must be an object of variables ({\"VAR\": \"value\"}), \
                 not a string",
            ),
        ] {
            assert_eq!(env_file(text), Err(expected.to_owned()), "{text}");
        }
    }

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
