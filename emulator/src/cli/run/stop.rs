//! The run's end: waiting for what ends it (idle with `--until-idle`, a signal, a function the
//! invoke target lacks), then stopping the mappings, the progress lines, the functions and the
//! endpoint in that order, with the summary and the exit code.

use std::io::Write as _;

use anyhow::bail;
use embedded_kinesis::http::ServerHandle;
use esm_engine::invoke::NeverInitialised;
use esm_engine::mapping::{MappingStatus, RunningMapping};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::invoker::missing_function;
use super::signals::StopSignals;
use super::start::Started;
use crate::cli::exit::Exit;
use crate::control::{Control, Phase as ControlPhase};
use crate::summary;

/// What the run stops once it ends.
pub(super) struct Running {
    pub(super) started: Started,
    pub(super) server: Option<ServerHandle>,
    /// The progress lines' task and the switch that ends them.
    pub(super) progress: Option<(JoinHandle<()>, watch::Sender<bool>)>,
    /// Where the checkpoints it resumed from are kept, when it resumed.
    pub(super) resumed_from: Option<String>,
}

/// Why the run ended, when nothing stopped it on purpose.
enum End {
    Idle,
    Signal(&'static str),
    /// The invoke target does not know a function: its message.
    Misconfigured(String),
}

impl Running {
    /// Runs until the end comes, stops everything and says how it went.
    pub(super) async fn until_stopped(
        self,
        until_idle: bool,
        fail_on_discard: bool,
        control: &Control,
        mut stop_signals: StopSignals,
    ) -> anyhow::Result<Exit> {
        let end = self.end(until_idle, &mut stop_signals).await;
        if let End::Signal(signal) = end {
            say!(
                "kinesis-esm: {signal}: stopping after the batches in flight (send it again to stop at once)"
            );
        }
        control.set_phase(ControlPhase::Stopping);
        let resumed_from = self.resumed_from.clone();
        let (finals, never_initialised, environments) = tokio::select! {
            ended = self.stop() => ended,
            signal = stop_signals.next() => {
                // Returning drops the mappings and invokers: the runtime's end kills the function
                // processes (they are killed on drop), and no checkpoint is written past this point.
                say!("kinesis-esm: {signal} again: stopping at once, without the batches in flight");
                return Ok(Exit::Interrupted);
            }
        };
        if let End::Misconfigured(message) = end {
            bail!(
                "{message}\n  the invoke target does not know the function by that name: pass \
                 --invoke-name binary for cargo lambda watch (it names functions by their binary), \
                 --invoke-name logical-id for sam local start-lambda, --invoke-name function-name \
                 for Lambda"
            );
        }
        for status in &finals {
            let _ = write!(std::io::stdout(), "{}", summary::render(status));
        }
        for line in &environments {
            let _ = writeln!(std::io::stdout(), "{line}");
        }
        for (function, failures) in &never_initialised {
            let _ = writeln!(
                std::io::stdout(),
                "{}",
                summary::never_initialised_line(function, failures)
            );
        }
        if let Some(store) = &resumed_from {
            let _ = writeln!(std::io::stdout(), "{}", summary::resumed_note(store));
        }
        let never = !never_initialised.is_empty();
        Ok(Exit::of_run(&finals, fail_on_discard, never))
    }

    async fn end(&self, until_idle: bool, stop_signals: &mut StopSignals) -> End {
        let idle = async {
            if until_idle {
                wait_until_idle(&self.started.mappings).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = idle => End::Idle,
            signal = stop_signals.next() => End::Signal(signal),
            message = missing_function(&self.started.invoke_apis) => End::Misconfigured(message),
        }
    }

    /// Stops the mappings (each lands its checkpoints), then the progress lines, the functions
    /// and the endpoint. The mappings' final statuses and the functions that never initialised
    /// are the summary's.
    async fn stop(
        self,
    ) -> (
        Vec<MappingStatus>,
        Vec<(String, NeverInitialised)>,
        Vec<String>,
    ) {
        let mut finals: Vec<MappingStatus> = Vec::new();
        for mapping in self.started.mappings {
            finals.push(mapping.stop().await);
        }
        if let Some((progress, stop_progress)) = self.progress {
            stop_progress.send_replace(true);
            let _ = progress.await;
        }
        let mut never_initialised = Vec::new();
        let mut environments = Vec::new();
        for (function, invoker) in &self.started.invokers {
            invoker.shutdown().await;
            if let Some(used) = invoker.shared_environments() {
                environments.push(summary::shared_environments_line(function, &used));
            }
            if let Some(failures) = invoker.never_initialised() {
                never_initialised.push((function.clone(), failures));
            }
        }
        if let Some(server) = self.server {
            server.stop().await;
        }
        (finals, never_initialised, environments)
    }
}

async fn wait_until_idle(mappings: &[RunningMapping]) {
    for mapping in mappings {
        mapping.wait_until_idle().await;
    }
}
