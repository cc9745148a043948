//! Kinesis events refused with exact messages: what kinesis-esm does not reproduce, filters,
//! consumers, streams and values out of Lambda's ranges.

use super::*;

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
    check_errors(
        with_event,
        &[
            (
                "StartingPositionTimestamp: 1700000000",
                "property StartingPositionTimestamp = 1700000000 is only read with StartingPosition AT_TIMESTAMP",
            ),
            (
                "ParallelisationFactor: 2",
                "event ShipmentsStream: property ParallelisationFactor is not a property kinesis-esm knows here (known: Stream, StartingPosition,",
            ),
        ],
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
    check_errors(
        with_event,
        &[
            (
                r#"FilterCriteria: {Filters: [{Pattern: '{"data": {"carrier": ["dhl"]}}'}, {Pattern: '{"data": {"carrier": "ups"}}'}]}"#,
                r#"template.yaml: resource ShippingFunction, event ShipmentsStream: property FilterCriteria.Filters[1].Pattern = {"data": {"carrier": "ups"}} is not a valid filter pattern: at data.carrier: a field takes an array of values or rules, such as ["ups"], or an object of fields; not a string"#,
            ),
            (
                "FilterCriteria: {Filters: [{Pattern: 'not json'}]}",
                "property FilterCriteria.Filters[0].Pattern = not json is not a valid filter pattern: at line 1, column 2: not valid JSON: expected ident",
            ),
            (
                r#"FilterCriteria: {Filters: [{Pattern: '{"data": {"n": [{"NUMERIC": [">", 1]}]}}'}]}"#,
                r#"property FilterCriteria.Filters[0].Pattern = {"data": {"n": [{"NUMERIC": [">", 1]}]}} is not a valid filter pattern: at data.n[0].NUMERIC: unknown operator "NUMERIC""#,
            ),
            (
                r#"FilterCriteria: {Filters: [{Pattern: {data: {carrier: [dhl]}}}]}"#,
                r#"property FilterCriteria.Filters[0].Pattern = {data: {carrier: [dhl]}} is not allowed (allowed: a JSON text in a string: quote it, as in Pattern: '{"data": {"carrier": ["dhl"]}}')"#,
            ),
            (
                "FilterCriteria: {Filters: [{}]}",
                "property FilterCriteria.Filters[0].Pattern is required (the filter as JSON text",
            ),
            (
                "FilterCriteria: {Filters: [{Patern: '{}'}]}",
                "property FilterCriteria.Filters[0].Patern is not a property kinesis-esm knows here (known: Pattern)",
            ),
            (
                "FilterCriteria: {Filters: [x]}",
                "property FilterCriteria.Filters[0] = x is not allowed (allowed: a map of properties)",
            ),
            (
                "FilterCriteria: {Filter: []}",
                "property FilterCriteria.Filter is not a property kinesis-esm knows here (known: Filters)",
            ),
        ],
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
    check_each_error(&[
        (
            yaml,
            "ConsumerName no spaces of consumer Reader is not allowed",
        ),
        (
            with_event_properties(
                "Stream: 'arn:aws:kinesis:us-east-1:123456789012:stream/shipments/consumer/', StartingPosition: LATEST",
            ),
            "or a consumer's",
        ),
    ]);
}

#[test]
fn a_stream_must_be_defined_in_the_template_or_given_by_arn() {
    check_errors(
        with_event_properties,
        &[
            (
                "Stream: orders, StartingPosition: LATEST",
                "property Stream = orders names no AWS::Kinesis::Stream of the template and is not a stream ARN (arn:aws:kinesis:region:account:stream/name)",
            ),
            (
                "Stream: !GetAtt Orders.Arn, StartingPosition: LATEST",
                "property Stream = !GetAtt Orders.Arn cannot be resolved: Orders is not a resource of the template",
            ),
            (
                "Stream: !Ref Orders, StartingPosition: LATEST",
                "property Stream = !Ref Orders cannot be resolved: Orders is neither a parameter nor a resource of the template",
            ),
            (
                "Stream: !GetAtt Shipments.StreamId, StartingPosition: LATEST",
                "cannot be resolved: stream Shipments has no attribute StreamId",
            ),
            (
                "Stream: 'arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2024', StartingPosition: LATEST",
                "is not allowed (allowed: a Kinesis stream ARN, arn:aws:kinesis:region:account:stream/name, or a consumer's)",
            ),
            (
                "StartingPosition: LATEST",
                "event ShipmentsStream: property Stream is required",
            ),
        ],
    );
}

#[test]
fn event_values_out_of_range_say_what_is_allowed() {
    check_errors(
        with_event,
        &[
            (
                "BatchSize: 0",
                "property BatchSize = 0 is out of range (allowed: 1 to 10000)",
            ),
            (
                "BatchSize: 10001",
                "property BatchSize = 10001 is out of range (allowed: 1 to 10000)",
            ),
            (
                "BatchSize: ten",
                "property BatchSize = ten is not allowed (allowed: a whole number from 1 to 10000)",
            ),
            (
                "BatchSize: 1.5",
                "property BatchSize = 1.5 is not allowed (allowed: a whole number from 1 to 10000)",
            ),
            (
                "MaximumBatchingWindowInSeconds: 301",
                "property MaximumBatchingWindowInSeconds = 301 is out of range (allowed: 0 to 300)",
            ),
            (
                "MaximumRetryAttempts: -2",
                "property MaximumRetryAttempts = -2 is out of range (allowed: -1 to 10000)",
            ),
            (
                "MaximumRetryAttempts: 10001",
                "property MaximumRetryAttempts = 10001 is out of range (allowed: -1 to 10000)",
            ),
            (
                "MaximumRecordAgeInSeconds: 59",
                "property MaximumRecordAgeInSeconds = 59 is out of range (allowed: -1, or 60 to 604800)",
            ),
            (
                "MaximumRecordAgeInSeconds: 0",
                "property MaximumRecordAgeInSeconds = 0 is out of range (allowed: -1, or 60 to 604800)",
            ),
            (
                "MaximumRecordAgeInSeconds: 604801",
                "property MaximumRecordAgeInSeconds = 604801 is out of range (allowed: -1 to 604800)",
            ),
            (
                "ParallelizationFactor: 11",
                "template.yaml: resource ShippingFunction, event ShipmentsStream: property ParallelizationFactor = 11 is out of range (allowed: 1 to 10)",
            ),
            (
                "ParallelizationFactor: 0",
                "property ParallelizationFactor = 0 is out of range (allowed: 1 to 10)",
            ),
            (
                "TumblingWindowInSeconds: 901",
                "property TumblingWindowInSeconds = 901 is out of range (allowed: 0 to 900)",
            ),
            (
                "BisectBatchOnFunctionError: maybe",
                "property BisectBatchOnFunctionError = maybe is not allowed (allowed: true or false)",
            ),
            (
                "Enabled: 1",
                "property Enabled = 1 is not allowed (allowed: true or false)",
            ),
        ],
    );
}

#[test]
fn starting_positions_must_be_complete_and_spelt_as_lambda_spells_them() {
    check_errors(
        with_event_properties,
        &[
            (
                "Stream: !GetAtt Shipments.Arn, StartingPosition: TRIM-HORIZON",
                "property StartingPosition = TRIM-HORIZON is not allowed (allowed: TRIM_HORIZON, LATEST, AT_TIMESTAMP)",
            ),
            (
                "Stream: !GetAtt Shipments.Arn",
                "property StartingPosition is required (TRIM_HORIZON, LATEST or AT_TIMESTAMP)",
            ),
            (
                "Stream: !GetAtt Shipments.Arn, StartingPosition: AT_TIMESTAMP",
                "property StartingPositionTimestamp is required with StartingPosition AT_TIMESTAMP",
            ),
            (
                "Stream: !GetAtt Shipments.Arn, StartingPosition: AT_TIMESTAMP, StartingPositionTimestamp: -5",
                "property StartingPositionTimestamp = -5 is out of range (allowed: seconds since the Unix epoch, 0 or more)",
            ),
        ],
    );
}

#[test]
fn response_types_and_destinations_take_only_what_lambda_takes() {
    check_errors(
        with_event,
        &[
            (
                "FunctionResponseTypes: [ReportBatchItemFailure]",
                "property FunctionResponseTypes = [ReportBatchItemFailure] is not allowed (allowed: [] or [ReportBatchItemFailures])",
            ),
            (
                "FunctionResponseTypes: ReportBatchItemFailures",
                "property FunctionResponseTypes = ReportBatchItemFailures is not allowed",
            ),
            (
                "DestinationConfig: {OnSuccess: {Destination: 'arn:aws:sqs:us-east-1:123456789012:ok'}}",
                "property DestinationConfig.OnSuccess = {Destination: arn:aws:sqs:us-east-1:123456789012:ok} is not allowed (allowed: only OnFailure",
            ),
            (
                "DestinationConfig: {OnFailure: {Type: Lambda, Destination: x}}",
                "property DestinationConfig.OnFailure.Type = Lambda is not allowed (allowed: SQS, SNS, S3)",
            ),
            (
                "DestinationConfig: {OnFailure: {Type: SQS}}",
                "property DestinationConfig.OnFailure.Destination is required",
            ),
            (
                "DestinationConfig: {OnFailure: {Destination: !GetAtt Nowhere.Arn}}",
                "property DestinationConfig.OnFailure.Destination = !GetAtt Nowhere.Arn cannot be resolved: Nowhere is not a resource of the template",
            ),
        ],
    );
}

#[test]
fn metrics_config_takes_only_event_count() {
    let metrics = |config: &str| only_mapping(&read(&with_event(config))).event_count_metrics;
    assert!(metrics("MetricsConfig: {Metrics: [EventCount]}"));
    assert!(!metrics("MetricsConfig: {Metrics: []}"));
    assert!(!metrics("MetricsConfig: {}"));
    assert!(!metrics("BatchSize: 10"));
    check_errors(
        with_event,
        &[
            (
                "MetricsConfig: {Metrics: [EventCounts]}",
                "template.yaml: resource ShippingFunction, event ShipmentsStream: property \
         MetricsConfig.Metrics = [EventCounts] is not allowed (allowed: [] or [EventCount]; \
         ErrorCount and KafkaMetrics are for Kafka event sources only)",
            ),
            (
                "MetricsConfig: {Metrics: [EventCount, KafkaMetrics]}",
                "property MetricsConfig.Metrics = [EventCount, KafkaMetrics] is not allowed",
            ),
            (
                "MetricsConfig: {Metrics: EventCount}",
                "property MetricsConfig.Metrics = EventCount is not allowed",
            ),
            (
                "MetricsConfig: {Metric: [EventCount]}",
                "MetricsConfig.Metric",
            ),
        ],
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
    check_errors(
        event,
        &[
            (
                "{Type: Kinesis}",
                "resource ShippingFunction, event ShipmentsStream: property Properties is required",
            ),
            (
                "{Type: Kinesis, Properties: []}",
                "event ShipmentsStream: property Properties = [] is not allowed",
            ),
            (
                "{Type: Kinesis, Properties: {}, Condition: C}",
                "event ShipmentsStream: property Condition is not a property kinesis-esm knows here",
            ),
            (
                "{Properties: {}}",
                "event ShipmentsStream: property Type is required",
            ),
        ],
    );
}

#[test]
fn one_function_maps_one_stream_once() {
    let yaml = sam_template(
        "",
        &rust_function(
            "Shipping",
            "        First: {Type: Kinesis, Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST}}
        Second: {Type: Kinesis, Properties: {Stream: !Sub '${Shipments.Arn}', StartingPosition: LATEST}}
",
        ),
    );
    check_error(
        &yaml,
        "resource Shipping, event Second: property Stream = !Sub ${Shipments.Arn} is mapped by event First already: Lambda allows one mapping per function and stream",
    );
}
