//! How the run invokes each function: its binary under the Runtime API, or an Invoke API.

use std::sync::Arc;

use super::args::{InvokeName, RunArgs};
use crate::cli::function_binary::{BinaryOptions, FunctionLogs, runtime_api_invoker};
use crate::cli::sam_options::EnvVarsFile;
use crate::template::{FunctionResource, Template};
use esm_engine::invoke::invoke_api::{InvokeApi, InvokeApiOptions};
use esm_engine::invoke::runtime_api::RuntimeApi;

/// The template's functions, for a message: `Logical (Name), ...`, or "none".
pub(super) fn known_functions(template: &Template) -> String {
    let names: Vec<String> = template
        .functions
        .iter()
        .map(|function| {
            if function.function_name == function.logical_id {
                function.logical_id.clone()
            } else {
                format!("{} ({})", function.logical_id, function.function_name)
            }
        })
        .collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// Waits until one of the Invoke API invokers is told its function does not exist.
pub(super) async fn missing_function(invokers: &[Arc<InvokeApi>]) -> String {
    if invokers.is_empty() {
        return std::future::pending().await;
    }
    let waits = invokers
        .iter()
        .map(|invoker| Box::pin(invoker.missing_function()));
    futures_util::future::select_all(waits).await.0
}

/// A function's invoker, by kind: the run watches Invoke API invokers for a missing function.
pub(super) enum FunctionInvoker {
    RuntimeApi(Arc<RuntimeApi>),
    InvokeApi(Arc<InvokeApi>),
}

/// How many batches of `function` its mappings may have in flight at once: one per shard and
/// concurrent batch (`ParallelizationFactor`), as Lambda runs an execution environment for each
/// (a stream outside the template counts as one shard).
pub(super) fn concurrent_batches(function: &FunctionResource, template: &Template) -> usize {
    function
        .mappings
        .iter()
        .filter(|config| config.enabled)
        .map(|config| {
            let shards = template
                .stream(&config.stream_name)
                .map_or(1, |stream| stream.shard_count as usize);
            shards * config.parallelization_factor
        })
        .sum()
}

/// How the run invokes `function`: its own binary through the Runtime API (with up to
/// `environments` execution environments, and never fewer than the Runtime API's default), or
/// an Invoke API.
pub(super) async fn invoker_for(
    args: &RunArgs,
    function: &FunctionResource,
    env_vars: Option<&EnvVarsFile>,
    environments: usize,
    logs: FunctionLogs,
    kinesis_endpoint: Option<&str>,
) -> anyhow::Result<FunctionInvoker> {
    let invoke_name = match args.invoke_name {
        InvokeName::FunctionName => &function.function_name,
        InvokeName::LogicalId => &function.logical_id,
        InvokeName::Binary => &function.binary,
    };
    if let Some(endpoint) = &args.invoke_endpoint {
        // Only `cargo lambda watch` knows functions by their binary.
        let invoker = InvokeApi::new(endpoint, invoke_name, InvokeApiOptions::default())?
            .fallback_function_name(&function.binary);
        return Ok(FunctionInvoker::InvokeApi(Arc::new(invoker)));
    }
    if args.invoke_lambda {
        let invoker =
            InvokeApi::aws_from_environment(invoke_name, InvokeApiOptions::default()).await?;
        return Ok(FunctionInvoker::InvokeApi(Arc::new(invoker)));
    }
    let options = BinaryOptions {
        prebuilt_dir: args.prebuilt_dir.as_deref(),
        release: args.release,
        region: &args.region,
        account_id: &args.account_id,
        function_env: &args.function_env,
        kinesis_endpoint,
    };
    let invoker = runtime_api_invoker(function, &options, env_vars, environments, logs)?;
    Ok(FunctionInvoker::RuntimeApi(Arc::new(invoker)))
}
