//! Reading a pattern's JSON into rules, refusing what Lambda refuses (`docs/filtering.md`,
//! "Patterns Lambda refuses"). Every error names the place in the pattern.

use std::net::IpAddr;

use serde_json::{Map, Value};

use super::pattern::{
    AnythingBut, Bound, Cidr, Conjunction, Field, MAX_PATTERN_CHARS, METADATA_KEYS, Pattern, Range,
    Rule, Wildcard,
};

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
        pattern(text)
    }
}

const OPERATORS: &str =
    "prefix, suffix, equals-ignore-case, wildcard, exists, numeric, cidr, anything-but";

pub(super) fn pattern(text: &str) -> Result<Pattern, PatternError> {
    let chars = text.chars().count();
    if chars > MAX_PATTERN_CHARS {
        return Err(PatternError::new(
            "",
            format!("it has {chars} characters, more than the {MAX_PATTERN_CHARS} Lambda allows"),
        ));
    }
    let value: Value = serde_json::from_str(text).map_err(|error| {
        let message = error.to_string();
        // serde_json ends its message with the position, which is said first instead.
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(message, _)| message);
        PatternError::new(
            &format!("line {}, column {}", error.line(), error.column()),
            format!("not valid JSON: {message}"),
        )
    })?;
    let Value::Object(map) = &value else {
        return Err(PatternError::new(
            "",
            format!(
                "a pattern is a JSON object such as {{\"data\": {{\"carrier\": [\"dhl\"]}}}}, not {}",
                kind(&value)
            ),
        ));
    };
    let mut reads_data = false;
    let root = conjunction(map, &[], &mut reads_data)?;
    Ok(Pattern { root, reads_data })
}

/// The fields of one object of the pattern, whose place in the record is `path`.
fn conjunction(
    map: &Map<String, Value>,
    path: &[String],
    reads_data: &mut bool,
) -> Result<Conjunction, PatternError> {
    if map.is_empty() {
        return Err(PatternError::new(
            &dotted(path),
            "an empty object filters on nothing: name at least one field",
        ));
    }
    let mut all = Conjunction {
        fields: Vec::new(),
        alternatives: Vec::new(),
    };
    for (key, value) in map {
        if key == "$or" {
            all.alternatives
                .push(alternatives(value, path, reads_data)?);
            continue;
        }
        let mut field_path = path.to_vec();
        // `{"a.b": [...]}` addresses the same values as `{"a": {"b": [...]}}`.
        field_path.extend(key.split('.').map(str::to_owned));
        let at = dotted(&field_path);
        if path.is_empty() {
            let top = field_path[0].as_str();
            if top != "data" && !METADATA_KEYS.contains(&top) {
                return Err(PatternError::new(
                    &at,
                    format!(
                        "a Kinesis record has no field \"{top}\" to filter on (fields: data, {})",
                        METADATA_KEYS.join(", ")
                    ),
                ));
            }
        }
        if field_path[0] == "data" {
            *reads_data = true;
        }
        match value {
            Value::Object(inner) => {
                let nested = conjunction(inner, &field_path, reads_data)?;
                all.fields.extend(nested.fields);
                all.alternatives.extend(nested.alternatives);
            }
            Value::Array(items) => {
                let rules = rules(items, &at)?;
                all.fields.push(Field {
                    path: field_path,
                    rules,
                });
            }
            other => {
                return Err(PatternError::new(
                    &at,
                    format!(
                        "a field takes an array of values or rules, such as [{other}], or an object of fields; not {}",
                        kind(other)
                    ),
                ));
            }
        }
    }
    Ok(all)
}

/// The objects of a `$or`, of which a record must match one.
fn alternatives(
    value: &Value,
    path: &[String],
    reads_data: &mut bool,
) -> Result<Vec<Conjunction>, PatternError> {
    let at = if path.is_empty() {
        "$or".to_owned()
    } else {
        format!("{}.$or", dotted(path))
    };
    let Value::Array(items) = value else {
        return Err(PatternError::new(
            &at,
            format!("$or takes an array of objects, not {}", kind(value)),
        ));
    };
    if items.is_empty() {
        return Err(PatternError::new(
            &at,
            "$or takes at least one object to match",
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::Object(map) => conjunction(map, path, reads_data),
            other => Err(PatternError::new(
                &format!("{at}[{index}]"),
                format!("$or takes objects, not {}", kind(other)),
            )),
        })
        .collect()
}

/// A field's array: values and rules, of which a value must match one.
fn rules(items: &[Value], at: &str) -> Result<Vec<Rule>, PatternError> {
    if items.is_empty() {
        return Err(PatternError::new(
            at,
            "an empty array matches nothing: give at least one value or rule",
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| rule(item, &format!("{at}[{index}]")))
        .collect()
}

fn rule(item: &Value, at: &str) -> Result<Rule, PatternError> {
    let map = match item {
        Value::Null => return Ok(Rule::Null),
        Value::String(_) | Value::Number(_) | Value::Bool(_) => {
            return Ok(Rule::Equals(item.clone()));
        }
        Value::Array(_) => {
            return Err(PatternError::new(
                at,
                "an array cannot hold another array: list values and rules side by side",
            ));
        }
        Value::Object(map) => map,
    };
    let mut operators = map.iter();
    let (Some((operator, argument)), None) = (operators.next(), operators.next()) else {
        return Err(PatternError::new(
            at,
            format!("a rule is an object with exactly one operator ({OPERATORS})"),
        ));
    };
    let at = format!("{at}.{operator}");
    let at = at.as_str();
    match operator.as_str() {
        "prefix" => {
            let (text, ignore_case) = affix(argument, at)?;
            Ok(Rule::Prefix { text, ignore_case })
        }
        "suffix" => {
            let (text, ignore_case) = affix(argument, at)?;
            Ok(Rule::Suffix { text, ignore_case })
        }
        "equals-ignore-case" => Ok(Rule::EqualsIgnoreCase(string(argument, at)?.to_lowercase())),
        "wildcard" => Ok(Rule::Wildcard(wildcard(string(argument, at)?, at)?)),
        "exists" => match argument {
            Value::Bool(exists) => Ok(Rule::Exists(*exists)),
            other => Err(PatternError::new(
                at,
                format!("exists takes true or false, not {}", kind(other)),
            )),
        },
        "numeric" => Ok(Rule::Numeric(range(argument, at)?)),
        "cidr" => Ok(Rule::Cidr(cidr(string(argument, at)?, at)?)),
        "anything-but" => Ok(Rule::AnythingBut(anything_but(argument, at)?)),
        other => Err(PatternError::new(
            at,
            format!("unknown operator \"{other}\" (operators, case-sensitive: {OPERATORS})"),
        )),
    }
}

/// The argument of `prefix` or `suffix`: a string, or `{"equals-ignore-case": "x"}`.
fn affix(argument: &Value, at: &str) -> Result<(String, bool), PatternError> {
    match argument {
        Value::String(text) => Ok((text.clone(), false)),
        Value::Object(map) if map.len() == 1 && map.contains_key("equals-ignore-case") => {
            let text = string(
                &map["equals-ignore-case"],
                &format!("{at}.equals-ignore-case"),
            )?;
            Ok((text.to_lowercase(), true))
        }
        other => Err(PatternError::new(
            at,
            format!(
                "takes a string, or {{\"equals-ignore-case\": \"...\"}}; not {}",
                kind(other)
            ),
        )),
    }
}

fn string<'v>(argument: &'v Value, at: &str) -> Result<&'v str, PatternError> {
    match argument {
        Value::String(text) => Ok(text),
        other => Err(PatternError::new(
            at,
            format!("takes a string, not {}", kind(other)),
        )),
    }
}

/// `numeric`'s comparisons: `["=", 5]`, or one lower bound, one upper bound, or both.
fn range(argument: &Value, at: &str) -> Result<Range, PatternError> {
    const FORM: &str =
        "an array of comparisons and numbers, such as [\">\", 0, \"<=\", 5] or [\"=\", 5]";
    let Value::Array(items) = argument else {
        return Err(PatternError::new(
            at,
            format!("takes {FORM}, not {}", kind(argument)),
        ));
    };
    if items.is_empty() || items.len() % 2 != 0 {
        return Err(PatternError::new(at, format!("takes {FORM}")));
    }
    let mut range = Range {
        lower: None,
        upper: None,
    };
    for (index, pair) in items.chunks(2).enumerate() {
        let place = format!("{at}[{}]", index * 2);
        let Value::String(comparison) = &pair[0] else {
            return Err(PatternError::new(
                &place,
                "a comparison is one of =, <, <=, >, >=",
            ));
        };
        let Some(value) = pair[1].as_f64().filter(|_| pair[1].is_number()) else {
            return Err(PatternError::new(
                &format!("{at}[{}]", index * 2 + 1),
                format!("{comparison} takes a number, not {}", kind(&pair[1])),
            ));
        };
        let (slot, inclusive) = match comparison.as_str() {
            "=" if items.len() == 2 => {
                let bound = Some(Bound {
                    value,
                    inclusive: true,
                });
                return Ok(Range {
                    lower: bound,
                    upper: bound,
                });
            }
            "=" => {
                return Err(PatternError::new(&place, "= stands alone: [\"=\", 5]"));
            }
            ">" => (&mut range.lower, false),
            ">=" => (&mut range.lower, true),
            "<" => (&mut range.upper, false),
            "<=" => (&mut range.upper, true),
            _ => {
                return Err(PatternError::new(
                    &place,
                    format!("\"{comparison}\" is not a comparison (=, <, <=, >, >=)"),
                ));
            }
        };
        if slot.is_some() {
            return Err(PatternError::new(
                &place,
                "a range has at most one lower bound (> or >=) and one upper bound (< or <=)",
            ));
        }
        *slot = Some(Bound { value, inclusive });
    }
    if let (Some(lower), Some(upper)) = (range.lower, range.upper)
        && (lower.value > upper.value
            || (lower.value == upper.value && !(lower.inclusive && upper.inclusive)))
    {
        return Err(PatternError::new(at, "the range holds no number"));
    }
    Ok(range)
}

/// A wildcard: `*` stands for any text, `\*` for a star and `\\` for a backslash.
fn wildcard(text: &str, at: &str) -> Result<Wildcard, PatternError> {
    let mut pieces = vec![String::new()];
    let mut chars = text.chars().peekable();
    while let Some(char) = chars.next() {
        match char {
            '*' if chars.peek() == Some(&'*') => {
                return Err(PatternError::new(
                    at,
                    "two stars in a row (**) are not allowed",
                ));
            }
            '*' => pieces.push(String::new()),
            '\\' => match chars.next() {
                Some(escaped @ ('*' | '\\')) => pieces.last_mut().unwrap().push(escaped),
                _ => {
                    return Err(PatternError::new(at, "a backslash escapes only * or \\"));
                }
            },
            other => pieces.last_mut().unwrap().push(other),
        }
    }
    Ok(Wildcard { pieces })
}

/// An IPv4 or IPv6 network: `10.0.0.0/24`.
fn cidr(text: &str, at: &str) -> Result<Cidr, PatternError> {
    let refuse = || {
        PatternError::new(
            at,
            format!("\"{text}\" is not an IP network such as 10.0.0.0/24 or 2001:db8::/32"),
        )
    };
    let (address, prefix_len) = text.split_once('/').ok_or_else(refuse)?;
    let network: IpAddr = address.parse().map_err(|_| refuse())?;
    let prefix_len: u8 = prefix_len.parse().map_err(|_| refuse())?;
    let max = if network.is_ipv4() { 32 } else { 128 };
    if prefix_len > max {
        return Err(refuse());
    }
    Ok(Cidr {
        network,
        prefix_len,
    })
}

/// What `anything-but` excludes: a value, a list of values, or one of `prefix`, `suffix`,
/// `equals-ignore-case`, `wildcard` with a string or a list of strings.
fn anything_but(argument: &Value, at: &str) -> Result<AnythingBut, PatternError> {
    match argument {
        Value::String(_) | Value::Number(_) => Ok(AnythingBut::Values(vec![argument.clone()])),
        Value::Array(items) => {
            if items.is_empty() {
                return Err(PatternError::new(at, "takes at least one value to exclude"));
            }
            for (index, item) in items.iter().enumerate() {
                if !(item.is_string() || item.is_number()) {
                    return Err(PatternError::new(
                        &format!("{at}[{index}]"),
                        format!("anything-but lists strings or numbers, not {}", kind(item)),
                    ));
                }
            }
            Ok(AnythingBut::Values(items.clone()))
        }
        Value::Object(map) if map.len() == 1 => {
            let (operator, value) = map.iter().next().expect("one entry");
            let at = format!("{at}.{operator}");
            let texts = strings(value, &at)?;
            match operator.as_str() {
                "prefix" | "suffix" if texts.iter().any(String::is_empty) => {
                    Err(PatternError::new(
                        &at,
                        format!("anything-but {operator} takes a non-empty string"),
                    ))
                }
                "prefix" => Ok(AnythingBut::Prefixes(texts)),
                "suffix" => Ok(AnythingBut::Suffixes(texts)),
                "equals-ignore-case" => Ok(AnythingBut::EqualsIgnoreCase(
                    texts.iter().map(|text| text.to_lowercase()).collect(),
                )),
                "wildcard" => texts
                    .iter()
                    .map(|text| wildcard(text, &at))
                    .collect::<Result<_, _>>()
                    .map(AnythingBut::Wildcards),
                other => Err(PatternError::new(
                    &at,
                    format!(
                        "anything-but takes prefix, suffix, equals-ignore-case or wildcard, not \"{other}\""
                    ),
                )),
            }
        }
        other => Err(PatternError::new(
            at,
            format!(
                "takes a string, a number, a list of them, or an object with one of prefix, suffix, equals-ignore-case, wildcard; not {}",
                kind(other)
            ),
        )),
    }
}

/// A string or a non-empty list of strings.
fn strings(value: &Value, at: &str) -> Result<Vec<String>, PatternError> {
    match value {
        Value::String(text) => Ok(vec![text.clone()]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(index, item)| string(item, &format!("{at}[{index}]")).map(str::to_owned))
            .collect(),
        other => Err(PatternError::new(
            at,
            format!("takes a string or a list of strings, not {}", kind(other)),
        )),
    }
}

/// The place of `path` in the pattern, dotted.
fn dotted(path: &[String]) -> String {
    path.join(".")
}

/// What kind of JSON value this is, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(items) if items.is_empty() => "an empty array",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
