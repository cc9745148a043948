//! Templates written inline, read into exact configurations or refused with exact messages.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use super::*;
use esm_engine::config::{FanOutConsumer, LoggingConfig, MappingConfig, StartingPosition};
use esm_engine::destination::{DestinationKind, Target};
use esm_engine::filter::{FilterCriteria, Pattern};

/// The file every inline template pretends to be: absolute, so `CodeUri` folders are exact.
const PATH: &str = "/work/app/template.yaml";

fn parse(yaml: &str) -> Result<Template, TemplateError> {
    Template::parse(PATH, yaml, &TemplateOptions::default())
}

#[track_caller]
fn read(yaml: &str) -> Template {
    match parse(yaml) {
        Ok(template) => template,
        Err(error) => panic!("the template was refused: {error}\n{yaml}"),
    }
}

/// Checks that the template is refused with a message containing `expected`.
#[track_caller]
fn check_error(yaml: &str, expected: &str) {
    match parse(yaml) {
        Ok(template) => panic!("the template was accepted: {template:#?}\n{yaml}"),
        Err(error) => {
            let message = error.to_string();
            assert!(
                message.contains(expected),
                "the message\n  {message}\ndoes not contain\n  {expected}"
            );
        }
    }
}

/// A template with the stream `shipments` and one function whose Kinesis event has
/// `properties` (a flow map's content).
fn with_event_properties(properties: &str) -> String {
    format!(
        "Transform: AWS::Serverless-2016-10-31
Resources:
  Shipments:
    Type: AWS::Kinesis::Stream
    Properties: {{Name: shipments, ShardCount: 2}}
  ShippingFunction:
    Type: AWS::Serverless::Function
    Properties:
      Handler: bootstrap
      Runtime: provided.al2023
      Events:
        ShipmentsStream:
          Type: Kinesis
          Properties: {{{properties}}}
"
    )
}

/// As [`with_event_properties`], with a valid `Stream` and `StartingPosition` before `extra`.
fn with_event(extra: &str) -> String {
    with_event_properties(&format!(
        "Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST, {extra}"
    ))
}

/// A template with the stream `shipments` and one function with `properties` (a flow map's
/// content) and a valid Kinesis event.
fn with_function(properties: &str) -> String {
    format!(
        "Transform: AWS::Serverless-2016-10-31
Resources:
  Shipments:
    Type: AWS::Kinesis::Stream
    Properties: {{Name: shipments}}
  Queue:
    Type: AWS::SQS::Queue
  ShippingFunction:
    Type: AWS::Serverless::Function
    Properties:
      {{{properties}, Events: {{ShipmentsStream: {{Type: Kinesis, Properties: {{Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST}}}}}}}}
"
    )
}

/// As [`with_function`] with a valid runtime and handler before `extra`.
fn with_function_extra(extra: &str) -> String {
    with_function(&format!(
        "Handler: bootstrap, Runtime: provided.al2023, {extra}"
    ))
}

/// A template with one stream whose properties are `properties` (a flow map's content).
#[test]
fn a_stream_takes_records_up_to_10_mib_and_auto_distribution() {
    let template = read(&with_stream(
        "StreamModeDetails: {StreamMode: ON_DEMAND}, MaxRecordSizeInKiB: 10240, \
         RecordDistributionStrategy: AUTO",
    ));
    let stream = &template.streams[0];
    assert_eq!(
        (stream.max_record_size_kib, stream.auto_distribution),
        (10240, true)
    );
    let template = read(&with_stream("Name: shipments"));
    let stream = &template.streams[0];
    assert_eq!(
        (stream.max_record_size_kib, stream.auto_distribution),
        (1024, false)
    );
}

fn with_stream(properties: &str) -> String {
    format!(
        "Resources:
  Shipments:
    Type: AWS::Kinesis::Stream
    Properties: {{{properties}}}
"
    )
}

/// The only mapping of the only function.
#[track_caller]
fn only_mapping(template: &Template) -> &MappingConfig {
    match template.functions.as_slice() {
        [function] => match function.mappings.as_slice() {
            [mapping] => mapping,
            other => panic!("expected one mapping, got {other:#?}"),
        },
        other => panic!("expected one function, got {other:#?}"),
    }
}

/// Checks the stream name a `Stream` value resolves to.
#[track_caller]
fn check_stream(stream: &str, expected_name: &str) {
    let yaml = with_event_properties(&format!("Stream: {stream}, StartingPosition: LATEST"));
    assert_eq!(
        only_mapping(&read(&yaml)).stream_name,
        expected_name,
        "{stream}"
    );
}

// Successful reads, checked field by field.

#[test]
fn a_minimal_function_gets_lambda_and_sam_defaults() {
    let template = read(&with_event_properties(
        "Stream: !GetAtt Shipments.Arn, StartingPosition: TRIM_HORIZON",
    ));
    assert_eq!(template.path, PathBuf::from(PATH));
    assert_eq!(
        template.streams,
        vec![StreamResource {
            logical_id: "Shipments".into(),
            name: "shipments".into(),
            shard_count: 2,
            retention: Duration::from_secs(24 * 3600),
            mode: StreamMode::Provisioned,
            max_record_size_kib: 1024,
            auto_distribution: false,
        }]
    );
    assert_eq!(
        template.functions,
        vec![FunctionResource {
            logical_id: "ShippingFunction".into(),
            function_name: "ShippingFunction".into(),
            code_uri: ".".into(),
            code_dir: PathBuf::from("/work/app"),
            binary: "bootstrap".into(),
            build_method: None,
            handler: "bootstrap".into(),
            runtime: "provided.al2023".into(),
            architecture: Architecture::X86_64,
            timeout: Duration::from_secs(3),
            memory_size: 128,
            environment: BTreeMap::new(),
            logging: esm_engine::config::LoggingConfig::default(),
            managed_instances: None,
            mappings: vec![MappingConfig::new(
                "ShippingFunction",
                "shipments",
                StartingPosition::TrimHorizon,
            )],
        }]
    );
}

#[test]
fn every_event_property_reaches_the_mapping() {
    let template = read(&with_function(
        "FunctionName: shipping, Handler: bootstrap, Runtime: provided.al2023, Timeout: 30",
    ));
    assert_eq!(
        only_mapping(&template).function_timeout,
        Duration::from_secs(30)
    );

    let template = read(&with_event_properties(
        "Stream: !GetAtt Shipments.Arn, StartingPosition: AT_TIMESTAMP, \
         StartingPositionTimestamp: 1700000000.5, BatchSize: 500, \
         MaximumBatchingWindowInSeconds: 5, MaximumRetryAttempts: 0, \
         MaximumRecordAgeInSeconds: 3600, BisectBatchOnFunctionError: true, \
         FunctionResponseTypes: [ReportBatchItemFailures], ParallelizationFactor: 4, \
         TumblingWindowInSeconds: 0, Enabled: false, MetricsConfig: {Metrics: [EventCount]}, \
         DestinationConfig: {OnFailure: {Destination: 'arn:aws:sqs:us-east-1:123456789012:failures'}}, \
         FilterCriteria: {Filters: [{Pattern: '{\"data\": {\"carrier\": [\"dhl\"]}}'}]}, \
         KmsKeyArn: 'arn:aws:kms:us-east-1:123456789012:key/1'",
    ));
    let expected = MappingConfig {
        function_name: "ShippingFunction".into(),
        stream_name: "shipments".into(),
        starting_position: StartingPosition::AtTimestamp(
            UNIX_EPOCH + Duration::from_millis(1_700_000_000_500),
        ),
        batch_size: 500,
        maximum_batching_window: Duration::from_secs(5),
        maximum_retry_attempts: Some(0),
        maximum_record_age: Some(Duration::from_secs(3600)),
        bisect_batch_on_function_error: true,
        report_batch_item_failures: true,
        on_failure_destination: Some("arn:aws:sqs:us-east-1:123456789012:failures".into()),
        on_failure_target: Some(Target {
            kind: DestinationKind::Sqs,
            name: "failures".into(),
        }),
        enabled: false,
        function_timeout: Duration::from_secs(3),
        filter_criteria: FilterCriteria::new(vec![
            Pattern::parse(r#"{"data": {"carrier": ["dhl"]}}"#).expect("a pattern"),
        ]),
        parallelization_factor: 4,
        event_count_metrics: true,
        tumbling_window_seconds: 0,
        consumer: None,
    };
    assert_eq!(only_mapping(&template), &expected);
}

#[test]
fn tumbling_windows_of_one_to_900_seconds_are_read() {
    for seconds in [1, 60, 900] {
        let template = read(&with_event(&format!("TumblingWindowInSeconds: {seconds}")));
        assert_eq!(only_mapping(&template).tumbling_window_seconds, seconds);
    }
    let template = read(&with_event("TumblingWindowInSeconds: 0"));
    assert_eq!(only_mapping(&template).tumbling_window_seconds, 0);
}

#[test]
fn minus_one_means_no_limit_and_strings_read_as_numbers() {
    let template = read(&with_event(
        "MaximumRetryAttempts: -1, MaximumRecordAgeInSeconds: '-1', BatchSize: '10000', \
         BisectBatchOnFunctionError: 'True', FunctionResponseTypes: []",
    ));
    let mapping = only_mapping(&template);
    assert_eq!(mapping.maximum_retry_attempts, None);
    assert_eq!(mapping.maximum_record_age, None);
    assert_eq!(mapping.batch_size, 10_000);
    assert!(mapping.bisect_batch_on_function_error);
    assert!(!mapping.report_batch_item_failures);
}

#[test]
fn short_forms_of_stream_references_resolve_to_the_stream_name() {
    check_stream("!GetAtt Shipments.Arn", "shipments");
    check_stream("!GetAtt [Shipments, Arn]", "shipments");
    check_stream("!Sub '${Shipments.Arn}'", "shipments");
    check_stream(
        "!Sub 'arn:${AWS::Partition}:kinesis:${AWS::Region}:${AWS::AccountId}:stream/${Shipments}'",
        "shipments",
    );
    check_stream(
        "!Sub ['arn:aws:kinesis:${AWS::Region}:${AWS::AccountId}:stream/${Name}', {Name: !Ref Shipments}]",
        "shipments",
    );
}

#[test]
fn a_stream_name_where_the_arn_is_required_is_refused_as_cloudformation_does() {
    let use_the_arn = "is the stream's name, where Lambda requires its ARN (as CloudFormation \
                       does: !Ref of an AWS::Kinesis::Stream gives its name); write !GetAtt \
                       Shipments.Arn";
    let cases = [
        ("!Ref Shipments", "!Ref Shipments"),
        ("{Ref: Shipments}", "{Ref: Shipments}"),
        ("!Sub '${Shipments}'", "!Sub ${Shipments}"),
        ("shipments", "shipments"),
    ];
    for (written, rendered) in cases {
        check_error(
            &with_event_properties(&format!("Stream: {written}, StartingPosition: LATEST")),
            &format!("property Stream = {rendered} {use_the_arn}"),
        );
    }
}

#[test]
fn long_forms_of_stream_references_resolve_to_the_stream_name() {
    check_stream("{Fn::GetAtt: [Shipments, Arn]}", "shipments");
    check_stream("{Fn::GetAtt: Shipments.Arn}", "shipments");
    check_stream("{Fn::Sub: '${Shipments.Arn}'}", "shipments");
    check_stream(
        "{Fn::Sub: ['arn:aws:kinesis:us-east-1:123456789012:stream/${S}', {S: {Ref: Shipments}}]}",
        "shipments",
    );
    check_stream(
        "{Fn::Join: ['', ['arn:aws:kinesis:', {Ref: AWS::Region}, ':123456789012:stream/', {Ref: Shipments}]]}",
        "shipments",
    );
}

#[test]
fn a_literal_arn_may_name_a_stream_outside_the_template() {
    check_stream(
        "arn:aws:kinesis:eu-west-1:111122223333:stream/orders",
        "orders",
    );
    check_stream(
        "arn:aws-cn:kinesis:cn-north-1:111122223333:stream/orders.v2",
        "orders.v2",
    );
}

#[test]
fn a_stream_gets_defaults_its_logical_id_and_on_demand_shards() {
    let template = read(&format!(
        "{}  Orders:
    Type: AWS::Kinesis::Stream
    Properties: {{StreamModeDetails: {{StreamMode: ON_DEMAND}}, RetentionPeriodHours: 168, Tags: [{{Key: team, Value: shipping}}]}}
  Audit:
    Type: AWS::Kinesis::Stream
",
        with_stream("Name: shipments, StreamModeDetails: {StreamMode: PROVISIONED}, ShardCount: 3, \
                     StreamEncryption: {EncryptionType: KMS, KeyId: alias/aws/kinesis}, MaxRecordSizeInKiB: 1024")
    ));
    let streams: Vec<_> = template
        .streams
        .iter()
        .map(|stream| {
            (
                stream.logical_id.as_str(),
                stream.name.as_str(),
                stream.shard_count,
                stream.retention.as_secs() / 3600,
                stream.mode,
            )
        })
        .collect();
    assert_eq!(
        streams,
        vec![
            ("Shipments", "shipments", 3, 24, StreamMode::Provisioned),
            (
                "Orders",
                "Orders",
                ON_DEMAND_SHARD_COUNT,
                168,
                StreamMode::OnDemand
            ),
            ("Audit", "Audit", 1, 24, StreamMode::Provisioned),
        ]
    );
    assert!(template.functions.is_empty());
    assert_eq!(
        template.stream("Orders").map(|stream| stream.shard_count),
        Some(4)
    );
}

#[test]
fn function_properties_reach_the_description() {
    let yaml = "Transform: [AWS::LanguageExtensions, AWS::Serverless-2016-10-31]
Parameters:
  Stage: {Type: String, Default: dev}
Resources:
  Shipments:
    Type: AWS::Kinesis::Stream
    Properties: {Name: !Sub 'shipments-${Stage}'}
  ShippingFunction:
    Type: AWS::Serverless::Function
    DependsOn: Shipments
    Metadata:
      BuildMethod: rust-cargolambda
      BuildProperties: {Binary: shipping}
    Properties:
      FunctionName: !Sub '${AWS::StackName}-shipping'
      CodeUri: ../functions/./shipping
      Handler: bootstrap
      Runtime: provided.al2
      Architectures: [arm64]
      Timeout: 900
      MemorySize: 10240
      Description: Books shipments.
      Policies: [AWSLambdaKinesisExecutionRole]
      Tracing: Active
      Layers: ['arn:aws:lambda:us-east-1:580247275435:layer:LambdaInsightsExtension:38']
      Environment:
        Variables:
          STREAM_ARN: !GetAtt Shipments.Arn
          STAGE: !Ref Stage
          RETRIES: 3
          VERBOSE: true
          LITERAL: !Sub '${!NotReplaced}'
      Events:
        ShipmentsStream:
          Type: Kinesis
          Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST}
";
    let template = read(yaml);
    let function = &template.functions[0];
    assert_eq!(function.function_name, "local-shipping");
    assert_eq!(function.code_dir, PathBuf::from("/work/functions/shipping"));
    assert_eq!(function.binary, "shipping");
    assert_eq!(function.build_method.as_deref(), Some("rust-cargolambda"));
    assert_eq!(function.runtime, "provided.al2");
    assert_eq!(function.architecture, Architecture::Arm64);
    assert_eq!(function.timeout, Duration::from_secs(900));
    assert_eq!(function.memory_size, 10_240);
    let environment: Vec<(&str, &str)> = function
        .environment
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    assert_eq!(
        environment,
        vec![
            ("LITERAL", "${NotReplaced}"),
            ("RETRIES", "3"),
            ("STAGE", "dev"),
            (
                "STREAM_ARN",
                "arn:aws:kinesis:us-east-1:123456789012:stream/shipments-dev"
            ),
            ("VERBOSE", "true"),
        ]
    );
    assert_eq!(function.mappings[0].function_name, "local-shipping");
    assert_eq!(function.mappings[0].stream_name, "shipments-dev");
}

#[test]
fn options_stand_in_for_the_account_region_stack_and_parameters() {
    let yaml = "Transform: AWS::Serverless-2016-10-31
Parameters:
  Size: {Type: Number, Default: 10}
  Stage: {Type: String, AllowedValues: [dev, prod]}
Resources:
  Shipments:
    Type: AWS::Kinesis::Stream
  ShippingFunction:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: !Sub '${AWS::StackName}-${Stage}'
      Handler: bootstrap
      Runtime: provided.al2023
      Environment:
        Variables:
          ARN: !GetAtt Shipments.Arn
          SUFFIX: !Ref AWS::URLSuffix
      Events:
        ShipmentsStream:
          Type: Kinesis
          Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST, BatchSize: !Ref Size}
";
    let options = TemplateOptions {
        region: "cn-north-1".into(),
        account_id: "111122223333".into(),
        stack_name: "orders".into(),
        parameter_overrides: BTreeMap::from([
            ("Stage".to_owned(), "prod".to_owned()),
            ("Size".to_owned(), "25".to_owned()),
        ]),
        local_dynamodb: None,
    };
    let template = Template::parse(PATH, yaml, &options).unwrap();
    let function = &template.functions[0];
    assert_eq!(function.function_name, "orders-prod");
    assert_eq!(
        function.environment["ARN"],
        "arn:aws-cn:kinesis:cn-north-1:111122223333:stream/Shipments"
    );
    assert_eq!(function.environment["SUFFIX"], "amazonaws.com.cn");
    assert_eq!(function.mappings[0].batch_size, 25);
    assert_eq!(function.mappings[0].stream_name, "Shipments");
}

/// The environment of a function that reads two tables' `Ref`, given `local_dynamodb`.
fn table_environment(local_dynamodb: Option<&str>) -> BTreeMap<String, String> {
    let yaml =
        with_function_extra("Environment: {Variables: {NAMED: !Ref Named, UNNAMED: !Ref Unnamed}}")
            .replace(
                "  Queue:\n",
                "  Named:
    Type: AWS::DynamoDB::Table
    Properties: {TableName: idempotency, BillingMode: PAY_PER_REQUEST, KeySchema: [{AttributeName: id, KeyType: HASH}], AttributeDefinitions: [{AttributeName: id, AttributeType: S}]}
  Unnamed:
    Type: AWS::Serverless::SimpleTable
  Queue:\n",
            );
    let options = TemplateOptions {
        local_dynamodb: local_dynamodb.map(str::to_owned),
        ..TemplateOptions::default()
    };
    let template = Template::parse(PATH, &yaml, &options).unwrap();
    template.functions[0].environment.clone()
}

#[test]
fn a_tables_ref_names_a_table_of_the_local_dynamodb_the_functions_are_given() {
    let environment = table_environment(Some("http://127.0.0.1:4567"));
    assert_eq!(environment["NAMED"], "idempotency");
    assert_eq!(environment["UNNAMED"], "local-Unnamed");
    assert_eq!(
        environment[LOCAL_DYNAMODB_VARIABLE],
        "http://127.0.0.1:4567"
    );
}

#[test]
fn without_a_local_dynamodb_a_tables_ref_is_empty_and_no_endpoint_is_given() {
    let environment = table_environment(None);
    assert_eq!(environment["NAMED"], "");
    assert_eq!(environment["UNNAMED"], "");
    assert!(!environment.contains_key(LOCAL_DYNAMODB_VARIABLE));
}

#[test]
fn globals_apply_as_sam_applies_them() {
    let yaml = "Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Runtime: provided.al2023
    Handler: bootstrap
    Timeout: 20
    MemorySize: 512
    CodeUri: functions/shipping
    Environment:
      Variables: {RUST_LOG: info, TABLE: shared}
  Api:
    Cors: '*'
Resources:
  Shipments:
    Type: AWS::Kinesis::Stream
  Inherits:
    Type: AWS::Serverless::Function
    Properties:
      Timeout: 5
      Environment:
        Variables: {TABLE: own, EXTRA: yes-please}
      Events:
        ShipmentsStream:
          Type: Kinesis
          Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST}
  IgnoresSome:
    Type: AWS::Serverless::Function
    IgnoreGlobals: [Timeout, Environment]
    Properties:
      Events:
        ShipmentsStream:
          Type: Kinesis
          Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST}
  IgnoresAll:
    Type: AWS::Serverless::Function
    IgnoreGlobals: '*'
    Properties:
      Handler: own
      Runtime: provided.al2
      Events:
        ShipmentsStream:
          Type: Kinesis
          Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST}
";
    let template = read(yaml);
    let summary: Vec<_> = template
        .functions
        .iter()
        .map(|function| {
            (
                function.logical_id.as_str(),
                function.handler.as_str(),
                function.timeout.as_secs(),
                function.memory_size,
                function.code_dir.clone(),
                function.environment.clone(),
                function.mappings[0].function_timeout.as_secs(),
            )
        })
        .collect();
    let variables = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    };
    assert_eq!(
        summary,
        vec![
            (
                "Inherits",
                "bootstrap",
                5,
                512,
                PathBuf::from("/work/app/functions/shipping"),
                variables(&[
                    ("EXTRA", "yes-please"),
                    ("RUST_LOG", "info"),
                    ("TABLE", "own")
                ]),
                5,
            ),
            (
                "IgnoresSome",
                "bootstrap",
                3,
                512,
                PathBuf::from("/work/app/functions/shipping"),
                variables(&[]),
                3,
            ),
            (
                "IgnoresAll",
                "own",
                3,
                128,
                PathBuf::from("/work/app"),
                variables(&[]),
                3
            ),
        ]
    );
}

#[test]
fn two_functions_on_one_stream_get_a_mapping_each() {
    let yaml = "Transform: AWS::Serverless-2016-10-31
Globals:
  Function: {Runtime: provided.al2023, Handler: bootstrap}
Resources:
  Shipments:
    Type: AWS::Kinesis::Stream
    Properties: {Name: shipments}
  Shipping:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Read: {Type: Kinesis, Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST}}
  Auditing:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Read: {Type: Kinesis, Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: TRIM_HORIZON}}
";
    let mappings: Vec<_> = read(yaml)
        .functions
        .iter()
        .flat_map(|function| function.mappings.clone())
        .collect();
    assert_eq!(
        mappings,
        vec![
            MappingConfig::new("Shipping", "shipments", StartingPosition::Latest),
            MappingConfig::new("Auditing", "shipments", StartingPosition::TrimHorizon),
        ]
    );
}

#[test]
fn one_function_with_two_kinesis_events_gets_two_mappings_and_other_events_are_ignored() {
    let yaml = "Transform: AWS::Serverless-2016-10-31
Resources:
  Shipments:
    Type: AWS::Kinesis::Stream
  Returns:
    Type: AWS::Kinesis::Stream
  Queue:
    Type: AWS::SQS::Queue
  Shipping:
    Type: AWS::Serverless::Function
    Properties:
      Handler: bootstrap
      Runtime: provided.al2023
      Events:
        FromQueue: {Type: SQS, Properties: {Queue: !GetAtt Queue.Arn, BatchSize: 10}}
        Shipped: {Type: Kinesis, Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST, BatchSize: 7}}
        Http: {Type: Api, Properties: {Path: /shipments, Method: post}}
        Returned: {Type: Kinesis, Properties: {Stream: !GetAtt Returns.Arn, StartingPosition: TRIM_HORIZON}}
  WebsiteWithoutKinesis:
    Type: AWS::Serverless::Function
    Condition: InProduction
    Properties:
      Runtime: python3.12
      Handler: app.handler
      InlineCode: 'def handler(event, context): return 1'
      Events:
        Http: {Type: Api, Properties: {Path: /, Method: get}}
";
    let template = read(yaml);
    assert_eq!(
        template.functions.len(),
        1,
        "a function without Kinesis events is skipped"
    );
    let mut shipped = MappingConfig::new("Shipping", "Shipments", StartingPosition::Latest);
    shipped.batch_size = 7;
    assert_eq!(
        template.functions[0].mappings,
        vec![
            shipped,
            MappingConfig::new("Shipping", "Returns", StartingPosition::TrimHorizon),
        ]
    );
}

#[test]
fn an_on_failure_destination_in_the_template_is_kept_as_its_logical_id() {
    let destination = |value: &str| {
        let yaml = format!(
            "{}  Queue:\n    Type: AWS::SQS::Queue\n  Topic:\n    Type: AWS::SNS::Topic\n",
            with_event(&format!(
                "DestinationConfig: {{OnFailure: {{Type: SQS, Destination: {value}}}}}"
            ))
        );
        only_mapping(&read(&yaml)).on_failure_destination.clone()
    };
    assert_eq!(destination("!GetAtt Queue.Arn").as_deref(), Some("Queue"));
    assert_eq!(
        destination("{Fn::GetAtt: [Queue, Arn]}").as_deref(),
        Some("Queue")
    );
    assert_eq!(destination("!Ref Topic").as_deref(), Some("Topic"));
    assert_eq!(
        destination("!Sub 'arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:failures'")
            .as_deref(),
        Some("arn:aws:sqs:us-east-1:123456789012:failures")
    );
}

#[test]
fn an_on_failure_destination_names_its_queue_topic_or_bucket() {
    let target = |value: &str| {
        let yaml = format!(
            "{}  Queue:\n    Type: AWS::SQS::Queue\n  Named:\n    Type: AWS::SQS::Queue\n    Properties: {{QueueName: failed-shipments}}\n  Topic:\n    Type: AWS::SNS::Topic\n  Bucket:\n    Type: AWS::S3::Bucket\n",
            with_event(&format!(
                "DestinationConfig: {{OnFailure: {{Destination: {value}}}}}"
            ))
        );
        only_mapping(&read(&yaml)).on_failure_target.clone()
    };
    let named = |kind, name: &str| {
        Some(Target {
            kind,
            name: name.to_owned(),
        })
    };
    assert_eq!(
        target("!GetAtt Queue.Arn"),
        named(DestinationKind::Sqs, "Queue")
    );
    assert_eq!(
        target("!GetAtt Named.Arn"),
        named(DestinationKind::Sqs, "failed-shipments")
    );
    assert_eq!(target("!Ref Topic"), named(DestinationKind::Sns, "Topic"));
    assert_eq!(
        target("!GetAtt Bucket.Arn"),
        named(DestinationKind::S3, "bucket")
    );
    assert_eq!(
        target("'arn:aws:sns:us-east-1:123456789012:alerts'"),
        named(DestinationKind::Sns, "alerts")
    );
    assert_eq!(
        target("'arn:aws:s3:::failed-batches'"),
        named(DestinationKind::S3, "failed-batches")
    );
    assert_eq!(
        target("'arn:aws:lambda:us-east-1:123456789012:function:f'"),
        None
    );
}

// Refused: behaviour kinesis-esm does not reproduce.

#[test]
fn event_properties_that_are_not_reproduced_are_refused() {
    check_error(
        &with_event_properties(
            "Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST, \
             TumblingWindowInSeconds: 60, ParallelizationFactor: 2",
        ),
        "template.yaml: resource ShippingFunction, event ShipmentsStream: property TumblingWindowInSeconds = 60 with ParallelizationFactor 2 is not reproduced by kinesis-esm (tumbling windows with ParallelizationFactor 1)",
    );
    check_error(
        &with_event("StartingPositionTimestamp: 1700000000"),
        "property StartingPositionTimestamp = 1700000000 is only read with StartingPosition AT_TIMESTAMP",
    );
    check_error(
        &with_event("ParallelisationFactor: 2"),
        "event ShipmentsStream: property ParallelisationFactor is not a property kinesis-esm knows here (known: Stream, StartingPosition,",
    );
}

// FilterCriteria and KmsKeyArn (docs/filtering.md).

/// The filters of the only mapping of a template whose event has `FilterCriteria: criteria`.
#[track_caller]
fn filters_of(criteria: &str) -> FilterCriteria {
    let template = read(&with_event(&format!("FilterCriteria: {criteria}")));
    only_mapping(&template).filter_criteria.clone()
}

#[test]
fn filter_criteria_reach_the_mapping_as_parsed_patterns() {
    let dhl = r#"{"data": {"carrier": ["dhl"]}}"#;
    let heavy = r#"{"data": {"weight": [{"numeric": [">", 20]}]}}"#;
    assert_eq!(
        filters_of(&format!(
            "{{Filters: [{{Pattern: '{dhl}'}}, {{Pattern: '{heavy}'}}]}}"
        )),
        FilterCriteria::new(vec![
            Pattern::parse(dhl).expect("a pattern"),
            Pattern::parse(heavy).expect("a pattern"),
        ])
    );
    // Lambda's way to remove every filter, and an empty list: every record reaches the function.
    assert!(filters_of("{}").is_empty());
    assert!(filters_of("{Filters: []}").is_empty());
    // A pattern may come from !Sub, as CloudFormation resolves it before Lambda reads it.
    assert_eq!(
        filters_of(r#"{Filters: [{Pattern: !Sub '{"data": {"region": ["${AWS::Region}"]}}'}]}"#),
        FilterCriteria::new(vec![
            Pattern::parse(r#"{"data": {"region": ["us-east-1"]}}"#).expect("a pattern"),
        ])
    );
}

#[test]
fn invalid_filter_patterns_are_refused_with_the_file_resource_and_place() {
    check_error(
        &with_event(
            r#"FilterCriteria: {Filters: [{Pattern: '{"data": {"carrier": ["dhl"]}}'}, {Pattern: '{"data": {"carrier": "ups"}}'}]}"#,
        ),
        r#"template.yaml: resource ShippingFunction, event ShipmentsStream: property FilterCriteria.Filters[1].Pattern = {"data": {"carrier": "ups"}} is not a valid filter pattern: at data.carrier: a field takes an array of values or rules, such as ["ups"], or an object of fields; not a string"#,
    );
    check_error(
        &with_event("FilterCriteria: {Filters: [{Pattern: 'not json'}]}"),
        "property FilterCriteria.Filters[0].Pattern = not json is not a valid filter pattern: at line 1, column 2: not valid JSON: expected ident",
    );
    check_error(
        &with_event(
            r#"FilterCriteria: {Filters: [{Pattern: '{"data": {"n": [{"NUMERIC": [">", 1]}]}}'}]}"#,
        ),
        r#"property FilterCriteria.Filters[0].Pattern = {"data": {"n": [{"NUMERIC": [">", 1]}]}} is not a valid filter pattern: at data.n[0].NUMERIC: unknown operator "NUMERIC""#,
    );
    check_error(
        &with_event(r#"FilterCriteria: {Filters: [{Pattern: {data: {carrier: [dhl]}}}]}"#),
        r#"property FilterCriteria.Filters[0].Pattern = {data: {carrier: [dhl]}} is not allowed (allowed: a JSON text in a string: quote it, as in Pattern: '{"data": {"carrier": ["dhl"]}}')"#,
    );
    check_error(
        &with_event("FilterCriteria: {Filters: [{}]}"),
        "property FilterCriteria.Filters[0].Pattern is required (the filter as JSON text",
    );
    check_error(
        &with_event("FilterCriteria: {Filters: [{Patern: '{}'}]}"),
        "property FilterCriteria.Filters[0].Patern is not a property kinesis-esm knows here (known: Pattern)",
    );
    check_error(
        &with_event("FilterCriteria: {Filters: [x]}"),
        "property FilterCriteria.Filters[0] = x is not allowed (allowed: a map of properties)",
    );
    check_error(
        &with_event("FilterCriteria: {Filter: []}"),
        "property FilterCriteria.Filter is not a property kinesis-esm knows here (known: Filters)",
    );
    let eleven = [r#"{Pattern: '{"data": {"k": ["v"]}}'}"#; 11].join(", ");
    check_error(
        &with_event(&format!("FilterCriteria: {{Filters: [{eleven}]}}")),
        "property FilterCriteria.Filters = 11 filters is out of range (allowed: at most 10; Lambda allows 5 unless the account's quota is raised)",
    );
}

#[test]
fn a_kms_key_is_accepted_as_an_arn_a_key_of_the_template_or_empty() {
    for key in [
        "'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab'",
        "''",
        "!Sub 'arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:alias/filters'",
    ] {
        read(&with_event(&format!("KmsKeyArn: {key}")));
    }
    let template =
        with_event("KmsKeyArn: !GetAtt FilterKey.Arn") + "  FilterKey:\n    Type: AWS::KMS::Key\n";
    read(&template);
    check_error(
        &with_event("KmsKeyArn: my-key"),
        "property KmsKeyArn = my-key is not allowed (allowed: a KMS key ARN such as arn:aws:kms:us-east-1:123456789012:key/id, or '' for an AWS owned key)",
    );
}

#[test]
fn an_event_naming_a_consumer_reads_its_stream_through_it() {
    let by_arn = read(&with_event_properties(
        "Stream: 'arn:aws:kinesis:us-east-1:123456789012:stream/shipments/consumer/reader:1700000000', StartingPosition: LATEST",
    ));
    let mapping = only_mapping(&by_arn);
    assert_eq!(mapping.stream_name, "shipments");
    assert_eq!(
        mapping.consumer,
        Some(FanOutConsumer {
            name: "reader".to_owned(),
            declared: false
        })
    );
    for stream in ["!GetAtt Reader.ConsumerARN", "!Ref Reader"] {
        let yaml = format!(
            "{}  Reader:\n    Type: AWS::Kinesis::StreamConsumer\n    Properties: {{ConsumerName: !Sub '${{AWS::StackName}}-reader', StreamARN: !GetAtt Shipments.Arn}}\n",
            with_event_properties(&format!("Stream: {stream}, StartingPosition: LATEST"))
        );
        let template = read(&yaml);
        let mapping = only_mapping(&template);
        assert_eq!(mapping.stream_name, "shipments", "{stream}");
        let consumer = mapping.consumer.as_ref().expect("a consumer");
        assert!(consumer.declared, "{stream}");
        assert!(consumer.name.ends_with("-reader"), "{}", consumer.name);
    }
    assert_eq!(
        only_mapping(&read(&with_event_properties(
            "Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST"
        )))
        .consumer,
        None
    );
}

#[test]
fn a_consumer_without_its_properties_or_with_a_bad_name_is_refused() {
    let yaml = format!(
        "{}  Reader:\n    Type: AWS::Kinesis::StreamConsumer\n    Properties: {{ConsumerName: reader}}\n",
        with_event_properties("Stream: !GetAtt Reader.ConsumerARN, StartingPosition: LATEST")
    );
    check_error(
        &yaml,
        "consumer Reader (AWS::Kinesis::StreamConsumer) has no StreamARN",
    );
    let yaml = format!(
        "{}  Reader:\n    Type: AWS::Kinesis::StreamConsumer\n    Properties: {{ConsumerName: 'no spaces', StreamARN: !GetAtt Shipments.Arn}}\n",
        with_event_properties("Stream: !GetAtt Reader.ConsumerARN, StartingPosition: LATEST")
    );
    check_error(
        &yaml,
        "ConsumerName no spaces of consumer Reader is not allowed",
    );
    check_error(
        &with_event_properties(
            "Stream: 'arn:aws:kinesis:us-east-1:123456789012:stream/shipments/consumer/', StartingPosition: LATEST",
        ),
        "or a consumer's",
    );
}

#[test]
fn a_stream_must_be_defined_in_the_template_or_given_by_arn() {
    check_error(
        &with_event_properties("Stream: orders, StartingPosition: LATEST"),
        "property Stream = orders names no AWS::Kinesis::Stream of the template and is not a stream ARN (arn:aws:kinesis:region:account:stream/name)",
    );
    check_error(
        &with_event_properties("Stream: !GetAtt Orders.Arn, StartingPosition: LATEST"),
        "property Stream = !GetAtt Orders.Arn cannot be resolved: Orders is not a resource of the template",
    );
    check_error(
        &with_event_properties("Stream: !Ref Orders, StartingPosition: LATEST"),
        "property Stream = !Ref Orders cannot be resolved: Orders is neither a parameter nor a resource of the template",
    );
    check_error(
        &with_event_properties("Stream: !GetAtt Shipments.StreamId, StartingPosition: LATEST"),
        "cannot be resolved: stream Shipments has no attribute StreamId",
    );
    check_error(
        &with_event_properties(
            "Stream: 'arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2024', StartingPosition: LATEST",
        ),
        "is not allowed (allowed: a Kinesis stream ARN, arn:aws:kinesis:region:account:stream/name, or a consumer's)",
    );
    check_error(
        &with_event_properties("StartingPosition: LATEST"),
        "event ShipmentsStream: property Stream is required",
    );
}

#[test]
fn event_values_out_of_range_say_what_is_allowed() {
    check_error(
        &with_event("BatchSize: 0"),
        "property BatchSize = 0 is out of range (allowed: 1 to 10000)",
    );
    check_error(
        &with_event("BatchSize: 10001"),
        "property BatchSize = 10001 is out of range (allowed: 1 to 10000)",
    );
    check_error(
        &with_event("BatchSize: ten"),
        "property BatchSize = ten is not allowed (allowed: a whole number from 1 to 10000)",
    );
    check_error(
        &with_event("BatchSize: 1.5"),
        "property BatchSize = 1.5 is not allowed (allowed: a whole number from 1 to 10000)",
    );
    check_error(
        &with_event("MaximumBatchingWindowInSeconds: 301"),
        "property MaximumBatchingWindowInSeconds = 301 is out of range (allowed: 0 to 300)",
    );
    check_error(
        &with_event("MaximumRetryAttempts: -2"),
        "property MaximumRetryAttempts = -2 is out of range (allowed: -1 to 10000)",
    );
    check_error(
        &with_event("MaximumRetryAttempts: 10001"),
        "property MaximumRetryAttempts = 10001 is out of range (allowed: -1 to 10000)",
    );
    check_error(
        &with_event("MaximumRecordAgeInSeconds: 59"),
        "property MaximumRecordAgeInSeconds = 59 is out of range (allowed: -1, or 60 to 604800)",
    );
    check_error(
        &with_event("MaximumRecordAgeInSeconds: 0"),
        "property MaximumRecordAgeInSeconds = 0 is out of range (allowed: -1, or 60 to 604800)",
    );
    check_error(
        &with_event("MaximumRecordAgeInSeconds: 604801"),
        "property MaximumRecordAgeInSeconds = 604801 is out of range (allowed: -1 to 604800)",
    );
    check_error(
        &with_event("ParallelizationFactor: 11"),
        "template.yaml: resource ShippingFunction, event ShipmentsStream: property ParallelizationFactor = 11 is out of range (allowed: 1 to 10)",
    );
    check_error(
        &with_event("ParallelizationFactor: 0"),
        "property ParallelizationFactor = 0 is out of range (allowed: 1 to 10)",
    );
    check_error(
        &with_event("TumblingWindowInSeconds: 901"),
        "property TumblingWindowInSeconds = 901 is out of range (allowed: 0 to 900)",
    );
    check_error(
        &with_event("BisectBatchOnFunctionError: maybe"),
        "property BisectBatchOnFunctionError = maybe is not allowed (allowed: true or false)",
    );
    check_error(
        &with_event("Enabled: 1"),
        "property Enabled = 1 is not allowed (allowed: true or false)",
    );
}

#[test]
fn starting_positions_must_be_complete_and_spelt_as_lambda_spells_them() {
    check_error(
        &with_event_properties("Stream: !GetAtt Shipments.Arn, StartingPosition: TRIM-HORIZON"),
        "property StartingPosition = TRIM-HORIZON is not allowed (allowed: TRIM_HORIZON, LATEST, AT_TIMESTAMP)",
    );
    check_error(
        &with_event_properties("Stream: !GetAtt Shipments.Arn"),
        "property StartingPosition is required (TRIM_HORIZON, LATEST or AT_TIMESTAMP)",
    );
    check_error(
        &with_event_properties("Stream: !GetAtt Shipments.Arn, StartingPosition: AT_TIMESTAMP"),
        "property StartingPositionTimestamp is required with StartingPosition AT_TIMESTAMP",
    );
    check_error(
        &with_event_properties(
            "Stream: !GetAtt Shipments.Arn, StartingPosition: AT_TIMESTAMP, StartingPositionTimestamp: -5",
        ),
        "property StartingPositionTimestamp = -5 is out of range (allowed: seconds since the Unix epoch, 0 or more)",
    );
}

#[test]
fn response_types_and_destinations_take_only_what_lambda_takes() {
    check_error(
        &with_event("FunctionResponseTypes: [ReportBatchItemFailure]"),
        "property FunctionResponseTypes = [ReportBatchItemFailure] is not allowed (allowed: [] or [ReportBatchItemFailures])",
    );
    check_error(
        &with_event("FunctionResponseTypes: ReportBatchItemFailures"),
        "property FunctionResponseTypes = ReportBatchItemFailures is not allowed",
    );
    check_error(
        &with_event(
            "DestinationConfig: {OnSuccess: {Destination: 'arn:aws:sqs:us-east-1:123456789012:ok'}}",
        ),
        "property DestinationConfig.OnSuccess = {Destination: arn:aws:sqs:us-east-1:123456789012:ok} is not allowed (allowed: only OnFailure",
    );
    check_error(
        &with_event("DestinationConfig: {OnFailure: {Type: Lambda, Destination: x}}"),
        "property DestinationConfig.OnFailure.Type = Lambda is not allowed (allowed: SQS, SNS, S3)",
    );
    check_error(
        &with_event("DestinationConfig: {OnFailure: {Type: SQS}}"),
        "property DestinationConfig.OnFailure.Destination is required",
    );
    check_error(
        &with_event("DestinationConfig: {OnFailure: {Destination: !GetAtt Nowhere.Arn}}"),
        "property DestinationConfig.OnFailure.Destination = !GetAtt Nowhere.Arn cannot be resolved: Nowhere is not a resource of the template",
    );
}

#[test]
fn metrics_config_takes_only_event_count() {
    let metrics = |config: &str| only_mapping(&read(&with_event(config))).event_count_metrics;
    assert!(metrics("MetricsConfig: {Metrics: [EventCount]}"));
    assert!(!metrics("MetricsConfig: {Metrics: []}"));
    assert!(!metrics("MetricsConfig: {}"));
    assert!(!metrics("BatchSize: 10"));
    check_error(
        &with_event("MetricsConfig: {Metrics: [EventCounts]}"),
        "template.yaml: resource ShippingFunction, event ShipmentsStream: property \
         MetricsConfig.Metrics = [EventCounts] is not allowed (allowed: [] or [EventCount]; \
         ErrorCount and KafkaMetrics are for Kafka event sources only)",
    );
    check_error(
        &with_event("MetricsConfig: {Metrics: [EventCount, KafkaMetrics]}"),
        "property MetricsConfig.Metrics = [EventCount, KafkaMetrics] is not allowed",
    );
    check_error(
        &with_event("MetricsConfig: {Metrics: EventCount}"),
        "property MetricsConfig.Metrics = EventCount is not allowed",
    );
    check_error(
        &with_event("MetricsConfig: {Metric: [EventCount]}"),
        "MetricsConfig.Metric",
    );
}

#[test]
fn a_kinesis_event_needs_its_properties() {
    let event = |event: &str| {
        with_function_extra("Description: d").replace(
            "Events: {ShipmentsStream: {Type: Kinesis, Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST}}}",
            &format!("Events: {{ShipmentsStream: {event}}}"),
        )
    };
    check_error(
        &event("{Type: Kinesis}"),
        "resource ShippingFunction, event ShipmentsStream: property Properties is required",
    );
    check_error(
        &event("{Type: Kinesis, Properties: []}"),
        "event ShipmentsStream: property Properties = [] is not allowed",
    );
    check_error(
        &event("{Type: Kinesis, Properties: {}, Condition: C}"),
        "event ShipmentsStream: property Condition is not a property kinesis-esm knows here",
    );
    check_error(
        &event("{Properties: {}}"),
        "event ShipmentsStream: property Type is required",
    );
}

#[test]
fn one_function_maps_one_stream_once() {
    let yaml = "Transform: AWS::Serverless-2016-10-31
Resources:
  Shipments:
    Type: AWS::Kinesis::Stream
  Shipping:
    Type: AWS::Serverless::Function
    Properties:
      Handler: bootstrap
      Runtime: provided.al2023
      Events:
        First: {Type: Kinesis, Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST}}
        Second: {Type: Kinesis, Properties: {Stream: !Sub '${Shipments.Arn}', StartingPosition: LATEST}}
";
    check_error(
        yaml,
        "resource Shipping, event Second: property Stream = !Sub ${Shipments.Arn} is mapped by event First already: Lambda allows one mapping per function and stream",
    );
}

#[test]
fn function_properties_kinesis_esm_cannot_run_are_refused() {
    check_error(
        &with_function("Handler: app.handler, Runtime: python3.12"),
        "resource ShippingFunction: property Runtime = python3.12 is not reproduced by kinesis-esm (provided.al2023, provided.al2, provided",
    );
    check_error(
        &with_function("Handler: bootstrap"),
        "resource ShippingFunction: property Runtime is required",
    );
    check_error(
        &with_function("Runtime: provided.al2023"),
        "resource ShippingFunction: property Handler is required",
    );
    check_error(
        &with_function_extra("InlineCode: 'fn main() {}'"),
        "property InlineCode = fn main() {} is not reproduced by kinesis-esm",
    );
    check_error(
        &with_function_extra("CodeUri: 's3://bucket/shipping.zip'"),
        "property CodeUri = s3://bucket/shipping.zip is not reproduced by kinesis-esm (only a local folder",
    );
    check_error(
        &with_function_extra("CodeUri: {Bucket: b, Key: k}"),
        "property CodeUri = {Bucket: b, Key: k} is not reproduced by kinesis-esm (only a local folder",
    );
    check_error(
        &with_function_extra("PackageType: Image"),
        "property PackageType = Image is not reproduced by kinesis-esm (only Zip)",
    );
    check_error(
        &with_function_extra("ReservedConcurrentExecutions: 0"),
        "property ReservedConcurrentExecutions = 0 is not reproduced by kinesis-esm",
    );
    check_error(
        &with_function_extra("Timout: 10"),
        "resource ShippingFunction: property Timout is not a property kinesis-esm knows here",
    );
}

#[test]
fn function_values_out_of_range_say_what_is_allowed() {
    check_error(
        &with_function_extra("Timeout: 0"),
        "resource ShippingFunction: property Timeout = 0 is out of range (allowed: 1 to 900)",
    );
    check_error(
        &with_function_extra("Timeout: 901"),
        "property Timeout = 901 is out of range (allowed: 1 to 900)",
    );
    check_error(
        &with_function_extra("MemorySize: 64"),
        "property MemorySize = 64 is out of range (allowed: 128 to 10240)",
    );
    check_error(
        &with_function_extra("Architectures: [sparc]"),
        "property Architectures = [sparc] is not allowed (allowed: [x86_64] or [arm64])",
    );
    check_error(
        &with_function_extra("Architectures: arm64"),
        "property Architectures = arm64 is not allowed (allowed: [x86_64] or [arm64])",
    );
    check_error(
        &with_function_extra("Architectures: [x86_64, arm64]"),
        "property Architectures = [x86_64, arm64] is not allowed (allowed: [x86_64] or [arm64]: Lambda takes exactly one",
    );
    check_error(
        &with_function_extra("FunctionName: 'ship ping'"),
        "property FunctionName = ship ping is not allowed (allowed: 1 to 64 characters",
    );
}

#[test]
fn environment_variables_must_resolve_and_be_settable() {
    check_error(
        &with_function_extra("Environment: {Variables: {QUEUE_URL: !Ref Queue}}"),
        "resource ShippingFunction: property Environment.Variables.QUEUE_URL = !Ref Queue cannot be resolved: kinesis-esm cannot know what Ref of resource Queue (AWS::SQS::Queue) would be",
    );
    check_error(
        &with_function_extra("Environment: {Variables: {QUEUE_ARN: !GetAtt Queue.Arn}}"),
        "property Environment.Variables.QUEUE_ARN = !GetAtt Queue.Arn cannot be resolved: kinesis-esm cannot know attribute Arn of resource Queue (AWS::SQS::Queue)",
    );
    check_error(
        &with_function_extra("Environment: {Variables: {MODE: !If [IsProd, fast, slow]}}"),
        "property Environment.Variables.MODE = !If [IsProd, fast, slow] cannot be resolved: IsProd is not a condition of the template's Conditions",
    );
    check_error(
        &with_function_extra("Environment: {Variables: {MODE: !Select [0, [fast]]}}"),
        "cannot be resolved: Fn::Select is not evaluated by kinesis-esm",
    );
    check_error(
        &with_function_extra("Environment: {Variables: {STACK: !Ref AWS::StackId}}"),
        "cannot be resolved: AWS::StackId has no local value",
    );
    check_error(
        &with_function_extra("Environment: {Variables: {AWS_REGION: eu-west-1}}"),
        "property Environment.Variables.AWS_REGION = eu-west-1 is reserved: Lambda sets this variable itself",
    );
    check_error(
        &with_function_extra("Environment: {Variables: {1ST: x}}"),
        "property Environment.Variables.1ST = x has a name Lambda refuses",
    );
    check_error(
        &with_function_extra("Environment: {Vars: {A1: x}}"),
        "property Environment.Vars is not a property kinesis-esm knows here (known: Variables)",
    );
}

#[test]
fn globals_are_checked_and_blamed_for_their_own_values() {
    let with_globals = |globals: &str| {
        format!(
            "Globals:\n  Function: {{{globals}}}\n{}",
            with_function_extra("Description: d")
        )
    };
    check_error(
        &with_globals("FunctionName: shared"),
        "template.yaml: Globals.Function: property FunctionName is not a property kinesis-esm knows here",
    );
    check_error(
        &with_globals("Timeout: 0"),
        "template.yaml: Globals.Function: property Timeout = 0 is out of range (allowed: 1 to 900)",
    );
    check_error(
        &with_globals("Architectures: [x86_64]")
            .replace("Description: d", "Architectures: [arm64]"),
        "resource ShippingFunction: property Architectures = [x86_64, arm64] is not allowed",
    );
    check_error(
        &format!(
            "Globals:\n  Lambda: {{}}\n{}",
            with_function_extra("Description: d")
        ),
        "template: property Globals.Lambda is not a property kinesis-esm knows here",
    );
    let ignoring = with_globals("Timeout: 5").replace(
        "    Type: AWS::Serverless::Function\n",
        "    Type: AWS::Serverless::Function\n    IgnoreGlobals: [MemorySize]\n",
    );
    check_error(
        &ignoring,
        "resource ShippingFunction: property IgnoreGlobals = MemorySize is not a property of Globals.Function",
    );
}

#[test]
fn parameters_need_a_value_a_local_run_can_know() {
    let with_parameter = |parameter: &str, reference: &str| {
        format!(
            "Parameters:\n  Stage: {{{parameter}}}\n{}",
            with_function_extra(&format!(
                "Environment: {{Variables: {{STAGE: {reference}}}}}"
            ))
        )
    };
    check_error(
        &with_parameter("Type: String", "!Ref Stage"),
        "property Environment.Variables.STAGE = !Ref Stage cannot be resolved: parameter Stage has no Default: give it one, or pass an override",
    );
    check_error(
        &with_parameter(
            "Type: String, Default: test, AllowedValues: [dev, prod]",
            "!Ref Stage",
        ),
        "template.yaml: parameter Stage: property Default = test is not allowed (allowed: dev, prod)",
    );
    check_error(
        &with_parameter(
            "Type: 'AWS::SSM::Parameter::Value<String>', Default: /shipping/stage",
            "!Ref Stage",
        ),
        "cannot be resolved: parameter Stage takes its value from SSM Parameter Store",
    );
    check_error(
        &with_parameter(
            "Type: CommaDelimitedList, Default: 'a,b'",
            "!Sub '${Stage}'",
        ),
        "cannot be resolved: parameter Stage is a list (CommaDelimitedList), not a single value",
    );
    check_error(
        &with_parameter("Default: dev", "!Ref Stage"),
        "parameter Stage: property Type is required",
    );
    check_error(
        &with_parameter("Type: String, Default: dev", "!GetAtt Stage.Value"),
        "cannot be resolved: Stage is a parameter, and parameters have no attributes",
    );
    let options = TemplateOptions {
        parameter_overrides: BTreeMap::from([("Stag".to_owned(), "prod".to_owned())]),
        ..TemplateOptions::default()
    };
    let error = Template::parse(
        PATH,
        &with_parameter("Type: String, Default: dev", "!Ref Stage"),
        &options,
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "/work/app/template.yaml: template: property Parameters = Stag is overridden but not declared in Parameters"
    );
}

#[test]
fn streams_are_checked_as_kinesis_and_cloudformation_check_them() {
    check_error(
        &with_stream("ShardCount: 0"),
        "resource Shipments: property ShardCount = 0 is out of range (allowed: 1 to 500)",
    );
    check_error(
        &with_stream("ShardCount: 501"),
        "property ShardCount = 501 is out of range (allowed: 1 to 500)",
    );
    check_error(
        &with_stream("RetentionPeriodHours: 23"),
        "property RetentionPeriodHours = 23 is out of range (allowed: 24 to 8760)",
    );
    check_error(
        &with_stream("StreamModeDetails: {StreamMode: ON_DEMAND}, ShardCount: 2"),
        "property ShardCount = 2 cannot be set on an ON_DEMAND stream",
    );
    check_error(
        &with_stream("StreamModeDetails: {StreamMode: SOMETIMES}"),
        "property StreamModeDetails.StreamMode = SOMETIMES is not allowed (allowed: ON_DEMAND, PROVISIONED)",
    );
    check_error(
        &with_stream("StreamModeDetails: {}"),
        "property StreamModeDetails.StreamMode is required",
    );
    check_error(
        &with_stream("Name: 'ship ments'"),
        "property Name = ship ments is not allowed (allowed: 1 to 128 characters among a-z, A-Z, 0-9, _ . -)",
    );
    check_error(
        &with_stream("MaxRecordSizeInKiB: 20480"),
        "property MaxRecordSizeInKiB = 20480",
    );
    check_error(
        &with_stream("RecordDistributionStrategy: X"),
        "property RecordDistributionStrategy = X is not allowed (allowed: USER_PARTITION_KEY, AUTO)",
    );
    check_error(
        &with_stream("RecordDistributionStrategy: AUTO"),
        "property RecordDistributionStrategy = AUTO applies to ON_DEMAND streams only",
    );
    check_error(
        &with_stream("ShardSize: 1"),
        "resource Shipments: property ShardSize is not a property kinesis-esm knows here",
    );
    check_error(
        &format!(
            "{}  Again:\n    Type: AWS::Kinesis::Stream\n    Properties: {{Name: shipments}}\n",
            with_stream("Name: shipments")
        ),
        "resource Again: property Name = shipments is the name of stream Shipments already",
    );
    check_error(
        &with_stream("Name: s").replace(
            "    Type: AWS::Kinesis::Stream\n",
            "    Type: AWS::Kinesis::Stream\n    Condition: InProduction\n",
        ),
        "resource Shipments: property Condition = InProduction is not reproduced by kinesis-esm (conditions are not evaluated",
    );
}

#[test]
fn the_template_itself_must_be_a_deployable_sam_template() {
    check_error(
        &with_event("BatchSize: 10").replace("Transform: AWS::Serverless-2016-10-31\n", ""),
        "template.yaml: template: property Transform is required (AWS::Serverless-2016-10-31)",
    );
    check_error(
        "Resource: {}\n",
        "template: property Resource is not a property kinesis-esm knows here",
    );
    check_error(
        "Description: nothing\n",
        "template: property Resources is required",
    );
    check_error(
        "Resources:\n  Shipments:\n    Properties: {}\n",
        "resource Shipments: property Type is required",
    );
    check_error(
        &format!(
            "{}  Mapping:\n    Type: AWS::Lambda::EventSourceMapping\n    Properties: {{FunctionName: f, EventSourceArn: !GetAtt Shipments.Arn, StartingPosition: LATEST}}\n",
            with_stream("Name: shipments")
        ),
        "resource Mapping: property Properties.EventSourceArn = !GetAtt Shipments.Arn is not reproduced by kinesis-esm (only Kinesis events of AWS::Serverless::Function resources)",
    );
    check_error(
        &with_event("BatchSize: 10").replace(
            "ShippingFunction:\n    Type",
            "ShippingFunction:\n    Condition: C\n    Type",
        ),
        "resource ShippingFunction: property Condition = C is not reproduced",
    );
    check_error(
        &with_function_extra("FunctionName: same").replace("Resources:\n", "Resources:\n  Other:\n    Type: AWS::Serverless::Function\n    Properties: {FunctionName: same, Handler: bootstrap, Runtime: provided.al2023, Events: {E: {Type: Kinesis, Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST}}}}\n"),
        "resource ShippingFunction: property FunctionName = same is the name of function Other already",
    );
}

#[test]
fn invalid_yaml_gives_the_file_line_and_column() {
    let error =
        parse("Resources:\n  Shipments:\n    Type: AWS::Kinesis::Stream\n   Properties: {}\n")
            .unwrap_err();
    let TemplateError::Syntax { position, .. } = &error else {
        panic!("expected a syntax error, got {error}");
    };
    assert_eq!(*position, Some((4, 4)));
    assert!(
        error
            .to_string()
            .starts_with("/work/app/template.yaml:4:4: invalid YAML: "),
        "{error}"
    );
    check_error(
        "- just\n- a list\n",
        "a template is a map of sections, not [just, a list]",
    );
    check_error("Resources: {a: 1, a: 2}\n", "invalid YAML");
}

#[track_caller]
fn check_logging(extra: &str, expected: LoggingConfig) {
    let template = read(&with_function_extra(extra));
    assert_eq!(template.functions[0].logging, expected);
}

#[test]
fn logging_config_is_read_as_lambda_takes_it() {
    check_logging("Timeout: 3", LoggingConfig::default());
    check_logging("LoggingConfig: {LogFormat: Text}", LoggingConfig::default());
    check_logging(
        "LoggingConfig: {LogFormat: JSON}",
        LoggingConfig {
            json: true,
            ..LoggingConfig::default()
        },
    );
    check_logging(
        "LoggingConfig: {LogFormat: JSON, ApplicationLogLevel: WARN, SystemLogLevel: DEBUG, LogGroup: /my/group}",
        LoggingConfig {
            json: true,
            application_log_level: Some("WARN".to_owned()),
            system_log_level: Some("DEBUG".to_owned()),
        },
    );
}

#[test]
fn logging_config_refuses_what_lambda_refuses() {
    check_error(
        &with_function_extra("LoggingConfig: {LogFormat: json}"),
        "property LoggingConfig.LogFormat = json is not allowed (allowed: Text, JSON)",
    );
    check_error(
        &with_function_extra("LoggingConfig: {LogFormat: JSON, ApplicationLogLevel: VERBOSE}"),
        "property LoggingConfig.ApplicationLogLevel = VERBOSE is not allowed (allowed: TRACE, DEBUG, INFO, WARN, ERROR, FATAL)",
    );
    check_error(
        &with_function_extra("LoggingConfig: {LogFormat: JSON, SystemLogLevel: ERROR}"),
        "property LoggingConfig.SystemLogLevel = ERROR is not allowed (allowed: DEBUG, INFO, WARN)",
    );
    check_error(
        &with_function_extra("LoggingConfig: {ApplicationLogLevel: DEBUG}"),
        "property LoggingConfig.ApplicationLogLevel = DEBUG needs LogFormat: JSON",
    );
    check_error(
        &with_function_extra("LoggingConfig: {Format: JSON}"),
        "property LoggingConfig.Format is not a property kinesis-esm knows here",
    );
}

/// A template whose function's `MODE` is `!If [<condition>, fast, slow]`, with a `Stage`
/// parameter (`dev` unless overridden) and `conditions` (a block under `Conditions:`).
fn with_conditions(conditions: &str, condition: &str) -> String {
    with_function_extra(&format!(
        "Environment: {{Variables: {{MODE: !If [{condition}, fast, slow]}}}}"
    ))
    .replacen(
        "Resources:",
        &format!(
            "Parameters:\n  Stage: {{Type: String, Default: dev}}\nConditions:\n{conditions}Resources:"
        ),
        1,
    )
}

fn mode_of(template: &Template) -> &str {
    &template.functions[0].environment["MODE"]
}

#[test]
fn fn_if_picks_a_value_by_the_templates_conditions() {
    let conditions = "  IsProd: !Equals [!Ref Stage, prod]
  IsDev: !Not [!Condition IsProd]
  Both: !And [{Condition: IsProd}, !Equals [a, a]]
  Either: !Or [!Condition IsProd, !Condition IsDev]
  Long: {\"Fn::Equals\": [{Ref: Stage}, dev]}
";
    let cases = [
        ("IsProd", "slow"),
        ("IsDev", "fast"),
        ("Both", "slow"),
        ("Either", "fast"),
        ("Long", "fast"),
    ];
    for (condition, expected) in cases {
        let template = read(&with_conditions(conditions, condition));
        assert_eq!(mode_of(&template), expected, "condition {condition}");
    }
    let production = Template::parse(
        PATH,
        &with_conditions(conditions, "IsProd"),
        &TemplateOptions {
            parameter_overrides: BTreeMap::from([("Stage".to_owned(), "prod".to_owned())]),
            ..TemplateOptions::default()
        },
    )
    .expect("the template reads");
    assert_eq!(mode_of(&production), "fast", "the override decides");
}

#[test]
fn conditions_that_cannot_be_evaluated_are_refused_saying_why() {
    check_error(
        &with_conditions("  Loop: !Condition Loop\n", "Loop"),
        "condition Loop names conditions that name it again",
    );
    check_error(
        &with_conditions("  Odd: !Equals [a]\n", "Odd"),
        "condition Odd: Fn::Equals takes [value, value], not [a]",
    );
    check_error(
        &with_conditions("  Plain: yes\n", "Plain"),
        "condition Plain: yes is not a condition function",
    );
    check_error(
        &with_function_extra("Environment: {Variables: {MODE: !If [IsProd, fast]}}"),
        "Fn::If takes [condition, value if true, value if false], not [IsProd, fast]",
    );
}

#[test]
fn a_mistyped_property_is_said_with_the_near_known_name() {
    check_error(
        &with_event("BatchSze: 10"),
        "property BatchSze is not a property kinesis-esm knows here (known: Stream, ",
    );
    check_error(&with_event("BatchSze: 10"), "); did you mean BatchSize?");
    check_error(
        &with_function_extra("Timout: 10"),
        "property Timout is not a property kinesis-esm knows here (known: ",
    );
    check_error(
        &with_function_extra("Timout: 10"),
        "); did you mean Timeout?",
    );
    check_error(
        &with_event("FilterCriteria: {Filters: [{Patern: '{}'}]}"),
        "(known: Pattern); did you mean Pattern?",
    );
}

#[test]
fn a_mistyped_resource_reference_is_said_with_the_near_logical_id() {
    check_error(
        &with_event_properties("Stream: !GetAtt shipmnets.Arn, StartingPosition: LATEST"),
        "shipmnets is not a resource of the template; did you mean Shipments?",
    );
    check_error(
        &with_function_extra("Environment: {Variables: {STREAM: !Ref Shipmets}}"),
        "Shipmets is neither a parameter nor a resource of the template; did you mean Shipments?",
    );
}

#[test]
fn a_mistyped_stream_name_is_said_with_the_near_stream() {
    check_error(
        &with_event_properties("Stream: shipmnets, StartingPosition: LATEST"),
        "is not a stream ARN (arn:",
    );
    check_error(
        &with_event_properties("Stream: shipmnets, StartingPosition: LATEST"),
        "; did you mean !GetAtt Shipments.Arn?",
    );
}

#[test]
fn a_name_near_no_known_one_gets_no_suggestion() {
    for yaml in [
        with_event("Zebra: 10"),
        with_event_properties("Stream: !GetAtt Zebra.Arn, StartingPosition: LATEST"),
    ] {
        let message = parse(&yaml).unwrap_err().to_string();
        assert!(!message.contains("did you mean"), "{message}");
    }
}

#[test]
fn a_setting_of_another_event_source_names_the_sources_that_take_it() {
    let refused = [
        (
            "ProvisionedPollerConfig: {MinimumPollers: 1}",
            "property ProvisionedPollerConfig is a setting of Amazon MSK, self-managed Apache \
             Kafka and Amazon SQS event sources; Lambda takes none of it for a Kinesis stream",
        ),
        (
            "LoggingConfig: {SystemLogLevel: DEBUG}",
            "property LoggingConfig is a setting of Amazon MSK and self-managed Apache Kafka",
        ),
        (
            "SchemaRegistryConfig: {SchemaRegistryURI: x}",
            "property SchemaRegistryConfig is a setting of Amazon MSK and self-managed",
        ),
        (
            "AmazonManagedKafkaEventSourceConfig: {ConsumerGroupId: g}",
            "is a setting of Amazon MSK event sources",
        ),
        (
            "SelfManagedKafkaEventSourceConfig: {ConsumerGroupId: g}",
            "is a setting of self-managed Apache Kafka event sources",
        ),
        (
            "ScalingConfig: {MaximumConcurrency: 5}",
            "property ScalingConfig is a setting of Amazon SQS event sources",
        ),
        (
            "DestinationConfig: {OnFailure: {Type: Kafka, Destination: 'kafka://broker:9092'}}",
            "property DestinationConfig.OnFailure.Type is a setting of Amazon MSK and \
             self-managed Apache Kafka event sources",
        ),
        (
            "DestinationConfig: {OnFailure: {Destination: 'kafka://broker:9092'}}",
            "property DestinationConfig.OnFailure.Destination is a setting of Amazon MSK",
        ),
    ];
    for (extra, expected) in refused {
        check_error(&with_event(extra), expected);
    }
}
