//! What `run` asks of the services for the template's resources, apart from asking it: a table
//! as DynamoDB's `CreateTable` input and `UpdateTimeToLive` specification, and the line the run
//! says for each resource. Pure, so that each rule is tested without a server.

use aws_sdk_dynamodb::operation::create_table::CreateTableInput;
use aws_sdk_dynamodb::types::{
    AttributeDefinition as SdkAttributeDefinition, BillingMode, KeySchemaElement,
    KeyType as SdkKeyType, ProvisionedThroughput, ScalarAttributeType, TimeToLiveSpecification,
};

use esm_engine::aws::failure::Observed;

use crate::template::{AttributeType, Billing, KeyType, TableResource};

/// The `CreateTable` input for `table`: its name, key, the definitions of the key's attributes
/// (DynamoDB refuses definitions no key or index uses, and indexes are not made locally) and
/// its billing.
pub(super) fn create_table_input(table: &TableResource) -> CreateTableInput {
    let key_schema = table
        .key
        .iter()
        .map(|element| {
            KeySchemaElement::builder()
                .attribute_name(&element.attribute)
                .key_type(match element.key_type {
                    KeyType::Hash => SdkKeyType::Hash,
                    KeyType::Range => SdkKeyType::Range,
                })
                .build()
                .expect("a key schema element has its name and type")
        })
        .collect();
    let attribute_definitions = table
        .attributes
        .iter()
        .filter(|definition| {
            table
                .key
                .iter()
                .any(|element| element.attribute == definition.name)
        })
        .map(|definition| {
            SdkAttributeDefinition::builder()
                .attribute_name(&definition.name)
                .attribute_type(match definition.attribute_type {
                    AttributeType::String => ScalarAttributeType::S,
                    AttributeType::Number => ScalarAttributeType::N,
                    AttributeType::Binary => ScalarAttributeType::B,
                })
                .build()
                .expect("an attribute definition has its name and type")
        })
        .collect();
    let (billing_mode, throughput) = match table.billing {
        Billing::PayPerRequest => (BillingMode::PayPerRequest, None),
        Billing::Provisioned { read, write } => (
            BillingMode::Provisioned,
            Some(
                ProvisionedThroughput::builder()
                    .read_capacity_units(read)
                    .write_capacity_units(write)
                    .build()
                    .expect("the throughput has both units"),
            ),
        ),
    };
    CreateTableInput::builder()
        .table_name(&table.name)
        .set_key_schema(Some(key_schema))
        .set_attribute_definitions(Some(attribute_definitions))
        .billing_mode(billing_mode)
        .set_provisioned_throughput(throughput)
        .build()
        .expect("a CreateTable input builds from any fields")
}

/// The `UpdateTimeToLive` specification for `table`, when its template enables TTL.
pub(super) fn time_to_live(table: &TableResource) -> Option<TimeToLiveSpecification> {
    let attribute = table.time_to_live.as_ref()?;
    Some(
        TimeToLiveSpecification::builder()
            .attribute_name(attribute)
            .enabled(true)
            .build()
            .expect("the TTL specification has its attribute and switch"),
    )
}

/// The AWS error code of a service's answer.
pub(super) fn code(observed: &Observed) -> Option<&str> {
    match observed {
        Observed::Answer { code, .. } => code.as_deref(),
        _ => None,
    }
}

/// What the run found or did for one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Made {
    /// It was there already: left as it is.
    Exists,
    /// It was created.
    Created,
}

/// The line said for one resource at the run's start: `table IdempotencyTable:
/// local-IdempotencyTable at http://127.0.0.1:4567 (created)`, with what was not applied.
pub(super) fn start_line(
    what: &str,
    logical_id: &str,
    name: &str,
    endpoint: &str,
    made: &Made,
    notes: &[String],
) -> String {
    let made = match made {
        Made::Exists => "exists",
        Made::Created => "created",
    };
    let mut line = format!("kinesis-esm: {what} {logical_id}: {name} at {endpoint} ({made}");
    for note in notes {
        line.push_str("; ");
        line.push_str(note);
    }
    line.push(')');
    line
}

/// The note for a table that exists with another key than the template's (`found`: attribute
/// and `HASH`/`RANGE`, as DescribeTable gives them), if it does: it is left as it is, and a
/// function that writes the template's key to it fails.
pub(super) fn key_mismatch_note(table: &TableResource, found: &[(&str, &str)]) -> Option<String> {
    let wanted: Vec<(&str, &str)> = table
        .key
        .iter()
        .map(|element| {
            let key_type = match element.key_type {
                KeyType::Hash => "HASH",
                KeyType::Range => "RANGE",
            };
            (element.attribute.as_str(), key_type)
        })
        .collect();
    let render = |key: &[(&str, &str)]| {
        key.iter()
            .map(|(attribute, key_type)| format!("{attribute} {key_type}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    (wanted != found).then(|| {
        format!(
            "its key is {}, not the template's {}: left as it is",
            render(found),
            render(&wanted)
        )
    })
}

/// The note for properties present that were not applied, if any.
pub(super) fn not_applied_note(properties: &[String]) -> Option<String> {
    (!properties.is_empty()).then(|| format!("not applied locally: {}", properties.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{AttributeDefinition, KeyElement};

    fn table(billing: Billing, time_to_live: Option<&str>) -> TableResource {
        TableResource {
            logical_id: "Orders".to_owned(),
            name: "local-Orders".to_owned(),
            key: vec![
                KeyElement {
                    attribute: "customer".to_owned(),
                    key_type: KeyType::Hash,
                },
                KeyElement {
                    attribute: "at".to_owned(),
                    key_type: KeyType::Range,
                },
            ],
            attributes: vec![
                AttributeDefinition {
                    name: "at".to_owned(),
                    attribute_type: AttributeType::Number,
                },
                AttributeDefinition {
                    name: "customer".to_owned(),
                    attribute_type: AttributeType::String,
                },
                // Only a (not applied) index uses it: DynamoDB would refuse its definition.
                AttributeDefinition {
                    name: "status".to_owned(),
                    attribute_type: AttributeType::String,
                },
            ],
            billing,
            time_to_live: time_to_live.map(str::to_owned),
            not_applied: vec!["GlobalSecondaryIndexes".to_owned()],
        }
    }

    #[test]
    fn an_on_demand_table_is_created_with_its_key_and_the_keys_definitions() {
        let input = create_table_input(&table(Billing::PayPerRequest, None));
        assert_eq!(input.table_name(), Some("local-Orders"));
        let key: Vec<(&str, &SdkKeyType)> = input
            .key_schema()
            .iter()
            .map(|element| (element.attribute_name(), element.key_type()))
            .collect();
        assert_eq!(
            key,
            [("customer", &SdkKeyType::Hash), ("at", &SdkKeyType::Range)]
        );
        let definitions: Vec<(&str, &ScalarAttributeType)> = input
            .attribute_definitions()
            .iter()
            .map(|definition| (definition.attribute_name(), definition.attribute_type()))
            .collect();
        assert_eq!(
            definitions,
            [
                ("at", &ScalarAttributeType::N),
                ("customer", &ScalarAttributeType::S)
            ]
        );
        assert_eq!(input.billing_mode(), Some(&BillingMode::PayPerRequest));
        assert_eq!(input.provisioned_throughput(), None);
    }

    #[test]
    fn a_provisioned_table_carries_its_units() {
        let input = create_table_input(&table(Billing::Provisioned { read: 5, write: 2 }, None));
        assert_eq!(input.billing_mode(), Some(&BillingMode::Provisioned));
        let throughput = input.provisioned_throughput().expect("units");
        assert_eq!(
            (
                throughput.read_capacity_units(),
                throughput.write_capacity_units()
            ),
            (5, 2)
        );
    }

    #[test]
    fn ttl_is_asked_for_only_when_the_template_enables_it() {
        assert_eq!(time_to_live(&table(Billing::PayPerRequest, None)), None);
        let spec = time_to_live(&table(Billing::PayPerRequest, Some("expiration"))).unwrap();
        assert_eq!(spec.attribute_name(), "expiration");
        assert!(spec.enabled());
    }

    #[test]
    fn the_start_line_names_the_resource_where_it_is_and_what_was_not_applied() {
        assert_eq!(
            start_line(
                "table",
                "IdempotencyTable",
                "local-IdempotencyTable",
                "http://127.0.0.1:4567",
                &Made::Created,
                &[]
            ),
            "kinesis-esm: table IdempotencyTable: local-IdempotencyTable at \
             http://127.0.0.1:4567 (created)"
        );
        let notes = [not_applied_note(&["Tags".to_owned(), "RedrivePolicy".to_owned()]).unwrap()];
        assert_eq!(
            start_line("queue", "Queue", "Queue", "http://m", &Made::Exists, &notes),
            "kinesis-esm: queue Queue: Queue at http://m (exists; not applied locally: Tags, \
             RedrivePolicy)"
        );
        assert_eq!(not_applied_note(&[]), None);
    }

    #[test]
    fn an_existing_table_with_another_key_is_said() {
        let table = table(Billing::PayPerRequest, None);
        assert_eq!(
            key_mismatch_note(&table, &[("customer", "HASH"), ("at", "RANGE")]),
            None
        );
        assert_eq!(
            key_mismatch_note(&table, &[("id", "HASH")]).as_deref(),
            Some("its key is id HASH, not the template's customer HASH, at RANGE: left as it is")
        );
    }
}
