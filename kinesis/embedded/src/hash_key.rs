//! Hash keys: where a record lands in the 128-bit hash key space.

use md5::{Digest, Md5};

use kinesis_source::{HashKeyRange, SourceError};

/// The hash key of a partition key: its MD5 digest read as a big-endian 128-bit number.
pub(crate) fn of_partition_key(partition_key: &str) -> u128 {
    u128::from_be_bytes(Md5::digest(partition_key.as_bytes()).into())
}

/// Parses a hash key given as decimal text (`ExplicitHashKey`, `NewStartingHashKey`): the API's
/// pattern `0|([1-9]\d{0,38})`, and a value that fits in 128 bits.
pub(crate) fn parse(text: &str, field: &str) -> Result<u128, SourceError> {
    let digits_only = !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    let leading_zero = text.len() > 1 && text.starts_with('0');
    match text.parse::<u128>() {
        Ok(hash_key) if digits_only && !leading_zero => Ok(hash_key),
        _ => Err(SourceError::InvalidArgument {
            message: format!(
                "Invalid {field}. {field} must be a decimal number in the range [0, 2^128-1]. \
                 Specified value was `{text}`."
            ),
        }),
    }
}

/// The hash key ranges of `count` shards that split the whole space evenly, as `CreateStream`
/// and `UpdateShardCount` lay them out: shard `i` starts at `floor(i * 2^128 / count)` and ends
/// where the next one starts; the last ends at `2^128 - 1`.
pub(crate) fn uniform_ranges(count: u32) -> Vec<HashKeyRange> {
    let count = u128::from(count.max(1));
    // 2^128 = quotient * count + remainder, with 1 <= remainder <= count. Then
    // floor(i * 2^128 / count) = quotient * i + floor(remainder * i / count), where neither
    // product can overflow since i < count <= 2^32.
    let quotient = u128::MAX / count;
    let remainder = u128::MAX % count + 1;
    let boundary = |i: u128| quotient * i + remainder * i / count;
    (0..count)
        .map(|i| HashKeyRange {
            starting_hash_key: boundary(i),
            ending_hash_key: if i + 1 == count {
                u128::MAX
            } else {
                boundary(i + 1) - 1
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_ranges(count: u32, expected: &[(&str, &str)]) {
        let actual: Vec<(String, String)> = uniform_ranges(count)
            .iter()
            .map(|range| {
                (
                    range.starting_hash_key.to_string(),
                    range.ending_hash_key.to_string(),
                )
            })
            .collect();
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(start, end)| ((*start).to_owned(), (*end).to_owned()))
            .collect();
        assert_eq!(actual, expected);
    }

    #[test]
    fn uniform_ranges_match_what_kinesis_creates() {
        check_ranges(1, &[("0", "340282366920938463463374607431768211455")]);
        check_ranges(
            2,
            &[
                ("0", "170141183460469231731687303715884105727"),
                (
                    "170141183460469231731687303715884105728",
                    "340282366920938463463374607431768211455",
                ),
            ],
        );
        // The three-shard layout as ListShards shows it for a stream created with three shards.
        check_ranges(
            3,
            &[
                ("0", "113427455640312821154458202477256070484"),
                (
                    "113427455640312821154458202477256070485",
                    "226854911280625642308916404954512140969",
                ),
                (
                    "226854911280625642308916404954512140970",
                    "340282366920938463463374607431768211455",
                ),
            ],
        );
    }

    #[test]
    fn uniform_ranges_tile_the_space() {
        for count in [1, 4, 7, 10, 64, 1000] {
            let ranges = uniform_ranges(count);
            assert_eq!(ranges.len(), count as usize);
            assert_eq!(ranges[0].starting_hash_key, 0);
            assert_eq!(ranges[ranges.len() - 1].ending_hash_key, u128::MAX);
            for pair in ranges.windows(2) {
                assert_eq!(pair[0].ending_hash_key + 1, pair[1].starting_hash_key);
            }
        }
    }

    #[test]
    fn partition_keys_hash_by_md5() {
        // MD5("a") = 0cc175b9c0f1b6a831c399e269772661, MD5("") = d41d8cd98f00b204e9800998ecf8427e.
        assert_eq!(
            of_partition_key("a"),
            0x0cc175b9c0f1b6a831c399e269772661_u128
        );
        assert_eq!(
            of_partition_key(""),
            0xd41d8cd98f00b204e9800998ecf8427e_u128
        );
    }

    #[track_caller]
    fn check_parse(text: &str, expected: Option<u128>) {
        assert_eq!(parse(text, "ExplicitHashKey").ok(), expected, "{text:?}");
    }

    #[test]
    fn hash_keys_parse_as_the_api_pattern_says() {
        check_parse("0", Some(0));
        check_parse("42", Some(42));
        check_parse("340282366920938463463374607431768211455", Some(u128::MAX));
        check_parse("340282366920938463463374607431768211456", None);
        check_parse("", None);
        check_parse("007", None);
        check_parse("+7", None);
        check_parse("-7", None);
        check_parse("7a", None);
    }
}
