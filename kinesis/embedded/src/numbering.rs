//! The embedded Kinesis' sequence numbers and shard iterators, and how to read them back.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use kinesis_source::sequence::SequenceNumber;

/// How a stream spells its sequence numbers: 56 digits, as real ones have.
///
/// ```text
/// 49 | stream tag (10) | counter (34) | shard index (10)
/// ```
///
/// The stream tag is the stream's creation time in seconds, so a number from an earlier stream
/// of the same name is recognised as foreign. The counter is shared by all shards of the stream
/// and grows with every record and every reshard, so numbers grow within a shard, and a child
/// shard's numbers exceed its parents'. The shard index comes last: a number names its shard
/// without changing the order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SequenceLayout {
    stream_tag: u64,
    /// The digits every sequence number of the stream starts with: `49` and the stream tag,
    /// then zeros.
    template: [u8; DIGITS],
}

const DIGITS: usize = 56;
const PREFIX: &[u8; 2] = b"49";
const TAG: std::ops::Range<usize> = 2..12;
const COUNTER: std::ops::Range<usize> = 12..46;
const SHARD: std::ops::Range<usize> = 46..56;

impl SequenceLayout {
    /// The layout of a stream created `created_epoch_seconds` after the Unix epoch.
    pub(crate) fn new(created_epoch_seconds: u64) -> Self {
        let stream_tag = created_epoch_seconds % 10_000_000_000;
        let mut template = [b'0'; DIGITS];
        template[..PREFIX.len()].copy_from_slice(PREFIX);
        write_decimal(&mut template[TAG], stream_tag);
        Self {
            stream_tag,
            template,
        }
    }

    /// The sequence number at `counter` in shard `shard_index`.
    pub(crate) fn format(self, counter: u64, shard_index: u32) -> SequenceNumber {
        let mut digits = self.template;
        write_decimal(&mut digits[COUNTER], counter);
        write_decimal(&mut digits[SHARD], u64::from(shard_index));
        let text = std::str::from_utf8(&digits).expect("decimal digits are ASCII");
        SequenceNumber::from_valid(Arc::<str>::from(text))
    }

    /// The counter and shard index of a sequence number of this stream, or `None` when it is
    /// not one of this stream's.
    pub(crate) fn parse(self, sequence_number: &SequenceNumber) -> Option<(u64, u32)> {
        let digits = sequence_number.as_str().as_bytes();
        if digits.len() != DIGITS || &digits[..PREFIX.len()] != PREFIX {
            return None;
        }
        if read_decimal(&digits[TAG])? != u128::from(self.stream_tag) {
            return None;
        }
        let counter = u64::try_from(read_decimal(&digits[COUNTER])?).ok()?;
        let shard_index = u32::try_from(read_decimal(&digits[SHARD])?).ok()?;
        Some((counter, shard_index))
    }
}

/// Writes `value` right-aligned into `out`, which holds zeros: only its significant digits
/// are written. `out` is wide enough for any `u64` it is given: the narrowest field (10 digits)
/// only holds shard indexes and stream tags.
fn write_decimal(out: &mut [u8], mut value: u64) {
    debug_assert!(
        out.iter().all(|&digit| digit == b'0'),
        "the field holds zeros"
    );
    for digit in out.iter_mut().rev() {
        if value == 0 {
            break;
        }
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
    debug_assert_eq!(value, 0, "the field is too narrow for its value");
}

fn read_decimal(digits: &[u8]) -> Option<u128> {
    digits.iter().try_fold(0_u128, |value, &digit| {
        digit
            .is_ascii_digit()
            .then(|| value.checked_mul(10)?.checked_add(u128::from(digit - b'0')))
            .flatten()
    })
}

/// Where an iterator reads from: the first record of the shard whose counter is at least
/// `counter` and whose arrival (in ms) is at least `arrival_ms`.
///
/// The records that meet both conditions form a suffix of the shard, because counters and
/// arrival times both grow along it: one binary search finds where that suffix starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub(crate) counter: u64,
    pub(crate) arrival_ms: u64,
}

/// What a shard iterator carries. It is handed out as opaque base64 text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IteratorToken {
    /// Which incarnation of the stream it was issued for: a stream deleted and created again
    /// under the same name does not honour the old one's iterators.
    pub(crate) stream_generation: u64,
    pub(crate) stream_name: String,
    pub(crate) shard_index: u32,
    pub(crate) cursor: Cursor,
    /// When the iterator was issued, in ms since the Unix epoch.
    pub(crate) issued_ms: u64,
}

const TOKEN_VERSION: u8 = 1;
const TOKEN_HEADER: usize = 1 + 8 + 4 + 8 + 8 + 8;

impl IteratorToken {
    /// The iterator's text.
    pub(crate) fn encode(&self) -> String {
        let mut bytes = Vec::with_capacity(TOKEN_HEADER + self.stream_name.len());
        bytes.push(TOKEN_VERSION);
        bytes.extend_from_slice(&self.stream_generation.to_be_bytes());
        bytes.extend_from_slice(&self.shard_index.to_be_bytes());
        bytes.extend_from_slice(&self.cursor.counter.to_be_bytes());
        bytes.extend_from_slice(&self.cursor.arrival_ms.to_be_bytes());
        bytes.extend_from_slice(&self.issued_ms.to_be_bytes());
        bytes.extend_from_slice(self.stream_name.as_bytes());
        BASE64.encode(bytes)
    }

    /// Reads an iterator's text back, or `None` when it is not one this Kinesis issued.
    pub(crate) fn decode(text: &str) -> Option<Self> {
        let bytes = BASE64.decode(text).ok()?;
        if bytes.len() <= TOKEN_HEADER || bytes[0] != TOKEN_VERSION {
            return None;
        }
        let mut rest = &bytes[1..TOKEN_HEADER];
        let mut take = |width: usize| {
            let (head, tail) = rest.split_at(width);
            rest = tail;
            head.iter()
                .fold(0_u64, |value, &byte| value << 8 | u64::from(byte))
        };
        let stream_generation = take(8);
        let shard_index = u32::try_from(take(4)).ok()?;
        let counter = take(8);
        let arrival_ms = take(8);
        let issued_ms = take(8);
        let stream_name = String::from_utf8(bytes[TOKEN_HEADER..].to_vec()).ok()?;
        Some(Self {
            stream_generation,
            stream_name,
            shard_index,
            cursor: Cursor {
                counter,
                arrival_ms,
            },
            issued_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_look_real_and_read_back() {
        let layout = SequenceLayout::new(1_718_000_000);
        let sequence_number = layout.format(42, 7);
        assert_eq!(
            sequence_number.as_str(),
            "49171800000000000000000000000000000000000000420000000007"
        );
        assert_eq!(layout.parse(&sequence_number), Some((42, 7)));
        assert_eq!(
            layout.format(0, 0).as_str(),
            "49171800000000000000000000000000000000000000000000000000"
        );
        assert_eq!(
            layout.parse(&layout.format(u64::MAX, u32::MAX)),
            Some((u64::MAX, u32::MAX))
        );
    }

    #[test]
    fn sequence_numbers_of_other_streams_are_foreign() {
        let layout = SequenceLayout::new(1_718_000_000);
        let other_stream = SequenceLayout::new(1_718_000_001).format(42, 7);
        assert_eq!(layout.parse(&other_stream), None);
        for text in ["0", "42", &"9".repeat(56), &"4".repeat(57)] {
            assert_eq!(layout.parse(&text.parse().unwrap()), None, "{text}");
        }
    }

    #[test]
    fn later_counters_compare_greater_whatever_the_shard() {
        let layout = SequenceLayout::new(1_718_000_000);
        assert!(layout.format(9, 5) < layout.format(10, 0));
        assert!(layout.format(10, 0) < layout.format(10, 1));
    }

    #[test]
    fn iterators_read_back_and_reject_garbage() {
        let token = IteratorToken {
            stream_generation: 3,
            stream_name: "orders.v1".to_owned(),
            shard_index: 12,
            cursor: Cursor {
                counter: 1 << 40,
                arrival_ms: 1_718_000_000_123,
            },
            issued_ms: 1_718_000_000_456,
        };
        assert_eq!(IteratorToken::decode(&token.encode()), Some(token));
        for garbage in ["", "not base64!", "AAAA", &BASE64.encode([9_u8; 60])] {
            assert_eq!(IteratorToken::decode(garbage), None, "{garbage}");
        }
    }
}
