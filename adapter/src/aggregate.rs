//! KPL-aggregated records: many user records packed into one Kinesis record by the Kinesis
//! Producer Library (KPL) and the libraries compatible with it. The format and the rules the
//! adapter follows are in `docs/kpl-aggregation.md`.
//!
//! An aggregate is the magic `F3 89 9A C2`, a protobuf `AggregatedRecord` message, and the MD5
//! digest of that message (16 bytes). The message is read here by hand: it has three small proto2
//! messages, and a reader of them is shorter than the build of a protobuf code generator, and
//! borrows every key and every user record's data from the record's bytes.
//!
//! The adapter unpacks aggregates itself: a handler gets each user record on its own, with its
//! own partition key, explicit hash key and sub-sequence number in
//! [`RecordMeta`](crate::RecordMeta). A response can only name a Kinesis record, so when a user
//! record is held the response names its aggregate, and Lambda delivers the whole aggregate
//! again: the user records in front of the held one come again. Key idempotency on the shard id,
//! the sequence number **and** the sub-sequence number. A damaged aggregate is a
//! [`UndecodableRecord`](crate::settlement::UndecodableRecord) whose failure is
//! [`CorruptAggregate`](crate::settlement::DecodeFailure::CorruptAggregate), and
//! [`Settlement::cut`](crate::settlement::Settlement::cut) names the aggregate's first user record.
//!
//! [`decode`] reads an aggregate into its [`UserRecord`]s; [`Aggregate`] writes one (for tests,
//! and for `kinesis-esm put --aggregate`).

use std::collections::HashMap;
use std::fmt;

use md5::{Digest as _, Md5};

/// The four bytes every aggregate starts with.
pub const MAGIC: [u8; 4] = [0xF3, 0x89, 0x9A, 0xC2];

/// The length of the MD5 digest that ends an aggregate.
const DIGEST_LEN: usize = 16;

/// The largest aggregate the KPL and the aggregation libraries write (magic, message and
/// digest): 1 MiB, a Kinesis record's historical limit.
pub const MAX_AGGREGATE_BYTES: usize = 1024 * 1024;

/// The first characters of an aggregate's data in standard base64: `F3 89 9A` is `84ma`, and the
/// top six bits of `C2` are `w`. Data whose base64 does not start so is not an aggregate, which
/// lets plain records be told apart without decoding them.
pub(crate) const MAGIC_BASE64_PREFIX: &str = "84maw";

/// One user record of an aggregate, borrowed from the aggregate's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRecord<'a> {
    /// The partition key the producer gave this user record.
    pub partition_key: &'a str,
    /// The explicit hash key the producer gave it (a decimal 128-bit number), if any.
    pub explicit_hash_key: Option<&'a str>,
    /// The user record's data.
    pub data: &'a [u8],
}

/// Why bytes that start with the aggregate magic are not a readable aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AggregateError {
    /// Too short to hold a message and its digest.
    Truncated,
    /// The MD5 digest does not match the message: the bytes were damaged.
    DigestMismatch,
    /// The message is not a valid `AggregatedRecord`; says what was wrong.
    Malformed(&'static str),
    /// The message is valid but holds no user record.
    Empty,
}

impl fmt::Display for AggregateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => f.write_str("too short for a message and its MD5 digest"),
            Self::DigestMismatch => f.write_str("the MD5 digest does not match the message"),
            Self::Malformed(what) => write!(f, "the protobuf message is malformed: {what}"),
            Self::Empty => f.write_str("it holds no user record"),
        }
    }
}

impl std::error::Error for AggregateError {}

/// Whether `data` starts with the aggregate magic (and so must be read as an aggregate).
pub fn is_aggregate(data: &[u8]) -> bool {
    data.starts_with(&MAGIC)
}

/// Reads the user records of an aggregate, in the order the producer added them (their
/// sub-sequence numbers are their positions). `data` must start with [`MAGIC`]; see
/// [`is_aggregate`].
pub fn decode(data: &[u8]) -> Result<Vec<UserRecord<'_>>, AggregateError> {
    debug_assert!(is_aggregate(data));
    let body = &data[MAGIC.len().min(data.len())..];
    if body.len() <= DIGEST_LEN {
        return Err(AggregateError::Truncated);
    }
    let (message, digest) = body.split_at(body.len() - DIGEST_LEN);
    if Md5::digest(message).as_slice() != digest {
        return Err(AggregateError::DigestMismatch);
    }
    let mut partition_keys = Vec::new();
    let mut explicit_hash_keys = Vec::new();
    let mut records = Vec::new();
    let mut reader = Reader(message);
    while let Some((field, value)) = reader.field()? {
        match (field, value) {
            (1, Value::Bytes(key)) => partition_keys.push(utf8(key)?),
            (2, Value::Bytes(key)) => explicit_hash_keys.push(utf8(key)?),
            (3, Value::Bytes(record)) => records.push(record),
            (1..=3, _) => return Err(malformed("a field of AggregatedRecord has the wrong type")),
            _ => {} // unknown fields are skipped, as protobuf readers do
        }
    }
    if records.is_empty() {
        return Err(AggregateError::Empty);
    }
    records
        .into_iter()
        .map(|record| user_record(record, &partition_keys, &explicit_hash_keys))
        .collect()
}

/// Reads one `Record` message and looks its keys up in the aggregate's tables.
fn user_record<'a>(
    message: &'a [u8],
    partition_keys: &[&'a str],
    explicit_hash_keys: &[&'a str],
) -> Result<UserRecord<'a>, AggregateError> {
    let mut partition_key_index = None;
    let mut explicit_hash_key_index = None;
    let mut data = None;
    let mut reader = Reader(message);
    while let Some((field, value)) = reader.field()? {
        match (field, value) {
            (1, Value::Varint(index)) => partition_key_index = Some(index),
            (2, Value::Varint(index)) => explicit_hash_key_index = Some(index),
            (3, Value::Bytes(bytes)) => data = Some(bytes),
            (1..=3, _) => return Err(malformed("a field of Record has the wrong type")),
            _ => {} // tags (field 4) and unknown fields
        }
    }
    let lookup = |table: &[&'a str], index: u64| {
        usize::try_from(index)
            .ok()
            .and_then(|index| table.get(index).copied())
    };
    let partition_key_index =
        partition_key_index.ok_or(malformed("a Record has no partition_key_index"))?;
    let partition_key = lookup(partition_keys, partition_key_index).ok_or(malformed(
        "a Record's partition_key_index is outside the partition key table",
    ))?;
    let explicit_hash_key = match explicit_hash_key_index {
        None => None,
        Some(index) => Some(lookup(explicit_hash_keys, index).ok_or(malformed(
            "a Record's explicit_hash_key_index is outside the explicit hash key table",
        ))?),
    };
    Ok(UserRecord {
        partition_key,
        explicit_hash_key,
        data: data.ok_or(malformed("a Record has no data"))?,
    })
}

fn malformed(what: &'static str) -> AggregateError {
    AggregateError::Malformed(what)
}

fn utf8(bytes: &[u8]) -> Result<&str, AggregateError> {
    std::str::from_utf8(bytes).map_err(|_| malformed("a key is not UTF-8"))
}

/// A field's value, by protobuf wire type.
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// Reads protobuf fields off the front of a message.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// The next field's number and value, or `None` at the end of the message.
    fn field(&mut self) -> Result<Option<(u64, Value<'a>)>, AggregateError> {
        if self.0.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => self.skip(8).map(|()| Value::Fixed)?,
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| malformed("a length is too large"))?;
                let bytes = self
                    .0
                    .get(..len)
                    .ok_or(malformed("a length runs past the end"))?;
                self.0 = &self.0[len..];
                Value::Bytes(bytes)
            }
            5 => self.skip(4).map(|()| Value::Fixed)?,
            _ => return Err(malformed("an unsupported wire type")),
        };
        Ok(Some((key >> 3, value)))
    }

    fn skip(&mut self, len: usize) -> Result<(), AggregateError> {
        self.0 = self
            .0
            .get(len..)
            .ok_or(malformed("a fixed-size field runs past the end"))?;
        Ok(())
    }

    fn varint(&mut self) -> Result<u64, AggregateError> {
        let mut value = 0_u64;
        for (index, &byte) in self.0.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte & 0x80 == 0 {
                self.0 = &self.0[index + 1..];
                return Ok(value);
            }
        }
        Err(malformed("a varint is cut off or too long"))
    }
}

/// An aggregate under construction, written as the KPL writes one: keys are stored once in the
/// key tables, and the outer record takes the first user record's keys.
///
/// ```
/// use lambda_kinesis::aggregate::{self, Aggregate};
///
/// let mut aggregate = Aggregate::new();
/// aggregate.add("order-1", None, br#"{"id":1}"#);
/// aggregate.add("order-2", Some("42"), br#"{"id":2}"#);
/// let bytes = aggregate.to_bytes();
/// let records = aggregate::decode(&bytes).unwrap();
/// assert_eq!(records[1].explicit_hash_key, Some("42"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    partition_keys: Vec<String>,
    explicit_hash_keys: Vec<String>,
    partition_key_index: HashMap<String, u64>,
    explicit_hash_key_index: HashMap<String, u64>,
    /// The encoded `Record` messages, each with its field key and length in front.
    records: Vec<u8>,
    count: usize,
    first_has_explicit_hash_key: bool,
    /// The encoded length of the key tables.
    tables_len: usize,
}

impl Aggregate {
    /// An empty aggregate.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many user records it holds.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether it holds no user record.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The partition key of the outer Kinesis record: the first user record's.
    pub fn partition_key(&self) -> Option<&str> {
        self.partition_keys.first().map(String::as_str)
    }

    /// The explicit hash key of the outer Kinesis record: the first user record's, if it has one.
    pub fn explicit_hash_key(&self) -> Option<&str> {
        // The first user record's explicit hash key, when it has one, is the table's first.
        self.first_has_explicit_hash_key
            .then(|| self.explicit_hash_keys[0].as_str())
    }

    /// The size of the aggregate's bytes (magic, message and digest) were this user record
    /// added: what a producer compares with [`MAX_AGGREGATE_BYTES`] before adding it.
    pub fn size_with(
        &self,
        partition_key: &str,
        explicit_hash_key: Option<&str>,
        data: &[u8],
    ) -> usize {
        let (new_tables, record) = self.costs(partition_key, explicit_hash_key, data);
        self.size() + new_tables + record
    }

    /// The size of the aggregate's bytes: magic, message and digest.
    pub fn size(&self) -> usize {
        MAGIC.len() + self.tables_len + self.records.len() + DIGEST_LEN
    }

    /// What adding a user record adds: to the key tables, and as a `Record` field.
    fn costs(
        &self,
        partition_key: &str,
        explicit_hash_key: Option<&str>,
        data: &[u8],
    ) -> (usize, usize) {
        let table_entry = |len: usize| 1 + varint_len(len as u64) + len;
        let mut tables = 0;
        let partition_key_index = match self.partition_key_index.get(partition_key) {
            Some(&index) => index,
            None => {
                tables += table_entry(partition_key.len());
                self.partition_keys.len() as u64
            }
        };
        let mut body = 1 + varint_len(partition_key_index) + table_entry(data.len());
        if let Some(key) = explicit_hash_key {
            let index = match self.explicit_hash_key_index.get(key) {
                Some(&index) => index,
                None => {
                    tables += table_entry(key.len());
                    self.explicit_hash_keys.len() as u64
                }
            };
            body += 1 + varint_len(index);
        }
        (tables, table_entry(body))
    }

    /// Adds a user record.
    pub fn add(&mut self, partition_key: &str, explicit_hash_key: Option<&str>, data: &[u8]) {
        let (new_tables, _) = self.costs(partition_key, explicit_hash_key, data);
        self.tables_len += new_tables;
        if self.count == 0 {
            self.first_has_explicit_hash_key = explicit_hash_key.is_some();
        }
        let partition_key_index = index_of(
            &mut self.partition_keys,
            &mut self.partition_key_index,
            partition_key,
        );
        let explicit_hash_key_index = explicit_hash_key.map(|key| {
            index_of(
                &mut self.explicit_hash_keys,
                &mut self.explicit_hash_key_index,
                key,
            )
        });
        let mut body = Vec::with_capacity(data.len() + 16);
        body.push(1 << 3); // partition_key_index, varint
        write_varint(&mut body, partition_key_index);
        if let Some(index) = explicit_hash_key_index {
            body.push(2 << 3); // explicit_hash_key_index, varint
            write_varint(&mut body, index);
        }
        write_bytes_field(&mut body, 3, data);
        write_bytes_field(&mut self.records, 3, &body);
        self.count += 1;
    }

    /// The aggregate's bytes: magic, message, MD5 digest of the message.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size());
        out.extend_from_slice(&MAGIC);
        for key in &self.partition_keys {
            write_bytes_field(&mut out, 1, key.as_bytes());
        }
        for key in &self.explicit_hash_keys {
            write_bytes_field(&mut out, 2, key.as_bytes());
        }
        out.extend_from_slice(&self.records);
        let digest = Md5::digest(&out[MAGIC.len()..]);
        out.extend_from_slice(&digest);
        debug_assert_eq!(out.len(), self.size());
        out
    }
}

/// The index of `key` in `table`, adding it when it is not there.
fn index_of(table: &mut Vec<String>, index: &mut HashMap<String, u64>, key: &str) -> u64 {
    if let Some(&at) = index.get(key) {
        return at;
    }
    let at = table.len() as u64;
    table.push(key.to_owned());
    index.insert(key.to_owned(), at);
    at
}

fn write_bytes_field(out: &mut Vec<u8>, field: u8, bytes: &[u8]) {
    out.push(field << 3 | 2);
    write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn varint_len(value: u64) -> usize {
    (64 - value.max(1).leading_zeros() as usize).div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by the Python `aws-kinesis-agg` 1.2.3 aggregator: `k1`/`hello` without an
    /// explicit hash key, then `k2`/empty data with explicit hash key `12345`.
    const FROM_PYTHON: &str = "f3899ac20a026b310a026b32120531323334351a0908001a0568656c6c6f1a06080110001a00477d6e5b9dc90fff0b6ffdd6992c1ab2";

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|at| u8::from_str_radix(&text[at..at + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn reads_an_aggregate_another_library_wrote() {
        let bytes = hex(FROM_PYTHON);
        assert!(is_aggregate(&bytes));
        let records = decode(&bytes).unwrap();
        assert_eq!(
            records,
            [
                UserRecord {
                    partition_key: "k1",
                    explicit_hash_key: None,
                    data: b"hello"
                },
                UserRecord {
                    partition_key: "k2",
                    explicit_hash_key: Some("12345"),
                    data: b""
                },
            ]
        );
    }

    #[test]
    fn writes_what_the_kpl_format_says_byte_for_byte() {
        let mut aggregate = Aggregate::new();
        aggregate.add("k1", None, b"hello");
        aggregate.add("k2", Some("12345"), b"");
        assert_eq!(aggregate.to_bytes(), hex(FROM_PYTHON));
        assert_eq!(aggregate.partition_key(), Some("k1"));
        assert_eq!(aggregate.explicit_hash_key(), None);
    }

    #[test]
    fn keys_are_stored_once_and_records_keep_their_order() {
        let mut aggregate = Aggregate::new();
        let data: Vec<Vec<u8>> = (0..300_u32).map(|n| n.to_string().into_bytes()).collect();
        for (n, data) in data.iter().enumerate() {
            let key = format!("key-{}", n % 3);
            let hash_key = (n % 2 == 0).then(|| format!("{}", n % 4));
            let expected = aggregate.size_with(&key, hash_key.as_deref(), data);
            aggregate.add(&key, hash_key.as_deref(), data);
            assert_eq!(aggregate.size(), expected);
        }
        let bytes = aggregate.to_bytes();
        assert_eq!(bytes.len(), aggregate.size());
        assert_eq!(aggregate.partition_keys.len(), 3);
        assert_eq!(aggregate.explicit_hash_keys.len(), 2);
        assert_eq!(aggregate.explicit_hash_key(), Some("0"));
        let records = decode(&bytes).unwrap();
        assert_eq!(records.len(), 300);
        for (n, record) in records.iter().enumerate() {
            assert_eq!(record.data, data[n].as_slice());
            assert_eq!(record.partition_key, format!("key-{}", n % 3));
            assert_eq!(
                record.explicit_hash_key.map(str::to_owned),
                (n % 2 == 0).then(|| format!("{}", n % 4))
            );
        }
    }

    #[test]
    fn large_data_needs_long_varints() {
        let mut aggregate = Aggregate::new();
        let data = vec![7_u8; 200_000];
        aggregate.add("k", None, &data);
        let bytes = aggregate.to_bytes();
        assert_eq!(decode(&bytes).unwrap()[0].data, data.as_slice());
        for value in [0, 1, 127, 128, 16_383, 16_384, u64::MAX] {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            assert_eq!(out.len(), varint_len(value), "{value}");
            assert_eq!(Reader(&out).varint().unwrap(), value);
        }
    }

    /// An aggregate of `message` with a correct digest.
    fn sealed(message: &[u8]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(message);
        out.extend_from_slice(&Md5::digest(message));
        out
    }

    #[test]
    fn damaged_aggregates_say_what_is_wrong() {
        let mut damaged = hex(FROM_PYTHON);
        damaged[10] ^= 1;
        assert_eq!(decode(&damaged), Err(AggregateError::DigestMismatch));
        assert_eq!(decode(&MAGIC), Err(AggregateError::Truncated));
        assert_eq!(
            decode(&[&MAGIC[..], &[0; 16]].concat()),
            Err(AggregateError::Truncated)
        );
        assert_eq!(decode(&sealed(b"\x0a\x01k")), Err(AggregateError::Empty));
        for (message, what) in [
            (&b"\x0a\x05k"[..], "a length runs past the end"),
            (b"\x1a\x02\x08", "a length runs past the end"),
            (b"\x1a\x02\x08\x80", "a varint is cut off or too long"),
            (b"\x0b", "an unsupported wire type"),
            (
                b"\x08\x01",
                "a field of AggregatedRecord has the wrong type",
            ),
            (b"\x1a\x02\x1a\x00", "a Record has no partition_key_index"),
            (
                b"\x1a\x02\x08\x00",
                "a Record's partition_key_index is outside the partition key table",
            ),
            (
                b"\x0a\x01k\x1a\x04\x08\x00\x10\x00",
                "a Record's explicit_hash_key_index is outside the explicit hash key table",
            ),
            (b"\x0a\x01k\x1a\x02\x08\x00", "a Record has no data"),
            (
                b"\x0a\x01\xff\x1a\x04\x08\x00\x1a\x00",
                "a key is not UTF-8",
            ),
        ] {
            assert_eq!(
                decode(&sealed(message)),
                Err(AggregateError::Malformed(what)),
                "{message:?}"
            );
        }
    }

    #[test]
    fn tags_and_unknown_fields_are_skipped() {
        // A Record with a tag (field 4) and fixed-size unknown fields, in an aggregate with an
        // unknown varint field.
        let message = b"\x0a\x01k\x28\x05\x1a\x13\x08\x00\x1a\x01x\x22\x03\x0a\x01t\x31\x01\x02\x03\x04\x05\x06\x07\x08";
        let bytes = sealed(message);
        let records = decode(&bytes).unwrap();
        assert_eq!(records[0].data, b"x");
        assert_eq!(records[0].partition_key, "k");
    }

    #[test]
    fn the_base64_prefix_is_the_magic() {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(hex(FROM_PYTHON));
        assert!(encoded.starts_with(MAGIC_BASE64_PREFIX));
        for byte in 0..=255_u8 {
            let encoded =
                base64::engine::general_purpose::STANDARD.encode([0xF3, 0x89, 0x9A, 0xC2, byte]);
            assert!(encoded.starts_with(MAGIC_BASE64_PREFIX));
        }
    }
}
