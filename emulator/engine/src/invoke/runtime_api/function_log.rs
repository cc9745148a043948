//! A function's output lines, read as the log records they are (`docs/function-logs.md`).
//!
//! A Rust function logs through `tracing-subscriber`, usually set up by
//! `lambda_runtime::tracing::init_default_subscriber`: plain text (`LEVEL span{..}:span: message
//! key=value`, coloured or not, with or without a timestamp), or one JSON object a line when
//! `AWS_LAMBDA_LOG_FORMAT` is `JSON`. [`LineReader`] reads both into a [`FunctionLine`]; any other
//! line (a `println!`, a panic) is a message at INFO, as Lambda takes a line without a level.
//! A Rust panic is the exception: its first line and its message are ERRORs ([`LineReader`]),
//! so that no level filter hides a crash or what it said.
//! [`render`] writes a line back, compact or in full.

use std::fmt::Write as _;

/// A function line's level, from the most detailed to the most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    /// Reads a level as loggers write it: `INFO`, `info`, `WARNING`, `FATAL` (an ERROR).
    pub(super) fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_uppercase().as_str() {
            "TRACE" => Some(Self::Trace),
            "DEBUG" => Some(Self::Debug),
            "INFO" => Some(Self::Info),
            "WARN" | "WARNING" => Some(Self::Warn),
            "ERROR" | "FATAL" | "CRITICAL" => Some(Self::Error),
            _ => None,
        }
    }
}

/// A span a line was logged in: its name and its fields as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) name: String,
    /// `key=value` pairs, as the function's logger wrote them.
    pub(super) fields: Vec<(String, String)>,
}

/// One line of a function's output, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FunctionLine {
    pub(super) level: Level,
    /// The spans, outermost first (`lambda_runtime`'s invocation span, the adapter's record
    /// span, the handler's own).
    pub(super) spans: Vec<Span>,
    pub(super) message: String,
    /// The event's own fields, in the order written.
    pub(super) fields: Vec<(String, String)>,
}

/// The name of the span `lambda_runtime` opens around each invocation: its fields are the
/// request id and the trace id, shown only in full.
const RUNTIME_SPAN: &str = "Lambda runtime invoke";

/// A line a logger wrote: JSON or `tracing-subscriber`'s text; `None` for any other line.
fn parse_formatted(line: &str) -> Option<FunctionLine> {
    let trimmed = line.trim();
    if trimmed.starts_with('{')
        && let Some(parsed) = parse_json(trimmed)
    {
        return Some(parsed);
    }
    parse_text(trimmed)
}

/// A line no logger wrote, at `level`; a panic's first line is an ERROR whatever `level` says.
fn unformatted(line: &str, level: Level) -> FunctionLine {
    let level = if line.contains(PANIC_MARK) {
        Level::Error
    } else {
        level
    };
    FunctionLine {
        level,
        spans: Vec::new(),
        message: line.trim_end().to_owned(),
        fields: Vec::new(),
    }
}

/// What Rust's panic hook writes in a panic's first line, before the location.
const PANIC_MARK: &str = " panicked at ";

/// The most lines after a panic's first one taken as its message: a handler's panic is caught
/// and the process goes on, so its next lines are its own again.
const PANIC_MESSAGE_LINES: usize = 20;

/// Reads the lines of one output stream in order. Rust's panic hook writes `thread '..'
/// panicked at FILE:LINE:COL:` and then the message on the lines after it; the message says
/// what went wrong, so it is logged at ERROR with its first line, up to the hook's `note:` (or a
/// backtrace, or a line a logger wrote).
#[derive(Debug, Default)]
pub(super) struct LineReader {
    /// How many more unformatted lines belong to the panic's message.
    panic_lines_left: usize,
}

impl LineReader {
    /// Reads the next line (colour codes already removed).
    pub(super) fn read(&mut self, line: &str) -> FunctionLine {
        if let Some(parsed) = parse_formatted(line) {
            self.panic_lines_left = 0;
            return parsed;
        }
        if line.contains(PANIC_MARK) {
            self.panic_lines_left = PANIC_MESSAGE_LINES;
            return unformatted(line, Level::Error);
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("note: ") || trimmed.starts_with("stack backtrace:") {
            self.panic_lines_left = 0;
        }
        if self.panic_lines_left == 0 {
            return unformatted(line, Level::Info);
        }
        self.panic_lines_left -= 1;
        unformatted(line, Level::Error)
    }
}

/// How a function line is written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Detail {
    /// The message, the event's fields and those of the span it was logged in (the handler's
    /// own), but not `lambda_runtime`'s request span nor the outer spans.
    Compact,
    /// Every span with its fields, then the message and the fields.
    Full,
}

/// The spans part and the message part of a line written back at `detail`.
pub(super) fn render(line: &FunctionLine, detail: Detail) -> (String, String) {
    let mut spans = String::new();
    let mut body = line.message.clone();
    match detail {
        Detail::Full => {
            for (index, span) in line.spans.iter().enumerate() {
                if index > 0 {
                    spans.push(':');
                }
                spans.push_str(&span.name);
                if !span.fields.is_empty() {
                    spans.push('{');
                    push_fields(&mut spans, &span.fields, "");
                    spans.push('}');
                }
            }
        }
        Detail::Compact => {
            if let Some(span) = line.spans.last()
                && span.name != RUNTIME_SPAN
            {
                push_fields(&mut body, &span.fields, " ");
            }
        }
    }
    push_fields(&mut body, &line.fields, " ");
    (spans, body)
}

fn push_fields(out: &mut String, fields: &[(String, String)], lead: &str) {
    for (index, (key, value)) in fields.iter().enumerate() {
        if index > 0 || (!lead.is_empty() && !out.is_empty()) {
            out.push(' ');
        }
        let _ = write!(out, "{key}={value}");
    }
}

// ---- the text format ---------------------------------------------------------------------------

/// `[timestamp] LEVEL [span{fields}:span:] message key=value ...`, as `tracing-subscriber`'s
/// default formatter writes it.
fn parse_text(line: &str) -> Option<FunctionLine> {
    let (first, rest) = split_word(line);
    let (level, rest) = match Level::from_name(first) {
        Some(level) if first.chars().all(|c| c.is_ascii_uppercase()) => (level, rest),
        // A timestamp first (a subscriber with time): a digit, and the level after it.
        _ if first.starts_with(|c: char| c.is_ascii_digit()) => {
            let (second, rest) = split_word(rest);
            let level = Level::from_name(second)
                .filter(|_| second.chars().all(|c| c.is_ascii_uppercase()))?;
            (level, rest)
        }
        _ => return None,
    };
    let (spans, body) = match split_spans(rest) {
        Some((spans, body)) => (spans, body),
        None => (Vec::new(), rest),
    };
    let (message, fields) = split_fields(body);
    Some(FunctionLine {
        level,
        spans,
        message: message.to_owned(),
        fields,
    })
}

fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    match text.find(' ') {
        Some(end) => (&text[..end], text[end..].trim_start()),
        None => (text, ""),
    }
}

/// The spans before `: `: names, each with `{fields}` or bare (a bare name has no space, so a
/// message such as `unknown carrier: fedex` is not taken for a span).
fn split_spans(text: &str) -> Option<(Vec<Span>, &str)> {
    let mut spans = Vec::new();
    let mut rest = text;
    loop {
        let name_end = rest.find(['{', ':'])?;
        let name = &rest[..name_end];
        let mut after = &rest[name_end..];
        let mut fields = Vec::new();
        if after.starts_with('{') {
            let close = matching_brace(after)?;
            fields = parse_fields(&after[1..close])?;
            after = &after[close + 1..];
        } else if name.contains(char::is_whitespace) {
            return None;
        }
        if name.is_empty() {
            return None;
        }
        spans.push(Span {
            name: name.to_owned(),
            fields,
        });
        let after = after.strip_prefix(':')?;
        if let Some(body) = after.strip_prefix(' ') {
            return Some((spans, body));
        }
        if after.is_empty() {
            return Some((spans, ""));
        }
        rest = after;
    }
}

/// The index of the `}` closing the `{` that `text` starts with, outside quoted strings.
fn matching_brace(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_quotes = false;
    let mut escaped = false;
    for (index, c) in text.char_indices() {
        if in_quotes {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_quotes = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_quotes = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(index);
                }
            }
            _ => {}
        }
    }
    None
}

/// `key=value key="quoted value" ...`, or `None` when the text is not only such pairs.
fn parse_fields(text: &str) -> Option<Vec<(String, String)>> {
    let mut fields = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let equals = rest.find('=')?;
        let key = &rest[..equals];
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
        {
            return None;
        }
        let value_text = &rest[equals + 1..];
        let end = if value_text.starts_with('"') {
            closing_quote(value_text)? + 1
        } else {
            value_text.find(' ').unwrap_or(value_text.len())
        };
        fields.push((key.to_owned(), value_text[..end].to_owned()));
        rest = value_text[end..].trim_start();
    }
    Some(fields)
}

fn closing_quote(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (index, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(index),
            _ => {}
        }
    }
    None
}

/// The message and the trailing `key=value` fields: the earliest point from which the rest of
/// the line is only fields.
fn split_fields(body: &str) -> (&str, Vec<(String, String)>) {
    if let Some(fields) = parse_fields(body).filter(|fields| !fields.is_empty())
        && !body.trim_start().starts_with('"')
    {
        return ("", fields);
    }
    for (index, _) in body.match_indices(' ') {
        if let Some(fields) = parse_fields(&body[index + 1..]).filter(|fields| !fields.is_empty()) {
            return (&body[..index], fields);
        }
    }
    (body, Vec::new())
}

// ---- the JSON format ---------------------------------------------------------------------------

/// `tracing-subscriber`'s JSON (`{"level":..,"fields":{"message":..},"span":..,"spans":[..]}`),
/// or any JSON object with a `level`, as Lambda reads one (`{"level":"debug","msg":".."}`).
fn parse_json(line: &str) -> Option<FunctionLine> {
    let serde_json::Value::Object(mut object) = serde_json::from_str(line).ok()? else {
        return None;
    };
    let level = object
        .get("level")
        .and_then(serde_json::Value::as_str)
        .and_then(Level::from_name)
        .unwrap_or(Level::Info);
    let mut own_fields = match object.remove("fields") {
        Some(serde_json::Value::Object(fields)) => fields,
        _ => {
            // Not tracing's shape: every key but the line's own level and time is a field.
            for key in ["level", "timestamp", "time", "target"] {
                object.remove(key);
            }
            std::mem::take(&mut object)
        }
    };
    let message = ["message", "msg"]
        .into_iter()
        .find_map(|key| own_fields.remove(key))
        .map(|value| match value {
            serde_json::Value::String(text) => text,
            other => other.to_string(),
        })
        .unwrap_or_default();
    let spans = match object.get("spans") {
        Some(serde_json::Value::Array(spans)) => spans.iter().filter_map(json_span).collect(),
        _ => object.get("span").and_then(json_span).into_iter().collect(),
    };
    Some(FunctionLine {
        level,
        spans,
        message,
        fields: json_fields(&own_fields),
    })
}

fn json_span(value: &serde_json::Value) -> Option<Span> {
    let mut object = value.as_object()?.clone();
    let name = match object.remove("name") {
        Some(serde_json::Value::String(name)) => name,
        _ => String::new(),
    };
    Some(Span {
        name,
        fields: json_fields(&object),
    })
}

fn json_fields(object: &serde_json::Map<String, serde_json::Value>) -> Vec<(String, String)> {
    object
        .iter()
        .map(|(key, value)| {
            let text = match value {
                serde_json::Value::String(text) if !text.contains(char::is_whitespace) => {
                    text.clone()
                }
                other => other.to_string(),
            };
            (key.clone(), text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as `lambda_runtime::tracing::init_default_subscriber` wrote them for the shipping
    /// function (text: colour codes removed, as the reader removes them first).
    const BOOKED: &str = r#" INFO Lambda runtime invoke{requestId="6fc453f4-e02a-4252-ad45-f7197617fabd" xrayTraceId="Root=1-6b0f56e0-3cddf82392cc937cca1e0a41;Parent=da2e5b07fbb4c973;Sampled=0"}:record{shard_id="shardId-000000000000" sequence_number="49179616738200000000000000000000000000000000000000000000" partition_key="customer-17"}:ship{shipment_id=1001 carrier=dhl}: shipment booked"#;
    const BOOKED_JSON: &str = r#"{"level":"WARN","fields":{"message":"unknown carrier, shipment held"},"span":{"carrier":"fedex","shipment_id":2003,"name":"ship"},"spans":[{"requestId":"6fc4","xrayTraceId":"Root=1-6b0f","name":"Lambda runtime invoke"},{"partition_key":"customer-42","sequence_number":"4917","shard_id":"shardId-000000000000","name":"record"},{"carrier":"fedex","shipment_id":2003,"name":"ship"}]}"#;

    #[track_caller]
    fn check(line: &str, expected_level: Level, compact: &str, full: (&str, &str)) {
        let parsed = LineReader::default().read(line);
        assert_eq!(parsed.level, expected_level, "{parsed:?}");
        assert_eq!(render(&parsed, Detail::Compact).1, compact, "{parsed:?}");
        let (spans, body) = render(&parsed, Detail::Full);
        assert_eq!((spans.as_str(), body.as_str()), full, "{parsed:?}");
    }

    #[test]
    fn a_tracing_text_line_keeps_its_level_and_the_handlers_span() {
        check(
            BOOKED,
            Level::Info,
            "shipment booked shipment_id=1001 carrier=dhl",
            (
                r#"Lambda runtime invoke{requestId="6fc453f4-e02a-4252-ad45-f7197617fabd" xrayTraceId="Root=1-6b0f56e0-3cddf82392cc937cca1e0a41;Parent=da2e5b07fbb4c973;Sampled=0"}:record{shard_id="shardId-000000000000" sequence_number="49179616738200000000000000000000000000000000000000000000" partition_key="customer-17"}:ship{shipment_id=1001 carrier=dhl}"#,
                "shipment booked",
            ),
        );
    }

    #[test]
    fn text_levels_timestamps_and_event_fields() {
        check(
            "WARN ship{shipment_id=2003 carrier=fedex}: unknown carrier, shipment held",
            Level::Warn,
            "unknown carrier, shipment held shipment_id=2003 carrier=fedex",
            (
                "ship{shipment_id=2003 carrier=fedex}",
                "unknown carrier, shipment held",
            ),
        );
        check(
            "2026-12-01T23:23:12.319652Z ERROR record{shard_id=\"s\"}:ship: the handler failed; the record is held error=timed out",
            Level::Error,
            "the handler failed; the record is held error=timed out",
            (
                "record{shard_id=\"s\"}:ship",
                "the handler failed; the record is held error=timed out",
            ),
        );
        check(
            r#"DEBUG connecting table="orders" attempt=2"#,
            Level::Debug,
            r#"connecting table="orders" attempt=2"#,
            ("", r#"connecting table="orders" attempt=2"#),
        );
        check("TRACE bytes=12", Level::Trace, "bytes=12", ("", "bytes=12"));
    }

    #[test]
    fn a_message_with_a_colon_is_not_a_span() {
        check(
            " INFO unknown carrier: fedex",
            Level::Info,
            "unknown carrier: fedex",
            ("", "unknown carrier: fedex"),
        );
    }

    #[test]
    fn quoted_span_fields_may_hold_braces_colons_and_spaces() {
        check(
            r#" WARN Lambda runtime invoke{requestId="a}: b" xrayTraceId="x"}: late"#,
            Level::Warn,
            "late",
            (
                r#"Lambda runtime invoke{requestId="a}: b" xrayTraceId="x"}"#,
                "late",
            ),
        );
    }

    #[test]
    fn a_tracing_json_line_keeps_its_level_spans_and_fields() {
        check(
            BOOKED_JSON,
            Level::Warn,
            "unknown carrier, shipment held carrier=fedex shipment_id=2003",
            (
                "Lambda runtime invoke{requestId=6fc4 xrayTraceId=Root=1-6b0f}:record{partition_key=customer-42 sequence_number=4917 shard_id=shardId-000000000000}:ship{carrier=fedex shipment_id=2003}",
                "unknown carrier, shipment held",
            ),
        );
        check(
            r#"{"level":"ERROR","fields":{"message":"the handler failed","error":"no route to host"},"target":"shipping"}"#,
            Level::Error,
            r#"the handler failed error="no route to host""#,
            ("", r#"the handler failed error="no route to host""#),
        );
    }

    #[test]
    fn any_json_object_with_a_level_is_read_as_lambda_reads_it() {
        check(
            r#"{"level":"debug","msg":"my debug log","timestamp":"2024-11-02T16:51:31.587199Z"}"#,
            Level::Debug,
            "my debug log",
            ("", "my debug log"),
        );
        check(
            r#"{"level":"nonsense","msg":"m","order":7}"#,
            Level::Info,
            "m order=7",
            ("", "m order=7"),
        );
        check(r#"{"order":7}"#, Level::Info, "order=7", ("", "order=7"));
    }

    #[test]
    fn other_lines_are_info_and_a_panic_is_an_error() {
        check(
            "booking 3 shipments",
            Level::Info,
            "booking 3 shipments",
            ("", "booking 3 shipments"),
        );
        check("{not json", Level::Info, "{not json", ("", "{not json"));
        check(
            "information: INFO is not a level here",
            Level::Info,
            "information: INFO is not a level here",
            ("", "information: INFO is not a level here"),
        );
        check(
            "thread 'main' (7) panicked at functions/shipping/src/lib.rs:80:13:",
            Level::Error,
            "thread 'main' (7) panicked at functions/shipping/src/lib.rs:80:13:",
            (
                "",
                "thread 'main' (7) panicked at functions/shipping/src/lib.rs:80:13:",
            ),
        );
        check(
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
            Level::Info,
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
            (
                "",
                "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
            ),
        );
    }

    #[track_caller]
    fn check_levels(lines: &[&str], expected: &[Level]) {
        let mut reader = LineReader::default();
        let levels: Vec<Level> = lines.iter().map(|line| reader.read(line).level).collect();
        assert_eq!(levels, expected);
    }

    #[test]
    fn a_panics_message_is_an_error_up_to_the_hooks_note() {
        check_levels(
            &[
                "before",
                "thread 'main' (7) panicked at functions/shipping/src/lib.rs:80:13:",
                "assertion `left == right` failed",
                "  left: 1",
                " right: 2",
                "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
                "after",
            ],
            &[
                Level::Info,
                Level::Error,
                Level::Error,
                Level::Error,
                Level::Error,
                Level::Info,
                Level::Info,
            ],
        );
        // With a backtrace, the message ends at it.
        check_levels(
            &[
                "thread 'main' panicked at src/main.rs:1:1:",
                "boom",
                "stack backtrace:",
                "   0: frame",
            ],
            &[Level::Error, Level::Error, Level::Info, Level::Info],
        );
        // A line a logger wrote ends it too: the process caught the panic and went on.
        check_levels(
            &[
                "thread 'main' panicked at src/main.rs:1:1:",
                "boom",
                BOOKED,
                "println after",
            ],
            &[Level::Error, Level::Error, Level::Info, Level::Info],
        );
    }

    #[test]
    fn a_panic_without_a_note_ends_after_a_bounded_number_of_lines() {
        let mut lines = vec!["thread 'main' panicked at src/main.rs:1:1:"];
        lines.extend(std::iter::repeat_n("more", PANIC_MESSAGE_LINES + 1));
        let mut expected = vec![Level::Error; PANIC_MESSAGE_LINES + 1];
        expected.push(Level::Info);
        check_levels(&lines, &expected);
    }

    #[test]
    fn a_coloured_line_reads_as_the_plain_one_once_its_codes_are_removed() {
        let mut coloured = b"\x1b[33m WARN\x1b[0m \x1b[1mship\x1b[0m\x1b[1m{\x1b[0m\x1b[3mshipment_id\x1b[0m\x1b[2m=\x1b[0m2003\x1b[1m}\x1b[0m\x1b[2m:\x1b[0m unknown carrier, shipment held".to_vec();
        super::super::process::strip_ansi_escapes(&mut coloured);
        let line = String::from_utf8(coloured).expect("utf-8");
        check(
            &line,
            Level::Warn,
            "unknown carrier, shipment held shipment_id=2003",
            ("ship{shipment_id=2003}", "unknown carrier, shipment held"),
        );
    }
}
