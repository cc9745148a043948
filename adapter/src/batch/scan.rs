//! Reading the `Records` array of a Kinesis event from its JSON text, in one pass.
//!
//! serde_json has already checked that the text is well-formed JSON (it hands it over as a
//! `RawValue`), so this scanner only has to find the fields the adapter reads and step over the
//! rest. As each record is read, the text of the fields the adapter keeps (sequence number,
//! partition key, data, and the shard id and stream once per batch) is copied, one record after
//! the other, into the text the batch holds, and every record's fields are spans of it. The few
//! strings with escapes are unescaped (by serde_json) first.
//!
//! Why copy rather than keep the event's text and point into it: the fields are a third of a
//! record's text, and settling reads them record after record. Kept in the event's text, each
//! field a pass reads was a cache miss of its own (a 10,000-record event is 6.5 MB); copied
//! while the record is in cache, they lie in the order they are read, in a third of the memory.
//!
//! Why not serde: `lambda_runtime` reads every event through `serde_path_to_error`, which wraps
//! every value and copies every key into a `String` to be able to name the path of an error.
//! Read field by field, a 10,000-record event paid for that twice over. Reading the `Records`
//! value whole costs one pass of serde_json's fastest kind (skipping), and this scan another.
//!
//! Given the event's bytes directly ([`KinesisBatch::from_json`](super::KinesisBatch::from_json),
//! as the emulator's in-process invoker reads each event, and `ReadBatchLayer`, as the adapter
//! reads each event on Lambda), the scanner can spare serde_json's pass: [`plain_event`] reads a *strict* subset of JSON that it checks itself, which holds every
//! event Lambda (or the emulator) writes. Any other text, malformed or merely unusual, is left
//! to serde_json, so neither the batch nor an error ever depends on which way it was read.

mod layout;
mod scanner;

use super::spans::Spans;
use scanner::Scanner;

/// The records of an event, as spans of `text`.
pub(super) struct Scanned {
    pub(super) records: Vec<Spans>,
    /// The text of the fields the batch keeps.
    pub(super) text: String,
    /// Whether any record's data starts as a KPL aggregate's does in base64, so that the batch
    /// must be deaggregated; looked at while each record's text is in cache.
    pub(super) might_hold_aggregates: bool,
}

/// Reads the records of `text`, the JSON of an event's `Records` value, which serde_json has
/// checked.
pub(super) fn records(text: &str) -> Result<Scanned, String> {
    let mut scanner = Scanner::new(text, false);
    let records = scanner.records()?;
    Ok(Scanned {
        records,
        text: scanner.kept,
        might_hold_aggregates: scanner.might_hold_aggregates,
    })
}

/// Reads a whole event, unchecked by serde_json, if it is *plain*: `{"Records":[...]}` where
/// every string is free of escapes and control characters, every value the scanner steps over
/// is a string, a number or a literal, and every number follows JSON's grammar (whitespace may
/// come wherever JSON allows it). Such a text is well-formed JSON, and what is read from it is
/// what [`records`] reads from its `Records` value. Returns its records; `None` for any other
/// text, well-formed or not, which must then be read the general way.
pub(super) fn plain_event(json: &str) -> Option<Scanned> {
    let mut top = Scanner::new(json, true);
    if !top.eat(b'{') || top.key(&["Records"], 0).ok()? != Some(0) || top.peek() != Some(b'[') {
        return None;
    }
    let start = top.at;
    let mut scanner = Scanner::new(&json[start..], true);
    let records = scanner.records().ok()?;
    let end = start + scanner.at;
    let mut rest = Scanner::new(&json[end..], true);
    if !rest.eat(b'}') || rest.peek().is_some() {
        return None;
    }
    debug_assert!(scanner.unescaped.is_empty(), "a plain text has no escapes");
    Some(Scanned {
        records,
        text: scanner.kept,
        might_hold_aggregates: scanner.might_hold_aggregates,
    })
}
