//! Settings Lambda takes for event sources other than Kinesis. On a Kinesis event they are a
//! mistake in the template, not a gap in kinesis-esm, so the refusal names the sources that
//! take the setting rather than listing the properties kinesis-esm knows.
//!
//! Sources: the Lambda API reference of `CreateEventSourceMapping` and of each setting's type
//! (`ProvisionedPollerConfig`: Amazon MSK, self-managed Apache Kafka and Amazon SQS;
//! `EventSourceMappingLoggingConfig` and the schema registry: the two Kafka sources;
//! `ScalingConfig`: Amazon SQS; Kafka destinations: the two Kafka sources).

use super::error::Problem;
use super::fields::{Fault, Fields};

const KAFKA: &str = "Amazon MSK and self-managed Apache Kafka";

/// Each setting, and the event sources Lambda takes it for.
const SETTINGS: &[(&str, &str)] = &[
    (
        "ProvisionedPollerConfig",
        "Amazon MSK, self-managed Apache Kafka and Amazon SQS",
    ),
    ("LoggingConfig", KAFKA),
    ("SchemaRegistryConfig", KAFKA),
    ("AmazonManagedKafkaEventSourceConfig", "Amazon MSK"),
    (
        "SelfManagedKafkaEventSourceConfig",
        "self-managed Apache Kafka",
    ),
    ("ScalingConfig", "Amazon SQS"),
];

/// Refuses the first setting of another event source in an event's properties.
pub(super) fn refuse_settings(fields: &Fields<'_>) -> Result<(), Fault> {
    for (name, sources) in SETTINGS {
        if fields.get(name).is_some() {
            return Err(fields.fault(name, other_sources(sources)));
        }
    }
    Ok(())
}

/// Refuses an on-failure destination only the Kafka sources take: `Type: Kafka`, or a
/// `kafka://` cluster address.
pub(super) fn refuse_kafka_destination(
    on_failure: &Fields<'_>,
    destination: Option<&str>,
) -> Result<(), Fault> {
    if on_failure.get("Type").and_then(|kind| kind.as_str()) == Some("Kafka") {
        return Err(on_failure.fault("Type", other_sources(KAFKA)));
    }
    match destination {
        Some(address) if address.starts_with("kafka://") => {
            Err(on_failure.fault("Destination", other_sources(KAFKA)))
        }
        _ => Ok(()),
    }
}

fn other_sources(sources: &str) -> Problem {
    Problem::OtherEventSource {
        sources: sources.to_owned(),
    }
}
