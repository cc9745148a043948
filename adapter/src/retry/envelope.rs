//! The envelope a held record travels in to the retry or the dead-letter stream, and its JSON.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// The envelope format's version, written in `lambdaKinesisEnvelope`. A reader refuses any other.
pub const ENVELOPE_VERSION: u32 = 1;

/// Where a record first arrived: its stream, shard, position, key and arrival time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    /// The stream's name.
    pub stream: String,
    /// The shard it was read from.
    pub shard_id: String,
    /// Its sequence number in that shard.
    pub sequence_number: String,
    /// Its position in a KPL aggregate (0 for a plain record).
    #[serde(default)]
    pub sub_sequence_number: u64,
    /// The partition key its producer gave it; the retry and dead-letter records keep it.
    pub partition_key: String,
    /// When Kinesis accepted it, in milliseconds since the epoch.
    pub arrival_millis: i64,
}

/// A held record on its way to the retry or the dead-letter stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// Always [`ENVELOPE_VERSION`].
    pub lambda_kinesis_envelope: u32,
    /// How many times the record has been sent to the retry stream, this time included (1 for
    /// the first retry). In the dead-letter stream, the retries it had.
    pub attempt: u32,
    /// Why it was held the last time, in words (the handler's error, a panic's message, ...).
    pub reason: String,
    /// When it was held the last time, in milliseconds since the epoch.
    pub held_at_millis: i64,
    /// Not to be handled before this time (milliseconds since the epoch), when the adapter has a
    /// retry delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at_millis: Option<i64>,
    /// Where the record first arrived.
    pub origin: Origin,
    /// The record's data, as its producer wrote it (base64 in the JSON).
    #[serde(with = "base64_bytes")]
    pub data: Vec<u8>,
}

/// Why bytes are not an envelope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnvelopeError {
    /// Not JSON of the envelope's shape.
    #[error("not a lambda-kinesis retry envelope: {0}")]
    Malformed(String),
    /// An envelope of another format version.
    #[error(
        "a retry envelope of format version {found}; this release reads version {ENVELOPE_VERSION}"
    )]
    Version {
        /// The version it has.
        found: u32,
    },
}

impl Envelope {
    /// Reads an envelope from a record's data.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, EnvelopeError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Version {
            lambda_kinesis_envelope: u32,
        }
        let version: Version = serde_json::from_slice(bytes)
            .map_err(|error| EnvelopeError::Malformed(error.to_string()))?;
        if version.lambda_kinesis_envelope != ENVELOPE_VERSION {
            return Err(EnvelopeError::Version {
                found: version.lambda_kinesis_envelope,
            });
        }
        serde_json::from_slice(bytes).map_err(|error| EnvelopeError::Malformed(error.to_string()))
    }

    /// The envelope as a record's data.
    pub fn to_vec(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an envelope serializes")
    }
}

/// Milliseconds since the epoch (negative before it).
pub fn millis_since_epoch(time: SystemTime) -> i64 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}
