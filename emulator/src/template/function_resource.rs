//! `AWS::Serverless::Function` resources with Kinesis events, and `Globals.Function`.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde_yaml_ng::{Mapping, Value};

use super::capacity_provider::{self, ManagedInstances};
use super::error::{Problem, Section};
use super::event::{self, Target};
use super::fields::{Fault, Fields};
use super::intrinsic::{Resolver, intrinsic, render};
use super::options::LOCAL_DYNAMODB_VARIABLE;
use super::resources::refuse_condition;
use super::stream::StreamResource;
use esm_engine::config::MappingConfig;

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
    /// `CapacityProviderConfig`: Lambda Managed Instances, several invocations at once in one
    /// execution environment; `None` for the standard execution environment.
    pub managed_instances: Option<ManagedInstances>,
    /// One mapping per Kinesis event, in the template's order.
    pub mappings: Vec<MappingConfig>,
}

/// The properties of `AWS::Serverless::Function`, as SAM defines them.
const PROPERTIES: &[&str] = &[
    "Architectures",
    "AssumeRolePolicyDocument",
    "AutoPublishAlias",
    "AutoPublishAliasAllProperties",
    "AutoPublishCodeSha256",
    "CapacityProviderConfig",
    "CodeSigningConfigArn",
    "CodeUri",
    "DeadLetterQueue",
    "DeploymentPreference",
    "Description",
    "DurableConfig",
    "Environment",
    "EphemeralStorage",
    "EventInvokeConfig",
    "Events",
    "FileSystemConfigs",
    "FunctionName",
    "FunctionScalingConfig",
    "FunctionUrlConfig",
    "Handler",
    "ImageConfig",
    "ImageUri",
    "InlineCode",
    "KmsKeyArn",
    "Layers",
    "LoggingConfig",
    "MemorySize",
    "PackageType",
    "PermissionsBoundary",
    "Policies",
    "PropagateTags",
    "ProvisionedConcurrencyConfig",
    "PublishToLatestPublished",
    "RecursiveLoop",
    "ReservedConcurrentExecutions",
    "Role",
    "RolePath",
    "Runtime",
    "RuntimeManagementConfig",
    "SnapStart",
    "SourceKMSKeyArn",
    "Tags",
    "TenancyConfig",
    "Timeout",
    "Tracing",
    "VersionDeletionPolicy",
    "VersionDescription",
    "VpcConfig",
];

/// The properties SAM lets `Globals.Function` set: all but `Role`, `Policies`, `FunctionName`
/// and `Events`, and a few more.
pub(super) const GLOBAL_PROPERTIES: &[&str] = &[
    "Handler",
    "Runtime",
    "CodeUri",
    "DeadLetterQueue",
    "Description",
    "MemorySize",
    "Timeout",
    "VpcConfig",
    "Environment",
    "Tags",
    "PropagateTags",
    "Tracing",
    "KmsKeyArn",
    "AutoPublishAlias",
    "AutoPublishAliasAllProperties",
    "Layers",
    "DeploymentPreference",
    "RolePath",
    "PermissionsBoundary",
    "ReservedConcurrentExecutions",
    "ProvisionedConcurrencyConfig",
    "AssumeRolePolicyDocument",
    "EventInvokeConfig",
    "FileSystemConfigs",
    "CodeSigningConfigArn",
    "Architectures",
    "SnapStart",
    "EphemeralStorage",
    "FunctionUrlConfig",
    "RuntimeManagementConfig",
    "LoggingConfig",
    "RecursiveLoop",
    "SourceKMSKeyArn",
    "TenancyConfig",
    "DurableConfig",
    "CapacityProviderConfig",
    "FunctionScalingConfig",
    "PublishToLatestPublished",
    "VersionDeletionPolicy",
];

/// Environment variables Lambda sets itself and refuses in a function's configuration.
const RESERVED_VARIABLES: &[&str] = &[
    "_HANDLER",
    "_X_AMZN_TRACE_ID",
    "AWS_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_DEFAULT_REGION",
    "AWS_EXECUTION_ENV",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_VERSION",
    "AWS_LAMBDA_INITIALIZATION_TYPE",
    "AWS_LAMBDA_LOG_GROUP_NAME",
    "AWS_LAMBDA_LOG_STREAM_NAME",
    "AWS_LAMBDA_RUNTIME_API",
    "AWS_REGION",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "LAMBDA_RUNTIME_DIR",
    "LAMBDA_TASK_ROOT",
];

/// The runtimes that run a `bootstrap` binary, which is what a Rust function is.
const RUNTIMES: &str =
    "provided.al2023, provided.al2, provided: the function's own bootstrap binary";

/// Where the function's template lives and what it can refer to.
pub(super) struct Surroundings<'a> {
    pub(super) template_dir: &'a Path,
    pub(super) globals: Option<&'a Mapping>,
    pub(super) resolver: &'a Resolver<'a>,
    pub(super) streams: &'a [StreamResource],
}

/// Reads a function, or gives `None` when it has no Kinesis event: such a function is not the
/// emulator's business, whatever else it declares.
pub(super) fn read(
    logical_id: &str,
    resource: &Mapping,
    around: &Surroundings<'_>,
) -> Result<Option<FunctionResource>, Fault> {
    let section = Section::Resource(logical_id.to_owned());
    let resource_fields = Fields::new(resource, section.clone(), None);
    let local = resource_fields.nested("Properties")?;
    let events = kinesis_events(logical_id, &local)?;
    if events.is_empty() {
        return Ok(None);
    }
    refuse_condition(logical_id, resource)?;

    let globals = applicable_globals(&resource_fields, around.globals)?;
    let merged = merge_maps(&globals, local.map());
    let fields = Fields::new(&merged, section, None);
    read_merged(logical_id, resource, &fields, &events, around)
        .map(Some)
        .map_err(|fault| blame_globals(fault, local.map(), &globals))
}

fn read_merged(
    logical_id: &str,
    resource: &Mapping,
    fields: &Fields<'_>,
    events: &[(String, &Mapping)],
    around: &Surroundings<'_>,
) -> Result<FunctionResource, Fault> {
    let resolver = around.resolver;
    fields.check_names(PROPERTIES)?;
    refuse_what_is_not_reproduced(fields, resolver)?;
    let runtime = runtime(fields, resolver)?;
    let handler = fields
        .text(resolver, "Handler")?
        .ok_or_else(|| fields.missing("Handler", " (bootstrap, for a provided runtime)"))?;
    let (code_uri, code_dir) = code_dir(fields, resolver, around.template_dir)?;
    let architecture = architecture(fields, resolver)?;
    let timeout = fields.integer(resolver, "Timeout", 1..=900)?.unwrap_or(3);
    let memory_size = fields
        .integer(resolver, "MemorySize", 128..=10_240)?
        .unwrap_or(128);
    let environment = environment(fields, resolver)?;
    let logging = logging_config(fields, resolver)?;
    let managed_instances = capacity_provider::read(fields, resolver)?;
    let function_name = function_name(fields, resolver, logical_id)?;
    let (build_method, binary) = build_metadata(logical_id, resource)?;
    let timeout = Duration::from_secs(timeout as u64);
    let target = Target {
        logical_id,
        function_name: &function_name,
        timeout,
    };
    let mappings = read_mappings(&target, events, around)?;
    Ok(FunctionResource {
        logical_id: logical_id.to_owned(),
        function_name,
        code_uri,
        code_dir,
        binary,
        build_method,
        handler,
        runtime,
        architecture,
        timeout,
        memory_size: memory_size as u32,
        environment,
        logging,
        managed_instances,
        mappings,
    })
}

/// Refuses the properties of a function the emulator does not run as Lambda would: inline code,
/// images, durable functions, other execution environments (Managed Instances' scaling and
/// tenancy), and a function that may never run.
fn refuse_what_is_not_reproduced(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
) -> Result<(), Fault> {
    const LOCAL_ZIP: &str = "only .zip functions built from a local folder";
    const STANDARD: &str = "only the standard Lambda execution environment";
    for (name, supported) in [
        (
            "InlineCode",
            "only CodeUri: a local folder with the function's crate",
        ),
        ("ImageUri", LOCAL_ZIP),
        ("ImageConfig", LOCAL_ZIP),
        ("DurableConfig", "only standard functions"),
        ("FunctionScalingConfig", STANDARD),
        ("TenancyConfig", STANDARD),
    ] {
        fields.refuse(name, supported)?;
    }
    if let Some(package) = fields.text(resolver, "PackageType")?
        && package != "Zip"
    {
        return Err(fields.fault(
            "PackageType",
            Problem::NotReproduced {
                value: package,
                supported: "only Zip".to_owned(),
            },
        ));
    }
    let reserved = "ReservedConcurrentExecutions";
    if fields.integer(resolver, reserved, 0..=i64::from(u32::MAX))? == Some(0) {
        return Err(fields.fault(
            reserved,
            Problem::NotReproduced {
                value: "0".to_owned(),
                supported: "a function that may run: with 0 Lambda never invokes it".to_owned(),
            },
        ));
    }
    Ok(())
}

/// The function's `Runtime`: one of the OS-only runtimes a Rust binary runs on.
fn runtime(fields: &Fields<'_>, resolver: &Resolver<'_>) -> Result<String, Fault> {
    let runtime = fields
        .text(resolver, "Runtime")?
        .ok_or_else(|| fields.missing("Runtime", &format!(" ({RUNTIMES})")))?;
    if !matches!(
        runtime.as_str(),
        "provided.al2023" | "provided.al2" | "provided"
    ) {
        return Err(fields.fault(
            "Runtime",
            Problem::NotReproduced {
                value: runtime,
                supported: RUNTIMES.to_owned(),
            },
        ));
    }
    Ok(runtime)
}

/// The function's `FunctionName`, or its logical id as SAM names it locally.
fn function_name(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
    logical_id: &str,
) -> Result<String, Fault> {
    match fields.text(resolver, "FunctionName")? {
        Some(name) if is_function_name(&name) => Ok(name),
        Some(_) => Err(fields.not_allowed(
            "FunctionName",
            "1 to 64 characters among a-z, A-Z, 0-9, _ -",
        )),
        None => Ok(logical_id.to_owned()),
    }
}

/// The function's mappings, one per Kinesis event, refusing a second mapping of one stream as
/// Lambda does.
fn read_mappings(
    target: &Target<'_>,
    events: &[(String, &Mapping)],
    around: &Surroundings<'_>,
) -> Result<Vec<esm_engine::config::MappingConfig>, Fault> {
    let mut mappings: Vec<(&str, esm_engine::config::MappingConfig)> = Vec::new();
    for (event_name, properties) in events {
        let mapping = event::read(
            target,
            event_name,
            properties,
            around.resolver,
            around.streams,
        )?;
        if let Some((first, _)) = mappings
            .iter()
            .find(|(_, other)| other.stream_name == mapping.stream_name)
        {
            let event_fields = Fields::new(
                properties,
                Section::Resource(target.logical_id.to_owned()),
                Some(event_name.clone()),
            );
            let value = event_fields.get("Stream").map_or_else(String::new, render);
            return Err(event_fields.fault(
                "Stream",
                Problem::Conflict {
                    value,
                    reason: format!(
                        "is mapped by event {first} already: Lambda allows one mapping per function and stream"
                    ),
                },
            ));
        }
        mappings.push((event_name, mapping));
    }
    Ok(mappings.into_iter().map(|(_, mapping)| mapping).collect())
}

/// The function's `Type: Kinesis` events, by name, in the template's order. Other event types
/// (SQS, Api, Schedule, ...) are skipped: they are not the emulator's business.
fn kinesis_events<'a>(
    logical_id: &str,
    properties: &Fields<'a>,
) -> Result<Vec<(String, &'a Mapping)>, Fault> {
    let events = properties.nested("Events")?;
    let mut kinesis = Vec::new();
    for (name, event) in events.map() {
        let name = name.as_str().map_or_else(|| render(name), str::to_owned);
        let Value::Mapping(event) = event else {
            return Err(events.not_allowed(&name, "a map with Type and Properties"));
        };
        let event_fields = Fields::new(
            event,
            Section::Resource(logical_id.to_owned()),
            Some(name.clone()),
        );
        match event.get("Type") {
            Some(Value::String(kind)) if kind == "Kinesis" => {}
            Some(Value::String(_)) => continue,
            Some(_) => {
                return Err(event_fields.not_allowed("Type", "an event type such as Kinesis"));
            }
            None => return Err(event_fields.missing("Type", "")),
        }
        event_fields.check_names(&["Type", "Properties"])?;
        match event.get("Properties") {
            Some(Value::Mapping(properties)) => kinesis.push((name, properties)),
            Some(_) => {
                return Err(event_fields
                    .not_allowed("Properties", "a map with Stream and StartingPosition"));
            }
            None => {
                return Err(
                    event_fields.missing("Properties", " (with Stream and StartingPosition)")
                );
            }
        }
    }
    Ok(kinesis)
}

/// `Globals.Function`, minus what the resource's `IgnoreGlobals` attribute leaves out.
fn applicable_globals(resource: &Fields<'_>, globals: Option<&Mapping>) -> Result<Mapping, Fault> {
    let mut globals = globals.cloned().unwrap_or_default();
    match resource.get("IgnoreGlobals") {
        None => {}
        Some(Value::String(all)) if all == "*" => globals.clear(),
        Some(Value::Sequence(names)) => {
            for name in names {
                let removed = name.as_str().and_then(|name| globals.remove(name));
                if removed.is_none() {
                    return Err(resource.fault(
                        "IgnoreGlobals",
                        Problem::Conflict {
                            value: render(name),
                            reason: "is not a property of Globals.Function".to_owned(),
                        },
                    ));
                }
            }
        }
        Some(_) => {
            return Err(resource.not_allowed(
                "IgnoreGlobals",
                "\"*\" or a list of Globals.Function properties",
            ));
        }
    }
    Ok(globals)
}

/// What SAM does with `Globals`: maps merge key by key, lists are the global items followed by
/// the resource's, and anything else (intrinsic functions included) is the resource's value.
pub(super) fn merge_maps(global: &Mapping, local: &Mapping) -> Mapping {
    let mut merged = global.clone();
    for (key, value) in local {
        let combined = match merged.get(key) {
            Some(global_value) => merge_values(global_value, value),
            None => value.clone(),
        };
        merged.insert(key.clone(), combined);
    }
    merged
}

fn merge_values(global: &Value, local: &Value) -> Value {
    let is_map = |value: &Value| value.is_mapping() && intrinsic(value).is_none();
    match (global, local) {
        (Value::Mapping(global_map), Value::Mapping(local_map))
            if is_map(global) && is_map(local) =>
        {
            Value::Mapping(merge_maps(global_map, local_map))
        }
        (Value::Sequence(global_items), Value::Sequence(local_items)) => {
            Value::Sequence(global_items.iter().chain(local_items).cloned().collect())
        }
        _ => local.clone(),
    }
}

/// Says a problem lies in `Globals.Function` when the resource itself does not set the property.
fn blame_globals(mut fault: Fault, local: &Mapping, globals: &Mapping) -> Fault {
    let top = fault
        .location
        .property
        .split('.')
        .next()
        .unwrap_or_default()
        .to_owned();
    if fault.location.event.is_none()
        && !local.contains_key(top.as_str())
        && globals.contains_key(top.as_str())
    {
        fault.location.section = Section::Globals;
    }
    fault
}

/// `CodeUri` as written and as an absolute folder: relative to the template's folder, `.` when
/// absent as SAM CLI takes it.
fn code_dir(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
    template_dir: &Path,
) -> Result<(String, PathBuf), Fault> {
    const LOCAL_ONLY: &str = "only a local folder, relative to the template";
    if let Some(value @ Value::Mapping(_)) = fields.get("CodeUri")
        && intrinsic(value).is_none()
    {
        return Err(fields.fault(
            "CodeUri",
            Problem::NotReproduced {
                value: render(value),
                supported: LOCAL_ONLY.to_owned(),
            },
        ));
    }
    let code_uri = fields
        .text(resolver, "CodeUri")?
        .unwrap_or_else(|| ".".to_owned());
    if code_uri.starts_with("s3://") || code_uri.starts_with("https://") {
        return Err(fields.fault(
            "CodeUri",
            Problem::NotReproduced {
                value: code_uri,
                supported: LOCAL_ONLY.to_owned(),
            },
        ));
    }
    let code_dir = normalize(&template_dir.join(&code_uri));
    Ok((code_uri, code_dir))
}

/// Removes `.` and folds `..` without touching the file system, so the folder need not exist
/// yet (it may be built later) and symbolic links stay as written.
fn normalize(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !normal.pop() {
                    normal.push(component);
                }
            }
            other => normal.push(other),
        }
    }
    normal
}

/// `Architectures`: exactly one of `x86_64` and `arm64`, `x86_64` when absent.
fn architecture(fields: &Fields<'_>, resolver: &Resolver<'_>) -> Result<Architecture, Fault> {
    const ALLOWED: &str = "[x86_64] or [arm64]";
    let Some(value) = fields.get("Architectures") else {
        return Ok(Architecture::X86_64);
    };
    let Value::Sequence(items) = value else {
        return Err(fields.not_allowed("Architectures", ALLOWED));
    };
    match items.as_slice() {
        [only] => match resolver.text(only).as_deref() {
            Ok("x86_64") => Ok(Architecture::X86_64),
            Ok("arm64") => Ok(Architecture::Arm64),
            Ok(_) => Err(fields.not_allowed("Architectures", ALLOWED)),
            Err(reason) => Err(fields.unresolved("Architectures", reason.clone())),
        },
        _ => Err(fields.fault(
            "Architectures",
            Problem::NotAllowed {
                value: render(value),
                allowed: format!(
                    "{ALLOWED}: Lambda takes exactly one, and SAM appends the Globals list to the function's own"
                ),
            },
        )),
    }
}

/// `Environment.Variables`, every value resolved to text.
fn environment(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
) -> Result<BTreeMap<String, String>, Fault> {
    let environment = fields.nested("Environment")?;
    environment.check_names(&["Variables"])?;
    let variables = environment.nested("Variables")?;
    let mut resolved = BTreeMap::new();
    for (key, value) in variables.map() {
        let name = key.as_str().map_or_else(|| render(key), str::to_owned);
        if !is_variable_name(&name) {
            return Err(variables.fault(
                &name,
                Problem::Conflict {
                    value: render(value),
                    reason: "has a name Lambda refuses (a letter, then letters, digits or _)"
                        .to_owned(),
                },
            ));
        }
        if RESERVED_VARIABLES.contains(&name.as_str()) {
            return Err(variables.fault(
                &name,
                Problem::Conflict {
                    value: render(value),
                    reason: "is reserved: Lambda sets this variable itself".to_owned(),
                },
            ));
        }
        let text = resolver
            .text(value)
            .map_err(|reason| variables.unresolved(&name, reason))?;
        resolved.insert(name, text);
    }
    // The local DynamoDB that `Ref` of a template's table names a table of (see `intrinsic.rs`)
    // reaches the function the way the AWS SDK reads it, unless the function sets its own.
    if let Some(endpoint) = resolver.local_dynamodb() {
        resolved
            .entry(LOCAL_DYNAMODB_VARIABLE.to_owned())
            .or_insert_with(|| endpoint.to_owned());
    }
    Ok(resolved)
}

/// `LoggingConfig`: the format and levels Lambda applies to the function's logs
/// (`docs/function-logs.md`). Levels go with `LogFormat: JSON` only, as Lambda takes them.
fn logging_config(
    fields: &Fields<'_>,
    resolver: &Resolver<'_>,
) -> Result<esm_engine::config::LoggingConfig, Fault> {
    let logging = fields.nested("LoggingConfig")?;
    logging.check_names(&[
        "ApplicationLogLevel",
        "LogFormat",
        "LogGroup",
        "SystemLogLevel",
    ])?;
    let json = match logging.text(resolver, "LogFormat")?.as_deref() {
        None | Some("Text") => false,
        Some("JSON") => true,
        Some(_) => return Err(logging.not_allowed("LogFormat", "Text, JSON")),
    };
    let level = |name: &str, allowed: &[&str]| -> Result<Option<String>, Fault> {
        let Some(value) = logging.text(resolver, name)? else {
            return Ok(None);
        };
        if !allowed.contains(&value.as_str()) {
            return Err(logging.not_allowed(name, &allowed.join(", ")));
        }
        if !json {
            return Err(logging.fault(
                name,
                Problem::Conflict {
                    value,
                    reason: "needs LogFormat: JSON: Lambda filters by level only JSON logs"
                        .to_owned(),
                },
            ));
        }
        Ok(Some(value))
    };
    let application_log_level = level(
        "ApplicationLogLevel",
        &["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"],
    )?;
    let system_log_level = level("SystemLogLevel", &["DEBUG", "INFO", "WARN"])?;
    Ok(esm_engine::config::LoggingConfig {
        json,
        application_log_level,
        system_log_level,
    })
}

/// `Metadata.BuildMethod` and `Metadata.BuildProperties.Binary` (`bootstrap` when absent).
fn build_metadata(logical_id: &str, resource: &Mapping) -> Result<(Option<String>, String), Fault> {
    let resource_fields = Fields::new(resource, Section::Resource(logical_id.to_owned()), None);
    let metadata = resource_fields.nested("Metadata")?;
    let build_method = match metadata.get("BuildMethod") {
        None => None,
        Some(Value::String(method)) => Some(method.clone()),
        Some(_) => {
            return Err(metadata.not_allowed("BuildMethod", "a name such as rust-cargolambda"));
        }
    };
    let properties = metadata.nested("BuildProperties")?;
    let binary = match properties.get("Binary") {
        None => "bootstrap".to_owned(),
        Some(Value::String(binary)) if !binary.is_empty() => binary.clone(),
        Some(_) => return Err(properties.not_allowed("Binary", "the name of a cargo binary")),
    };
    Ok((build_method, binary))
}

fn is_function_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-'))
}

fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() >= 2
        && bytes
            .next()
            .is_some_and(|first| first.is_ascii_alphabetic())
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}
