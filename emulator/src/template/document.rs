//! A SAM template as a whole: its sections, its parameters, and its streams and functions read
//! in the template's order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_yaml_ng::{Mapping, Value};

use super::created_resources::{self, DestinationResource, TableResource};
use super::error::{Problem, Section, TemplateError};
use super::fields::{Failure, Fault, Fields};
use super::function_resource::{self, FunctionResource};
use super::intrinsic::{self, KINESIS_STREAM, ParameterValue, Resolver, render};
use super::options::TemplateOptions;
use super::resources::{resource_properties, typed_resources};
use super::stream::{self, StreamResource};

/// The transform that makes `AWS::Serverless::*` resources valid.
const SERVERLESS_TRANSFORM: &str = "AWS::Serverless-2016-10-31";

/// The top-level sections of a CloudFormation template.
const SECTIONS: &[&str] = &[
    "AWSTemplateFormatVersion",
    "Description",
    "Metadata",
    "Parameters",
    "Rules",
    "Mappings",
    "Conditions",
    "Transform",
    "Globals",
    "Resources",
    "Outputs",
];

/// The sections of `Globals` SAM knows; only `Function` concerns the emulator.
const GLOBAL_SECTIONS: &[&str] = &[
    "Function",
    "Api",
    "HttpApi",
    "SimpleTable",
    "StateMachine",
    "LayerVersion",
];

/// A SAM template, read into what the emulator runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// The template's path, as given.
    pub path: PathBuf,
    /// The `AWS::Kinesis::Stream` resources, in the template's order.
    pub streams: Vec<StreamResource>,
    /// The functions with at least one Kinesis event, in the template's order.
    pub functions: Vec<FunctionResource>,
    /// The DynamoDB tables (`AWS::DynamoDB::Table`, `AWS::Serverless::SimpleTable`).
    pub tables: Vec<TableResource>,
    /// The SQS queues, SNS topics and S3 buckets, whether or not an event names them.
    pub destinations: Vec<DestinationResource>,
}

impl Template {
    /// Reads the template at `path`, standing in for the account, region and stack of
    /// [`TemplateOptions::default`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self, TemplateError> {
        Self::load_with(path, &TemplateOptions::default())
    }

    /// Reads the template at `path` with these options.
    pub fn load_with(
        path: impl AsRef<Path>,
        options: &TemplateOptions,
    ) -> Result<Self, TemplateError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|reason| TemplateError::Read {
            path: path.to_owned(),
            reason,
        })?;
        Self::parse(path, &text, options)
    }

    /// Reads a template's text; `path` names it in errors, and relative `CodeUri`s start from
    /// its folder.
    pub fn parse(
        path: impl AsRef<Path>,
        text: &str,
        options: &TemplateOptions,
    ) -> Result<Self, TemplateError> {
        let path = path.as_ref();
        let invalid = |fault: Fault| {
            let Failure { location, problem } = *fault;
            TemplateError::Invalid {
                path: path.to_owned(),
                location: Box::new(location),
                problem,
            }
        };
        let document: Value =
            serde_yaml_ng::from_str(text).map_err(|error| TemplateError::Syntax {
                path: path.to_owned(),
                position: error.location().map(|at| (at.line(), at.column())),
                message: error.to_string(),
            })?;
        let Value::Mapping(root) = document else {
            return Err(TemplateError::Syntax {
                path: path.to_owned(),
                position: None,
                message: format!("a template is a map of sections, not {}", render(&document)),
            });
        };
        // A bare file name has an empty parent, which stands for the current folder.
        let parent = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let template_dir = std::path::absolute(parent).unwrap_or_else(|_| parent.to_owned());
        read_template(path, &root, &template_dir, options).map_err(invalid)
    }

    /// The stream of the template with this name.
    pub fn stream(&self, name: &str) -> Option<&StreamResource> {
        self.streams.iter().find(|stream| stream.name == name)
    }
}

fn read_template(
    path: &Path,
    root: &Mapping,
    template_dir: &Path,
    options: &TemplateOptions,
) -> Result<Template, Fault> {
    let top = Fields::new(root, Section::Template, None);
    top.check_names(SECTIONS)?;
    let resources = match top.get("Resources") {
        Some(Value::Mapping(resources)) => resources,
        Some(_) => return Err(top.not_allowed("Resources", "a map of resources by logical id")),
        None => return Err(top.missing("Resources", "")),
    };
    check_transform(&top, resources)?;
    let parameters = parameters(&top, options)?;
    let no_conditions = Mapping::new();
    let conditions = match top.get("Conditions") {
        None => &no_conditions,
        Some(Value::Mapping(conditions)) => conditions,
        Some(_) => return Err(top.not_allowed("Conditions", "a map of conditions")),
    };
    let mut resolver = Resolver::new(options, parameters, resources, conditions);

    let mut streams: Vec<StreamResource> = Vec::new();
    for (logical_id, resource) in typed_resources(resources, KINESIS_STREAM)? {
        let properties = resource_properties(&logical_id, resource)?;
        let stream = stream::read(&logical_id, &properties, &resolver)?;
        if let Some(other) = streams.iter().find(|other| other.name == stream.name) {
            return Err(
                Fields::new(&properties, Section::Resource(logical_id), None).fault(
                    "Name",
                    Problem::Conflict {
                        value: stream.name,
                        reason: format!("is the name of stream {} already", other.logical_id),
                    },
                ),
            );
        }
        resolver.know_stream(&stream.logical_id, &stream.name);
        streams.push(stream);
    }

    let globals = function_globals(&top)?;
    let around = function_resource::Surroundings {
        template_dir,
        globals: globals.as_ref(),
        resolver: &resolver,
        streams: &streams,
    };
    let mut functions: Vec<FunctionResource> = Vec::new();
    for (logical_id, resource) in typed_resources(resources, "AWS::Serverless::Function")? {
        let Some(function) = function_resource::read(&logical_id, resource, &around)? else {
            continue;
        };
        if let Some(other) = functions
            .iter()
            .find(|other| other.function_name == function.function_name)
        {
            return Err(
                Fields::new(resource, Section::Resource(logical_id), None).fault(
                    "FunctionName",
                    Problem::Conflict {
                        value: function.function_name,
                        reason: format!("is the name of function {} already", other.logical_id),
                    },
                ),
            );
        }
        functions.push(function);
    }
    for (logical_id, resource) in typed_resources(resources, "AWS::Lambda::EventSourceMapping")? {
        refuse_kinesis_event_source_mapping(&logical_id, resource, &resolver)?;
    }

    Ok(Template {
        path: path.to_owned(),
        streams,
        functions,
        tables: created_resources::tables(resources, &resolver)?,
        destinations: created_resources::destinations(resources, &resolver)?,
    })
}

/// SAM resources need the serverless transform, or CloudFormation rejects the template.
fn check_transform(top: &Fields<'_>, resources: &Mapping) -> Result<(), Fault> {
    let uses_sam = resources.values().any(|resource| {
        resource
            .get("Type")
            .and_then(Value::as_str)
            .is_some_and(|kind| kind.starts_with("AWS::Serverless::"))
    });
    let declared = match top.get("Transform") {
        Some(Value::String(name)) => name == SERVERLESS_TRANSFORM,
        Some(Value::Sequence(names)) => names
            .iter()
            .any(|name| name.as_str() == Some(SERVERLESS_TRANSFORM)),
        _ => false,
    };
    if uses_sam && !declared {
        return Err(top.missing(
            "Transform",
            &format!(" ({SERVERLESS_TRANSFORM}): CloudFormation rejects AWS::Serverless resources without it"),
        ));
    }
    Ok(())
}

/// What `Ref` gives for each parameter: its override, its `Default`, or why it has no value.
fn parameters(
    top: &Fields<'_>,
    options: &TemplateOptions,
) -> Result<BTreeMap<String, ParameterValue>, Fault> {
    let section = top.nested("Parameters")?;
    let mut values = BTreeMap::new();
    for (name, declaration) in section.map() {
        let name = name.as_str().map_or_else(|| render(name), str::to_owned);
        let Value::Mapping(declaration) = declaration else {
            return Err(section.not_allowed(&name, "a map with Type and Default"));
        };
        let fields = Fields::new(declaration, Section::Parameter(name.clone()), None);
        let kind = match fields.get("Type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(_) => return Err(fields.not_allowed("Type", "a parameter type such as String")),
            None => return Err(fields.missing("Type", "")),
        };
        let given = match options.parameter_overrides.get(&name) {
            Some(value) => Some(value.clone()),
            None => match fields.get("Default") {
                None => None,
                Some(Value::String(text)) => Some(text.clone()),
                Some(Value::Number(number)) => Some(number.to_string()),
                Some(Value::Bool(flag)) => Some(flag.to_string()),
                Some(_) => return Err(fields.not_allowed("Default", "a single value")),
            },
        };
        if let (Some(value), Some(Value::Sequence(allowed))) = (&given, fields.get("AllowedValues"))
        {
            let listed = allowed.iter().any(|item| match item {
                Value::String(text) => text == value,
                Value::Number(number) => number.to_string() == *value,
                Value::Bool(flag) => flag.to_string() == *value,
                _ => false,
            });
            if !listed {
                let property = if options.parameter_overrides.contains_key(&name) {
                    "override"
                } else {
                    "Default"
                };
                return Err(fields.fault(
                    property,
                    Problem::NotAllowed {
                        value: value.clone(),
                        allowed: allowed.iter().map(render).collect::<Vec<_>>().join(", "),
                    },
                ));
            }
        }
        let value = if kind.starts_with("AWS::SSM::Parameter::Value") {
            ParameterValue::Unknown("takes its value from SSM Parameter Store".to_owned())
        } else if kind.starts_with("List<") || kind == "CommaDelimitedList" {
            ParameterValue::Unknown(format!("is a list ({kind}), not a single value"))
        } else {
            match given {
                Some(value) => ParameterValue::Text(value),
                None => ParameterValue::Unknown(
                    "has no Default: give it one, or pass an override".to_owned(),
                ),
            }
        };
        values.insert(name, value);
    }
    let declared: BTreeSet<&str> = values.keys().map(String::as_str).collect();
    if let Some(unknown) = options
        .parameter_overrides
        .keys()
        .find(|name| !declared.contains(name.as_str()))
    {
        return Err(top.fault(
            "Parameters",
            Problem::Conflict {
                value: unknown.clone(),
                reason: "is overridden but not declared in Parameters".to_owned(),
            },
        ));
    }
    Ok(values)
}

/// `Globals.Function`, with its property names checked as SAM checks them.
fn function_globals(top: &Fields<'_>) -> Result<Option<Mapping>, Fault> {
    if top.get("Globals").is_none() {
        return Ok(None);
    }
    let globals = top.nested("Globals")?;
    globals.check_names(GLOBAL_SECTIONS)?;
    if globals.get("Function").is_none() {
        return Ok(None);
    }
    let function = globals.nested("Function")?;
    let checked = Fields::new(function.map(), Section::Globals, None);
    checked.check_names(function_resource::GLOBAL_PROPERTIES)?;
    Ok(Some(function.map().clone()))
}

/// A plain `AWS::Lambda::EventSourceMapping` on a Kinesis stream would be a mapping the
/// emulator does not run: refuse it rather than leave it out silently.
fn refuse_kinesis_event_source_mapping(
    logical_id: &str,
    resource: &Mapping,
    resolver: &Resolver<'_>,
) -> Result<(), Fault> {
    let fields = Fields::new(resource, Section::Resource(logical_id.to_owned()), None);
    let properties = fields.nested("Properties")?;
    let Some(source) = properties.get("EventSourceArn") else {
        return Ok(());
    };
    let names_kinesis_resource =
        intrinsic::intrinsic(source).is_some_and(|(function, argument)| {
            let target = match (function.as_str(), argument) {
                ("Ref", Value::String(name)) => Some(name.as_str()),
                ("Fn::GetAtt", Value::String(dotted)) => dotted.split('.').next(),
                ("Fn::GetAtt", Value::Sequence(items)) => items.first().and_then(Value::as_str),
                _ => None,
            };
            target
                .and_then(|name| resolver.resource_type(name))
                .is_some_and(|kind| kind.starts_with("AWS::Kinesis::"))
        });
    if names_kinesis_resource || render(source).contains(":kinesis:") {
        return Err(properties.fault(
            "EventSourceArn",
            Problem::NotReproduced {
                value: render(source),
                supported: "only Kinesis events of AWS::Serverless::Function resources".to_owned(),
            },
        ));
    }
    Ok(())
}
