//! A tumbling window's event and response as they cross to Lambda (`docs/event-source-mapping.md`,
//! "Tumbling windows").
//!
//! `aws_lambda_events` has the event (`KinesisTimeWindowEvent`) but types its state as a map of
//! strings, and its response has no `batchItemFailures`: Lambda reads both, so they are written
//! here, field for field as Lambda's example event and `TimeWindowEventResponse` spell them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::wire::{EventRecord, EventSource, write_event};

/// The event of one invocation of a tumbling window: a shard's records of one window, the state
/// the window's previous invocation returned, and where the window stands.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowEvent {
    /// The records (possibly none, on a final invocation).
    #[serde(rename = "Records", default)]
    pub records: Vec<WindowRecord>,
    /// The window's bounds.
    pub window: WindowBounds,
    /// The state the window's previous invocation returned; `{}` (or absent) for a fresh window.
    #[serde(default)]
    pub state: serde_json::Value,
    /// The shard the records come from.
    pub shard_id: String,
    /// The stream's ARN.
    #[serde(rename = "eventSourceARN")]
    pub event_source_arn: String,
    /// Whether this is the window's last invocation: the state is final.
    #[serde(default)]
    pub is_final_invoke_for_window: bool,
    /// Whether the window was ended early (its state passed Lambda's size limit).
    #[serde(default)]
    pub is_window_terminated_early: bool,
}

/// A window's bounds, as Lambda writes them: ISO-8601 UTC, whole seconds (`2020-12-09T07:04:00Z`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowBounds {
    /// The window's first instant.
    pub start: String,
    /// The instant after the window's last one (the next window's start).
    pub end: String,
}

/// One record of a window event: the fields a window handler reads.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WindowRecord {
    /// The Kinesis part of the record.
    pub kinesis: WindowRecordData,
}

/// The `kinesis` object of a record.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowRecordData {
    /// The producer's partition key.
    pub partition_key: String,
    /// The record's sequence number.
    pub sequence_number: String,
    /// The record's data in standard base64.
    pub data: String,
    /// When Kinesis accepted the record, in epoch seconds.
    pub approximate_arrival_timestamp: f64,
}

impl WindowRecordData {
    /// The record's data, decoded from base64; the error says what is wrong.
    pub fn decoded_data(&self) -> Result<Vec<u8>, String> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.data)
            .map_err(|error| format!("its data is not base64: {error}"))
    }
}

/// A window function's answer: the window's new state and, at most, one held record.
///
/// Lambda counts a response without `state` as a failed invocation, so `state` is always written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowResponse {
    /// The state the window's next invocation receives.
    pub state: serde_json::Value,
    /// The first record not handled, as in a partial batch response (`itemIdentifier`).
    #[serde(default)]
    pub batch_item_failures: Vec<ItemFailure>,
}

/// One entry of `batchItemFailures`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemFailure {
    /// The held record's sequence number.
    pub item_identifier: String,
}

/// Where a window invocation stands, for [`write_window_event`].
#[derive(Debug, Clone, Copy)]
pub struct WindowFields<'a> {
    /// The window's first instant (whole seconds).
    pub start: SystemTime,
    /// The window's end (whole seconds).
    pub end: SystemTime,
    /// The state's JSON text (`{}` for a fresh window).
    pub state: &'a str,
    /// `isFinalInvokeForWindow`.
    pub is_final: bool,
    /// `isWindowTerminatedEarly`.
    pub terminated_early: bool,
}

/// Appends to `out` the JSON of a window event, as Lambda sends it: the Kinesis event of
/// [`write_event`] followed by `window`, `state`, `shardId`, `eventSourceARN`,
/// `isFinalInvokeForWindow` and `isWindowTerminatedEarly`, in the order of Lambda's example.
///
/// # Panics
/// When `fields.state` is not JSON text (the caller holds it as the function returned it).
pub fn write_window_event<'a>(
    out: &mut Vec<u8>,
    source: &EventSource<'_>,
    fields: &WindowFields<'_>,
    records: impl IntoIterator<Item = EventRecord<'a>>,
) {
    write_event(out, source, records);
    out.pop(); // the event's closing brace: the window's fields follow
    let window = WindowBounds {
        start: iso8601_seconds(fields.start),
        end: iso8601_seconds(fields.end),
    };
    let state: serde_json::Value =
        serde_json::from_str(fields.state).expect("the window's state is JSON text");
    write_field(out, "window", &window);
    write_field(out, "state", &state);
    write_field(out, "shardId", source.shard_id);
    write_field(out, "eventSourceARN", source.stream_arn);
    write_field(out, "isFinalInvokeForWindow", &fields.is_final);
    write_field(out, "isWindowTerminatedEarly", &fields.terminated_early);
    out.push(b'}');
}

/// Appends `,"key":value` to an object being written.
fn write_field(out: &mut Vec<u8>, key: &str, value: &(impl Serialize + ?Sized)) {
    out.push(b',');
    serde_json::to_writer(&mut *out, key).expect("a key serialises");
    out.push(b':');
    serde_json::to_writer(&mut *out, value).expect("the value serialises");
}

/// `time` as `YYYY-MM-DDTHH:MM:SSZ`, the fraction of a second cut off.
pub fn iso8601_seconds(time: SystemTime) -> String {
    let seconds = match time.duration_since(UNIX_EPOCH) {
        Ok(since) => since.as_secs() as i64,
        Err(before) => -(before.duration().as_secs_f64().ceil() as i64),
    };
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let in_day = seconds.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        in_day / 3600,
        in_day / 60 % 60,
        in_day % 60
    )
}

/// Reads `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, as Lambda writes a window's bounds; `None` for
/// anything else.
pub fn parse_iso8601(text: &str) -> Option<SystemTime> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date_parts = date.splitn(3, '-');
    let year: i64 = date_parts.next()?.parse().ok()?;
    let month: u32 = date_parts.next()?.parse().ok()?;
    let day: u32 = date_parts.next()?.parse().ok()?;
    let (clock, fraction) = match time.split_once('.') {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (time, None),
    };
    let mut clock_parts = clock.splitn(3, ':');
    let hour: i64 = clock_parts.next()?.parse().ok()?;
    let minute: i64 = clock_parts.next()?.parse().ok()?;
    let second: i64 = clock_parts.next()?.parse().ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    let nanos = match fraction {
        None => 0,
        Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            let padded = format!("{digits:0<9}");
            padded[..9].parse::<u32>().ok()?
        }
        Some(_) => return None,
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    let seconds = u64::try_from(seconds).ok()?;
    Some(UNIX_EPOCH + Duration::new(seconds, nanos))
}

/// The calendar date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// Days from 1970-01-01 to a calendar date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn bounds_are_written_and_read_as_lambda_spells_them() {
        // The bounds of AWS's example event.
        let start = at(1_607_497_440);
        assert_eq!(iso8601_seconds(start), "2020-12-09T07:04:00Z");
        assert_eq!(parse_iso8601("2020-12-09T07:04:00Z"), Some(start));
        assert_eq!(
            parse_iso8601("2020-12-09T07:06:00Z"),
            Some(at(1_607_497_560))
        );
        assert_eq!(
            parse_iso8601("2020-12-09T07:04:00.250Z"),
            Some(start + Duration::from_millis(250))
        );
        assert_eq!(iso8601_seconds(at(1_767_225_600)), "2026-01-01T00:00:00Z");
        for bad in [
            "2020-12-09T07:04:00",
            "2020-13-09T07:04:00Z",
            "07:04:00Z",
            "2020-12-09T07:04:00.Z",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_window_event_carries_the_window_fields_after_the_records_in_lambdas_order() {
        let source = EventSource {
            stream_arn: "arn:aws:kinesis:us-east-1:123456789012:stream/lambda-stream",
            shard_id: "shardId-000000000006",
            region: "us-east-1",
            invoke_identity_arn: "arn:aws:iam::123456789012:role/lambda-kinesis-role",
        };
        let fields = WindowFields {
            start: at(1_607_497_440),
            end: at(1_607_497_560),
            state: r#"{"1":282,"2":715}"#,
            is_final: false,
            terminated_early: false,
        };
        let mut out = Vec::new();
        write_window_event(&mut out, &source, &fields, []);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            concat!(
                r#"{"Records":[],"window":{"start":"2020-12-09T07:04:00Z","end":"2020-12-09T07:06:00Z"},"#,
                r#""state":{"1":282,"2":715},"shardId":"shardId-000000000006","#,
                r#""eventSourceARN":"arn:aws:kinesis:us-east-1:123456789012:stream/lambda-stream","#,
                r#""isFinalInvokeForWindow":false,"isWindowTerminatedEarly":false}"#
            )
        );
        let event: WindowEvent = serde_json::from_slice(&out).unwrap();
        assert_eq!(event.shard_id, "shardId-000000000006");
        assert_eq!(event.state["2"], 715);
    }

    #[test]
    fn a_response_always_carries_the_state() {
        let response = WindowResponse {
            state: serde_json::json!({}),
            batch_item_failures: vec![],
        };
        assert_eq!(
            serde_json::to_string(&response).unwrap(),
            r#"{"state":{},"batchItemFailures":[]}"#
        );
    }
}
