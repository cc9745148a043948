//! The function as the emulator runs it, and the environment Lambda gives its process.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Variables passed from the emulator's environment to the function's, before its own
/// configuration: the function may set them itself. Nothing else of the host's environment
/// passes (`RUST_LOG`, `RUST_BACKTRACE` included): the template or `--function-env` sets them
/// (`docs/function-logs.md`).
const PASSED_THROUGH: [&str; 1] = ["PATH"];

/// Credentials passed from the emulator's environment. On Lambda they come from the execution
/// role and are reserved: the function's configuration cannot set them.
const CREDENTIALS: [&str; 3] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
];

/// The SDKs' standard variable for Kinesis' endpoint (AWS SDKs and Tools Reference Guide,
/// "Service-specific endpoints").
const KINESIS_ENDPOINT_VARIABLE: &str = "AWS_ENDPOINT_URL_KINESIS";

/// Variables Lambda sets and a function's configuration cannot.
const RESERVED: [&str; 18] = [
    "_HANDLER",
    "_X_AMZN_TRACE_ID",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_EXECUTION_ENV",
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "AWS_LAMBDA_FUNCTION_VERSION",
    "AWS_LAMBDA_INITIALIZATION_TYPE",
    "AWS_LAMBDA_LOG_GROUP_NAME",
    "AWS_LAMBDA_LOG_STREAM_NAME",
    "AWS_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_LAMBDA_RUNTIME_API",
    "LAMBDA_TASK_ROOT",
    "LAMBDA_RUNTIME_DIR",
];

/// A function as the emulator runs it: its binary and the configuration Lambda would give it.
///
/// Build it with [`FunctionDefinition::new`] and set the fields the template gives.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FunctionDefinition {
    /// The function's name (`FunctionName`; `AWS_LAMBDA_FUNCTION_NAME`).
    pub name: String,
    /// The binary to run: for Rust, the `bootstrap` built with `lambda_runtime`.
    pub binary: PathBuf,
    /// The handler setting (`Handler`; `_HANDLER`). Default `bootstrap`.
    pub handler: String,
    /// The runtime identifier (`Runtime`). Default `provided.al2023`. Lambda sets
    /// `AWS_EXECUTION_ENV` to `AWS_Lambda_<runtime>`, except for the OS-only `provided` family,
    /// and so does the emulator.
    pub runtime: String,
    /// The memory size in MB (`MemorySize`; `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`). Default 128.
    pub memory_size_mb: u32,
    /// The longest an invocation may run (`Timeout`). Default 3 seconds.
    pub timeout: Duration,
    /// The version invoked (`AWS_LAMBDA_FUNCTION_VERSION`). Default `$LATEST`.
    pub version: String,
    /// The region (`AWS_REGION`, `AWS_DEFAULT_REGION`, and the ARN). Default `us-east-1`.
    pub region: String,
    /// The account id in the function's ARN. Default `123456789012`.
    pub account_id: String,
    /// The template's `Environment.Variables`. Names Lambda reserves are ignored, with a
    /// warning, as Lambda refuses them.
    pub environment: BTreeMap<String, String>,
    /// The template's `LoggingConfig`: with JSON, the function is told the format and level in
    /// `AWS_LAMBDA_LOG_FORMAT` and `AWS_LAMBDA_LOG_LEVEL`, and its lines are filtered by the
    /// level, as Lambda does.
    pub logging: crate::config::LoggingConfig,
    /// The Kinesis the function's SDK clients should reach, given as `AWS_ENDPOINT_URL_KINESIS`
    /// (the SDKs' standard variable for a service's endpoint), as a local Lambda would point it:
    /// the Kinesis the emulator reads. When it is set and the emulator's environment has no
    /// credentials, the function gets placeholder ones (`local`), which local servers accept.
    /// The template's or `--function-env`'s own `AWS_ENDPOINT_URL_KINESIS` wins. Default none.
    pub kinesis_endpoint: Option<String>,
}

impl FunctionDefinition {
    /// The function `name` run from `binary`, with Lambda's defaults for everything else.
    pub fn new(name: impl Into<String>, binary: impl Into<PathBuf>) -> Self {
        Self {
            name: name.into(),
            binary: binary.into(),
            handler: "bootstrap".to_owned(),
            runtime: "provided.al2023".to_owned(),
            memory_size_mb: 128,
            timeout: Duration::from_secs(3),
            version: "$LATEST".to_owned(),
            region: "us-east-1".to_owned(),
            account_id: "123456789012".to_owned(),
            environment: BTreeMap::new(),
            logging: crate::config::LoggingConfig::default(),
            kinesis_endpoint: None,
        }
    }

    /// The function's ARN, as invocations name it (`Lambda-Runtime-Invoked-Function-Arn`).
    pub fn arn(&self) -> String {
        format!(
            "arn:aws:lambda:{}:{}:function:{}",
            self.region, self.account_id, self.name
        )
    }
}
/// The environment every process of `function` gets, but for `AWS_LAMBDA_RUNTIME_API` and
/// `AWS_LAMBDA_LOG_STREAM_NAME`, which are its own.
pub(super) fn base_environment(
    function: &FunctionDefinition,
    task_root: &std::path::Path,
) -> BTreeMap<String, OsString> {
    let mut environment = BTreeMap::new();
    let mut set = |name: &str, value: OsString| {
        environment.insert(name.to_owned(), value);
    };
    // Lambda's defaults that a function's configuration may change.
    set("LANG", "en_US.UTF-8".into());
    set("TZ", ":UTC".into());
    for name in PASSED_THROUGH {
        if let Some(value) = std::env::var_os(name) {
            set(name, value);
        }
    }
    if let Some(endpoint) = &function.kinesis_endpoint {
        set(KINESIS_ENDPOINT_VARIABLE, endpoint.into());
    }
    for (name, value) in &function.environment {
        if RESERVED.contains(&name.as_str()) {
            tracing::warn!(
                function = %function.name,
                variable = %name,
                "the function's environment sets a variable Lambda reserves; Lambda refuses it \
                 and the emulator ignores it"
            );
        } else {
            set(name, value.into());
        }
    }
    // Lambda names the log format and level to a runtime under `LogFormat: JSON`.
    if function.logging.json {
        set("AWS_LAMBDA_LOG_FORMAT", "JSON".into());
        if let Some(level) = function.logging.application_level() {
            set("AWS_LAMBDA_LOG_LEVEL", level.into());
        }
    }
    // Lambda's reserved variables.
    let has_credentials = std::env::var_os("AWS_ACCESS_KEY_ID").is_some();
    for name in CREDENTIALS {
        if let Some(value) = std::env::var_os(name) {
            set(name, value);
        }
    }
    if function.kinesis_endpoint.is_some() && !has_credentials {
        // On Lambda the execution role's credentials are always there; a local server takes any.
        set("AWS_ACCESS_KEY_ID", "local".into());
        set("AWS_SECRET_ACCESS_KEY", "local".into());
    }
    set("AWS_LAMBDA_FUNCTION_NAME", function.name.as_str().into());
    set(
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
        function.memory_size_mb.to_string().into(),
    );
    set(
        "AWS_LAMBDA_FUNCTION_VERSION",
        function.version.as_str().into(),
    );
    set("AWS_REGION", function.region.as_str().into());
    set("AWS_DEFAULT_REGION", function.region.as_str().into());
    set(
        "AWS_LAMBDA_LOG_GROUP_NAME",
        format!("/aws/lambda/{}", function.name).into(),
    );
    set("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand".into());
    set("_HANDLER", function.handler.as_str().into());
    set("LAMBDA_TASK_ROOT", task_root.as_os_str().to_owned());
    if !function.runtime.starts_with("provided") {
        set(
            "AWS_EXECUTION_ENV",
            format!("AWS_Lambda_{}", function.runtime).into(),
        );
    }
    environment
}

/// A log stream name as Lambda gives each environment: `2026/01/31/[$LATEST]` and 32 hex
/// digits.
pub(super) fn log_stream_name(version: &str) -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() / 86_400);
    let (year, month, day) = kinesis_source::time::civil_date(days as i64);
    format!(
        "{year:04}/{month:02}/{day:02}/[{version}]{:032x}",
        fastrand::u128(..)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_stream_names_have_lambdas_shape() {
        let name = log_stream_name("$LATEST");
        let (date, rest) = name.split_at(10);
        assert_eq!(date.matches('/').count(), 2, "{name}");
        let id = rest
            .strip_prefix("/[$LATEST]")
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(id.len(), 32, "{name}");
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
    }

    #[test]
    fn the_environment_is_lambdas_and_reserved_names_win() {
        let mut function = FunctionDefinition::new("ship", "/functions/ship/bootstrap");
        function.memory_size_mb = 256;
        function.region = "eu-west-1".to_owned();
        function
            .environment
            .insert("TABLE".to_owned(), "orders".to_owned());
        function
            .environment
            .insert("AWS_REGION".to_owned(), "us-west-2".to_owned());
        function
            .environment
            .insert("TZ".to_owned(), "Europe/Paris".to_owned());
        let environment = base_environment(&function, std::path::Path::new("/functions/ship"));
        let get = |name: &str| environment.get(name).and_then(|value| value.to_str());
        assert_eq!(get("AWS_LAMBDA_FUNCTION_NAME"), Some("ship"));
        assert_eq!(get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), Some("256"));
        assert_eq!(get("AWS_LAMBDA_FUNCTION_VERSION"), Some("$LATEST"));
        assert_eq!(get("AWS_REGION"), Some("eu-west-1"));
        assert_eq!(get("AWS_DEFAULT_REGION"), Some("eu-west-1"));
        assert_eq!(get("AWS_LAMBDA_LOG_GROUP_NAME"), Some("/aws/lambda/ship"));
        assert_eq!(get("AWS_LAMBDA_INITIALIZATION_TYPE"), Some("on-demand"));
        assert_eq!(get("_HANDLER"), Some("bootstrap"));
        assert_eq!(get("LAMBDA_TASK_ROOT"), Some("/functions/ship"));
        assert_eq!(get("TABLE"), Some("orders"));
        assert_eq!(get("TZ"), Some("Europe/Paris"));
        assert_eq!(get("LANG"), Some("en_US.UTF-8"));
        assert_eq!(
            get("AWS_EXECUTION_ENV"),
            None,
            "not set for provided runtimes"
        );

        function.runtime = "nodejs22.x".to_owned();
        let environment = base_environment(&function, std::path::Path::new("/functions/ship"));
        assert_eq!(
            environment
                .get("AWS_EXECUTION_ENV")
                .and_then(|value| value.to_str()),
            Some("AWS_Lambda_nodejs22.x")
        );
    }

    #[test]
    fn the_function_is_pointed_at_the_kinesis_the_emulator_reads_unless_it_says_otherwise() {
        let mut function = FunctionDefinition::new("ship", "/functions/ship/bootstrap");
        let root = std::path::Path::new("/functions/ship");
        let endpoint = |function: &FunctionDefinition| {
            base_environment(function, root)
                .get(KINESIS_ENDPOINT_VARIABLE)
                .and_then(|value| value.to_str().map(str::to_owned))
        };
        assert_eq!(endpoint(&function), None);

        function.kinesis_endpoint = Some("http://127.0.0.1:4566".to_owned());
        assert_eq!(
            endpoint(&function).as_deref(),
            Some("http://127.0.0.1:4566")
        );
        // Credentials are there: the host's, or placeholders a local server takes.
        let environment = base_environment(&function, root);
        assert!(environment.contains_key("AWS_ACCESS_KEY_ID"));
        assert!(environment.contains_key("AWS_SECRET_ACCESS_KEY"));

        function.environment.insert(
            KINESIS_ENDPOINT_VARIABLE.to_owned(),
            "http://localhost:4567".to_owned(),
        );
        assert_eq!(
            endpoint(&function).as_deref(),
            Some("http://localhost:4567")
        );
    }

    #[test]
    fn a_json_logging_config_names_its_format_and_level_to_the_function() {
        let mut function = FunctionDefinition::new("ship", "/functions/ship/bootstrap");
        let root = std::path::Path::new("/functions/ship");
        let get = |environment: &BTreeMap<String, OsString>, name: &str| {
            environment
                .get(name)
                .and_then(|value| value.to_str())
                .map(str::to_owned)
        };
        let text = base_environment(&function, root);
        assert_eq!(get(&text, "AWS_LAMBDA_LOG_FORMAT"), None);
        assert_eq!(get(&text, "AWS_LAMBDA_LOG_LEVEL"), None);

        function.logging.json = true;
        let json = base_environment(&function, root);
        assert_eq!(get(&json, "AWS_LAMBDA_LOG_FORMAT").as_deref(), Some("JSON"));
        assert_eq!(get(&json, "AWS_LAMBDA_LOG_LEVEL").as_deref(), Some("INFO"));

        function.logging.application_log_level = Some("WARN".to_owned());
        let warn = base_environment(&function, root);
        assert_eq!(get(&warn, "AWS_LAMBDA_LOG_LEVEL").as_deref(), Some("WARN"));
    }

    #[test]
    fn only_path_and_credentials_pass_from_the_host() {
        let function = FunctionDefinition::new("ship", "/functions/ship/bootstrap");
        let environment = base_environment(&function, std::path::Path::new("/functions/ship"));
        let from_host: Vec<&str> = environment
            .keys()
            .map(String::as_str)
            .filter(|name| {
                !name.starts_with("AWS_LAMBDA_")
                    && !RESERVED.contains(name)
                    && !["LANG", "TZ"].contains(name)
            })
            .collect();
        assert!(
            from_host.iter().all(|name| PASSED_THROUGH.contains(name)),
            "{from_host:?}"
        );
    }
}
