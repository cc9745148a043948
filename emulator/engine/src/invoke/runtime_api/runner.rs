//! The Runtime API invoker: its execution environments, each a process of the function's
//! binary with its own endpoint, started, reused and discarded as Lambda does.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc, oneshot, watch};

use super::abort_on_drop::AbortOnDrop;
use super::definition::FunctionDefinition;
use super::definition::{base_environment, log_stream_name};
use super::function_failure::FunctionFailure;
use super::function_log;
use super::init_record::InitRecord;
use super::pool::{self, Placement};
use super::process::{self, ExitReport, Label, Process};
use super::server::{self, Delivery, Exchange};
use crate::invoke::error_type::LambdaError;
use crate::invoke::invoker::{
    EnvironmentInFlight, Invocation, InvokeError, InvokeOutcome, Invoker, NeverInitialised,
    SharedEnvironments,
};

/// How long an answer posted just as the process ended is still waited for: the process may
/// exit right after posting, before its post is read.
const ANSWER_GRACE: Duration = Duration::from_millis(100);

/// Runs a function's own binary under the Lambda Runtime API: an [`Invoker`].
///
/// See the [module documentation](super) for how environments are run and how each way an
/// invocation can end is reported.
pub struct RuntimeApi {
    function: FunctionDefinition,
    arn: String,
    task_root: PathBuf,
    /// The environment every process gets, but for its endpoint and log stream.
    environment: BTreeMap<String, OsString>,
    max_environments: usize,
    init_timeout: Duration,
    permits: Semaphore,
    /// How many invocations one environment runs at once: 1, or Managed Instances'
    /// `PerExecutionEnvironmentMaxConcurrency`.
    concurrency: usize,
    /// The running environments in the order they started, each with its invocations in flight.
    pool: Mutex<Vec<Slot>>,
    /// Held while an invocation finds its environment, so that invocations arriving together do
    /// not each start one where one would do.
    placing: tokio::sync::Mutex<()>,
    /// The most invocations one environment has had in flight at once.
    most_in_flight: AtomicUsize,
    /// How each process started so far ends, so that shutdown can wait for every one.
    live: Mutex<Vec<watch::Receiver<Option<Arc<ExitReport>>>>>,
    numbers: AtomicU64,
    started: AtomicU64,
    inits: InitRecord,
    line_style: process::LineStyle,
    /// Turns true at shutdown; dropping it (dropping the invoker) also stops every process.
    shutdown: watch::Sender<bool>,
}

impl fmt::Debug for RuntimeApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeApi")
            .field("function", &self.function.name)
            .field("binary", &self.function.binary)
            .field("max_environments", &self.max_environments)
            .field("concurrency", &self.concurrency)
            .field("environments_started", &self.environments_started())
            .finish_non_exhaustive()
    }
}

impl RuntimeApi {
    /// How many environments run at once unless told otherwise.
    pub const DEFAULT_MAX_ENVIRONMENTS: usize = 10;

    /// How long a process may take to ask for its first invocation, as Lambda's init phase.
    pub const DEFAULT_INIT_TIMEOUT: Duration = Duration::from_secs(10);

    /// An invoker that runs `function`. No process starts until the first invocation.
    ///
    /// The environment given to each process is read now: Lambda's variables (see
    /// [`FunctionDefinition`]), then `PATH` and the `AWS_*` credentials from the emulator's own
    /// environment, and nothing else of it.
    pub fn new(mut function: FunctionDefinition) -> Self {
        // The process runs in its binary's folder (Lambda's task root); a relative path would
        // then name another file.
        if let Ok(absolute) = std::path::absolute(&function.binary) {
            function.binary = absolute;
        }
        let task_root = function
            .binary
            .parent()
            .map_or_else(|| PathBuf::from("."), PathBuf::from);
        let environment = base_environment(&function, &task_root);
        Self {
            arn: function.arn(),
            task_root,
            environment,
            max_environments: Self::DEFAULT_MAX_ENVIRONMENTS,
            init_timeout: Self::DEFAULT_INIT_TIMEOUT,
            permits: Semaphore::new(Self::DEFAULT_MAX_ENVIRONMENTS),
            concurrency: 1,
            pool: Mutex::new(Vec::new()),
            placing: tokio::sync::Mutex::new(()),
            most_in_flight: AtomicUsize::new(0),
            live: Mutex::new(Vec::new()),
            numbers: AtomicU64::new(0),
            started: AtomicU64::new(0),
            inits: InitRecord::default(),
            line_style: process::LineStyle {
                detail: function_log::Detail::Compact,
                json: false,
                application_level: function
                    .logging
                    .application_level()
                    .and_then(function_log::Level::from_name),
            },
            shutdown: watch::Sender::new(false),
            function,
        }
    }

    /// Runs at most `limit` environments, hence invocations, at once (at least one). The event
    /// source mapping has one invocation in flight per shard and concurrent batch
    /// (`ParallelizationFactor`): `kinesis-esm run` sizes the limit to match.
    pub fn max_environments(mut self, limit: usize) -> Self {
        self.max_environments = limit.max(1);
        self.permits = Semaphore::new(self.max_environments);
        self
    }

    /// Lets each environment run up to `limit` invocations at once (at least one), as Lambda
    /// Managed Instances does with `PerExecutionEnvironmentMaxConcurrency`: its process is told
    /// the number by `AWS_LAMBDA_MAX_CONCURRENCY`, and a new environment starts only when every
    /// running one is full. Without this call an environment runs one invocation at a time and
    /// the variable is not set, as in Lambda's standard execution environment.
    pub fn per_environment_concurrency(mut self, limit: usize) -> Self {
        self.concurrency = limit.max(1);
        self.environment.insert(
            "AWS_LAMBDA_MAX_CONCURRENCY".to_owned(),
            self.concurrency.to_string().into(),
        );
        self
    }

    /// Gives a new process `limit` to ask for its first invocation; past it the invocation
    /// times out and the process is killed.
    pub fn init_timeout(mut self, limit: Duration) -> Self {
        self.init_timeout = limit;
        self
    }

    /// How the function's lines are logged: `full` with every span (the request id, the trace
    /// id, the adapter's record span) rather than compact, and `json` when the emulator's log
    /// is JSON, so that their fields stay fields of their own (`docs/function-logs.md`).
    pub fn function_logs(mut self, full: bool, json: bool) -> Self {
        self.line_style.detail = if full {
            function_log::Detail::Full
        } else {
            function_log::Detail::Compact
        };
        self.line_style.json = json;
        self
    }

    /// The function this invoker runs.
    pub fn function(&self) -> &FunctionDefinition {
        &self.function
    }

    /// How many processes of the function have been started so far (restarts included).
    pub fn environments_started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// How many invocations each running environment has in flight, by environment number.
    pub fn environments_in_flight(&self) -> Vec<(u64, usize)> {
        self.pool()
            .iter()
            .map(|slot| (slot.environment.number, slot.in_flight))
            .collect()
    }

    /// The most invocations one environment has had in flight at once so far.
    pub fn most_in_flight(&self) -> usize {
        self.most_in_flight.load(Ordering::Relaxed)
    }

    fn pool(&self) -> MutexGuard<'_, Vec<Slot>> {
        // Plain data, never locked across an await: a panic elsewhere left it whole.
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn live(&self) -> MutexGuard<'_, Vec<watch::Receiver<Option<Arc<ExitReport>>>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The environment the next invocation runs in, counted in, and whether it is new.
    async fn take_environment(
        &self,
    ) -> Result<(Arc<Environment>, bool), Result<InvokeOutcome, InvokeError>> {
        let _placing = self.placing.lock().await;
        if let Some(environment) = self.take_room() {
            return Ok((environment, false));
        }
        let environment = Arc::new(self.start_environment().await?);
        self.pool().push(Slot {
            environment: Arc::clone(&environment),
            in_flight: 1,
        });
        self.most_in_flight.fetch_max(1, Ordering::Relaxed);
        Ok((environment, true))
    }

    /// A running environment with room for one more invocation, as `pool::place` picks it.
    fn take_room(&self) -> Option<Arc<Environment>> {
        let mut pool = self.pool();
        // A process can end between invocations; its environment leaves the pool here.
        pool.retain(|slot| slot.environment.process.exited.borrow().is_none());
        let loads: Vec<usize> = pool.iter().map(|slot| slot.in_flight).collect();
        let Placement::Existing(index) = pool::place(&loads, self.concurrency) else {
            return None;
        };
        let slot = &mut pool[index];
        slot.in_flight += 1;
        self.most_in_flight
            .fetch_max(slot.in_flight, Ordering::Relaxed);
        Some(Arc::clone(&slot.environment))
    }

    /// Counts an invocation out of its environment; a discarded environment leaves the pool
    /// and its process is killed, failing every other invocation in flight in it, as on Lambda.
    fn release(&self, environment: &Arc<Environment>, fate: Fate) {
        let keep = fate == Fate::Keep && !self.permits.is_closed();
        {
            let mut pool = self.pool();
            let found = pool
                .iter()
                .position(|slot| Arc::ptr_eq(&slot.environment, environment));
            if let Some(index) = found {
                if keep {
                    pool[index].in_flight -= 1;
                } else {
                    pool.remove(index);
                }
            }
        }
        if fate == Fate::Discard {
            environment.process.kill();
        }
    }

    async fn start_environment(&self) -> Result<Environment, Result<InvokeOutcome, InvokeError>> {
        let number = self.numbers.fetch_add(1, Ordering::Relaxed) + 1;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .and_then(|listener| Ok((listener.local_addr()?, listener)));
        let (address, listener) = listener.map_err(|error| {
            Err(InvokeError::Unreachable {
                message: format!(
                    "could not open a Runtime API endpoint on 127.0.0.1 for function {}: {error}",
                    self.function.name
                ),
            })
        })?;
        let (exchange, deliveries) = Exchange::new(&self.arn, self.concurrency);
        let endpoint = AbortOnDrop(tokio::spawn(server::serve(listener, Arc::clone(&exchange))));

        let mut environment = self.environment.clone();
        environment.insert(
            "AWS_LAMBDA_RUNTIME_API".to_owned(),
            address.to_string().into(),
        );
        environment.insert(
            "AWS_LAMBDA_LOG_STREAM_NAME".to_owned(),
            log_stream_name(&self.function.version).into(),
        );
        let label = Label {
            function: self.function.name.as_str().into(),
            number,
            style: self.line_style,
        };
        let process = process::start(
            &self.function.binary,
            &self.task_root,
            environment,
            label,
            self.shutdown.subscribe(),
            endpoint,
        )
        .map_err(|error| {
            tracing::error!(
                function = %self.function.name,
                binary = %self.function.binary.display(),
                %error,
                "the function's binary could not be started"
            );
            Ok(InvokeOutcome::FunctionError {
                error_type: LambdaError::InvalidEntrypoint.into(),
                message: format!(
                    "could not start the binary {} of function {}: {error}",
                    self.function.binary.display(),
                    self.function.name
                ),
            })
        })?;
        self.started.fetch_add(1, Ordering::Relaxed);
        {
            let mut live = self.live();
            live.retain(|exited| exited.borrow().is_none());
            live.push(process.exited.clone());
        }
        tracing::info!(
            function = %self.function.name,
            environment = number,
            pid = process.pid,
            endpoint = %address,
            "started an execution environment"
        );
        Ok(Environment {
            number,
            process,
            exchange,
            deliveries,
            took_an_invocation: AtomicBool::new(false),
        })
    }

    fn shut_down(&self) -> InvokeError {
        InvokeError::Unreachable {
            message: format!("the function {} is shut down", self.function.name),
        }
    }
}

#[async_trait]
impl Invoker for RuntimeApi {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeOutcome, InvokeError> {
        let left = invocation
            .deadline
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        let budget = left.min(self.function.timeout);
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_closed| self.shut_down())?;
        let (environment, new) = match self.take_environment().await {
            Ok(taken) => taken,
            Err(ended) => return ended,
        };
        let (outcome, fate) = environment
            .run(invocation, budget, self.init_timeout, &self.function)
            .await;
        if new {
            self.inits.record(
                environment.took_an_invocation.load(Ordering::Relaxed),
                &outcome,
            );
        }
        self.release(&environment, fate);
        Ok(outcome)
    }

    async fn shutdown(&self) {
        self.permits.close();
        self.shutdown.send_replace(true);
        self.pool().clear();
        let live = std::mem::take(&mut *self.live());
        for mut exited in live {
            // An error means the process's supervisor is gone, and with it the process.
            let _ = exited.wait_for(Option::is_some).await;
        }
    }

    fn never_initialised(&self) -> Option<NeverInitialised> {
        self.inits.never_initialised()
    }

    fn shared_environments(&self) -> Option<SharedEnvironments> {
        // Set only by `per_environment_concurrency`: a standard function has nothing to add.
        self.environment
            .contains_key("AWS_LAMBDA_MAX_CONCURRENCY")
            .then(|| SharedEnvironments {
                started: self.environments_started(),
                most_in_flight: self.most_in_flight(),
                concurrency: self.concurrency,
            })
    }

    fn environments_in_flight(&self) -> Vec<EnvironmentInFlight> {
        // A standard function's environments each run one invocation: nothing to show.
        if !self.environment.contains_key("AWS_LAMBDA_MAX_CONCURRENCY") {
            return Vec::new();
        }
        RuntimeApi::environments_in_flight(self)
            .into_iter()
            .map(|(number, in_flight)| EnvironmentInFlight { number, in_flight })
            .collect()
    }
}

/// What becomes of an environment after an invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Its process is well and waits for the next invocation.
    Keep,
    /// Its process ended or must: the next invocation starts a new one.
    Discard,
}

/// A running environment and how many invocations it has in flight.
struct Slot {
    environment: Arc<Environment>,
    in_flight: usize,
}

/// One execution environment: a process and its endpoint. Dropping it kills the process, and
/// the endpoint closes once the process has ended.
struct Environment {
    number: u64,
    process: Process,
    exchange: Arc<Exchange>,
    deliveries: mpsc::Sender<Delivery>,
    /// Whether its runtime ever took an invocation: initialisation is over.
    took_an_invocation: AtomicBool,
}

impl Environment {
    async fn run(
        &self,
        invocation: Invocation,
        budget: Duration,
        init_timeout: Duration,
        function: &FunctionDefinition,
    ) -> (InvokeOutcome, Fate) {
        let request_id = invocation.request_id;
        let (reply, mut replied) = oneshot::channel();
        let (picked, taken) = oneshot::channel();
        let delivery = Delivery {
            request_id: request_id.clone(),
            payload: invocation.payload,
            budget,
            reply,
            picked,
        };
        let mut exited = self.process.exited.clone();
        let mut init_errors = self.exchange.init_errors();
        // No more invocations than the environment's concurrency are in flight, and a slot
        // empties when the runtime takes the event, so a slot is free; if none is, something is
        // off with this environment: replace it.
        if self.deliveries.try_send(delivery).is_err() {
            return (
                self.lost(&request_id, "its endpoint refused the invocation"),
                Fate::Discard,
            );
        }

        // Until the runtime takes the event: initialisation, for a new process. On Managed
        // Instances an event may wait behind others in an initialised environment: as long as
        // it may run, then, rather than the init phase's limit.
        let initialised = self.took_an_invocation.load(Ordering::Relaxed);
        let wait = if initialised {
            init_timeout.max(budget)
        } else {
            init_timeout
        };
        let picked_at = tokio::select! {
            biased;
            picked_at = taken => picked_at.ok(),
            failure = init_failure(&mut init_errors) => {
                tracing::warn!(
                    function = %function.name,
                    environment = self.number,
                    error_type = %failure.error_type,
                    message = %failure.message,
                    "the function failed to initialise"
                );
                return (failure.into_outcome(), Fate::Discard);
            }
            report = ended(&mut exited) => {
                return (self.exit_error(&request_id, report, "before it asked for an invocation", function), Fate::Discard);
            }
            () = tokio::time::sleep(wait) => {
                tracing::warn!(
                    function = %function.name,
                    environment = self.number,
                    "the function did not ask for an invocation within {:.2} seconds; its process is killed",
                    wait.as_secs_f64()
                );
                return (InvokeOutcome::Timeout, Fate::Discard);
            }
        };
        let Some(picked_at) = picked_at else {
            return (
                self.lost(&request_id, "its endpoint dropped the invocation"),
                Fate::Discard,
            );
        };
        self.took_an_invocation.store(true, Ordering::Relaxed);

        let deadline = tokio::time::Instant::from_std(picked_at) + budget;
        tokio::select! {
            biased;
            answer = &mut replied => match answer {
                Ok(outcome) => (outcome, Fate::Keep),
                Err(_) => (self.lost(&request_id, "its endpoint dropped the invocation"), Fate::Discard),
            },
            report = ended(&mut exited) => {
                if let Ok(Ok(outcome)) = tokio::time::timeout(ANSWER_GRACE, &mut replied).await {
                    return (outcome, Fate::Discard);
                }
                (self.exit_error(&request_id, report, "during the invocation", function), Fate::Discard)
            }
            () = tokio::time::sleep_until(deadline) => {
                tracing::warn!(
                    function = %function.name,
                    environment = self.number,
                    request_id,
                    "Task timed out after {:.2} seconds; the function's process is killed",
                    budget.as_secs_f64()
                );
                (InvokeOutcome::Timeout, Fate::Discard)
            }
        }
    }

    /// The outcome of an invocation whose process ended before answering.
    fn exit_error(
        &self,
        request_id: &str,
        report: Option<Arc<ExitReport>>,
        when: &str,
        function: &FunctionDefinition,
    ) -> InvokeOutcome {
        let pid = self
            .process
            .pid
            .map_or_else(|| "unknown".to_owned(), |pid| pid.to_string());
        let message = match report {
            Some(report) if report.killed => format!(
                "RequestId: {request_id} Error: Runtime exited with error: {} {when}: the emulator \
                 stopped the function (environment {}, pid {pid})",
                report.status(),
                self.number
            ),
            Some(report) => format!(
                "RequestId: {request_id} Error: Runtime exited with error: {} {when} \
                 (environment {}, pid {pid}). Its last lines of stderr:\n{}",
                report.status(),
                self.number,
                report.stderr_tail()
            ),
            None => format!(
                "RequestId: {request_id} Error: Runtime exited {when} (environment {}, pid {pid}); \
                 its exit status is unknown",
                self.number
            ),
        };
        tracing::warn!(
            function = %function.name,
            environment = self.number,
            "{message}"
        );
        InvokeOutcome::FunctionError {
            error_type: LambdaError::ExitError.into(),
            message,
        }
    }

    /// The outcome of an invocation the environment itself lost track of.
    fn lost(&self, request_id: &str, what: &str) -> InvokeOutcome {
        InvokeOutcome::FunctionError {
            error_type: LambdaError::Unknown.into(),
            message: format!(
                "RequestId: {request_id} Error: execution environment {} failed: {what}",
                self.number
            ),
        }
    }
}

/// Waits until the process has ended; `None` when its supervisor vanished without saying how.
async fn ended(exited: &mut watch::Receiver<Option<Arc<ExitReport>>>) -> Option<Arc<ExitReport>> {
    match exited.wait_for(Option::is_some).await {
        Ok(report) => report.clone(),
        Err(_) => None,
    }
}

/// Waits until the runtime reports an initialisation error; never, if it does not.
async fn init_failure(
    init_errors: &mut watch::Receiver<Option<FunctionFailure>>,
) -> FunctionFailure {
    let reported = match init_errors.wait_for(Option::is_some).await {
        Ok(failure) => failure.clone(),
        Err(_) => None,
    };
    match reported {
        Some(failure) => failure,
        None => std::future::pending().await,
    }
}
