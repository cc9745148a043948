//! A template's function run from its own binary under the Runtime API, as `run` invokes it and
//! as `failures replay` invokes it again: built with cargo (or taken from `--prebuilt-dir`), with
//! the template's environment, `--env-vars` and `--function-env` over it.

use std::io::IsTerminal as _;
use std::path::Path;

use anyhow::bail;

use super::sam_options::EnvVarsFile;
use crate::function::build_function_saying;
use crate::template::FunctionResource;
use esm_engine::invoke::runtime_api::{FunctionDefinition, RuntimeApi};

/// How the functions' own lines are written (`docs/function-logs.md`).
#[derive(Debug, Clone, Copy)]
pub(super) struct FunctionLogs {
    /// Whole, with the request id and every span (`--verbose`), rather than compact.
    pub(super) full: bool,
    /// The emulator's log is JSON.
    pub(super) json: bool,
    /// `--quiet`: the summary alone.
    pub(super) quiet: bool,
}

/// Where the binary comes from and what the function's environment stands in for.
pub(super) struct BinaryOptions<'a> {
    /// Takes the binary from this folder instead of building it.
    pub(super) prebuilt_dir: Option<&'a Path>,
    /// Builds with `--release`.
    pub(super) release: bool,
    /// `AWS_REGION` and the function's ARN.
    pub(super) region: &'a str,
    /// The function's ARN.
    pub(super) account_id: &'a str,
    /// `--function-env`, over everything else.
    pub(super) function_env: &'a [(String, String)],
    /// The Kinesis the function is pointed at (`AWS_ENDPOINT_URL_KINESIS`).
    pub(super) kinesis_endpoint: Option<&'a str>,
}

/// The Runtime API invoker of `function`'s binary, with up to `environments` execution
/// environments (never fewer than the Runtime API's default).
pub(super) fn runtime_api_invoker(
    function: &FunctionResource,
    options: &BinaryOptions<'_>,
    env_vars: Option<&EnvVarsFile>,
    environments: usize,
    logs: FunctionLogs,
) -> anyhow::Result<RuntimeApi> {
    if options.prebuilt_dir.is_none() && !function.code_dir.is_dir() {
        bail!(
            "CodeUri {} is not a folder: {} does not exist",
            function.code_uri,
            function.code_dir.display()
        );
    }
    tracing::info!(function = %function.function_name, crate_dir = %function.code_dir.display(), "building");
    let binary = match options.prebuilt_dir {
        Some(dir) => {
            let binary = dir.join(&function.binary);
            if !binary.is_file() {
                bail!(
                    "--prebuilt-dir {}: no binary {} for function {} in it",
                    dir.display(),
                    function.binary,
                    function.function_name
                );
            }
            binary
        }
        None => {
            // A terminal shows the run's own progress; elsewhere (CI, a pipe) the build says
            // itself, or a first build is a minute of silence. `--quiet` keeps the summary alone.
            let saying = !logs.quiet && !std::io::stderr().is_terminal();
            let name = saying.then_some(function.function_name.as_str());
            build_function_saying(&function.code_dir, &function.binary, options.release, name)?
        }
    };
    let mut definition = FunctionDefinition::new(&function.function_name, binary);
    definition.handler.clone_from(&function.handler);
    definition.runtime.clone_from(&function.runtime);
    definition.memory_size_mb = function.memory_size;
    definition.timeout = function.timeout;
    options.region.clone_into(&mut definition.region);
    options.account_id.clone_into(&mut definition.account_id);
    definition.environment.clone_from(&function.environment);
    definition.kinesis_endpoint = options.kinesis_endpoint.map(str::to_owned);
    if let Some(env_vars) = env_vars {
        let given = env_vars.for_function(
            &function.logical_id,
            &function.function_name,
            function.environment.keys(),
        );
        if !given.undeclared.is_empty() {
            tracing::warn!(
                function = %function.logical_id,
                variables = %given.undeclared.join(", "),
                "--env-vars {}: not passed to the function: its Environment.Variables does not \
                 declare them (SAM passes only declared variables too)",
                env_vars.path().display()
            );
        }
        definition.environment.extend(given.values);
    }
    definition
        .environment
        .extend(options.function_env.iter().cloned());
    definition.logging.clone_from(&function.logging);
    let api = RuntimeApi::new(definition)
        .max_environments(environments.max(RuntimeApi::DEFAULT_MAX_ENVIRONMENTS))
        .function_logs(logs.full, logs.json);
    // On Managed Instances an environment runs several batches at once; `max_environments`
    // still bounds the invocations in flight, which the mapping's concurrent batches set.
    Ok(match &function.managed_instances {
        Some(managed) => api.per_environment_concurrency(managed.max_concurrency as usize),
        None => api,
    })
}
