//! Templates written inline and read into exact configurations; `events` and `functions` hold
//! the templates refused with exact messages.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use super::*;
use esm_engine::config::{FanOutConsumer, LoggingConfig, MappingConfig, StartingPosition};
use esm_engine::destination::{DestinationKind, Target};
use esm_engine::filter::{FilterCriteria, Pattern};

use super::test_templates::*;

mod events;
mod functions;

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
    let shipping = rust_function(
        "Shipping",
        "        FromQueue: {Type: SQS, Properties: {Queue: !GetAtt Queue.Arn, BatchSize: 10}}
        Shipped: {Type: Kinesis, Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST, BatchSize: 7}}
        Http: {Type: Api, Properties: {Path: /shipments, Method: post}}
        Returned: {Type: Kinesis, Properties: {Stream: !GetAtt Returns.Arn, StartingPosition: TRIM_HORIZON}}
",
    );
    let yaml = sam_template(
        "",
        &format!(
            "  Returns:\n    Type: AWS::Kinesis::Stream\n  Queue:\n    Type: AWS::SQS::Queue\n{shipping}  WebsiteWithoutKinesis:
    Type: AWS::Serverless::Function
    Condition: InProduction
    Properties:
      Runtime: python3.12
      Handler: app.handler
      InlineCode: 'def handler(event, context): return 1'
      Events:
        Http: {{Type: Api, Properties: {{Path: /, Method: get}}}}
"
        ),
    );
    let template = read(&yaml);
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

/// The only mapping of a template whose event has `DestinationConfig: {OnFailure: {on_failure}}`
/// (a flow map's content), with a queue, a named queue, a topic and a bucket to name.
#[track_caller]
fn with_on_failure(on_failure: &str) -> MappingConfig {
    let yaml = format!(
        "{}  Queue:\n    Type: AWS::SQS::Queue\n  Named:\n    Type: AWS::SQS::Queue\n    Properties: {{QueueName: failed-shipments}}\n  Topic:\n    Type: AWS::SNS::Topic\n  Bucket:\n    Type: AWS::S3::Bucket\n",
        with_event(&format!(
            "DestinationConfig: {{OnFailure: {{{on_failure}}}}}"
        ))
    );
    only_mapping(&read(&yaml)).clone()
}

#[test]
fn an_on_failure_destination_in_the_template_is_kept_as_its_logical_id() {
    let cases = [
        ("!GetAtt Queue.Arn", "Queue"),
        ("{Fn::GetAtt: [Queue, Arn]}", "Queue"),
        ("!Ref Topic", "Topic"),
        (
            "!Sub 'arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:failures'",
            "arn:aws:sqs:us-east-1:123456789012:failures",
        ),
    ];
    for (destination, expected) in cases {
        let mapping = with_on_failure(&format!("Type: SQS, Destination: {destination}"));
        assert_eq!(
            mapping.on_failure_destination.as_deref(),
            Some(expected),
            "{destination}"
        );
    }
}

#[test]
fn an_on_failure_destination_names_its_queue_topic_or_bucket() {
    let cases = [
        ("!GetAtt Queue.Arn", Some((DestinationKind::Sqs, "Queue"))),
        (
            "!GetAtt Named.Arn",
            Some((DestinationKind::Sqs, "failed-shipments")),
        ),
        ("!Ref Topic", Some((DestinationKind::Sns, "Topic"))),
        ("!GetAtt Bucket.Arn", Some((DestinationKind::S3, "bucket"))),
        (
            "'arn:aws:sns:us-east-1:123456789012:alerts'",
            Some((DestinationKind::Sns, "alerts")),
        ),
        (
            "'arn:aws:s3:::failed-batches'",
            Some((DestinationKind::S3, "failed-batches")),
        ),
        ("'arn:aws:lambda:us-east-1:123456789012:function:f'", None),
    ];
    for (destination, expected) in cases {
        let target = with_on_failure(&format!("Destination: {destination}")).on_failure_target;
        let expected = expected.map(|(kind, name)| Target {
            kind,
            name: name.to_owned(),
        });
        assert_eq!(target, expected, "{destination}");
    }
}
