//! How requests are read and answers written: JSON 1.1 bodies, timestamps as epoch seconds,
//! streams named by name or ARN, and the shapes several operations share.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Deserializer, Serialize};

use super::error::ApiError;
use super::validation::{SHARD_ID, STREAM_ARN, STREAM_NAME, Violations};
use crate::embedded::EmbeddedKinesis;
use kinesis_source::{HashKeyRange, Shard};

/// A required member, or the validation error for its absence.
pub(super) fn required<T>(value: Option<T>, member: &str) -> Result<T, ApiError> {
    let mut violations = Violations::new();
    let value = violations.required(value, member);
    violations.finish()?;
    Ok(value.expect("a missing value is a violation"))
}

/// The latest timestamp a request may carry (the year 9999 or so), far below where times
/// overflow.
const MAX_TIMESTAMP_MICROS: f64 = 253_402_300_800.0 * 1e6;

/// A timestamp in a request: in JSON 1.1 seconds since the Unix epoch, with a fraction (text
/// that holds such a number is accepted too); in CBOR milliseconds since the epoch, as
/// [`codec`](super::codec) reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Timestamp(pub(super) SystemTime);

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Seconds {
            Number(f64),
            Text(String),
        }
        if !deserializer.is_human_readable() {
            let millis = super::codec::cbor_millis(deserializer)?;
            return from_seconds(millis / 1000.0);
        }
        let seconds = match Seconds::deserialize(deserializer)? {
            Seconds::Number(seconds) => seconds,
            Seconds::Text(text) => text.trim().parse().map_err(|_| {
                serde::de::Error::custom(format!(
                    "timestamp `{text}` is not a number of seconds since the Unix epoch"
                ))
            })?,
        };
        from_seconds(seconds)
    }
}

/// A request's time from its seconds since the epoch, refused when not finite or too late.
fn from_seconds<E: serde::de::Error>(seconds: f64) -> Result<Timestamp, E> {
    if !seconds.is_finite() {
        return Err(serde::de::Error::custom(
            "a timestamp must be a finite number",
        ));
    }
    // Rounded to whole microseconds: an f64 near today's epoch seconds carries about a
    // quarter of a microsecond of noise, which must not push `1.123` past 1,123 ms.
    let micros = (seconds.max(0.0) * 1e6).round();
    if micros > MAX_TIMESTAMP_MICROS {
        return Err(serde::de::Error::custom(format!(
            "timestamp {seconds} lies too far in the future"
        )));
    }
    Ok(Timestamp(
        SystemTime::UNIX_EPOCH + Duration::from_micros(micros as u64),
    ))
}

/// A time as Java's `Date.toString` writes it in UTC, `Wed Dec 02 05:38:15 UTC 2026`: the
/// form of the times in Kinesis' `ExpiredIteratorException` message.
pub(super) fn java_date_string(time: SystemTime) -> String {
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let seconds = kinesis_source::time::millis_since_epoch(time).div_euclid(1000);
    let days = seconds.div_euclid(86_400);
    let in_day = seconds.rem_euclid(86_400);
    let (year, month, day) = kinesis_source::time::civil_date(days);
    format!(
        "{} {} {day:02} {:02}:{:02}:{:02} UTC {year}",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[month as usize - 1],
        in_day / 3600,
        in_day / 60 % 60,
        in_day % 60
    )
}

/// Checks a stream name or shard id against the API's shape: `[a-zA-Z0-9_.-]+`, 1 to 128
/// characters.
pub(super) fn check_name(value: &str, member: &str) -> Result<(), ApiError> {
    let mut violations = Violations::new();
    violations.text(member, Some(value), SHARD_ID);
    violations.finish()
}

/// A request's `(StreamName, StreamARN)`, as [`stream_names!`] takes them from it.
pub(super) type StreamNames<'a> = (Option<&'a str>, Option<&'a str>);

/// The `(StreamName, StreamARN)` of a request shape with `stream_name` and `stream_arn`
/// members, borrowed member by member, so that its other members can still be moved out.
macro_rules! stream_names {
    ($input:expr) => {
        ($input.stream_name.as_deref(), $input.stream_arn.as_deref())
    };
}
pub(super) use stream_names;

/// Checks the `StreamName` and `StreamARN` of a request against the API's shapes, adding what
/// they break to `violations`.
pub(super) fn check_stream(violations: &mut Violations, (name, arn): StreamNames<'_>) {
    violations.text("StreamName", name, STREAM_NAME);
    violations.text("StreamARN", arn, STREAM_ARN);
}

/// The stream a request names, by `StreamName` or `StreamARN` (as the embedded Kinesis takes
/// either). When both are given they must name the same stream. Both are checked against the
/// API's shapes first.
pub(super) fn stream_of<'a>(
    kinesis: &EmbeddedKinesis,
    names: StreamNames<'a>,
) -> Result<&'a str, ApiError> {
    let mut violations = Violations::new();
    check_stream(&mut violations, names);
    violations.finish()?;
    named_stream(kinesis, names)
}

/// The stream a request names, its `StreamName` and `StreamARN` already checked.
pub(super) fn named_stream<'a>(
    kinesis: &EmbeddedKinesis,
    names: StreamNames<'a>,
) -> Result<&'a str, ApiError> {
    match names {
        (Some(name), Some(arn)) if kinesis.stream_arn(name) != arn => {
            Err(ApiError::invalid_argument(format!(
                "StreamARN {arn} and StreamName {name} name different streams"
            )))
        }
        (_, Some(arn)) => Ok(arn),
        (Some(name), None) => Ok(name),
        (None, None) => Err(ApiError::invalid_argument(
            "Either StreamName or StreamARN must be given",
        )),
    }
}

/// A shard id as Kinesis reads it: the number after its last `-` (or a bare number) names
/// the shard, so `shardId-1`, `shard-0001`, `x-1` and `1` are all `shardId-000000000001`
/// (docs/kinesis.md, "Shard ids"). Anything else is kept as given.
pub(super) fn normalized_shard_id(shard_id: &str) -> Cow<'_, str> {
    let number = shard_id.rsplit('-').next().unwrap_or(shard_id);
    let is_number = !number.is_empty() && number.bytes().all(|byte| byte.is_ascii_digit());
    match number.parse::<u64>() {
        Ok(number) if is_number && number < 1_000_000_000_000 => {
            Cow::Owned(format!("shardId-{number:012}"))
        }
        _ => Cow::Borrowed(shard_id),
    }
}

/// A hash key range: decimal text, as the API spells 128-bit numbers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WireHashKeyRange {
    starting_hash_key: String,
    ending_hash_key: String,
}

impl From<&HashKeyRange> for WireHashKeyRange {
    fn from(range: &HashKeyRange) -> Self {
        Self {
            starting_hash_key: range.starting_hash_key.to_string(),
            ending_hash_key: range.ending_hash_key.to_string(),
        }
    }
}

/// A shard as `ListShards` and `DescribeStream` describe it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct WireShard<'a> {
    shard_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_shard_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    adjacent_parent_shard_id: Option<&'a str>,
    hash_key_range: WireHashKeyRange,
    sequence_number_range: WireSequenceNumberRange<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireSequenceNumberRange<'a> {
    starting_sequence_number: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ending_sequence_number: Option<&'a str>,
}

impl<'a> From<&'a Shard> for WireShard<'a> {
    fn from(shard: &'a Shard) -> Self {
        Self {
            shard_id: &shard.shard_id,
            parent_shard_id: shard.parent_shard_id.as_deref(),
            adjacent_parent_shard_id: shard.adjacent_parent_shard_id.as_deref(),
            hash_key_range: WireHashKeyRange::from(&shard.hash_key_range),
            sequence_number_range: WireSequenceNumberRange {
                starting_sequence_number: shard.starting_sequence_number.as_str(),
                ending_sequence_number: shard
                    .ending_sequence_number
                    .as_ref()
                    .map(|sequence_number| sequence_number.as_str()),
            },
        }
    }
}

/// A count from a request (`ShardCount`, `Limit`, ...) that must lie in `range`; a value
/// outside it breaks the API model's constraint.
pub(super) fn count_in(
    value: i64,
    range: std::ops::RangeInclusive<i64>,
    member: &str,
) -> Result<usize, ApiError> {
    if range.contains(&value) {
        Ok(usize::try_from(value).expect("the range lies within usize"))
    } else {
        let mut violations = Violations::new();
        violations.number(member, Some(value), *range.start(), *range.end());
        Err(violations
            .finish()
            .expect_err("the value lies outside the range"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::error::ErrorKind;
    use super::*;

    #[test]
    fn times_read_as_java_writes_dates() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_189_895_999);
        assert_eq!(java_date_string(at), "Wed Dec 02 05:38:15 UTC 2026");
        assert_eq!(
            java_date_string(SystemTime::UNIX_EPOCH),
            "Thu Jan 01 00:00:00 UTC 1970"
        );
    }

    #[track_caller]
    fn check_timestamp(json: &str, expected_micros: u64) {
        let Timestamp(time) = serde_json::from_str(json).unwrap();
        assert_eq!(
            time,
            SystemTime::UNIX_EPOCH + Duration::from_micros(expected_micros),
            "{json}"
        );
    }

    #[test]
    fn timestamps_are_epoch_seconds_to_the_microsecond() {
        check_timestamp("1700000000.123", 1_700_000_000_123_000);
        check_timestamp("1700000000", 1_700_000_000_000_000);
        check_timestamp("\"1459799926.480\"", 1_459_799_926_480_000);
        check_timestamp("-5", 0);
        assert!(serde_json::from_str::<Timestamp>("1e300").is_err());
        assert!(serde_json::from_str::<Timestamp>("\"yesterday\"").is_err());
        assert!(serde_json::from_str::<Timestamp>("true").is_err());
    }

    #[test]
    fn a_stream_is_named_by_name_or_arn_but_not_two_different_ones() {
        let kinesis = EmbeddedKinesis::new();
        let arn = kinesis.stream_arn("orders");
        assert_eq!(stream_of(&kinesis, (Some("orders"), None)), Ok("orders"));
        assert_eq!(
            stream_of(&kinesis, (None, Some(arn.as_str()))),
            Ok(arn.as_str())
        );
        assert_eq!(
            stream_of(&kinesis, (Some("orders"), Some(arn.as_str()))),
            Ok(arn.as_str())
        );
        let other = kinesis.stream_arn("payments");
        assert_eq!(
            stream_of(&kinesis, (Some("orders"), Some(other.as_str()))).map_err(|error| error.kind),
            Err(ErrorKind::InvalidArgument)
        );
        assert_eq!(
            stream_of(&kinesis, (None, None)).map_err(|error| error.kind),
            Err(ErrorKind::InvalidArgument)
        );
        assert_eq!(
            stream_of(&kinesis, (Some("no spaces"), None)).map_err(|error| error.kind),
            Err(ErrorKind::Validation)
        );
        assert_eq!(
            stream_of(&kinesis, (None, Some("orders"))).map_err(|error| error.kind),
            Err(ErrorKind::Validation)
        );
    }

    #[test]
    fn shard_ids_are_read_by_their_number() {
        for given in [
            "shardId-000000000001",
            "shardId-1",
            "shard-1",
            "x-0001",
            "1",
        ] {
            assert_eq!(
                normalized_shard_id(given),
                "shardId-000000000001",
                "{given}"
            );
        }
        assert_eq!(normalized_shard_id("0"), "shardId-000000000000");
        for kept in ["shardId-", "orders", "shardId-1a", "shardId-1000000000000"] {
            assert_eq!(normalized_shard_id(kept), kept);
        }
    }
}
