//! The first bytes of a record's data, quoted and escaped for a log line: enough to recognise
//! an undecodable record (which producer wrote it, which format it is in) without writing a
//! large or binary payload into the log.

use base64::Engine as _;

use super::meta::RecordData;

/// How many bytes of the data an excerpt shows.
pub(crate) const EXCERPT_BYTES: usize = 64;

/// The first [`EXCERPT_BYTES`] of a record's data, in double quotes, with `…` after the quotes
/// when there is more. Printable text stays as written; quotes, backslashes, control characters
/// and bytes that are not UTF-8 are escaped (`\"`, `\\`, `\n`, `\x07`), so that the excerpt is
/// one line whatever the data. Data that is not base64 is shown as the text the event carried,
/// after `not base64: `.
pub(crate) fn data_excerpt(data: RecordData<'_>) -> String {
    match data {
        RecordData::Raw(bytes) => quoted(bytes),
        RecordData::Base64(text) => {
            // Four base64 characters carry three bytes: this many decode to a little more
            // than the excerpt shows, so it knows whether there is more.
            let prefix_chars = (EXCERPT_BYTES / 3 + 1) * 4;
            let prefix = text.get(..prefix_chars.min(text.len())).unwrap_or(text);
            let decoded = base64::engine::general_purpose::STANDARD.decode(prefix);
            match decoded {
                Ok(bytes) => quoted(&bytes),
                Err(_) => format!("not base64: {}", quoted(text.as_bytes())),
            }
        }
        RecordData::CorruptAggregate(_) => "a KPL aggregate that cannot be read".to_owned(),
    }
}

fn quoted(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(EXCERPT_BYTES)];
    let mut out = String::with_capacity(shown.len() + 4);
    out.push('"');
    for chunk in shown.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => {
                    for unit in c.to_string().bytes() {
                        out.push_str(&format!("\\x{unit:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out.push('"');
    if bytes.len() > EXCERPT_BYTES {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(data: RecordData<'_>, expected: &str) {
        assert_eq!(data_excerpt(data), expected);
    }

    fn base64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn short_text_is_shown_whole_in_quotes() {
        check(RecordData::Base64(&base64(b"not json")), "\"not json\"");
        check(RecordData::Raw(br#"{"id": 1}"#), r#""{\"id\": 1}""#);
        check(RecordData::Base64(""), "\"\"");
    }

    #[test]
    fn long_data_is_cut_after_its_first_bytes() {
        let long = "a".repeat(100);
        let expected = format!("\"{}\"…", "a".repeat(EXCERPT_BYTES));
        check(RecordData::Base64(&base64(long.as_bytes())), &expected);
        check(RecordData::Raw(long.as_bytes()), &expected);
        // Exactly the excerpt's length: nothing left out.
        let exact = "b".repeat(EXCERPT_BYTES);
        check(
            RecordData::Base64(&base64(exact.as_bytes())),
            &format!("\"{exact}\""),
        );
    }

    #[test]
    fn control_characters_and_bytes_that_are_not_utf8_are_escaped() {
        check(
            RecordData::Raw(b"a\\b\nc\td\x07 \xff\xfe caf\xc3\xa9"),
            "\"a\\\\b\\nc\\td\\x07 \\xff\\xfe café\"",
        );
        // A character cut by the excerpt's end is escaped byte by byte.
        let mut cut = "x".repeat(EXCERPT_BYTES - 1).into_bytes();
        cut.extend("é".as_bytes());
        let expected = format!("\"{}\\xc3\"…", "x".repeat(EXCERPT_BYTES - 1));
        check(RecordData::Raw(&cut), &expected);
    }

    #[test]
    fn data_that_is_not_base64_is_shown_as_the_event_carried_it() {
        check(
            RecordData::Base64("{not base64}"),
            "not base64: \"{not base64}\"",
        );
    }
}
