//! The template's resources: those of one type, their `Properties`, and the `Condition` no local
//! run can evaluate.

use serde_yaml_ng::{Mapping, Value};

use super::error::Section;
use super::fields::{Fault, Fields};
use super::intrinsic::render;

/// The resources of one type, by logical id, in the template's order.
pub(super) fn typed_resources<'r>(
    resources: &'r Mapping,
    resource_type: &str,
) -> Result<Vec<(String, &'r Mapping)>, Fault> {
    let mut found = Vec::new();
    for (logical_id, resource) in resources {
        let logical_id = logical_id
            .as_str()
            .map_or_else(|| render(logical_id), str::to_owned);
        let fields = Fields::new(resources, Section::Resource(logical_id.clone()), None);
        let Value::Mapping(resource) = resource else {
            return Err(fields.not_allowed("Type", "a resource: a map with Type and Properties"));
        };
        let fields = Fields::new(resource, Section::Resource(logical_id.clone()), None);
        match resource.get("Type") {
            Some(Value::String(found_type)) if found_type == resource_type => {
                found.push((logical_id, resource));
            }
            Some(Value::String(_)) => {}
            Some(_) => {
                return Err(
                    fields.not_allowed("Type", "a resource type such as AWS::Kinesis::Stream")
                );
            }
            None => return Err(fields.missing("Type", "")),
        }
    }
    Ok(found)
}

/// A stream's `Properties` (empty when absent), after refusing a `Condition`.
pub(super) fn resource_properties(logical_id: &str, resource: &Mapping) -> Result<Mapping, Fault> {
    refuse_condition(logical_id, resource)?;
    let fields = Fields::new(resource, Section::Resource(logical_id.to_owned()), None);
    match fields.get("Properties") {
        None => Ok(Mapping::new()),
        Some(Value::Mapping(properties)) => Ok(properties.clone()),
        Some(_) => Err(fields.not_allowed("Properties", "a map of properties")),
    }
}

/// A resource that exists only under a condition: kinesis-esm does not evaluate conditions, so
/// it cannot tell whether the resource would exist.
pub(super) fn refuse_condition(logical_id: &str, resource: &Mapping) -> Result<(), Fault> {
    Fields::new(resource, Section::Resource(logical_id.to_owned()), None).refuse(
        "Condition",
        "conditions are not evaluated: only resources that always exist",
    )
}
