//! The template's resources that `run` makes where it is given somewhere to make them, as
//! `sam deploy` would: DynamoDB tables (`AWS::DynamoDB::Table`, SAM's
//! `AWS::Serverless::SimpleTable`) in a local DynamoDB, and SQS queues, SNS topics and S3 buckets
//! at the destinations' endpoint. Each is read under the name the rest of the template gives it:
//! the name `Ref` of a table resolves to, the name an on-failure destination is sent to.
//!
//! A property DynamoDB needs to create the table (`KeySchema`, `AttributeDefinitions`, the
//! capacity) is checked as CloudFormation checks it, with an error naming the resource and the
//! property. A property a local run does not apply (indexes, streams, encryption, tags, ...) is
//! kept by name in the resource's `not_applied`, for the run to say so.

use std::collections::BTreeMap;

use serde_yaml_ng::{Mapping, Value};

use super::error::{Problem, Section};
use super::event::destination_target;
use super::fields::{Fault, Fields};
use super::intrinsic::{DYNAMODB_TABLE, Resolver, SIMPLE_TABLE, render};
use super::resources::{resource_properties, typed_resources};
use esm_engine::destination::{DestinationKind, Target};

/// A table of the template, as a local DynamoDB creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableResource {
    /// The resource's logical id.
    pub logical_id: String,
    /// The table's name: what `Ref` of it gives (`TableName`, or `<stack>-<logical id>`).
    pub name: String,
    /// The key: the partition key first, then the sort key if there is one.
    pub key: Vec<KeyElement>,
    /// The attributes' types, as `AttributeDefinitions` gives them.
    pub attributes: Vec<AttributeDefinition>,
    /// How the table's capacity is paid for.
    pub billing: Billing,
    /// The attribute DynamoDB's TTL reads, when `TimeToLiveSpecification` enables it.
    pub time_to_live: Option<String>,
    /// The properties present that a local run does not apply, by name.
    pub not_applied: Vec<String>,
}

/// One attribute of a table's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyElement {
    /// The attribute's name.
    pub attribute: String,
    /// Whether it is the partition (`HASH`) or the sort (`RANGE`) key.
    pub key_type: KeyType,
}

/// The role of a key attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// The partition key.
    Hash,
    /// The sort key.
    Range,
}

/// An entry of `AttributeDefinitions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeDefinition {
    /// The attribute's name.
    pub name: String,
    /// Its type.
    pub attribute_type: AttributeType,
}

/// A key attribute's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttributeType {
    /// `S` (SimpleTable: `String`).
    String,
    /// `N` (SimpleTable: `Number`).
    Number,
    /// `B` (SimpleTable: `Binary`).
    Binary,
}

/// How a table's capacity is paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Billing {
    /// `PAY_PER_REQUEST`.
    PayPerRequest,
    /// `PROVISIONED`, with `ProvisionedThroughput`'s units.
    Provisioned {
        /// `ReadCapacityUnits`.
        read: i64,
        /// `WriteCapacityUnits`.
        write: i64,
    },
}

/// An SQS queue, SNS topic or S3 bucket of the template, named as an on-failure destination
/// names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationResource {
    /// The resource's logical id.
    pub logical_id: String,
    /// Its kind and name.
    pub target: Target,
    /// The queue's or topic's attributes the template sets, by their API names
    /// (`MessageRetentionPeriod`, `FifoQueue`, `DisplayName`, ...), as text.
    pub attributes: BTreeMap<String, String>,
    /// The properties present that a local run does not apply, by name.
    pub not_applied: Vec<String>,
}

/// The properties of `AWS::DynamoDB::Table` that change nothing a local table is created with.
const TABLE_NOT_APPLIED: &[&str] = &[
    "ContributorInsightsSpecification",
    "DeletionProtectionEnabled",
    "GlobalSecondaryIndexes",
    "ImportSourceSpecification",
    "KinesisStreamSpecification",
    "LocalSecondaryIndexes",
    "OnDemandThroughput",
    "PointInTimeRecoverySpecification",
    "ResourcePolicy",
    "SSESpecification",
    "StreamSpecification",
    "TableClass",
    "Tags",
    "WarmThroughput",
];

/// The properties of `AWS::DynamoDB::Table` that the local table is created with.
const TABLE_APPLIED: &[&str] = &[
    "AttributeDefinitions",
    "BillingMode",
    "KeySchema",
    "ProvisionedThroughput",
    "TableName",
    "TimeToLiveSpecification",
];

/// The tables of the template, in its order: `AWS::DynamoDB::Table`s, then SAM's
/// `AWS::Serverless::SimpleTable`s.
pub(super) fn tables(
    resources: &Mapping,
    resolver: &Resolver<'_>,
) -> Result<Vec<TableResource>, Fault> {
    let mut tables = Vec::new();
    for (logical_id, resource) in typed_resources(resources, DYNAMODB_TABLE)? {
        let properties = resource_properties(&logical_id, resource)?;
        tables.push(table(&logical_id, &properties, resolver)?);
    }
    for (logical_id, resource) in typed_resources(resources, SIMPLE_TABLE)? {
        let properties = resource_properties(&logical_id, resource)?;
        tables.push(simple_table(&logical_id, &properties, resolver)?);
    }
    Ok(tables)
}

fn table_name(
    fields: &Fields<'_>,
    logical_id: &str,
    resolver: &Resolver<'_>,
) -> Result<String, Fault> {
    resolver
        .physical_table_name(logical_id)
        .map_err(|reason| fields.unresolved("TableName", reason))
}

/// An `AWS::DynamoDB::Table`.
fn table(
    logical_id: &str,
    properties: &Mapping,
    resolver: &Resolver<'_>,
) -> Result<TableResource, Fault> {
    let fields = Fields::new(properties, Section::Resource(logical_id.to_owned()), None);
    fields.check_names(&[TABLE_APPLIED, TABLE_NOT_APPLIED].concat())?;
    let attributes = attribute_definitions(&fields, resolver)?;
    let key = key_schema(&fields, resolver, &attributes)?;
    Ok(TableResource {
        logical_id: logical_id.to_owned(),
        name: table_name(&fields, logical_id, resolver)?,
        key,
        attributes,
        billing: billing(&fields, resolver)?,
        time_to_live: time_to_live(&fields, resolver)?,
        not_applied: present(&fields, TABLE_NOT_APPLIED),
    })
}

/// SAM's `AWS::Serverless::SimpleTable`: a partition key (`PrimaryKey`, `id` of type `String`
/// when absent, as SAM documents), on-demand unless `ProvisionedThroughput` is given.
fn simple_table(
    logical_id: &str,
    properties: &Mapping,
    resolver: &Resolver<'_>,
) -> Result<TableResource, Fault> {
    const NOT_APPLIED: &[&str] = &[
        "PointInTimeRecoverySpecification",
        "SSESpecification",
        "Tags",
    ];
    let fields = Fields::new(properties, Section::Resource(logical_id.to_owned()), None);
    fields.check_names(
        &[
            &["PrimaryKey", "ProvisionedThroughput", "TableName"][..],
            NOT_APPLIED,
        ]
        .concat(),
    )?;
    let primary = fields.nested("PrimaryKey")?;
    primary.check_names(&["Name", "Type"])?;
    let name = primary
        .text(resolver, "Name")?
        .unwrap_or_else(|| "id".to_owned());
    let attribute_type = match primary.text(resolver, "Type")?.as_deref() {
        None | Some("String") => AttributeType::String,
        Some("Number") => AttributeType::Number,
        Some("Binary") => AttributeType::Binary,
        Some(_) => return Err(primary.not_allowed("Type", "String, Number, Binary")),
    };
    let billing = match fields.get("ProvisionedThroughput") {
        None => Billing::PayPerRequest,
        Some(_) => provisioned_throughput(&fields, resolver)?,
    };
    Ok(TableResource {
        logical_id: logical_id.to_owned(),
        name: table_name(&fields, logical_id, resolver)?,
        key: vec![KeyElement {
            attribute: name.clone(),
            key_type: KeyType::Hash,
        }],
        attributes: vec![AttributeDefinition {
            name,
            attribute_type,
        }],
        billing,
        time_to_live: None,
        not_applied: present(&fields, NOT_APPLIED),
    })
}

/// The names among `names` that the map holds.
fn present(fields: &Fields<'_>, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter(|name| fields.get(name).is_some())
        .map(|name| (*name).to_owned())
        .collect()
}

/// The number of maps in the list under `name` (required, non-empty).
fn list_length(fields: &Fields<'_>, name: &str, allowed: &str) -> Result<usize, Fault> {
    match fields.get(name) {
        None => Err(fields.missing(name, "")),
        Some(Value::Sequence(items)) if !items.is_empty() => Ok(items.len()),
        Some(_) => Err(fields.not_allowed(name, allowed)),
    }
}

fn attribute_definitions(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
) -> Result<Vec<AttributeDefinition>, Fault> {
    const LIST: &str = "a list of {AttributeName, AttributeType}";
    let mut definitions: Vec<AttributeDefinition> = Vec::new();
    for index in 0..list_length(fields, "AttributeDefinitions", LIST)? {
        let entry = fields.element("AttributeDefinitions", index)?;
        entry.check_names(&["AttributeName", "AttributeType"])?;
        let Some(name) = entry.text(resolver, "AttributeName")? else {
            return Err(entry.missing("AttributeName", ""));
        };
        let attribute_type = match entry.text(resolver, "AttributeType")?.as_deref() {
            Some("S") => AttributeType::String,
            Some("N") => AttributeType::Number,
            Some("B") => AttributeType::Binary,
            Some(_) => return Err(entry.not_allowed("AttributeType", "S, N, B")),
            None => return Err(entry.missing("AttributeType", " (S, N or B)")),
        };
        if definitions.iter().any(|defined| defined.name == name) {
            return Err(entry.fault(
                "AttributeName",
                Problem::Conflict {
                    value: name,
                    reason: "is defined twice in AttributeDefinitions".to_owned(),
                },
            ));
        }
        definitions.push(AttributeDefinition {
            name,
            attribute_type,
        });
    }
    Ok(definitions)
}

/// `KeySchema`: a `HASH` attribute first, then at most one `RANGE`, each defined in
/// `AttributeDefinitions`.
fn key_schema(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
    attributes: &[AttributeDefinition],
) -> Result<Vec<KeyElement>, Fault> {
    const LIST: &str = "a list of {AttributeName, KeyType}: a HASH key, then at most one RANGE key";
    let length = list_length(fields, "KeySchema", LIST)?;
    if length > 2 {
        return Err(fields.not_allowed("KeySchema", LIST));
    }
    let mut key = Vec::with_capacity(length);
    for index in 0..length {
        let entry = fields.element("KeySchema", index)?;
        entry.check_names(&["AttributeName", "KeyType"])?;
        let Some(attribute) = entry.text(resolver, "AttributeName")? else {
            return Err(entry.missing("AttributeName", ""));
        };
        let key_type = match (index, entry.text(resolver, "KeyType")?.as_deref()) {
            (0, Some("HASH")) => KeyType::Hash,
            (1, Some("RANGE")) => KeyType::Range,
            (0, Some(_)) => {
                return Err(
                    entry.not_allowed("KeyType", "HASH: the first key is the partition key")
                );
            }
            (_, Some(_)) => {
                return Err(entry.not_allowed("KeyType", "RANGE: the second key is the sort key"));
            }
            (_, None) => return Err(entry.missing("KeyType", " (HASH or RANGE)")),
        };
        if !attributes.iter().any(|defined| defined.name == attribute) {
            let defined: Vec<&str> = attributes
                .iter()
                .map(|defined| defined.name.as_str())
                .collect();
            return Err(entry.fault(
                "AttributeName",
                Problem::Conflict {
                    value: attribute,
                    reason: format!(
                        "is not defined in AttributeDefinitions (which defines {})",
                        defined.join(", ")
                    ),
                },
            ));
        }
        key.push(KeyElement {
            attribute,
            key_type,
        });
    }
    Ok(key)
}

/// `BillingMode` (`PROVISIONED` by default, as CloudFormation has it) with its
/// `ProvisionedThroughput`.
fn billing(fields: &Fields<'_>, resolver: &Resolver<'_>) -> Result<Billing, Fault> {
    match fields.text(resolver, "BillingMode")?.as_deref() {
        Some("PAY_PER_REQUEST") => match fields.get("ProvisionedThroughput") {
            None => Ok(Billing::PayPerRequest),
            Some(value) => Err(fields.fault(
                "ProvisionedThroughput",
                Problem::Conflict {
                    value: render(value),
                    reason: "cannot be set with BillingMode PAY_PER_REQUEST".to_owned(),
                },
            )),
        },
        None | Some("PROVISIONED") => provisioned_throughput(fields, resolver),
        Some(_) => Err(fields.not_allowed("BillingMode", "PROVISIONED, PAY_PER_REQUEST")),
    }
}

fn provisioned_throughput(fields: &Fields<'_>, resolver: &Resolver<'_>) -> Result<Billing, Fault> {
    if fields.get("ProvisionedThroughput").is_none() {
        return Err(fields.missing(
            "ProvisionedThroughput",
            " with BillingMode PROVISIONED (the default); or set BillingMode: PAY_PER_REQUEST",
        ));
    }
    let throughput = fields.nested("ProvisionedThroughput")?;
    throughput.check_names(&["ReadCapacityUnits", "WriteCapacityUnits"])?;
    let units = |name: &str| -> Result<i64, Fault> {
        throughput
            .integer(resolver, name, 1..=i64::from(u32::MAX))?
            .ok_or_else(|| throughput.missing(name, ""))
    };
    Ok(Billing::Provisioned {
        read: units("ReadCapacityUnits")?,
        write: units("WriteCapacityUnits")?,
    })
}

/// The TTL attribute, when `TimeToLiveSpecification` enables it.
fn time_to_live(fields: &Fields<'_>, resolver: &Resolver<'_>) -> Result<Option<String>, Fault> {
    if fields.get("TimeToLiveSpecification").is_none() {
        return Ok(None);
    }
    let spec = fields.nested("TimeToLiveSpecification")?;
    spec.check_names(&["AttributeName", "Enabled"])?;
    let Some(enabled) = spec.boolean(resolver, "Enabled")? else {
        return Err(spec.missing("Enabled", ""));
    };
    match (enabled, spec.text(resolver, "AttributeName")?) {
        (false, _) => Ok(None),
        (true, Some(attribute)) => Ok(Some(attribute)),
        (true, None) => Err(spec.missing("AttributeName", " when Enabled is true")),
    }
}

/// The queues', topics' and buckets' properties a local run creates them with (their names
/// apart, which [`destination_target`] reads).
fn applied_attributes(kind: DestinationKind) -> &'static [&'static str] {
    match kind {
        DestinationKind::Sqs => &[
            "ContentBasedDeduplication",
            "DeduplicationScope",
            "DelaySeconds",
            "FifoQueue",
            "FifoThroughputLimit",
            "MaximumMessageSize",
            "MessageRetentionPeriod",
            "ReceiveMessageWaitTimeSeconds",
            "VisibilityTimeout",
        ],
        DestinationKind::Sns => &["ContentBasedDeduplication", "DisplayName", "FifoTopic"],
        DestinationKind::S3 => &[],
    }
}

/// The SQS queues, SNS topics and S3 buckets of the template, in its order.
pub(super) fn destinations(
    resources: &Mapping,
    resolver: &Resolver<'_>,
) -> Result<Vec<DestinationResource>, Fault> {
    let mut found = Vec::new();
    for (name_property, resource_type) in [
        ("QueueName", "AWS::SQS::Queue"),
        ("TopicName", "AWS::SNS::Topic"),
        ("BucketName", "AWS::S3::Bucket"),
    ] {
        for (logical_id, resource) in typed_resources(resources, resource_type)? {
            let properties = resource_properties(&logical_id, resource)?;
            let Some(target) = destination_target(&logical_id, resolver) else {
                continue;
            };
            let fields = Fields::new(&properties, Section::Resource(logical_id.clone()), None);
            let applied = applied_attributes(target.kind);
            let mut attributes = BTreeMap::new();
            let mut not_applied = Vec::new();
            for key in properties.keys() {
                let property = key.as_str().map_or_else(|| render(key), str::to_owned);
                if property == name_property {
                    continue;
                }
                if !applied.contains(&property.as_str()) {
                    not_applied.push(property);
                    continue;
                }
                if let Some(value) = fields.text(resolver, &property)? {
                    attributes.insert(property, value);
                }
            }
            found.push(DestinationResource {
                logical_id,
                target,
                attributes,
                not_applied,
            });
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests;
