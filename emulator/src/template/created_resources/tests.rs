//! Tables, queues, topics and buckets written inline, read into what `run` makes, or refused
//! with messages that name the resource and the property.

use super::*;
use crate::template::{Template, TemplateError, TemplateOptions};

const PATH: &str = "/work/app/template.yaml";

/// A template with these resources (YAML indented by two spaces) and a local DynamoDB.
fn parse(resources: &str) -> Result<Template, TemplateError> {
    let yaml = format!("Transform: AWS::Serverless-2016-10-31\nResources:\n{resources}");
    let options = TemplateOptions {
        local_dynamodb: Some("http://127.0.0.1:4567".to_owned()),
        ..TemplateOptions::default()
    };
    Template::parse(PATH, &yaml, &options)
}

#[track_caller]
fn read(resources: &str) -> Template {
    parse(resources).unwrap_or_else(|error| panic!("refused: {error}"))
}

#[track_caller]
fn check_error(resources: &str, expected: &str) {
    match parse(resources) {
        Ok(template) => panic!("accepted: {template:#?}"),
        Err(error) => assert_eq!(error.to_string(), format!("{PATH}: {expected}")),
    }
}

/// The shipping template's `IdempotencyTable`.
const IDEMPOTENCY_TABLE: &str = "  IdempotencyTable:
    Type: AWS::DynamoDB::Table
    DeletionPolicy: Delete
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - AttributeName: id
          AttributeType: S
      KeySchema:
        - AttributeName: id
          KeyType: HASH
      TimeToLiveSpecification:
        AttributeName: expiration
        Enabled: true
";

#[test]
fn a_table_is_read_under_the_name_its_ref_gives() {
    let template = read(IDEMPOTENCY_TABLE);
    assert_eq!(
        template.tables,
        [TableResource {
            logical_id: "IdempotencyTable".to_owned(),
            name: "local-IdempotencyTable".to_owned(),
            key: vec![KeyElement {
                attribute: "id".to_owned(),
                key_type: KeyType::Hash,
            }],
            attributes: vec![AttributeDefinition {
                name: "id".to_owned(),
                attribute_type: AttributeType::String,
            }],
            billing: Billing::PayPerRequest,
            time_to_live: Some("expiration".to_owned()),
            not_applied: vec![],
        }]
    );
}

#[test]
fn a_provisioned_table_with_a_sort_key_and_indexes_not_applied() {
    let template = read(
        "  Orders:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Sub '${AWS::StackName}-orders'
      AttributeDefinitions: [{AttributeName: customer, AttributeType: S}, {AttributeName: at, AttributeType: N}]
      KeySchema: [{AttributeName: customer, KeyType: HASH}, {AttributeName: at, KeyType: RANGE}]
      ProvisionedThroughput: {ReadCapacityUnits: 5, WriteCapacityUnits: '2'}
      GlobalSecondaryIndexes: []
      Tags: []
      TimeToLiveSpecification: {AttributeName: expires, Enabled: false}
",
    );
    let table = &template.tables[0];
    assert_eq!(table.name, "local-orders");
    assert_eq!(table.key[1].attribute, "at");
    assert_eq!(table.key[1].key_type, KeyType::Range);
    assert_eq!(table.billing, Billing::Provisioned { read: 5, write: 2 });
    assert_eq!(table.time_to_live, None);
    assert_eq!(table.not_applied, ["GlobalSecondaryIndexes", "Tags"]);
}

#[test]
fn a_simple_tables_key_is_id_of_type_string_unless_given() {
    let template = read(
        "  Plain:
    Type: AWS::Serverless::SimpleTable
  Keyed:
    Type: AWS::Serverless::SimpleTable
    Properties:
      TableName: keyed
      PrimaryKey: {Name: order, Type: Number}
      ProvisionedThroughput: {ReadCapacityUnits: 1, WriteCapacityUnits: 1}
      Tags: {team: shipping}
",
    );
    let [plain, keyed] = template.tables.as_slice() else {
        panic!("two tables: {:#?}", template.tables);
    };
    assert_eq!(plain.name, "local-Plain");
    assert_eq!(plain.key[0].attribute, "id");
    assert_eq!(plain.attributes[0].attribute_type, AttributeType::String);
    assert_eq!(plain.billing, Billing::PayPerRequest);
    assert_eq!(keyed.name, "keyed");
    assert_eq!(keyed.attributes[0].name, "order");
    assert_eq!(keyed.attributes[0].attribute_type, AttributeType::Number);
    assert_eq!(keyed.billing, Billing::Provisioned { read: 1, write: 1 });
    assert_eq!(keyed.not_applied, ["Tags"]);
}

#[test]
fn a_key_attribute_missing_from_the_definitions_is_refused_by_name() {
    check_error(
        &IDEMPOTENCY_TABLE.replace(
            "AttributeName: id\n          AttributeType",
            "AttributeName: key\n          AttributeType",
        ),
        "resource IdempotencyTable: property KeySchema[0].AttributeName = id is not defined in \
         AttributeDefinitions (which defines key)",
    );
}

#[test]
fn bad_tables_are_refused_with_the_resource_and_property() {
    let table = |properties: &str| {
        format!("  T:\n    Type: AWS::DynamoDB::Table\n    Properties: {{{properties}}}\n")
    };
    const KEY: &str = "AttributeDefinitions: [{AttributeName: id, AttributeType: S}], \
                       KeySchema: [{AttributeName: id, KeyType: HASH}]";
    check_error(
        &table(KEY),
        "resource T: property ProvisionedThroughput is required with BillingMode PROVISIONED \
         (the default); or set BillingMode: PAY_PER_REQUEST",
    );
    check_error(
        &table("BillingMode: PAY_PER_REQUEST"),
        "resource T: property AttributeDefinitions is required",
    );
    check_error(
        &table(&format!("{KEY}, BillingMode: ON_DEMAND")),
        "resource T: property BillingMode = ON_DEMAND is not allowed (allowed: PROVISIONED, \
         PAY_PER_REQUEST)",
    );
    check_error(
        &table(&format!(
            "{KEY}, BillingMode: PAY_PER_REQUEST, ProvisionedThroughput: {{ReadCapacityUnits: 1}}"
        )),
        "resource T: property ProvisionedThroughput = {ReadCapacityUnits: 1} cannot be set with \
         BillingMode PAY_PER_REQUEST",
    );
    check_error(
        &table(
            "BillingMode: PAY_PER_REQUEST, AttributeDefinitions: [{AttributeName: id, \
             AttributeType: S}], KeySchema: [{AttributeName: id, KeyType: RANGE}]",
        ),
        "resource T: property KeySchema[0].KeyType = RANGE is not allowed (allowed: HASH: the \
         first key is the partition key)",
    );
    check_error(
        &table(&format!(
            "{KEY}, BillingMode: PAY_PER_REQUEST, KeySchemas: []"
        )),
        "resource T: property KeySchemas is not a property kinesis-esm knows here (known: \
         AttributeDefinitions, BillingMode, KeySchema, ProvisionedThroughput, TableName, \
         TimeToLiveSpecification, ContributorInsightsSpecification, DeletionProtectionEnabled, \
         GlobalSecondaryIndexes, ImportSourceSpecification, KinesisStreamSpecification, \
         LocalSecondaryIndexes, OnDemandThroughput, PointInTimeRecoverySpecification, \
         ResourcePolicy, SSESpecification, StreamSpecification, TableClass, Tags, \
         WarmThroughput); did you mean KeySchema?",
    );
}

#[test]
fn queues_topics_and_buckets_are_named_as_destinations_name_them() {
    let template = read(
        "  Queue:
    Type: AWS::SQS::Queue
    Properties: {MessageRetentionPeriod: 1209600, RedrivePolicy: {maxReceiveCount: 3}}
  Topic:
    Type: AWS::SNS::Topic
    Properties: {TopicName: failures, DisplayName: Failures}
  Bucket:
    Type: AWS::S3::Bucket
",
    );
    let found: Vec<(&str, &str, &DestinationKind)> = template
        .destinations
        .iter()
        .map(|resource| {
            (
                resource.logical_id.as_str(),
                resource.target.name.as_str(),
                &resource.target.kind,
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("Queue", "Queue", &DestinationKind::Sqs),
            ("Topic", "failures", &DestinationKind::Sns),
            ("Bucket", "bucket", &DestinationKind::S3),
        ]
    );
    let queue = &template.destinations[0];
    assert_eq!(
        queue.attributes,
        BTreeMap::from([("MessageRetentionPeriod".to_owned(), "1209600".to_owned())])
    );
    assert_eq!(queue.not_applied, ["RedrivePolicy"]);
    assert_eq!(
        template.destinations[1].attributes,
        BTreeMap::from([("DisplayName".to_owned(), "Failures".to_owned())])
    );
}
