//! Idempotency keys: what a record is known by, its namespace, and the payload hash stored beside
//! it (see `docs/idempotency.md`).

use std::fmt;

use lambda_kinesis::RecordMeta;
use md5::{Digest as _, Md5};
use serde::Serialize;

/// The environment variable Lambda sets to the function's name: the default namespace.
pub const FUNCTION_NAME_VARIABLE: &str = "AWS_LAMBDA_FUNCTION_NAME";

/// What a record's idempotency key is made of.
pub enum KeySource<T> {
    /// The whole payload: two records with the same data are the same record.
    Data,
    /// The record's place in the stream: shard, sequence number and sub-sequence number (a KPL
    /// user record's own), so that only redeliveries count as duplicates.
    Position,
    /// A value taken from the decoded record, such as a shipment's id.
    Field(Box<dyn Fn(&T) -> String + Send + Sync>),
}

impl<T> fmt::Debug for KeySource<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Data => f.write_str("Data"),
            Self::Position => f.write_str("Position"),
            Self::Field(_) => f.write_str("Field"),
        }
    }
}

/// Why a record could not be keyed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The decoded record cannot be written as JSON, so its payload cannot be hashed.
    #[error("the record cannot be written as JSON to hash its payload: {0}")]
    Unhashable(String),
    /// Keyed by position without one: a batch handler is not given its records' places.
    #[error(
        "the record has no position to be keyed by (a batch handler's records are keyed by their data or a field)"
    )]
    NoPosition,
}

/// A record's key and payload hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyed {
    /// The namespaced key, as stored (`id`).
    pub id: String,
    /// The MD5 of the payload, in hex.
    pub payload_hash: String,
}

/// Keys `record`, found at `meta` (a record handler's record) or not (a batch handler's), by
/// `source` within `namespace`.
///
/// The payload is the decoded record written again as JSON: the same shipment hashes the same
/// whatever the producer's field order or spacing.
pub(crate) fn key<T: Serialize>(
    namespace: &str,
    source: &KeySource<T>,
    record: &T,
    meta: Option<&RecordMeta<'_>>,
) -> Result<Keyed, KeyError> {
    let payload =
        serde_json::to_vec(record).map_err(|error| KeyError::Unhashable(error.to_string()))?;
    let payload_hash = format!("{:x}", Md5::digest(&payload));
    let key = match source {
        KeySource::Data => payload_hash.clone(),
        KeySource::Position => {
            let meta = meta.ok_or(KeyError::NoPosition)?;
            format!(
                "{}/{}/{}",
                meta.shard_id(),
                meta.sequence_number(),
                meta.sub_sequence_number()
            )
        }
        KeySource::Field(field) => field(record),
    };
    Ok(Keyed {
        id: format!("{namespace}#{key}"),
        payload_hash,
    })
}

/// The namespace of a handler's keys: the function's name, and the handler's own name if it has
/// one, so that two handlers of one table never share a key.
pub(crate) fn namespace(function_name: &str, handler_name: Option<&str>) -> String {
    match handler_name {
        Some(name) => format!("{function_name}.{name}"),
        None => function_name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use lambda_kinesis::aggregate::Aggregate;
    use lambda_kinesis::testing::TestEvent;
    use lambda_kinesis::wire::KinesisBatch;

    use super::*;

    #[derive(Serialize, serde::Deserialize)]
    struct Shipment {
        id: u64,
        carrier: String,
    }

    fn shipment(id: u64, carrier: &str) -> Shipment {
        Shipment {
            id,
            carrier: carrier.into(),
        }
    }

    fn keys_of(source: &KeySource<Shipment>, event: TestEvent, records: &[Shipment]) -> Vec<Keyed> {
        let batch = KinesisBatch::from(&event);
        batch
            .records()
            .zip(records)
            .map(|(meta, record)| key("ship", source, record, Some(&meta)).unwrap())
            .collect()
    }

    #[test]
    fn a_field_key_is_namespaced_and_the_payload_hashed_beside_it() {
        let records = [shipment(7, "dhl"), shipment(7, "ups")];
        let event = TestEvent::new().json(&records[0]).json(&records[1]);
        let source = KeySource::Field(Box::new(|s: &Shipment| s.id.to_string()));
        let keys = keys_of(&source, event, &records);
        assert_eq!(keys[0].id, "ship#7");
        assert_eq!(keys[1].id, "ship#7");
        assert_ne!(keys[0].payload_hash, keys[1].payload_hash);
        assert_eq!(keys[0].payload_hash.len(), 32);
    }

    #[test]
    fn a_data_key_is_the_payload_hash() {
        let records = [shipment(7, "dhl"), shipment(7, "dhl")];
        let event = TestEvent::new().json(&records[0]).json(&records[1]);
        let keys = keys_of(&KeySource::Data, event, &records);
        assert_eq!(keys[0], keys[1]);
        assert_eq!(keys[0].id, format!("ship#{}", keys[0].payload_hash));
    }

    #[test]
    fn user_records_of_one_aggregate_have_keys_of_their_own() {
        let records = [shipment(1, "dhl"), shipment(2, "dhl")];
        let mut aggregate = Aggregate::new();
        for record in &records {
            aggregate.add("pk", None, &serde_json::to_vec(record).unwrap());
        }
        let event = TestEvent::new().aggregate(&aggregate);
        let keys = keys_of(&KeySource::Position, event.clone(), &records);
        assert!(
            keys[0].id.ends_with("/0") && keys[1].id.ends_with("/1"),
            "{keys:?}"
        );
        assert_ne!(keys[0].id, keys[1].id);
        let keys = keys_of(&KeySource::Data, event, &records);
        assert_ne!(keys[0].id, keys[1].id);
    }

    #[test]
    fn a_record_without_a_position_cannot_be_keyed_by_one() {
        let record = shipment(1, "dhl");
        let keyed = key("ship", &KeySource::Position, &record, None);
        assert_eq!(keyed, Err(KeyError::NoPosition));
        assert!(key("ship", &KeySource::Data, &record, None).is_ok());
    }

    #[test]
    fn a_handler_name_joins_the_namespace() {
        assert_eq!(namespace("shipping", None), "shipping");
        assert_eq!(namespace("shipping", Some("book")), "shipping.book");
    }
}
