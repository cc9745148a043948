//! The inline templates and checks that the template tests share: each test names the part
//! it changes and what it expects, and the rest of a valid template comes from here.

use super::{Template, TemplateError, TemplateOptions};
use esm_engine::config::MappingConfig;

/// The file every inline template pretends to be: absolute, so `CodeUri` folders are exact.
pub(super) const PATH: &str = "/work/app/template.yaml";

pub(super) fn parse(yaml: &str) -> Result<Template, TemplateError> {
    Template::parse(PATH, yaml, &TemplateOptions::default())
}

#[track_caller]
pub(super) fn read(yaml: &str) -> Template {
    match parse(yaml) {
        Ok(template) => template,
        Err(error) => panic!("the template was refused: {error}\n{yaml}"),
    }
}

/// Checks that the template is refused with a message containing `expected`.
#[track_caller]
pub(super) fn check_error(yaml: &str, expected: &str) {
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

/// A SAM template whose resources are the stream `Shipments`, with `stream_properties` (a
/// flow map's content; none when empty), then `resources` (YAML indented by two spaces).
pub(super) fn sam_template(stream_properties: &str, resources: &str) -> String {
    let properties = if stream_properties.is_empty() {
        String::new()
    } else {
        format!("    Properties: {{{stream_properties}}}\n")
    };
    format!(
        "Transform: AWS::Serverless-2016-10-31\nResources:\n  Shipments:\n    \
         Type: AWS::Kinesis::Stream\n{properties}{resources}"
    )
}

/// The function resource `logical_id` (YAML indented by two spaces) with the handler and
/// runtime kinesis-esm runs, and `events`: its `Events` block, indented by eight spaces.
pub(super) fn rust_function(logical_id: &str, events: &str) -> String {
    format!(
        "  {logical_id}:\n    Type: AWS::Serverless::Function\n    Properties:\n      \
         Handler: bootstrap\n      Runtime: provided.al2023\n      Events:\n{events}"
    )
}

/// A template with the stream `shipments` and one function whose Kinesis event has
/// `properties` (a flow map's content).
pub(super) fn with_event_properties(properties: &str) -> String {
    let event = format!(
        "        ShipmentsStream:\n          Type: Kinesis\n          Properties: {{{properties}}}\n"
    );
    sam_template(
        "Name: shipments, ShardCount: 2",
        &rust_function("ShippingFunction", &event),
    )
}

/// As [`with_event_properties`], with a valid `Stream` and `StartingPosition` before `extra`.
pub(super) fn with_event(extra: &str) -> String {
    with_event_properties(&format!(
        "Stream: !GetAtt Shipments.Arn, StartingPosition: LATEST, {extra}"
    ))
}

/// A template with the stream `shipments` and one function with `properties` (a flow map's
/// content) and a valid Kinesis event.
pub(super) fn with_function(properties: &str) -> String {
    sam_template(
        "Name: shipments",
        &format!(
            "  Queue:\n    Type: AWS::SQS::Queue\n  ShippingFunction:\n    \
             Type: AWS::Serverless::Function\n    Properties:\n      {{{properties}, Events: \
             {{ShipmentsStream: {{Type: Kinesis, Properties: {{Stream: !GetAtt Shipments.Arn, \
             StartingPosition: LATEST}}}}}}}}\n"
        ),
    )
}

/// As [`with_function`] with a valid runtime and handler before `extra`.
pub(super) fn with_function_extra(extra: &str) -> String {
    with_function(&format!(
        "Handler: bootstrap, Runtime: provided.al2023, {extra}"
    ))
}

/// A template with one stream whose properties are `properties` (a flow map's content).
pub(super) fn with_stream(properties: &str) -> String {
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
pub(super) fn only_mapping(template: &Template) -> &MappingConfig {
    match template.functions.as_slice() {
        [function] => match function.mappings.as_slice() {
            [mapping] => mapping,
            other => panic!("expected one mapping, got {other:#?}"),
        },
        other => panic!("expected one function, got {other:#?}"),
    }
}

/// Checks each `(text, expected)` case: the template `template(text)` is refused with a
/// message containing `expected` (a failure shows the template and both messages).
#[track_caller]
pub(super) fn check_errors(template: impl Fn(&str) -> String, cases: &[(&str, &str)]) {
    for (text, expected) in cases {
        check_error(&template(text), expected);
    }
}

/// Checks each `(template, expected)` case as [`check_error`] does.
#[track_caller]
pub(super) fn check_each_error(cases: &[(String, &str)]) {
    for (yaml, expected) in cases {
        check_error(yaml, expected);
    }
}
