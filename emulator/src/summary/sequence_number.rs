//! Sequence numbers and checkpoints as tables show them: shortened, with their distinguishing
//! tail kept.

use std::borrow::Cow;

use esm_engine::lease::Checkpoint;

/// Digits a sequence number keeps in front of the ellipsis.
const HEAD_DIGITS: usize = 4;
/// Digits a sequence number keeps at its end, at least.
const TAIL_DIGITS: usize = 8;
/// The shortest run of zeros taken for the padding between two fields of a sequence number.
const PADDING_ZEROS: usize = 6;

/// A sequence number as tables show it: its first 4 digits, an ellipsis, and its distinguishing
/// tail. Numbers made of zero-padded fields (the embedded Kinesis': stream, counter, shard) keep
/// every digit after their last padding of 6 or more zeros that ends before the final 8 digits,
/// so that the counter which tells one record from the next stays in view
/// (`4917…120000000003`); any other number keeps its final 8 digits (`4959…36588898`), where a
/// real Kinesis' numbers differ. A number of 20 digits or fewer is shown whole.
pub fn short_sequence_number(digits: &str) -> Cow<'_, str> {
    const SHORT_ENOUGH: usize = 20;
    if digits.len() <= SHORT_ENOUGH || !digits.is_ascii() {
        return Cow::Borrowed(digits);
    }
    let bytes = digits.as_bytes();
    let tail_limit = digits.len() - TAIL_DIGITS;
    let mut tail_start = tail_limit;
    let mut index = HEAD_DIGITS;
    while index < tail_limit {
        if bytes[index] != b'0' {
            index += 1;
            continue;
        }
        let run_start = index;
        while index < bytes.len() && bytes[index] == b'0' {
            index += 1;
        }
        // A run that reaches into the final digits pads the last field: the tail keeps it.
        if index - run_start >= PADDING_ZEROS && index <= tail_limit {
            tail_start = index;
        }
    }
    Cow::Owned(format!(
        "{}…{}",
        &digits[..HEAD_DIGITS],
        &digits[tail_start..]
    ))
}

/// A checkpoint as tables show it: a sequence number shortened, a sentinel as it is, `-` for none.
pub fn checkpoint_cell(checkpoint: Option<&Checkpoint>) -> String {
    match checkpoint {
        Some(Checkpoint::SequenceNumber(number)) => {
            short_sequence_number(number.as_str()).into_owned()
        }
        Some(other) => other.to_string(),
        None => "-".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use kinesis_source::sequence::SequenceNumber;

    use super::*;

    /// An embedded Kinesis sequence number: `49`, stream tag, counter (34 digits), shard index.
    fn embedded(counter: u64, shard: u32) -> String {
        format!("49{:010}{counter:034}{shard:010}", 1_764_650_000_u64)
    }

    fn sequence_number(text: &str) -> SequenceNumber {
        text.parse().expect("a sequence number")
    }

    #[test]
    fn an_embedded_sequence_number_keeps_its_counter_and_shard() {
        assert_eq!(short_sequence_number(&embedded(12, 3)), "4917…120000000003");
        // Trailing zeros of the counter run into the shard's padding: the tail keeps them.
        assert_eq!(
            short_sequence_number(&embedded(1200, 3)),
            "4917…12000000000003"
        );
        assert_eq!(
            short_sequence_number(&embedded(123_456_789, 0)),
            "4917…1234567890000000000"
        );
        // Consecutive records stay apart.
        assert_ne!(
            short_sequence_number(&embedded(41, 0)),
            short_sequence_number(&embedded(42, 0))
        );
    }

    #[test]
    fn another_sequence_number_keeps_its_last_eight_digits() {
        assert_eq!(
            short_sequence_number("49590338271490256608559692538361571095921575989136588898"),
            "4959…36588898"
        );
        assert_eq!(
            short_sequence_number("49590338271490256608559692540925702759324208523137515618"),
            "4959…37515618"
        );
    }

    #[test]
    fn a_short_number_or_a_sentinel_is_shown_whole() {
        assert_eq!(
            short_sequence_number("12345678901234567890"),
            "12345678901234567890"
        );
        assert_eq!(
            checkpoint_cell(Some(&Checkpoint::TrimHorizon)),
            "TRIM_HORIZON"
        );
        assert_eq!(checkpoint_cell(Some(&Checkpoint::ShardEnd)), "SHARD_END");
        assert_eq!(checkpoint_cell(None), "-");
        assert_eq!(
            checkpoint_cell(Some(&Checkpoint::SequenceNumber(sequence_number(
                &embedded(7, 1)
            )))),
            "4917…70000000001"
        );
    }
}
