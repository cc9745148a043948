//! A lease as a DynamoDB item and back, with the KCL's attribute names and types
//! (`docs/lease-table.md` §1).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::lease::{Checkpoint, Lease, LeaseError};

/// The KCL's attribute names.
pub(super) mod attribute {
    pub(in crate::aws::dynamo) const LEASE_KEY: &str = "leaseKey";
    pub(in crate::aws::dynamo) const SHARD_ID: &str = "shardId";
    pub(in crate::aws::dynamo) const LEASE_OWNER: &str = "leaseOwner";
    pub(in crate::aws::dynamo) const LEASE_COUNTER: &str = "leaseCounter";
    pub(in crate::aws::dynamo) const CHECKPOINT: &str = "checkpoint";
    pub(in crate::aws::dynamo) const CHECKPOINT_SUB_SEQUENCE_NUMBER: &str =
        "checkpointSubSequenceNumber";
    pub(in crate::aws::dynamo) const OWNER_SWITCHES_SINCE_CHECKPOINT: &str =
        "ownerSwitchesSinceCheckpoint";
    pub(in crate::aws::dynamo) const PARENT_SHARD_ID: &str = "parentShardId";
    pub(in crate::aws::dynamo) const CHILD_SHARD_IDS: &str = "childShardIds";
    pub(in crate::aws::dynamo) const STARTING_HASH_KEY: &str = "startingHashKey";
    pub(in crate::aws::dynamo) const ENDING_HASH_KEY: &str = "endingHashKey";
}

pub(super) fn number(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub(super) fn string_set(values: &[String]) -> Option<AttributeValue> {
    (!values.is_empty()).then(|| AttributeValue::Ss(values.to_vec()))
}

/// A lease as a DynamoDB item.
pub(super) fn lease_to_item(lease: &Lease) -> HashMap<String, AttributeValue> {
    use attribute::*;
    let mut item = HashMap::from([
        (
            LEASE_KEY.to_owned(),
            AttributeValue::S(lease.lease_key.clone()),
        ),
        (
            SHARD_ID.to_owned(),
            AttributeValue::S(lease.shard_id.clone()),
        ),
        (LEASE_COUNTER.to_owned(), number(lease.lease_counter)),
        (
            CHECKPOINT.to_owned(),
            AttributeValue::S(lease.checkpoint.as_str().to_owned()),
        ),
        (
            CHECKPOINT_SUB_SEQUENCE_NUMBER.to_owned(),
            number(lease.checkpoint_sub_sequence_number),
        ),
        (
            OWNER_SWITCHES_SINCE_CHECKPOINT.to_owned(),
            number(lease.owner_switches_since_checkpoint),
        ),
    ]);
    let optional = [
        (
            LEASE_OWNER,
            lease.lease_owner.clone().map(AttributeValue::S),
        ),
        (PARENT_SHARD_ID, string_set(&lease.parent_shard_ids)),
        (CHILD_SHARD_IDS, string_set(&lease.child_shard_ids)),
        (
            STARTING_HASH_KEY,
            lease.starting_hash_key.clone().map(AttributeValue::S),
        ),
        (
            ENDING_HASH_KEY,
            lease.ending_hash_key.clone().map(AttributeValue::S),
        ),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            item.insert(name.to_owned(), value);
        }
    }
    item
}

/// Reads the attributes of one item, naming its lease in every complaint.
struct ItemReader<'a> {
    item: &'a HashMap<String, AttributeValue>,
    lease_key: String,
}

impl ItemReader<'_> {
    fn malformed(&self, message: String) -> LeaseError {
        LeaseError::Malformed {
            lease_key: self.lease_key.clone(),
            message,
        }
    }

    fn string(&self, name: &str) -> Result<Option<String>, LeaseError> {
        match self.item.get(name) {
            None | Some(AttributeValue::Null(_)) => Ok(None),
            Some(AttributeValue::S(text)) => Ok(Some(text.clone())),
            Some(other) => Err(self.malformed(format!("{name} is {other:?}, not a string"))),
        }
    }

    fn number(&self, name: &str, default: Option<u64>) -> Result<u64, LeaseError> {
        match (self.item.get(name), default) {
            (None, Some(default)) => Ok(default),
            (None, None) => Err(self.malformed(format!("{name} is missing"))),
            (Some(AttributeValue::N(text)), _) => text
                .parse()
                .map_err(|_| self.malformed(format!("{name} is `{text}`, not a whole number"))),
            (Some(other), _) => Err(self.malformed(format!("{name} is {other:?}, not a number"))),
        }
    }

    fn string_set(&self, name: &str) -> Result<Vec<String>, LeaseError> {
        match self.item.get(name) {
            None | Some(AttributeValue::Null(_)) => Ok(Vec::new()),
            Some(AttributeValue::Ss(values)) => {
                let mut values = values.clone();
                values.sort();
                Ok(values)
            }
            // Some KCL versions wrote a lone parent as a string; read it as a set of one.
            Some(AttributeValue::S(value)) => Ok(vec![value.clone()]),
            Some(other) => Err(self.malformed(format!("{name} is {other:?}, not a string set"))),
        }
    }
}

/// A DynamoDB item as a lease.
pub(super) fn lease_from_item(item: &HashMap<String, AttributeValue>) -> Result<Lease, LeaseError> {
    use attribute::*;
    let lease_key = match item.get(LEASE_KEY) {
        Some(AttributeValue::S(key)) => key.clone(),
        other => {
            return Err(LeaseError::Malformed {
                lease_key: format!("{other:?}"),
                message: "the item has no string leaseKey".into(),
            });
        }
    };
    let reader = ItemReader { item, lease_key };
    let checkpoint_text = reader
        .string(CHECKPOINT)?
        .ok_or_else(|| reader.malformed("checkpoint is missing".into()))?;
    let checkpoint: Checkpoint = checkpoint_text
        .parse()
        .map_err(|error| reader.malformed(format!("{error}")))?;
    // Single-stream KCL leases are keyed by the shard id and have no shardId attribute;
    // multi-stream keys end with it.
    let shard_id = match reader.string(SHARD_ID)? {
        Some(shard_id) => shard_id,
        None => reader
            .lease_key
            .rsplit(':')
            .next()
            .unwrap_or(&reader.lease_key)
            .to_owned(),
    };
    Ok(Lease {
        shard_id,
        lease_owner: reader.string(LEASE_OWNER)?,
        lease_counter: reader.number(LEASE_COUNTER, None)?,
        checkpoint,
        checkpoint_sub_sequence_number: reader.number(CHECKPOINT_SUB_SEQUENCE_NUMBER, Some(0))?,
        owner_switches_since_checkpoint: reader.number(OWNER_SWITCHES_SINCE_CHECKPOINT, Some(0))?,
        parent_shard_ids: reader.string_set(PARENT_SHARD_ID)?,
        child_shard_ids: reader.string_set(CHILD_SHARD_IDS)?,
        starting_hash_key: reader.string(STARTING_HASH_KEY)?,
        ending_hash_key: reader.string(ENDING_HASH_KEY)?,
        lease_key: reader.lease_key.clone(),
    })
}

/// A lease with its sets sorted, as they come back from DynamoDB.
pub(super) fn normalized(mut lease: Lease) -> Lease {
    lease.parent_shard_ids.sort();
    lease.child_shard_ids.sort();
    lease
}
