//! Functions, globals, parameters, streams, conditions and the template itself refused with
//! exact messages, and the near names the messages suggest.

use super::*;

#[test]
fn function_properties_kinesis_esm_cannot_run_are_refused() {
    check_errors(
        with_function,
        &[
            (
                "Handler: app.handler, Runtime: python3.12",
                "resource ShippingFunction: property Runtime = python3.12 is not reproduced by kinesis-esm (provided.al2023, provided.al2, provided",
            ),
            (
                "Handler: bootstrap",
                "resource ShippingFunction: property Runtime is required",
            ),
            (
                "Runtime: provided.al2023",
                "resource ShippingFunction: property Handler is required",
            ),
        ],
    );
    check_errors(
        with_function_extra,
        &[
            (
                "InlineCode: 'fn main() {}'",
                "property InlineCode = fn main() {} is not reproduced by kinesis-esm",
            ),
            (
                "CodeUri: 's3://bucket/shipping.zip'",
                "property CodeUri = s3://bucket/shipping.zip is not reproduced by kinesis-esm (only a local folder",
            ),
            (
                "CodeUri: {Bucket: b, Key: k}",
                "property CodeUri = {Bucket: b, Key: k} is not reproduced by kinesis-esm (only a local folder",
            ),
            (
                "PackageType: Image",
                "property PackageType = Image is not reproduced by kinesis-esm (only Zip)",
            ),
            (
                "ReservedConcurrentExecutions: 0",
                "property ReservedConcurrentExecutions = 0 is not reproduced by kinesis-esm",
            ),
            (
                "Timout: 10",
                "resource ShippingFunction: property Timout is not a property kinesis-esm knows here",
            ),
        ],
    );
}

#[test]
fn function_values_out_of_range_say_what_is_allowed() {
    check_errors(
        with_function_extra,
        &[
            (
                "Timeout: 0",
                "resource ShippingFunction: property Timeout = 0 is out of range (allowed: 1 to 900)",
            ),
            (
                "Timeout: 901",
                "property Timeout = 901 is out of range (allowed: 1 to 900)",
            ),
            (
                "MemorySize: 64",
                "property MemorySize = 64 is out of range (allowed: 128 to 10240)",
            ),
            (
                "Architectures: [sparc]",
                "property Architectures = [sparc] is not allowed (allowed: [x86_64] or [arm64])",
            ),
            (
                "Architectures: arm64",
                "property Architectures = arm64 is not allowed (allowed: [x86_64] or [arm64])",
            ),
            (
                "Architectures: [x86_64, arm64]",
                "property Architectures = [x86_64, arm64] is not allowed (allowed: [x86_64] or [arm64]: Lambda takes exactly one",
            ),
            (
                "FunctionName: 'ship ping'",
                "property FunctionName = ship ping is not allowed (allowed: 1 to 64 characters",
            ),
        ],
    );
}

#[test]
fn environment_variables_must_resolve_and_be_settable() {
    check_errors(
        with_function_extra,
        &[
            (
                "Environment: {Variables: {QUEUE_URL: !Ref Queue}}",
                "resource ShippingFunction: property Environment.Variables.QUEUE_URL = !Ref Queue cannot be resolved: kinesis-esm cannot know what Ref of resource Queue (AWS::SQS::Queue) would be",
            ),
            (
                "Environment: {Variables: {QUEUE_ARN: !GetAtt Queue.Arn}}",
                "property Environment.Variables.QUEUE_ARN = !GetAtt Queue.Arn cannot be resolved: kinesis-esm cannot know attribute Arn of resource Queue (AWS::SQS::Queue)",
            ),
            (
                "Environment: {Variables: {MODE: !If [IsProd, fast, slow]}}",
                "property Environment.Variables.MODE = !If [IsProd, fast, slow] cannot be resolved: IsProd is not a condition of the template's Conditions",
            ),
            (
                "Environment: {Variables: {MODE: !Select [0, [fast]]}}",
                "cannot be resolved: Fn::Select is not evaluated by kinesis-esm",
            ),
            (
                "Environment: {Variables: {STACK: !Ref AWS::StackId}}",
                "cannot be resolved: AWS::StackId has no local value",
            ),
            (
                "Environment: {Variables: {AWS_REGION: eu-west-1}}",
                "property Environment.Variables.AWS_REGION = eu-west-1 is reserved: Lambda sets this variable itself",
            ),
            (
                "Environment: {Variables: {1ST: x}}",
                "property Environment.Variables.1ST = x has a name Lambda refuses",
            ),
            (
                "Environment: {Vars: {A1: x}}",
                "property Environment.Vars is not a property kinesis-esm knows here (known: Variables)",
            ),
        ],
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
    check_errors(
        with_globals,
        &[
            (
                "FunctionName: shared",
                "template.yaml: Globals.Function: property FunctionName is not a property kinesis-esm knows here",
            ),
            (
                "Timeout: 0",
                "template.yaml: Globals.Function: property Timeout = 0 is out of range (allowed: 1 to 900)",
            ),
        ],
    );
    check_each_error(&[
        (
            with_globals("Architectures: [x86_64]")
                .replace("Description: d", "Architectures: [arm64]"),
            "resource ShippingFunction: property Architectures = [x86_64, arm64] is not allowed",
        ),
        (
            format!(
                "Globals:\n  Lambda: {{}}\n{}",
                with_function_extra("Description: d")
            ),
            "template: property Globals.Lambda is not a property kinesis-esm knows here",
        ),
    ]);
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
    check_each_error(&[
        (
            with_parameter("Type: String", "!Ref Stage"),
            "property Environment.Variables.STAGE = !Ref Stage cannot be resolved: parameter Stage has no Default: give it one, or pass an override",
        ),
        (
            with_parameter(
                "Type: String, Default: test, AllowedValues: [dev, prod]",
                "!Ref Stage",
            ),
            "template.yaml: parameter Stage: property Default = test is not allowed (allowed: dev, prod)",
        ),
        (
            with_parameter(
                "Type: 'AWS::SSM::Parameter::Value<String>', Default: /shipping/stage",
                "!Ref Stage",
            ),
            "cannot be resolved: parameter Stage takes its value from SSM Parameter Store",
        ),
        (
            with_parameter(
                "Type: CommaDelimitedList, Default: 'a,b'",
                "!Sub '${Stage}'",
            ),
            "cannot be resolved: parameter Stage is a list (CommaDelimitedList), not a single value",
        ),
        (
            with_parameter("Default: dev", "!Ref Stage"),
            "parameter Stage: property Type is required",
        ),
        (
            with_parameter("Type: String, Default: dev", "!GetAtt Stage.Value"),
            "cannot be resolved: Stage is a parameter, and parameters have no attributes",
        ),
    ]);
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
    check_errors(
        with_stream,
        &[
            (
                "ShardCount: 0",
                "resource Shipments: property ShardCount = 0 is out of range (allowed: 1 to 500)",
            ),
            (
                "ShardCount: 501",
                "property ShardCount = 501 is out of range (allowed: 1 to 500)",
            ),
            (
                "RetentionPeriodHours: 23",
                "property RetentionPeriodHours = 23 is out of range (allowed: 24 to 8760)",
            ),
            (
                "StreamModeDetails: {StreamMode: ON_DEMAND}, ShardCount: 2",
                "property ShardCount = 2 cannot be set on an ON_DEMAND stream",
            ),
            (
                "StreamModeDetails: {StreamMode: SOMETIMES}",
                "property StreamModeDetails.StreamMode = SOMETIMES is not allowed (allowed: ON_DEMAND, PROVISIONED)",
            ),
            (
                "StreamModeDetails: {}",
                "property StreamModeDetails.StreamMode is required",
            ),
            (
                "Name: 'ship ments'",
                "property Name = ship ments is not allowed (allowed: 1 to 128 characters among a-z, A-Z, 0-9, _ . -)",
            ),
            (
                "MaxRecordSizeInKiB: 20480",
                "property MaxRecordSizeInKiB = 20480",
            ),
            (
                "RecordDistributionStrategy: X",
                "property RecordDistributionStrategy = X is not allowed (allowed: USER_PARTITION_KEY, AUTO)",
            ),
            (
                "RecordDistributionStrategy: AUTO",
                "property RecordDistributionStrategy = AUTO applies to ON_DEMAND streams only",
            ),
            (
                "ShardSize: 1",
                "resource Shipments: property ShardSize is not a property kinesis-esm knows here",
            ),
        ],
    );
    check_each_error(&[
        (
            format!(
                "{}  Again:\n    Type: AWS::Kinesis::Stream\n    Properties: {{Name: shipments}}\n",
                with_stream("Name: shipments")
            ),
            "resource Again: property Name = shipments is the name of stream Shipments already",
        ),
        (
            with_stream("Name: s").replace(
                "    Type: AWS::Kinesis::Stream\n",
                "    Type: AWS::Kinesis::Stream\n    Condition: InProduction\n",
            ),
            "resource Shipments: property Condition = InProduction is not reproduced by kinesis-esm (conditions are not evaluated",
        ),
    ]);
}

#[test]
fn the_template_itself_must_be_a_deployable_sam_template() {
    check_each_error(&[
(with_event("BatchSize: 10").replace("Transform: AWS::Serverless-2016-10-31\n", ""), "template.yaml: template: property Transform is required (AWS::Serverless-2016-10-31)"),
("Resource: {}\n".to_owned(), "template: property Resource is not a property kinesis-esm knows here"),
("Description: nothing\n".to_owned(), "template: property Resources is required"),
("Resources:\n  Shipments:\n    Properties: {}\n".to_owned(), "resource Shipments: property Type is required"),
(format!(
            "{}  Mapping:\n    Type: AWS::Lambda::EventSourceMapping\n    Properties: {{FunctionName: f, EventSourceArn: !GetAtt Shipments.Arn, StartingPosition: LATEST}}\n",
            with_stream("Name: shipments")
        ), "resource Mapping: property Properties.EventSourceArn = !GetAtt Shipments.Arn is not reproduced by kinesis-esm (only Kinesis events of AWS::Serverless::Function resources)"),
(with_event("BatchSize: 10").replace(
            "ShippingFunction:\n    Type",
            "ShippingFunction:\n    Condition: C\n    Type",
        ), "resource ShippingFunction: property Condition = C is not reproduced"),
(with_function_extra("FunctionName: same").replace("Resources:\n", "Resources:\n  Other:\n    Type: AWS::Serverless::Function\n    Properties: {FunctionName: same, Handler: bootstrap, Runtime: provided.al2023, Events: {E: {Type: Kinesis, Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST}}}}\n"), "resource ShippingFunction: property FunctionName = same is the name of function Other already"),
]);
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
    check_each_error(&[
        (
            "- just\n- a list\n".to_owned(),
            "a template is a map of sections, not [just, a list]",
        ),
        ("Resources: {a: 1, a: 2}\n".to_owned(), "invalid YAML"),
    ]);
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
    check_errors(
        with_function_extra,
        &[
            (
                "LoggingConfig: {LogFormat: json}",
                "property LoggingConfig.LogFormat = json is not allowed (allowed: Text, JSON)",
            ),
            (
                "LoggingConfig: {LogFormat: JSON, ApplicationLogLevel: VERBOSE}",
                "property LoggingConfig.ApplicationLogLevel = VERBOSE is not allowed (allowed: TRACE, DEBUG, INFO, WARN, ERROR, FATAL)",
            ),
            (
                "LoggingConfig: {LogFormat: JSON, SystemLogLevel: ERROR}",
                "property LoggingConfig.SystemLogLevel = ERROR is not allowed (allowed: DEBUG, INFO, WARN)",
            ),
            (
                "LoggingConfig: {ApplicationLogLevel: DEBUG}",
                "property LoggingConfig.ApplicationLogLevel = DEBUG needs LogFormat: JSON",
            ),
            (
                "LoggingConfig: {Format: JSON}",
                "property LoggingConfig.Format is not a property kinesis-esm knows here",
            ),
        ],
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
    check_each_error(&[
        (
            with_conditions("  Loop: !Condition Loop\n", "Loop"),
            "condition Loop names conditions that name it again",
        ),
        (
            with_conditions("  Odd: !Equals [a]\n", "Odd"),
            "condition Odd: Fn::Equals takes [value, value], not [a]",
        ),
        (
            with_conditions("  Plain: yes\n", "Plain"),
            "condition Plain: yes is not a condition function",
        ),
        (
            with_function_extra("Environment: {Variables: {MODE: !If [IsProd, fast]}}"),
            "Fn::If takes [condition, value if true, value if false], not [IsProd, fast]",
        ),
    ]);
}

#[test]
fn a_mistyped_property_is_said_with_the_near_known_name() {
    check_errors(
        with_event,
        &[
            (
                "BatchSze: 10",
                "property BatchSze is not a property kinesis-esm knows here (known: Stream, ",
            ),
            ("BatchSze: 10", "); did you mean BatchSize?"),
        ],
    );
    check_errors(
        with_function_extra,
        &[
            (
                "Timout: 10",
                "property Timout is not a property kinesis-esm knows here (known: ",
            ),
            ("Timout: 10", "); did you mean Timeout?"),
        ],
    );
    check_error(
        &with_event("FilterCriteria: {Filters: [{Patern: '{}'}]}"),
        "(known: Pattern); did you mean Pattern?",
    );
}

#[test]
fn a_mistyped_resource_reference_is_said_with_the_near_logical_id() {
    check_each_error(&[
        (
            with_event_properties("Stream: !GetAtt shipmnets.Arn, StartingPosition: LATEST"),
            "shipmnets is not a resource of the template; did you mean Shipments?",
        ),
        (
            with_function_extra("Environment: {Variables: {STREAM: !Ref Shipmets}}"),
            "Shipmets is neither a parameter nor a resource of the template; did you mean Shipments?",
        ),
    ]);
}

#[test]
fn a_mistyped_stream_name_is_said_with_the_near_stream() {
    check_errors(
        with_event_properties,
        &[
            (
                "Stream: shipmnets, StartingPosition: LATEST",
                "is not a stream ARN (arn:",
            ),
            (
                "Stream: shipmnets, StartingPosition: LATEST",
                "; did you mean !GetAtt Shipments.Arn?",
            ),
        ],
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
