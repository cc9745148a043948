//! Kinesis sequence numbers.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// A Kinesis sequence number: a decimal string of up to 129 digits, unique within a shard and
/// increasing over time within it.
///
/// Sequence numbers compare as numbers, never as text: `"9" < "10"`. They are not comparable
/// across shards in any meaningful way. Cloning is cheap (the digits are shared).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SequenceNumber(Arc<str>);

/// Text that is not a Kinesis sequence number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a sequence number (decimal digits, no leading zero, at most 129 digits)")]
pub struct InvalidSequenceNumber {
    /// The text that was given.
    pub text: String,
}

impl SequenceNumber {
    /// The digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Builds a sequence number from digits known to be valid (the embedded Kinesis' own).
    pub fn from_valid(digits: impl Into<Arc<str>>) -> Self {
        let digits = digits.into();
        debug_assert!(Self::is_valid(&digits), "{digits}");
        Self(digits)
    }

    fn is_valid(text: &str) -> bool {
        // The API's pattern: 0|([1-9]\d{0,128}).
        let bytes = text.as_bytes();
        match bytes {
            [] => false,
            [b'0'] => true,
            [b'0', ..] => false,
            _ => bytes.len() <= 129 && bytes.iter().all(u8::is_ascii_digit),
        }
    }
}

impl FromStr for SequenceNumber {
    type Err = InvalidSequenceNumber;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if Self::is_valid(text) {
            Ok(Self(Arc::from(text)))
        } else {
            Err(InvalidSequenceNumber {
                text: text.to_owned(),
            })
        }
    }
}

impl Ord for SequenceNumber {
    fn cmp(&self, other: &Self) -> Ordering {
        // Without leading zeros, a longer number is a larger one; equal lengths compare digit by digit.
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.as_bytes().cmp(other.0.as_bytes()))
    }
}

impl PartialOrd for SequenceNumber {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for SequenceNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SequenceNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SequenceNumber({})", self.0)
    }
}

impl serde::Serialize for SequenceNumber {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for SequenceNumber {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_order(smaller: &str, larger: &str) {
        let smaller: SequenceNumber = smaller.parse().unwrap();
        let larger: SequenceNumber = larger.parse().unwrap();
        assert!(smaller < larger, "{smaller} < {larger}");
        assert!(larger > smaller);
    }

    #[test]
    fn compares_as_numbers_not_text() {
        check_order("9", "10");
        check_order("0", "1");
        check_order(
            "49590338271490256608559692538361571095921575989136588898",
            "49590338271490256608559692538361571095921575989136588899",
        );
        check_order(
            "999999999999999999999999999999999999999999",
            "1000000000000000000000000000000000000000000",
        );
    }

    #[track_caller]
    fn check_invalid(text: &str) {
        assert_eq!(
            text.parse::<SequenceNumber>(),
            Err(InvalidSequenceNumber {
                text: text.to_owned()
            })
        );
    }

    #[test]
    fn rejects_what_kinesis_rejects() {
        check_invalid("");
        check_invalid("01");
        check_invalid("12a");
        check_invalid("-1");
        check_invalid(&"1".repeat(130));
        assert!("1".repeat(129).parse::<SequenceNumber>().is_ok());
    }
}
