//! The run's start: which of the template's functions run, the checks that need no build, and
//! each function's invoker with the event source mappings that feed it.

use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context as _, bail};
use esm_engine::config::MappingConfig;
use esm_engine::invoke::Invoker;
use esm_engine::invoke::invoke_api::InvokeApi;
use esm_engine::lease::LeaseStore;
use esm_engine::mapping::{
    EventSourceMapping, MappingOptions, MappingStatus, RunningMapping, stable_mapping_uuid,
};
use tokio::sync::watch;

use super::args::RunArgs;
use super::invoker::{FunctionInvoker, concurrent_batches, invoker_for, known_functions};
use super::streams::Streams;
use crate::cli::function_binary::FunctionLogs;
use crate::cli::sam_options::EnvVarsFile;
use crate::control::Control;
use crate::page::LivePage;
use crate::template::{FunctionResource, Template};

/// The functions `--function` names (all of the template's when it names none), refusing a
/// name the template does not know and a run with nothing to invoke.
pub(super) fn chosen_functions<'t>(
    args: &RunArgs,
    template: &'t Template,
) -> anyhow::Result<Vec<&'t FunctionResource>> {
    let named = |function: &FunctionResource, name: &String| {
        *name == function.logical_id || *name == function.function_name
    };
    if let Some(unknown) = args.functions.iter().find(|name| {
        !template
            .functions
            .iter()
            .any(|function| named(function, name))
    }) {
        let names = template.functions.iter().flat_map(|function| {
            [
                function.logical_id.as_str(),
                function.function_name.as_str(),
            ]
        });
        bail!(
            "--function {unknown}: {} has no function of that logical id or name with a Kinesis \
             event; it has {}{}",
            args.template.display(),
            known_functions(template),
            crate::suggest::did_you_mean_hint(unknown, names)
        );
    }
    let chosen: Vec<&FunctionResource> = template
        .functions
        .iter()
        .filter(|function| {
            args.functions.is_empty() || args.functions.iter().any(|name| named(function, name))
        })
        .collect();
    if chosen.is_empty() {
        let among = if args.functions.is_empty() {
            ""
        } else {
            " among those named by --function"
        };
        bail!(
            "{}: no function with a Kinesis event{among}",
            args.template.display()
        );
    }
    Ok(chosen)
}

/// Refuses, before any function is built, a mapping whose stream the embedded Kinesis will not
/// hold: it holds only the template's streams.
pub(super) fn check_streams(
    args: &RunArgs,
    template: &Template,
    functions: &[&FunctionResource],
) -> anyhow::Result<()> {
    if !args.reads_embedded_kinesis() {
        return Ok(());
    }
    for function in functions {
        let enabled = function.mappings.iter().filter(|config| config.enabled);
        if let Some(config) = enabled
            .into_iter()
            .find(|config| template.stream(&config.stream_name).is_none())
        {
            bail!(
                "{}: resource {}: stream {} is not defined in the template; the embedded Kinesis \
                 only holds the template's streams",
                args.template.display(),
                function.logical_id,
                config.stream_name
            );
        }
    }
    Ok(())
}

/// The mappings' statuses as they change, each with its function's invoker (which knows the
/// environments of a function on Managed Instances), for the status document, the metrics and
/// the progress lines.
pub(super) type Statuses = Arc<Mutex<Vec<(watch::Receiver<MappingStatus>, Arc<dyn Invoker>)>>>;

/// What starting the functions needs of the run.
pub(super) struct Start<'r> {
    pub(super) args: &'r RunArgs,
    pub(super) template: &'r Template,
    pub(super) streams: &'r Streams,
    pub(super) env_vars: Option<&'r EnvVarsFile>,
    pub(super) logs: FunctionLogs,
    /// `AWS_ENDPOINT_URL_KINESIS` for the functions run here.
    pub(super) function_kinesis: Option<&'r str>,
    pub(super) leases: Arc<dyn LeaseStore>,
    pub(super) options: MappingOptions,
    pub(super) page: &'r LivePage,
    pub(super) control: &'r Control,
    pub(super) statuses: &'r Statuses,
}

/// The functions' invokers and mappings, running.
#[derive(Default)]
pub(super) struct Started {
    /// Each function's invoker, with the function's logical id.
    pub(super) invokers: Vec<(String, Arc<dyn Invoker>)>,
    /// The Invoke API invokers apart: the run watches them for a function the target lacks.
    pub(super) invoke_apis: Vec<Arc<InvokeApi>>,
    pub(super) mappings: Vec<RunningMapping>,
}

impl Start<'_> {
    /// Starts each function's invoker (building its binary when the run invokes it itself), then
    /// its enabled mappings.
    pub(super) async fn functions(
        &self,
        functions: Vec<&FunctionResource>,
    ) -> anyhow::Result<Started> {
        let mut started = Started::default();
        for function in functions {
            let invoker: Arc<dyn Invoker> = match self.invoker(function).await? {
                FunctionInvoker::RuntimeApi(invoker) => invoker,
                FunctionInvoker::InvokeApi(invoker) => {
                    started.invoke_apis.push(Arc::clone(&invoker));
                    invoker
                }
            };
            started
                .invokers
                .push((function.logical_id.clone(), Arc::clone(&invoker)));
            for config in &function.mappings {
                if !config.enabled {
                    tracing::info!(function = %function.function_name, stream = %config.stream_name, "mapping disabled (Enabled: false)");
                    continue;
                }
                let mapping = self.mapping(function, config, &invoker).await?;
                started.mappings.push(mapping);
            }
        }
        Ok(started)
    }

    async fn invoker(&self, function: &FunctionResource) -> anyhow::Result<FunctionInvoker> {
        let environments = concurrent_batches(function, self.template);
        invoker_for(
            self.args,
            function,
            self.env_vars,
            environments,
            self.logs,
            self.function_kinesis,
        )
        .await
        .with_context(|| self.resource(function))
    }

    /// Starts one mapping, shown on the page, steered by the control API and counted in the
    /// status document.
    async fn mapping(
        &self,
        function: &FunctionResource,
        config: &MappingConfig,
        invoker: &Arc<dyn Invoker>,
    ) -> anyhow::Result<RunningMapping> {
        let source = self
            .streams
            .mapping_source(config, &self.streams.source())
            .await
            .with_context(|| {
                format!("{}: stream {}", self.resource(function), config.stream_name)
            })?;
        let mut mapping = EventSourceMapping::new(config.clone(), source, Arc::clone(invoker))
            .lease_store(Arc::clone(&self.leases))
            .options(MappingOptions {
                mapping_uuid: stable_mapping_uuid(&config.function_name, &config.stream_name),
                ..self.options.clone()
            });
        let destination = crate::cli::destinations::destination_for(
            config,
            self.args.destination_endpoint.as_deref(),
            &self.args.region,
            self.args.state_dir.as_deref(),
        );
        if let Some(destination) = destination.await? {
            mapping = mapping.on_failure_destination(destination);
        }
        let mapping = mapping.start();
        self.page
            .show_function(config, mapping.status_receiver(), Arc::clone(invoker));
        self.control.add(mapping.control());
        self.statuses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((mapping.status_receiver(), Arc::clone(invoker)));
        Ok(mapping)
    }

    fn resource(&self, function: &FunctionResource) -> String {
        format!(
            "{}: resource {}",
            self.args.template.display(),
            function.logical_id
        )
    }
}
