//! The scanner behind `scan`'s readers: it steps over the JSON, reads each record key by key (or
//! as `layout` reads a record in Lambda's layout), and keeps the text of the fields it reads.

use crate::aggregate::MAGIC_BASE64_PREFIX;
use crate::batch::spans::{Aggregated, Span, Spans};

/// Why a strict scan gave up: the text is not plain, and serde_json must read it.
const NOT_PLAIN: &str = "not a plain event";

pub(super) struct Scanner<'t> {
    text: &'t str,
    pub(super) bytes: &'t [u8],
    pub(super) at: usize,
    pub(super) unescaped: String,
    /// The text of the fields kept so far (see [`noted`](Self::noted)).
    pub(super) kept: String,
    /// See [`Scanned::might_hold_aggregates`](super::Scanned::might_hold_aggregates).
    pub(super) might_hold_aggregates: bool,
    /// Whether the text is unchecked, so that the scanner accepts only plain JSON (see
    /// [`plain_event`](super::plain_event)) and fails on anything else.
    strict: bool,
    /// Where the text of the last record read in Lambda's layout lies, which the next record
    /// most likely repeats (see [`LambdaLayout`]).
    pub(super) layout: Option<LambdaLayout>,
}

/// The text a record in Lambda's layout shares with the records around it: Lambda (and
/// `write_event`) write every field but the partition key, sequence number, data, arrival time
/// and the sequence number half of `eventID` the same for every record of an event. A record
/// that repeats these pieces byte for byte, where they lie, is read by comparing them with the
/// record before, which costs a fraction of reading each of their strings again; it reads as
/// that record would have been read (see [`Scanner::lambda_record_like`]).
#[derive(Clone, Copy)]
pub(super) struct LambdaLayout {
    /// From the record's `{` to the opening quote of its partition key.
    pub(super) head: Span,
    /// From the end of the arrival time to the `eventID` value's last `:` (included), or to
    /// its opening quote when it has none: the shard id is all of it that lies in `eventID`.
    pub(super) middle: Span,
    /// Where the shard id lies in the text, within `middle`.
    pub(super) shard_id: Span,
    /// From the closing quote of `eventID` to the record's `}`.
    pub(super) tail: Span,
    /// Where `eventSourceARN`'s value lies in the text, within `tail`.
    pub(super) event_source_arn: Span,
}

/// The index of the first byte of `bytes` that is a quote, a backslash or a control character:
/// where a plain string ends, or shows it is not plain. Eight bytes at a time.
pub(super) fn first_special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH_BITS: u64 = ONES << 7;
    // A byte of `word ^ (ONES * b)` is zero where the byte is `b`; `(x - ONES) & !x` sets the
    // high bit of the lowest zero byte of `x` (and maybe of bytes above it, which does not
    // matter: only the lowest is used). `(word - ONES * 0x20) & !word` does the same for bytes
    // below 0x20.
    let has_zero_byte = |x: u64| x.wrapping_sub(ONES) & !x;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("chunks of eight bytes"));
        let found = (has_zero_byte(word ^ (ONES * u64::from(b'"')))
            | has_zero_byte(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word))
            & HIGH_BITS;
        if found != 0 {
            return Some(offset + found.trailing_zeros() as usize / 8);
        }
        offset += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)
        .map(|position| offset + position)
}

/// Whether `text` is a JSON literal or a number in JSON's grammar:
/// `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_scalar(text: &str) -> bool {
    if matches!(text, "true" | "false" | "null") {
        return true;
    }
    let bytes = text.as_bytes();
    let mut at = usize::from(bytes.first() == Some(&b'-'));
    let digits = |at: &mut usize| {
        let start = *at;
        while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        *at - start
    };
    match bytes.get(at) {
        Some(b'0') => at += 1,
        Some(b'1'..=b'9') => {
            digits(&mut at);
        }
        _ => return false,
    }
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        if digits(&mut at) == 0 {
            return false;
        }
    }
    if let Some(b'e' | b'E') = bytes.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = bytes.get(at) {
            at += 1;
        }
        if digits(&mut at) == 0 {
            return false;
        }
    }
    at == bytes.len()
}

/// Epoch seconds written with at most three decimals (as Lambda writes them), in milliseconds,
/// computed exactly; `None` for any other form, which is read as a float instead.
fn exact_millis(text: &str) -> Option<i64> {
    let mut millis: i64 = 0;
    let mut digits = 0;
    let mut decimals = None;
    for &byte in text.as_bytes() {
        match (byte, decimals) {
            // Fifteen digits, and three more below, still fit an i64.
            (b'0'..=b'9', None | Some(0..3)) if digits < 15 => {
                millis = millis * 10 + i64::from(byte - b'0');
                digits += 1;
                decimals = decimals.map(|count| count + 1);
            }
            (b'.', None) if digits > 0 => decimals = Some(0),
            _ => return None,
        }
    }
    if digits == 0 {
        return None;
    }
    for _ in decimals.unwrap_or(0)..3 {
        millis *= 10;
    }
    Some(millis)
}

/// Sets a field once: JSON allows a key twice, serde's derive refuses it, and so does this.
fn set<T>(slot: &mut Option<T>, value: T, name: &str) -> Result<(), String> {
    if slot.is_some() {
        return Err(format!("duplicate field `{name}`"));
    }
    *slot = Some(value);
    Ok(())
}

fn missing(name: &str) -> String {
    format!("missing field `{name}`")
}

impl<'t> Scanner<'t> {
    pub(super) fn new(text: &'t str, strict: bool) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            at: 0,
            unescaped: String::new(),
            kept: String::new(),
            might_hold_aggregates: false,
            strict,
            layout: None,
        }
    }

    /// The `Records` array that comes next.
    pub(super) fn records(&mut self) -> Result<Vec<Spans>, String> {
        let mut records = Vec::new();
        self.expect(b'[', "an array of Kinesis event records")?;
        if !self.eat(b']') {
            loop {
                let record_start = self.at;
                let record = self
                    .record()
                    .map_err(|error| format!("record {}: {error}", records.len()))?;
                let record = self.noted(record, records.last());
                if records.is_empty() {
                    self.reserve_like(&record, record_start, &mut records);
                }
                records.push(record);
                if self.eat(b',') {
                    continue;
                }
                self.expect(b']', "`,` or `]` after a record")?;
                break;
            }
        }
        Ok(records)
    }

    /// Makes room for as many records as the text holds if they are all as long as the first,
    /// just read from `record_start`, and for their kept text: growing both by doubling copied
    /// each several times over.
    fn reserve_like(&mut self, first: &Spans, record_start: usize, records: &mut Vec<Spans>) {
        let record_length = (self.at - record_start).max(1);
        let expected = self.text.len() / record_length + 1;
        records.reserve(expected);
        // The shard id and stream are kept once, the rest of each record's fields every time.
        let length = |span: Span| span.end - span.start;
        let kept_length =
            length(first.sequence_number) + length(first.partition_key) + length(first.data_base64);
        self.kept.reserve(expected.saturating_mul(kept_length));
    }

    /// A record just read, its fields copied to the kept text while the record is in cache (see
    /// the doc of `scan`), and whether its data might be a KPL aggregate noted. A shard id or
    /// stream equal to the previous record's is not copied again: the record shares the previous
    /// record's span (every record of an event names the same shard and stream), so that the
    /// adapter checks that the event holds one shard by comparing spans.
    fn noted(&mut self, record: Spans, previous: Option<&Spans>) -> Spans {
        self.might_hold_aggregates |= self
            .text_of(record.data_base64)
            .starts_with(MAGIC_BASE64_PREFIX);
        let shared = |scanner: &Self, span: Span, kept: Option<Span>| {
            kept.filter(|&kept| scanner.text_of(span) == &scanner.kept[kept.start..kept.end])
        };
        let shard_id = match shared(self, record.shard_id, previous.map(|p| p.shard_id)) {
            Some(kept) => kept,
            None => self.keep(record.shard_id),
        };
        let arn = record.event_source_arn;
        let event_source_arn = match shared(self, arn, previous.map(|p| p.event_source_arn)) {
            Some(kept) => kept,
            None => self.keep(arn),
        };
        Spans {
            shard_id,
            event_source_arn,
            sequence_number: self.keep(record.sequence_number),
            partition_key: self.keep(record.partition_key),
            data_base64: self.keep(record.data_base64),
            ..record
        }
    }

    /// Copies the text of a span made by [`string`](Self::string) to the kept text; returns
    /// where it lies there.
    fn keep(&mut self, span: Span) -> Span {
        let start = self.kept.len();
        match span.start.checked_sub(self.text.len()) {
            Some(at) => self
                .kept
                .push_str(&self.unescaped[at..at + (span.end - span.start)]),
            None => self.kept.push_str(&self.text[span.start..span.end]),
        }
        Span {
            start,
            end: self.kept.len(),
        }
    }

    /// The next byte that is not whitespace, left unread.
    #[inline]
    pub(super) fn peek(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.at) {
            self.at += 1;
        }
        self.bytes.get(self.at).copied()
    }

    /// Reads `byte` if it comes next.
    #[inline]
    pub(super) fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.at += 1;
        }
        found
    }

    #[inline]
    fn expect(&mut self, byte: u8, expected: &str) -> Result<(), String> {
        if self.eat(byte) {
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    #[cold]
    fn unexpected(&mut self, expected: &str) -> String {
        let found = match self.peek() {
            Some(b'"') => "a string",
            Some(b'{') => "an object",
            Some(b'[') => "an array",
            Some(b'n') => "null",
            Some(b't' | b'f') => "a boolean",
            Some(_) => "a number",
            None => "the end of the text",
        };
        format!("invalid type: {found}, expected {expected}")
    }

    /// Steps over a string whose opening quote comes next; returns where its content lies
    /// (escapes still in) and whether it holds any escape.
    pub(super) fn raw_string(&mut self) -> Result<(usize, usize, bool), String> {
        let start = self.at + 1;
        let mut at = start;
        let mut escaped = false;
        loop {
            let rest = self.bytes.get(at..).unwrap_or_default();
            match first_special(rest).map(|offset| (offset, rest[offset])) {
                Some((offset, b'"')) => {
                    self.at = at + offset + 1;
                    return Ok((start, at + offset, escaped));
                }
                // What follows a backslash is never a quote that ends the string; a `\u`
                // escape's hex digits are neither quotes nor backslashes.
                Some((offset, b'\\')) if !self.strict => {
                    escaped = true;
                    at += offset + 2;
                }
                _ if self.strict => return Err(NOT_PLAIN.to_owned()),
                // Text serde_json checked has no control character in a string.
                Some(_) => return Err("a control character in a string".to_owned()),
                None => return Err("a string without its closing quote".to_owned()),
            }
        }
    }

    /// The text of a string with escapes, unescaped by serde_json.
    fn unescape(&self, start: usize, end: usize) -> Result<String, String> {
        serde_json::from_str(&self.text[start - 1..=end]).map_err(|error| error.to_string())
    }

    /// Reads the object key that comes next, and the `:` after it; returns its index in
    /// `known`, or `None` for a key not in it. `expected` is the index to try first.
    ///
    /// Keys are compared as they are written, quotes included, before anything is scanned. In an
    /// event Lambda wrote, every key is one the scanner knows (`known` lists the fields it skips
    /// too, in the order Lambda writes them), so a key costs one comparison rather than a scan.
    pub(super) fn key(&mut self, known: &[&str], expected: usize) -> Result<Option<usize>, String> {
        if self.peek() != Some(b'"') {
            return Err(self.unexpected("a field name"));
        }
        let rest = &self.bytes[self.at + 1..];
        let is_written = |name: &str| {
            let name = name.as_bytes();
            rest.get(name.len()) == Some(&b'"') && rest[..name.len()] == *name
        };
        let written = match known.get(expected) {
            Some(name) if is_written(name) => Some(expected),
            _ => known.iter().position(|name| is_written(name)),
        };
        let index = match written {
            Some(index) => {
                self.at += known[index].len() + 2;
                Some(index)
            }
            None => {
                // A key Lambda does not write, or a known one spelt with escapes.
                let (start, end, escaped) = self.raw_string()?;
                match escaped {
                    true => {
                        let key = self.unescape(start, end)?;
                        known.iter().position(|name| *name == key)
                    }
                    false => None,
                }
            }
        };
        self.expect(b':', "`:` after a field name")?;
        Ok(index)
    }

    /// A string value, as a span of the batch's text.
    fn string(&mut self, name: &str) -> Result<Span, String> {
        if self.peek() != Some(b'"') {
            return Err(format!("{} for `{name}`", self.unexpected("a string")));
        }
        let (start, end, escaped) = self.raw_string()?;
        if !escaped {
            return Ok(Span { start, end });
        }
        let unescaped = self.unescape(start, end)?;
        let start = self.text.len() + self.unescaped.len();
        self.unescaped.push_str(&unescaped);
        Ok(Span {
            start,
            end: start + unescaped.len(),
        })
    }

    /// A string value or `null`.
    fn optional_string(&mut self, name: &str) -> Result<Option<Span>, String> {
        if self.peek() == Some(b'n') {
            self.scalar()?;
            return Ok(None);
        }
        self.string(name).map(Some)
    }

    /// The text of a span made by [`string`](Self::string).
    pub(super) fn text_of(&self, span: Span) -> &str {
        match span.start.checked_sub(self.text.len()) {
            Some(start) => &self.unescaped[start..start + (span.end - span.start)],
            None => &self.text[span.start..span.end],
        }
    }

    /// Steps over a number, `true`, `false` or `null`, returning its text. A strict scan
    /// fails on anything else.
    fn scalar(&mut self) -> Result<&'t str, String> {
        let start = self.at;
        let length = self.bytes[start..]
            .iter()
            .position(|&byte| !(byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'-' | b'+')))
            .unwrap_or(self.bytes.len() - start);
        self.at += length;
        let text = &self.text[start..self.at];
        if self.strict && !is_json_scalar(text) {
            return Err(NOT_PLAIN.to_owned());
        }
        Ok(text)
    }

    /// Steps over any value.
    fn skip_value(&mut self) -> Result<(), String> {
        let mut depth = 0_usize;
        loop {
            match self.peek() {
                Some(b'"') => {
                    self.raw_string()?;
                }
                // A strict scan cannot tell a well-formed object or array from a malformed one
                // by counting brackets; Lambda writes none where the scanner steps over values.
                Some(b'{' | b'[') if self.strict => return Err(NOT_PLAIN.to_owned()),
                Some(b'{' | b'[') => {
                    depth += 1;
                    self.at += 1;
                }
                Some(b'}' | b']') if depth > 0 => {
                    depth -= 1;
                    self.at += 1;
                }
                Some(b',' | b':') if depth > 0 => {
                    self.at += 1;
                    continue;
                }
                Some(b'}' | b']' | b',' | b':') | None => {
                    return Err(self.unexpected("a value"));
                }
                Some(_) => {
                    if self.scalar()?.is_empty() {
                        return Err(self.unexpected("a value"));
                    }
                }
            }
            if depth == 0 {
                return Ok(());
            }
        }
    }

    /// `approximateArrivalTimestamp`: epoch seconds with a millisecond fraction, as milliseconds.
    /// Lambda sends a JSON number; `aws_lambda_events` writes a string. Both are read, with any
    /// number of decimals.
    pub(super) fn arrival_millis(&mut self) -> Result<i64, String> {
        const EXPECTED: &str = "epoch seconds, as a number or a numeric string";
        let (text, quoted) = match self.peek() {
            Some(b'"') => {
                let span = self.string("approximateArrivalTimestamp")?;
                (self.text_of(span).trim(), true)
            }
            Some(b'-' | b'0'..=b'9') => (self.scalar()?, false),
            _ => return Err(self.unexpected(EXPECTED)),
        };
        if let Some(millis) = exact_millis(text) {
            return Ok(millis);
        }
        if !quoted && let Ok(seconds) = text.parse::<i64>() {
            return Ok(seconds.saturating_mul(1000));
        }
        let seconds: f64 = text
            .parse()
            .map_err(|_| format!("invalid value: {text:?}, expected {EXPECTED}"))?;
        Ok((seconds * 1000.0).round() as i64)
    }

    /// One element of `Records`.
    pub(super) fn record(&mut self) -> Result<Spans, String> {
        match self.lambda_record() {
            Some(spans) => Ok(spans),
            None => self.record_by_fields(),
        }
    }

    /// One element of `Records`, read key by key.
    pub(super) fn record_by_fields(&mut self) -> Result<Spans, String> {
        // Every field Lambda writes, in the order it writes them.
        const FIELDS: &[&str] = &[
            "kinesis",
            "eventSource",
            "eventVersion",
            "eventID",
            "eventName",
            "invokeIdentityArn",
            "awsRegion",
            "eventSourceARN",
        ];
        let mut kinesis = None;
        let mut event_id = None;
        let mut event_source_arn = None;
        self.object(
            "a Kinesis event record",
            FIELDS,
            |scanner, index| match index {
                0 => set(&mut kinesis, scanner.kinesis()?, FIELDS[0]),
                3 => set(
                    &mut event_id,
                    scanner.optional_string(FIELDS[3])?,
                    FIELDS[3],
                ),
                7 => {
                    let arn = scanner.optional_string(FIELDS[7])?;
                    set(&mut event_source_arn, arn, FIELDS[7])
                }
                _ => scanner.skip_value(),
            },
        )?;
        let mut spans = kinesis.ok_or_else(|| missing(FIELDS[0]))?;
        // The shard id is what precedes the last `:` of `eventID` (`<shard id>:<sequence
        // number>`); without an `eventID`, it is empty.
        if let Some(event_id) = event_id.flatten() {
            let shard_len = self.text_of(event_id).rfind(':').unwrap_or(0);
            spans.shard_id = Span {
                start: event_id.start,
                end: event_id.start + shard_len,
            };
        }
        if let Some(arn) = event_source_arn.flatten() {
            spans.event_source_arn = arn;
        }
        Ok(spans)
    }

    /// Reads an object of `what`, whose `known` fields are listed in the order Lambda writes
    /// them (the order [`Self::key`] tries first): `field` reads the value of the known field
    /// at its index, or skips it.
    fn object(
        &mut self,
        what: &str,
        known: &[&str],
        mut field: impl FnMut(&mut Self, usize) -> Result<(), String>,
    ) -> Result<(), String> {
        self.expect(b'{', what)?;
        if self.eat(b'}') {
            return Ok(());
        }
        let mut expected = 0;
        loop {
            let key = self.key(known, expected)?;
            expected = key.map_or(0, |index| index + 1);
            match key {
                Some(index) => field(self, index)?,
                None => self.skip_value()?,
            }
            if !self.eat(b',') {
                return self.expect(b'}', "`,` or `}` after a field");
            }
        }
    }

    /// A record's `kinesis` object: the fields of the Kinesis record itself.
    fn kinesis(&mut self) -> Result<Spans, String> {
        // Every field Lambda writes, in the order it writes them, and `encryptionType`, which
        // `aws_lambda_events` writes.
        const FIELDS: &[&str] = &[
            "kinesisSchemaVersion",
            "partitionKey",
            "sequenceNumber",
            "data",
            "approximateArrivalTimestamp",
            "encryptionType",
        ];
        let mut partition_key = None;
        let mut sequence_number = None;
        let mut data = None;
        let mut arrival_millis = None;
        let what = "the `kinesis` object of a Kinesis event record";
        self.object(what, FIELDS, |scanner, index| match index {
            // `null` as absent: a keyless record (below).
            1 => set(
                &mut partition_key,
                scanner.optional_string(FIELDS[1])?,
                FIELDS[1],
            ),
            2 => set(&mut sequence_number, scanner.string(FIELDS[2])?, FIELDS[2]),
            3 => set(&mut data, scanner.string(FIELDS[3])?, FIELDS[3]),
            4 => set(&mut arrival_millis, scanner.arrival_millis()?, FIELDS[4]),
            _ => scanner.skip_value(),
        })?;
        let empty = Span { start: 0, end: 0 };
        Ok(Spans {
            shard_id: empty,
            // A record of a stream whose record distribution is `AUTO` may have no partition
            // key: missing, `null` and `""` all read as the empty key (see `RecordMeta`).
            partition_key: partition_key.flatten().unwrap_or(empty),
            sequence_number: sequence_number.ok_or_else(|| missing(FIELDS[2]))?,
            data_base64: data.ok_or_else(|| missing(FIELDS[3]))?,
            event_source_arn: empty,
            arrival_millis: arrival_millis.unwrap_or_default(),
            aggregated: Aggregated::Plain,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_special_finds_the_first_quote_backslash_or_control_character() {
        // Every length up to three chunks, with the special byte at every position, after
        // bytes that are not special (non-ASCII ones included).
        for length in 0..24 {
            let plain: Vec<u8> = (0..length)
                .map(|i| [b'a', b'~', b' ', 0xc3, 0xa9, 0x7f][i % 6])
                .collect();
            assert_eq!(first_special(&plain), None, "{plain:?}");
            for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                for at in 0..length {
                    let mut bytes = plain.clone();
                    bytes[at] = special;
                    // A second special byte further on must not hide the first.
                    if at + 2 < length {
                        bytes[at + 2] = b'"';
                    }
                    assert_eq!(first_special(&bytes), Some(at), "{bytes:?}");
                }
            }
        }
    }

    #[test]
    fn json_scalars_follow_jsons_grammar() {
        for text in [
            "0",
            "-0",
            "7",
            "1480641523.477",
            "-1.5e3",
            "2E+10",
            "3e-2",
            "0.0",
            "true",
            "false",
            "null",
        ] {
            assert!(is_json_scalar(text), "{text}");
        }
        for text in [
            "", "-", "01", "-01", "1.", ".5", "1e", "1e+", "+1", "1.5.2", "0x10", "Infinity",
            "NaN", "nul", "nulll", "True", "1-2",
        ] {
            assert!(!is_json_scalar(text), "{text}");
        }
    }
}
