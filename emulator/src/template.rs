//! Reading a SAM template (`template.yaml`) into what the emulator runs: the Kinesis streams to
//! create and the functions to invoke, each with one [`MappingConfig`] per Kinesis event.
//!
//! ```no_run
//! use kinesis_esm::template::Template;
//!
//! let template = Template::load("template.yaml")?;
//! for function in &template.functions {
//!     for mapping in &function.mappings {
//!         println!("{} reads {}", mapping.function_name, mapping.stream_name);
//!     }
//! }
//! # Ok::<(), kinesis_esm::template::TemplateError>(())
//! ```
//!
//! What is read:
//! - `AWS::Kinesis::Stream` resources become [`StreamResource`]s. A stream without `Name` is
//!   named after its logical id: CloudFormation would generate `<stack>-<logical id>-<suffix>`,
//!   which no local run can predict. An `ON_DEMAND` stream gets
//!   [`ON_DEMAND_SHARD_COUNT`] shards, the capacity AWS gives a new on-demand stream.
//! - `AWS::Serverless::Function` resources with `Type: Kinesis` events become
//!   [`FunctionResource`]s, after `Globals.Function` is applied as SAM applies it (maps merge,
//!   lists append, other values are the function's own; `IgnoreGlobals` is honoured).
//!   Functions without a Kinesis event, and events of other types (SQS, Api, Schedule, ...), are
//!   skipped without a word: they are not the emulator's business.
//! - `Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::Join` and `Fn::If` (over the template's
//!   `Conditions`), short and long forms, resolve over the
//!   template's parameters (their `Default`, or [`TemplateOptions::parameter_overrides`]), the
//!   pseudo-parameters `AWS::Region`, `AWS::AccountId`, `AWS::Partition`, `AWS::StackName`,
//!   `AWS::URLSuffix` (from [`TemplateOptions`]), and the template's streams (`Ref` gives the
//!   name, `Arn` the ARN).
//!
//! What is refused, with an error naming the file, the resource, the event and the property:
//! anything that would make the local run differ from Lambda without saying so, such as
//! tumbling windows, enhanced fan-out
//! consumers, a stream that is neither defined in the template nor given by ARN, property names
//! kinesis-esm does not know (usually typos), values outside the ranges Lambda accepts, values
//! no local run can know (the attributes of other resources, SSM parameters), and resources
//! that exist only under a `Condition`.
//! Properties that change nothing locally (`Description`, `Tags`, `Policies`, `Role`,
//! `Layers`, `Tracing`, ...) are accepted. A stream given by literal ARN may live outside the
//! template (for runs against a real Kinesis endpoint); the embedded Kinesis only holds the
//! template's streams.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_yaml_ng::{Mapping, Value};

use esm_engine::config::MappingConfig;

mod error;
mod event;
mod fields;
mod function;
mod intrinsic;
mod other_sources;
mod stream;

pub use error::{Location, Problem, Section, TemplateError};
pub use stream::{MAX_SHARD_COUNT, ON_DEMAND_SHARD_COUNT};

use fields::{Failure, Fault, Fields};
use intrinsic::{KINESIS_STREAM, ParameterValue, Resolver, render};

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

/// The variable that gives the functions (and the AWS SDK) a local DynamoDB, read by the CLI into
/// [`TemplateOptions::local_dynamodb`].
pub const LOCAL_DYNAMODB_VARIABLE: &str = "AWS_ENDPOINT_URL_DYNAMODB";

/// What a local run stands in for: the account, region and stack the template would be deployed
/// to, and the parameter values `sam deploy --parameter-overrides` would give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateOptions {
    /// `AWS::Region`; it also decides `AWS::Partition` and `AWS::URLSuffix`.
    pub region: String,
    /// `AWS::AccountId`.
    pub account_id: String,
    /// `AWS::StackName`.
    pub stack_name: String,
    /// Values for parameters, taking precedence over their `Default`.
    pub parameter_overrides: BTreeMap<String, String>,
    /// The local DynamoDB the functions are given (the run's `AWS_ENDPOINT_URL_DYNAMODB`): `Ref`
    /// of a template's table names a table there, and the functions get the endpoint. Without
    /// one, `Ref` of a table is empty, so that a function runs without it rather than call AWS.
    pub local_dynamodb: Option<String>,
}

impl Default for TemplateOptions {
    /// The values `sam local` uses: region `us-east-1`, account `123456789012`, stack `local`.
    fn default() -> Self {
        Self {
            region: "us-east-1".to_owned(),
            account_id: "123456789012".to_owned(),
            stack_name: "local".to_owned(),
            parameter_overrides: BTreeMap::new(),
            local_dynamodb: None,
        }
    }
}

/// A SAM template, read into what the emulator runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// The template's path, as given.
    pub path: PathBuf,
    /// The `AWS::Kinesis::Stream` resources, in the template's order.
    pub streams: Vec<StreamResource>,
    /// The functions with at least one Kinesis event, in the template's order.
    pub functions: Vec<FunctionResource>,
}

/// How a stream's capacity is managed (`StreamModeDetails.StreamMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMode {
    /// A fixed number of shards (`PROVISIONED`, the default).
    Provisioned,
    /// AWS scales the shards (`ON_DEMAND`); the embedded Kinesis splits a hot shard as AWS
    /// documents (docs/kinesis.md, "On-demand scaling"), another Kinesis scales as it does.
    OnDemand,
}

/// An `AWS::Kinesis::Stream` resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamResource {
    /// The resource's logical id.
    pub logical_id: String,
    /// The stream's name: `Name`, or the logical id.
    pub name: String,
    /// The number of shards: `ShardCount` (1 when absent), or [`ON_DEMAND_SHARD_COUNT`].
    pub shard_count: u32,
    /// How long records stay readable (`RetentionPeriodHours`, 24 hours when absent).
    pub retention: Duration,
    /// The capacity mode.
    pub mode: StreamMode,
}

/// The instruction set a function is built for (`Architectures`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// `x86_64`, the default.
    X86_64,
    /// `arm64` (Graviton).
    Arm64,
}

/// An `AWS::Serverless::Function` with Kinesis events.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionResource {
    /// The resource's logical id.
    pub logical_id: String,
    /// `FunctionName`, or the logical id.
    pub function_name: String,
    /// `CodeUri` as the template writes it (`.` when absent), for messages.
    pub code_uri: String,
    /// The folder holding the function's crate (`CodeUri`), absolute.
    pub code_dir: PathBuf,
    /// The cargo binary to build (`Metadata.BuildProperties.Binary`, `bootstrap` when absent).
    pub binary: String,
    /// `Metadata.BuildMethod`, such as `rust-cargolambda`.
    pub build_method: Option<String>,
    /// `Handler`.
    pub handler: String,
    /// `Runtime`: one of the `provided` runtimes.
    pub runtime: String,
    /// `Architectures`.
    pub architecture: Architecture,
    /// `Timeout` (3 seconds when absent).
    pub timeout: Duration,
    /// `MemorySize` in MB (128 when absent).
    pub memory_size: u32,
    /// `Environment.Variables`, resolved.
    pub environment: BTreeMap<String, String>,
    /// `LoggingConfig`.
    pub logging: esm_engine::config::LoggingConfig,
    /// One mapping per Kinesis event, in the template's order.
    pub mappings: Vec<MappingConfig>,
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
    let around = function::Surroundings {
        template_dir,
        globals: globals.as_ref(),
        resolver: &resolver,
        streams: &streams,
    };
    let mut functions: Vec<FunctionResource> = Vec::new();
    for (logical_id, resource) in typed_resources(resources, "AWS::Serverless::Function")? {
        let Some(function) = function::read(&logical_id, resource, &around)? else {
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
    })
}

/// The resources of one type, by logical id, in the template's order.
fn typed_resources<'r>(
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
fn resource_properties(logical_id: &str, resource: &Mapping) -> Result<Mapping, Fault> {
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
fn refuse_condition(logical_id: &str, resource: &Mapping) -> Result<(), Fault> {
    Fields::new(resource, Section::Resource(logical_id.to_owned()), None).refuse(
        "Condition",
        "conditions are not evaluated: only resources that always exist",
    )
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
    checked.check_names(function::GLOBAL_PROPERTIES)?;
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

#[cfg(test)]
mod tests;
