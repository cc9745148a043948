//! Reading a [`KinesisBatch`] through serde, as `lambda_runtime` reads every event.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::kinesis_batch::KinesisBatch;

/// Reads a Lambda Kinesis event from JSON (serde_json's `Deserializer` or `Value`; the `Records`
/// array is taken whole, as a `RawValue`, which only serde_json provides).
///
/// Under [`ReadBatchLayer`](super::pre_read::ReadBatchLayer), the batch that layer already read
/// from the invocation's bytes is taken instead, and the deserializer is left unread.
impl<'de> Deserialize<'de> for KinesisBatch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if let Some(batch) = super::pre_read::take() {
            return Ok(batch);
        }
        deserializer.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = KinesisBatch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kinesis event: an object with a `Records` array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KinesisBatch, A::Error> {
        let mut batch = None;
        while let Some(IsRecords(is_records)) = map.next_key()? {
            match is_records {
                true if batch.is_some() => return Err(de::Error::duplicate_field("Records")),
                true => batch = Some(map.next_value_seed(RecordsSeed)?),
                false => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        batch.ok_or_else(|| de::Error::missing_field("Records"))
    }
}

/// Whether a key of the event is `Records`. It is read as a string identifier (not as an enum
/// variant, as serde's derive would), so that `serde_path_to_error` sees the key and an error
/// in the records is reported at the path `Records`.
struct IsRecords(bool);

impl<'de> Deserialize<'de> for IsRecords {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = IsRecords;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<IsRecords, E> {
                Ok(IsRecords(key == "Records"))
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// The `Records` array, read whole and then scanned; an error in it is raised while the value is
/// read, so that an error path (`serde_path_to_error`, as `lambda_runtime` reports it) says
/// `Records`.
struct RecordsSeed;

impl<'de> DeserializeSeed<'de> for RecordsSeed {
    type Value = KinesisBatch;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<KinesisBatch, D::Error> {
        let records = Box::<RawValue>::deserialize(deserializer)?;
        KinesisBatch::from_records_json(&records).map_err(de::Error::custom)
    }
}
