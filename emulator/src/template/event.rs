//! A function's `Type: Kinesis` event: one event source mapping.

use std::time::{Duration, UNIX_EPOCH};

use serde_yaml_ng::{Mapping, Value};

use super::error::{Problem, Section};
use super::fields::{Fault, Fields};
use super::intrinsic::{Resolver, intrinsic, render};
use super::other_sources;
use super::stream::{StreamResource, is_stream_name};
use crate::suggest::did_you_mean;
use esm_engine::config::{FanOutConsumer, MappingConfig, StartingPosition};
use esm_engine::destination::Target as DestinationTarget;
use esm_engine::filter::{FilterCriteria, MAX_FILTERS, Pattern};
use kinesis_source::arn::{Arn, Resource};

const PROPERTIES: &[&str] = &[
    "Stream",
    "StartingPosition",
    "StartingPositionTimestamp",
    "BatchSize",
    "MaximumBatchingWindowInSeconds",
    "MaximumRetryAttempts",
    "MaximumRecordAgeInSeconds",
    "BisectBatchOnFunctionError",
    "FunctionResponseTypes",
    "DestinationConfig",
    "Enabled",
    "ParallelizationFactor",
    "TumblingWindowInSeconds",
    "FilterCriteria",
    "KmsKeyArn",
    "MetricsConfig",
];

const STREAM_ARN_FORM: &str = "arn:aws:kinesis:region:account:stream/name";

const STREAM_CONSUMER: &str = "AWS::Kinesis::StreamConsumer";

/// What the function is called, for the mapping.
pub(super) struct Target<'a> {
    pub(super) logical_id: &'a str,
    pub(super) function_name: &'a str,
    pub(super) timeout: Duration,
}

/// Reads one Kinesis event of a function into a mapping.
pub(super) fn read(
    target: &Target<'_>,
    event: &str,
    properties: &Mapping,
    resolver: &Resolver<'_>,
    streams: &[StreamResource],
) -> Result<MappingConfig, Fault> {
    let fields = Fields::new(
        properties,
        Section::Resource(target.logical_id.to_owned()),
        Some(event.to_owned()),
    );
    other_sources::refuse_settings(&fields)?;
    fields.check_names(PROPERTIES)?;

    let (stream_name, consumer) = stream_name(&fields, resolver, streams)?;
    let starting_position = starting_position(&fields, resolver)?;
    let mut mapping = MappingConfig::new(target.function_name, stream_name, starting_position);
    mapping.consumer = consumer;
    mapping.function_timeout = target.timeout;

    if let Some(size) = fields.integer(resolver, "BatchSize", 1..=10_000)? {
        mapping.batch_size = size as usize;
    }
    if let Some(seconds) = fields.integer(resolver, "MaximumBatchingWindowInSeconds", 0..=300)? {
        mapping.maximum_batching_window = Duration::from_secs(seconds as u64);
    }
    if let Some(attempts) = fields.integer(resolver, "MaximumRetryAttempts", -1..=10_000)? {
        mapping.maximum_retry_attempts = u32::try_from(attempts).ok();
    }
    if let Some(seconds) = fields.integer(resolver, "MaximumRecordAgeInSeconds", -1..=604_800)? {
        // The API model allows 0 to 59 but Lambda refuses them: -1 or at least a minute.
        if (0..60).contains(&seconds) {
            return Err(fields.fault(
                "MaximumRecordAgeInSeconds",
                Problem::OutOfRange {
                    value: seconds.to_string(),
                    allowed: "-1, or 60 to 604800".to_owned(),
                },
            ));
        }
        mapping.maximum_record_age = u64::try_from(seconds).ok().map(Duration::from_secs);
    }
    if let Some(bisect) = fields.boolean(resolver, "BisectBatchOnFunctionError")? {
        mapping.bisect_batch_on_function_error = bisect;
    }
    mapping.report_batch_item_failures = report_batch_item_failures(&fields, resolver)?;
    mapping.on_failure_destination = on_failure_destination(&fields, resolver)?;
    mapping.on_failure_target = mapping
        .on_failure_destination
        .as_deref()
        .and_then(|destination| destination_target(destination, resolver));
    if let Some(enabled) = fields.boolean(resolver, "Enabled")? {
        mapping.enabled = enabled;
    }
    if let Some(factor) = fields.integer(resolver, "ParallelizationFactor", 1..=10)? {
        mapping.parallelization_factor = factor as usize;
    }
    if let Some(seconds) = fields.integer(resolver, "TumblingWindowInSeconds", 0..=900)? {
        mapping.tumbling_window_seconds = seconds as u32;
    }
    // AWS does not say how one shard's window state meets concurrent batches of the shard.
    if mapping.tumbling_window_seconds > 0 && mapping.parallelization_factor > 1 {
        return Err(fields.fault(
            "TumblingWindowInSeconds",
            Problem::NotReproduced {
                value: format!(
                    "{} with ParallelizationFactor {}",
                    mapping.tumbling_window_seconds, mapping.parallelization_factor
                ),
                supported: "tumbling windows with ParallelizationFactor 1".to_owned(),
            },
        ));
    }
    mapping.filter_criteria = filter_criteria(&fields, resolver)?;
    check_kms_key_arn(&fields, resolver)?;
    mapping.event_count_metrics = event_count_metrics(&fields, resolver)?;
    Ok(mapping)
}

/// The name of the stream `Stream` designates by its ARN: a stream of the template (by
/// `!GetAtt X.Arn` or `!Sub`), or any stream; and the consumer it reads through when `Stream`
/// names one (an `AWS::Kinesis::StreamConsumer` of the template, by `!GetAtt X.ConsumerARN` or
/// `!Ref X`, or a consumer ARN). A stream's name (`!Ref X`) is refused, as CloudFormation
/// refuses it.
fn stream_name(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
    streams: &[StreamResource],
) -> Result<(String, Option<FanOutConsumer>), Fault> {
    let Some(value) = fields.get("Stream") else {
        return Err(fields.missing(
            "Stream",
            " (the stream's ARN, such as !GetAtt MyStream.Arn)",
        ));
    };
    if let Some(logical_id) = referenced_resource(value)
        && resolver.resource_type(logical_id) == Some(STREAM_CONSUMER)
    {
        return declared_consumer(fields, resolver, logical_id);
    }
    let text = fields.text(resolver, "Stream")?.unwrap_or_default();
    if text.starts_with("arn:") {
        return stream_of_arn(&text).map_err(|problem| fields.fault("Stream", problem));
    }
    // `!Ref` of a stream gives its name, and CloudFormation refuses a name where the mapping
    // needs the stream's ARN (`EventSourceArn`): a template that deploys must use the ARN.
    if let Some(stream) = streams.iter().find(|stream| stream.name == text) {
        return Err(fields.fault(
            "Stream",
            Problem::Conflict {
                value: render(value),
                reason: format!(
                    "is the stream's name, where Lambda requires its ARN (as CloudFormation \
                     does: !Ref of an AWS::Kinesis::Stream gives its name); write \
                     !GetAtt {}.Arn",
                    stream.logical_id
                ),
            },
        ));
    }
    Err(fields.fault(
        "Stream",
        Problem::Conflict {
            value: render(value),
            reason: format!(
                "names no AWS::Kinesis::Stream of the template and is not a stream ARN \
                 ({STREAM_ARN_FORM}){}",
                near_stream(&text, streams)
            ),
        },
    ))
}

/// `; did you mean !GetAtt X.Arn?` when `text` is near the name or logical id of stream `X`.
fn near_stream(text: &str, streams: &[StreamResource]) -> String {
    let names = streams.iter().map(|stream| stream.name.as_str());
    let logical_ids = streams.iter().map(|stream| stream.logical_id.as_str());
    let Some(near) = did_you_mean(text, names.chain(logical_ids)) else {
        return String::new();
    };
    let stream = streams
        .iter()
        .find(|stream| stream.name == near || stream.logical_id == near);
    stream.map_or_else(String::new, |stream| {
        format!("; did you mean !GetAtt {}.Arn?", stream.logical_id)
    })
}

/// The stream and name of the `AWS::Kinesis::StreamConsumer` `logical_id`, from its
/// `StreamARN` and `ConsumerName` (both required by CloudFormation).
fn declared_consumer(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
    logical_id: &str,
) -> Result<(String, Option<FanOutConsumer>), Fault> {
    let property = |name: &str| -> Result<String, Fault> {
        let value = resolver
            .resource_property_value(logical_id, name)
            .ok_or_else(|| {
                fields.unresolved(
                    "Stream",
                    format!("consumer {logical_id} ({STREAM_CONSUMER}) has no {name}"),
                )
            })?;
        resolver.text(value).map_err(|reason| {
            fields.unresolved(
                "Stream",
                format!("{name} of consumer {logical_id} ({STREAM_CONSUMER}): {reason}"),
            )
        })
    };
    let name = property("ConsumerName")?;
    if !is_consumer_name(&name) {
        return Err(fields.fault(
            "Stream",
            Problem::NotAllowed {
                value: format!("ConsumerName {name} of consumer {logical_id}"),
                allowed: "1 to 128 letters, digits, '_', '.' or '-'".to_owned(),
            },
        ));
    }
    let stream_arn = property("StreamARN")?;
    let (stream, _) =
        stream_of_arn(&stream_arn).map_err(|problem| fields.fault("Stream", problem))?;
    Ok((
        stream,
        Some(FanOutConsumer {
            name,
            declared: true,
        }),
    ))
}

/// `[a-zA-Z0-9_.-]{1,128}`, the pattern of `ConsumerName`.
fn is_consumer_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-'))
}

/// The stream name in `arn:partition:kinesis:region:account:stream/name`, and the consumer's
/// in `.../stream/name/consumer/consumer-name:creation-time`.
fn stream_of_arn(arn: &str) -> Result<(String, Option<FanOutConsumer>), Problem> {
    let not_a_stream = || Problem::NotAllowed {
        value: arn.to_owned(),
        allowed: format!("a Kinesis stream ARN, {STREAM_ARN_FORM}, or a consumer's"),
    };
    match arn.parse::<Arn>().map_err(|_| not_a_stream())?.resource {
        Resource::Stream { name } if is_stream_name(&name) => Ok((name, None)),
        Resource::Consumer { stream, name, .. }
            if is_stream_name(&stream) && is_consumer_name(&name) =>
        {
            let consumer = FanOutConsumer {
                name,
                declared: false,
            };
            Ok((stream, Some(consumer)))
        }
        _ => Err(not_a_stream()),
    }
}

/// The logical id a `Ref` or `Fn::GetAtt` names, when the value is one.
fn referenced_resource(value: &Value) -> Option<&str> {
    let (function, argument) = intrinsic(value)?;
    match (function.as_str(), argument) {
        ("Ref", Value::String(logical_id)) => Some(logical_id),
        ("Fn::GetAtt", Value::String(dotted)) => Some(dotted.split('.').next().unwrap_or(dotted)),
        ("Fn::GetAtt", Value::Sequence(items)) => items.first()?.as_str(),
        _ => None,
    }
}

fn starting_position(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
) -> Result<StartingPosition, Fault> {
    let position = fields.text(resolver, "StartingPosition")?;
    let timestamp = fields.number(resolver, "StartingPositionTimestamp")?;
    match (position.as_deref(), timestamp) {
        (None, _) => Err(fields.missing(
            "StartingPosition",
            " (TRIM_HORIZON, LATEST or AT_TIMESTAMP)",
        )),
        (Some("TRIM_HORIZON" | "LATEST"), Some(_)) => {
            let value = fields
                .get("StartingPositionTimestamp")
                .map_or_else(String::new, render);
            Err(fields.fault(
                "StartingPositionTimestamp",
                Problem::Conflict {
                    value,
                    reason: "is only read with StartingPosition AT_TIMESTAMP".to_owned(),
                },
            ))
        }
        (Some("TRIM_HORIZON"), None) => Ok(StartingPosition::TrimHorizon),
        (Some("LATEST"), None) => Ok(StartingPosition::Latest),
        (Some("AT_TIMESTAMP"), None) => Err(fields.missing(
            "StartingPositionTimestamp",
            " with StartingPosition AT_TIMESTAMP (seconds since the Unix epoch)",
        )),
        (Some("AT_TIMESTAMP"), Some(seconds)) if seconds >= 0.0 => Ok(
            StartingPosition::AtTimestamp(UNIX_EPOCH + Duration::from_secs_f64(seconds)),
        ),
        (Some("AT_TIMESTAMP"), Some(seconds)) => Err(fields.fault(
            "StartingPositionTimestamp",
            Problem::OutOfRange {
                value: seconds.to_string(),
                allowed: "seconds since the Unix epoch, 0 or more".to_owned(),
            },
        )),
        (Some(_), _) => {
            Err(fields.not_allowed("StartingPosition", "TRIM_HORIZON, LATEST, AT_TIMESTAMP"))
        }
    }
}

/// Whether `FunctionResponseTypes` asks for partial batch responses.
fn report_batch_item_failures(fields: &Fields<'_>, resolver: &Resolver<'_>) -> Result<bool, Fault> {
    const ALLOWED: &str = "[] or [ReportBatchItemFailures]";
    let Some(value) = fields.get("FunctionResponseTypes") else {
        return Ok(false);
    };
    let Value::Sequence(items) = value else {
        return Err(fields.not_allowed("FunctionResponseTypes", ALLOWED));
    };
    let mut types = Vec::with_capacity(items.len());
    for item in items {
        types.push(
            resolver
                .text(item)
                .map_err(|reason| fields.unresolved("FunctionResponseTypes", reason))?,
        );
    }
    match types.as_slice() {
        [] => Ok(false),
        [only] if only == "ReportBatchItemFailures" => Ok(true),
        _ => Err(fields.not_allowed("FunctionResponseTypes", ALLOWED)),
    }
}

/// `DestinationConfig.OnFailure.Destination`: the logical id of a resource of the template
/// when written as `!Ref X` or `!GetAtt X.Arn`, else the resolved text (an ARN).
fn on_failure_destination(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
) -> Result<Option<String>, Fault> {
    if fields.get("DestinationConfig").is_none() {
        return Ok(None);
    }
    let config = fields.nested("DestinationConfig")?;
    config.check_names(&["OnFailure", "OnSuccess"])?;
    if config.get("OnSuccess").is_some() {
        return Err(config.not_allowed(
            "OnSuccess",
            "only OnFailure: Lambda has no OnSuccess destination for stream event sources",
        ));
    }
    let on_failure = config.nested("OnFailure")?;
    if config.get("OnFailure").is_none() {
        return Err(config.missing("OnFailure", ""));
    }
    on_failure.check_names(&["Destination", "Type"])?;
    let written = on_failure.get("Destination").and_then(Value::as_str);
    other_sources::refuse_kafka_destination(&on_failure, written)?;
    if let Some(kind) = on_failure.get("Type")
        && !matches!(kind.as_str(), Some("SQS" | "SNS" | "S3"))
    {
        return Err(on_failure.not_allowed("Type", "SQS, SNS, S3"));
    }
    let Some(destination) = on_failure.get("Destination") else {
        return Err(
            on_failure.missing("Destination", " (an SQS queue, SNS topic or S3 bucket ARN)")
        );
    };
    if let Some(logical_id) = referenced_resource(destination)
        && resolver.resource_type(logical_id).is_some()
    {
        return Ok(Some(logical_id.to_owned()));
    }
    on_failure.text(resolver, "Destination")
}

/// The resource an on-failure destination (a logical id or an ARN) names, if it is a queue, a
/// topic or a bucket. A template resource is known by the name its properties give it, else by
/// its logical id (CloudFormation would make one up; locally the logical id stands in for it,
/// lower-cased for a bucket, whose names S3 wants in lower case).
pub(super) fn destination_target(
    destination: &str,
    resolver: &Resolver<'_>,
) -> Option<DestinationTarget> {
    let Some(resource_type) = resolver.resource_type(destination) else {
        return DestinationTarget::from_arn(destination).ok();
    };
    let name_property = match resource_type {
        "AWS::SQS::Queue" => "QueueName",
        "AWS::SNS::Topic" => "TopicName",
        "AWS::S3::Bucket" => "BucketName",
        _ => return None,
    };
    let name = resolver
        .resource_property(destination, name_property)
        .map_or_else(
            || {
                if resource_type == "AWS::S3::Bucket" {
                    destination.to_lowercase()
                } else {
                    destination.to_owned()
                }
            },
            str::to_owned,
        );
    DestinationTarget::from_resource_type(resource_type, name)
}

/// `FilterCriteria.Filters`: each filter's `Pattern`, a JSON text, parsed as Lambda parses it
/// (`docs/filtering.md`). `FilterCriteria: {}` is no filter at all, as on Lambda.
fn filter_criteria(fields: &Fields<'_>, resolver: &Resolver<'_>) -> Result<FilterCriteria, Fault> {
    if fields.get("FilterCriteria").is_none() {
        return Ok(FilterCriteria::default());
    }
    let criteria = fields.nested("FilterCriteria")?;
    criteria.check_names(&["Filters"])?;
    let filters = match criteria.get("Filters") {
        None => return Ok(FilterCriteria::default()),
        Some(Value::Sequence(filters)) => filters,
        Some(_) => {
            return Err(criteria.not_allowed("Filters", "a list of filters, each {Pattern: '...'}"));
        }
    };
    if filters.len() > MAX_FILTERS {
        return Err(criteria.fault(
            "Filters",
            Problem::OutOfRange {
                value: format!("{} filters", filters.len()),
                allowed: format!(
                    "at most {MAX_FILTERS}; Lambda allows 5 unless the account's quota is raised"
                ),
            },
        ));
    }
    let mut patterns = Vec::with_capacity(filters.len());
    for index in 0..filters.len() {
        let filter = criteria.element("Filters", index)?;
        filter.check_names(&["Pattern"])?;
        let Some(value) = filter.get("Pattern") else {
            return Err(filter.missing(
                "Pattern",
                r#" (the filter as JSON text, such as '{"data": {"carrier": ["dhl"]}}')"#,
            ));
        };
        if matches!(value, Value::Mapping(_) | Value::Sequence(_)) && intrinsic(value).is_none() {
            return Err(filter.not_allowed(
                "Pattern",
                r#"a JSON text in a string: quote it, as in Pattern: '{"data": {"carrier": ["dhl"]}}'"#,
            ));
        }
        let text = filter.text(resolver, "Pattern")?.unwrap_or_default();
        let pattern = Pattern::parse(&text).map_err(|error| {
            filter.fault(
                "Pattern",
                Problem::FilterPattern {
                    value: text.clone(),
                    reason: error.to_string(),
                },
            )
        })?;
        patterns.push(pattern);
    }
    Ok(FilterCriteria::new(patterns))
}

/// Whether `MetricsConfig.Metrics` asks for the event-count metrics. `EventCount` is the one
/// value for a Kinesis mapping: `ErrorCount` and `KafkaMetrics` are for Kafka event sources
/// (https://docs.aws.amazon.com/lambda/latest/api/API_EventSourceMappingMetricsConfig.html).
fn event_count_metrics(fields: &Fields<'_>, resolver: &Resolver<'_>) -> Result<bool, Fault> {
    const ALLOWED: &str =
        "[] or [EventCount]; ErrorCount and KafkaMetrics are for Kafka event sources only";
    if fields.get("MetricsConfig").is_none() {
        return Ok(false);
    }
    let config = fields.nested("MetricsConfig")?;
    config.check_names(&["Metrics"])?;
    let items = match config.get("Metrics") {
        None => return Ok(false),
        Some(Value::Sequence(items)) => items,
        Some(_) => return Err(config.not_allowed("Metrics", ALLOWED)),
    };
    let mut metrics = Vec::with_capacity(items.len());
    for item in items {
        metrics.push(
            resolver
                .text(item)
                .map_err(|reason| config.unresolved("Metrics", reason))?,
        );
    }
    match metrics.as_slice() {
        [] => Ok(false),
        [only] if only == "EventCount" => Ok(true),
        _ => Err(config.not_allowed("Metrics", ALLOWED)),
    }
}

/// `KmsKeyArn`: Lambda encrypts the filter criteria at rest with this key, which changes nothing
/// a function sees, so it is only checked for its form: a key of the template, an ARN, or empty
/// for an AWS owned key.
fn check_kms_key_arn(fields: &Fields<'_>, resolver: &Resolver<'_>) -> Result<(), Fault> {
    let Some(value) = fields.get("KmsKeyArn") else {
        return Ok(());
    };
    if referenced_resource(value).is_some_and(|id| resolver.resource_type(id).is_some()) {
        return Ok(());
    }
    let arn = fields.text(resolver, "KmsKeyArn")?.unwrap_or_default();
    if arn.is_empty() || is_arn(&arn) {
        return Ok(());
    }
    Err(fields.not_allowed(
        "KmsKeyArn",
        "a KMS key ARN such as arn:aws:kms:us-east-1:123456789012:key/id, or '' for an AWS owned key",
    ))
}

/// Whether the text has an ARN's form, `arn:partition:service:...`, as the Lambda API checks.
fn is_arn(text: &str) -> bool {
    let mut parts = text.splitn(4, ':');
    let (Some("arn"), Some(partition), Some(service), Some(_)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    (partition.is_empty() || partition.starts_with("aws"))
        && !service.is_empty()
        && service
            .chars()
            .all(|char| char.is_ascii_lowercase() || char.is_ascii_digit() || "-.".contains(char))
}
