//! The Runtime API invoker with real processes: the shipping function's own `bootstrap`, and a
//! fixture that misbehaves on request (`tests/functions/misbehaving`).
//!
//! Run with `cargo test --workspace --test integration runtime_api`; set `RUST_LOG=info` to see the
//! functions' logs. Each test builds the binaries it needs with `build_function` (once per run).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kinesis_esm::function::build_function;
use kinesis_esm::invoke::runtime_api::{FunctionDefinition, RuntimeApi};
use kinesis_esm::invoke::{
    InProcess, Invocation, InvokeError, InvokeOutcome, Invoker as _, NeverInitialised,
};
use lambda_kinesis::testing::TestEvent;
use serde_json::Value;
use shipping::Shipment;

/// The functions' `Timeout` in these tests: short, so that a hang costs little.
const FUNCTION_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a test waits for something that has no signal to await (a process to disappear).
const PATIENCE: Duration = Duration::from_secs(10);

fn init_logs() {
    crate::support::init_logging();
}

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Builds a binary once per test run, off the async runtime's thread.
async fn built(cell: &'static OnceLock<PathBuf>, crate_dir: PathBuf) -> &'static Path {
    tokio::task::spawn_blocking(move || {
        cell.get_or_init(|| {
            build_function(&crate_dir, "bootstrap", false).unwrap_or_else(|error| panic!("{error}"))
        })
        .as_path()
    })
    .await
    .expect("the build does not panic")
}

async fn shipping_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    built(&BINARY, manifest_dir().join("../functions/shipping")).await
}

async fn misbehaving_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    built(&BINARY, manifest_dir().join("tests/functions/misbehaving")).await
}

fn definition(name: &str, binary: &Path) -> FunctionDefinition {
    let mut function = FunctionDefinition::new(name, binary);
    function.timeout = FUNCTION_TIMEOUT;
    function.region = "eu-west-1".to_owned();
    function
}

async fn shipping() -> RuntimeApi {
    init_logs();
    RuntimeApi::new(definition("shipping", shipping_binary().await))
}

async fn misbehaving() -> RuntimeApi {
    init_logs();
    RuntimeApi::new(definition("misbehaving", misbehaving_binary().await))
}

/// The misbehaving function, told how to initialise.
async fn misbehaving_at_init(behaviour: &str) -> RuntimeApi {
    init_logs();
    let mut function = definition("misbehaving", misbehaving_binary().await);
    function
        .environment
        .insert("MISBEHAVING_INIT".to_owned(), behaviour.to_owned());
    RuntimeApi::new(function)
}

async fn invoke(api: &RuntimeApi, payload: impl Into<Bytes>) -> InvokeOutcome {
    api.invoke(Invocation::new(payload, FUNCTION_TIMEOUT))
        .await
        .expect("the function is reachable")
}

async fn act(api: &RuntimeApi, act: &str) -> InvokeOutcome {
    invoke(api, format!(r#"{{"act":"{act}"}}"#)).await
}

/// What the misbehaving function saw in an `echo` invocation.
async fn echo(api: &RuntimeApi) -> Value {
    json_response(act(api, "echo").await)
}

#[track_caller]
fn json_response(outcome: InvokeOutcome) -> Value {
    match outcome {
        InvokeOutcome::Response(body) => serde_json::from_slice(&body)
            .unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(&body))),
        other => panic!("expected a response, got {other:?}"),
    }
}

#[track_caller]
fn check_function_error(outcome: &InvokeOutcome, expected_type: &str, message_holds: &[&str]) {
    let InvokeOutcome::FunctionError {
        error_type,
        message,
    } = outcome
    else {
        panic!("expected a function error, got {outcome:?}");
    };
    assert_eq!(error_type, expected_type, "{message}");
    for part in message_holds {
        assert!(message.contains(part), "{part:?} is not in {message:?}");
    }
}

#[track_caller]
fn pid(echoed: &Value) -> u64 {
    echoed["pid"].as_u64().expect("the echo holds a pid")
}

fn process_exists(pid: u64) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn shipment(id: u64, address: &str, carrier: &str) -> Shipment {
    Shipment {
        id,
        address: address.to_owned(),
        carrier: carrier.to_owned(),
    }
}

fn item_identifiers(response: &Value) -> Vec<&str> {
    response["batchItemFailures"]
        .as_array()
        .expect("a partial batch response")
        .iter()
        .map(|failure| failure["itemIdentifier"].as_str().expect("an identifier"))
        .collect()
}

// The shipping function, as it ships.

#[tokio::test]
async fn the_shipping_function_names_its_held_shipment_and_reports_its_drop() {
    let api = shipping().await;
    let event = TestEvent::new()
        .json(&shipment(1, "1 Main St", "dhl"))
        .json(&shipment(2, "", "ups"))
        .json(&shipment(3, "3 Side St", "pigeon"))
        .json(&shipment(4, "4 High St", "ups"));

    let response = json_response(invoke(&api, event.to_json()).await);

    assert_eq!(item_identifiers(&response), [event.sequence_number(2)]);
    let dropped: Vec<&str> = lambda_kinesis::wire::dropped_sequence_numbers(&response).collect();
    assert_eq!(dropped, [event.sequence_number(1)]);
    api.shutdown().await;
}

#[tokio::test]
async fn the_runtime_api_answers_byte_for_byte_as_the_function_in_process() {
    let api = shipping().await;
    let in_process = InProcess::service(shipping::function());
    let event = TestEvent::new()
        .json(&shipment(1, "1 Main St", "dhl"))
        .json(&shipment(2, "", "ups"))
        .json(&shipment(3, "3 Side St", "pigeon"))
        .to_json();

    let through_the_runtime_api = invoke(&api, event.clone()).await;
    let expected = in_process
        .invoke(Invocation::new(event, FUNCTION_TIMEOUT))
        .await
        .expect("in process");

    assert_eq!(through_the_runtime_api, expected);
    api.shutdown().await;
}

#[tokio::test]
async fn the_function_reads_its_deadline_from_the_runtime_api() {
    let api = shipping().await;
    let event = TestEvent::new()
        .json(&shipment(1, "1 Main St", "dhl"))
        .json(&shipment(2, "2 Main St", "ups"));

    // With time to spare every shipment is booked.
    let relaxed = json_response(invoke(&api, event.to_json()).await);
    assert_eq!(item_identifiers(&relaxed), Vec::<&str>::new());

    // Within the adapter's 500 ms margin of the deadline no record is started, and the
    // response names the first: the function saw the deadline the Runtime API gave it.
    let hurried = api
        .invoke(Invocation::new(event.to_json(), Duration::from_millis(450)))
        .await
        .expect("the function is reachable");
    assert_eq!(
        item_identifiers(&json_response(hurried)),
        [event.sequence_number(0)]
    );
    assert_eq!(api.environments_started(), 1);
    api.shutdown().await;
}

#[tokio::test]
async fn concurrent_invocations_run_in_separate_environments_which_are_then_reused() {
    let api = shipping().await;
    let events: Vec<TestEvent> = (0..4)
        .map(|id| {
            TestEvent::new()
                .shard(format!("shardId-{id:012}"))
                .json(&shipment(id, "1 Main St", "dhl"))
                .json(&shipment(id + 100, "1 Main St", "pigeon"))
        })
        .collect();

    let outcomes =
        futures_util::future::join_all(events.iter().map(|event| invoke(&api, event.to_json())))
            .await;
    assert_eq!(api.environments_started(), 4);
    for (event, outcome) in events.iter().zip(outcomes) {
        assert_eq!(
            item_identifiers(&json_response(outcome)),
            [event.sequence_number(1)]
        );
    }

    for event in &events {
        let outcome = invoke(&api, event.to_json()).await;
        assert_eq!(
            item_identifiers(&json_response(outcome)),
            [event.sequence_number(1)]
        );
    }
    assert_eq!(
        api.environments_started(),
        4,
        "idle environments are reused"
    );
    api.shutdown().await;
}

#[tokio::test]
async fn invocations_beyond_the_limit_wait_for_an_environment() {
    let api = shipping().await.max_environments(1);
    let event = TestEvent::new().json(&shipment(1, "1 Main St", "pigeon"));

    let outcomes =
        futures_util::future::join_all((0..3).map(|_| invoke(&api, event.to_json()))).await;

    for outcome in outcomes {
        assert_eq!(
            item_identifiers(&json_response(outcome)),
            [event.sequence_number(0)]
        );
    }
    assert_eq!(api.environments_started(), 1);
    api.shutdown().await;
}

// What the function is given.

#[tokio::test]
async fn the_function_gets_lambdas_environment_and_nothing_else_of_the_emulators() {
    let api = misbehaving().await;
    let invocation = Invocation::new(r#"{"act":"echo"}"#, FUNCTION_TIMEOUT);
    let request_id = invocation.request_id.clone();
    let earliest_deadline = invocation.deadline_millis();

    let echoed = json_response(api.invoke(invocation).await.expect("reachable"));

    let latest_deadline = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64
        + FUNCTION_TIMEOUT.as_millis() as u64;
    let deadline: u64 = echoed["deadline_ms"]
        .as_str()
        .and_then(|deadline| deadline.parse().ok())
        .expect("a deadline header");
    // The time a new process takes to start is not the function's: the deadline may only move
    // later than the invocation's own.
    assert!(
        (earliest_deadline..=latest_deadline).contains(&deadline),
        "{deadline} is not in {earliest_deadline}..={latest_deadline}"
    );
    assert_eq!(echoed["request_id"], request_id.as_str());
    assert_eq!(
        echoed["function_arn"],
        "arn:aws:lambda:eu-west-1:123456789012:function:misbehaving"
    );
    assert!(
        echoed["trace_id"]
            .as_str()
            .is_some_and(|trace| trace.starts_with("Root=1-") && trace.ends_with(";Sampled=0")),
        "{}",
        echoed["trace_id"]
    );
    assert_eq!(echoed["content_type"], "application/json");

    let environment = echoed["env"].as_object().expect("the environment");
    let binary = api.function().binary.clone();
    let task_root = binary.parent().expect("a folder").to_str().expect("UTF-8");
    for (name, expected) in [
        ("AWS_LAMBDA_FUNCTION_NAME", "misbehaving"),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
        ("AWS_REGION", "eu-west-1"),
        ("AWS_DEFAULT_REGION", "eu-west-1"),
        ("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/misbehaving"),
        ("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand"),
        ("_HANDLER", "bootstrap"),
        ("LAMBDA_TASK_ROOT", task_root),
        ("TZ", ":UTC"),
        ("LANG", "en_US.UTF-8"),
    ] {
        assert_eq!(
            environment.get(name),
            Some(&Value::from(expected)),
            "{name}"
        );
    }
    let endpoint = environment["AWS_LAMBDA_RUNTIME_API"].as_str().expect("set");
    assert!(endpoint.starts_with("127.0.0.1:"), "{endpoint}");
    let log_stream = environment["AWS_LAMBDA_LOG_STREAM_NAME"]
        .as_str()
        .expect("set");
    assert!(log_stream.contains("/[$LATEST]"), "{log_stream}");

    // Exactly these names, and of the emulator's own environment only what is passed through.
    let mut expected_names: Vec<String> = [
        "AWS_LAMBDA_FUNCTION_NAME",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
        "AWS_LAMBDA_FUNCTION_VERSION",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_LAMBDA_LOG_GROUP_NAME",
        "AWS_LAMBDA_LOG_STREAM_NAME",
        "AWS_LAMBDA_INITIALIZATION_TYPE",
        "AWS_LAMBDA_RUNTIME_API",
        "_HANDLER",
        "LAMBDA_TASK_ROOT",
        "TZ",
        "LANG",
    ]
    .map(str::to_owned)
    .into();
    // `RUST_LOG` and `RUST_BACKTRACE` of the host do not pass (`docs/function-logs.md`).
    for passed in [
        "PATH",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    ] {
        if std::env::var_os(passed).is_some() {
            expected_names.push(passed.to_owned());
        }
    }
    expected_names.sort();
    let names: Vec<String> = environment.keys().cloned().collect();
    assert_eq!(names, expected_names);
    api.shutdown().await;
}

#[tokio::test]
async fn the_templates_variables_reach_the_function() {
    init_logs();
    let mut function = definition("misbehaving", misbehaving_binary().await);
    function
        .environment
        .insert("TABLE_NAME".to_owned(), "shipments".to_owned());
    function.memory_size_mb = 1024;
    let api = RuntimeApi::new(function);

    let echoed = echo(&api).await;

    assert_eq!(echoed["env"]["TABLE_NAME"], "shipments");
    assert_eq!(echoed["env"]["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"], "1024");
    api.shutdown().await;
}

// How each way of misbehaving ends.

#[tokio::test]
async fn a_response_that_is_not_json_is_passed_on_byte_for_byte() {
    let api = misbehaving().await;

    let outcome = act(&api, "garbage").await;

    assert_eq!(
        outcome,
        InvokeOutcome::Response(Bytes::from_static(b"\xff\xfe\x00garbage{]\x80"))
    );
    api.shutdown().await;
}

#[tokio::test]
async fn an_error_post_is_a_function_error_and_the_environment_is_kept() {
    let api = misbehaving().await;
    let before = echo(&api).await;

    let outcome = act(&api, "error").await;

    check_function_error(&outcome, "Misbehaving.Failed", &["failed, as asked"]);
    let after = echo(&api).await;
    assert_eq!(pid(&after), pid(&before));
    assert_eq!(after["invocations"], 3);
    assert_eq!(api.environments_started(), 1);
    api.shutdown().await;
}

#[tokio::test]
async fn a_panic_is_an_exit_error_and_the_next_invocation_gets_a_fresh_process() {
    let api = misbehaving().await;
    let before = echo(&api).await;

    let outcome = act(&api, "panic").await;

    check_function_error(
        &outcome,
        "Runtime.ExitError",
        &[
            "Runtime exited with error: exit status 101 during the invocation",
            "misbehaving: panicking mid-invocation, as asked",
        ],
    );
    let after = echo(&api).await;
    assert_ne!(pid(&after), pid(&before));
    assert_eq!(after["invocations"], 1);
    assert_eq!(api.environments_started(), 2);
    api.shutdown().await;
}

#[tokio::test]
async fn an_abort_is_an_exit_error_that_names_the_signal() {
    let api = misbehaving().await;

    let outcome = act(&api, "abort").await;

    check_function_error(
        &outcome,
        "Runtime.ExitError",
        &[
            "signal 6 (SIGABRT)",
            "misbehaving: aborting mid-invocation, as asked",
        ],
    );
    assert_eq!(echo(&api).await["invocations"], 1);
    api.shutdown().await;
}

#[tokio::test]
async fn a_function_that_hangs_times_out_and_its_process_is_replaced() {
    init_logs();
    let mut function = definition("misbehaving", misbehaving_binary().await);
    function.timeout = Duration::from_secs(1);
    let api = RuntimeApi::new(function);
    let before = echo(&api).await;

    let outcome = act(&api, "hang").await;

    assert_eq!(outcome, InvokeOutcome::Timeout);
    let after = echo(&api).await;
    assert_ne!(pid(&after), pid(&before));
    assert_eq!(api.environments_started(), 2);
    api.shutdown().await;
}

#[tokio::test]
async fn a_function_that_exits_at_once_is_an_exit_error_each_time() {
    let api = misbehaving_at_init("exit").await;

    for attempt in 1..=2 {
        let outcome = act(&api, "echo").await;
        check_function_error(
            &outcome,
            "Runtime.ExitError",
            &[
                "exit status 3 before it asked for an invocation",
                "misbehaving: exiting at once, as asked",
            ],
        );
        assert_eq!(api.environments_started(), attempt);
    }
    api.shutdown().await;
}

#[tokio::test]
async fn an_init_error_is_the_invocations_function_error() {
    let api = misbehaving_at_init("init-error").await;

    let outcome = act(&api, "echo").await;

    assert_eq!(
        outcome,
        InvokeOutcome::FunctionError {
            error_type: kinesis_esm::invoke::ErrorType::new("Misbehaving.InitFailed"),
            message: "could not initialise, as asked".to_owned(),
        }
    );
    assert_eq!(
        api.never_initialised(),
        Some(NeverInitialised {
            environments: 1,
            last_failure: "Misbehaving.InitFailed: could not initialise, as asked".to_owned(),
        })
    );
    api.shutdown().await;
}

#[tokio::test]
async fn a_response_over_6_mb_is_a_function_error_and_the_runtime_gets_a_413() {
    let api = misbehaving().await;

    let outcome = act(&api, "oversize").await;

    check_function_error(
        &outcome,
        "Function.ResponseSizeTooLarge",
        &["Response payload size exceeded maximum allowed payload size (6291556 bytes)."],
    );
    let after = echo(&api).await;
    assert_eq!(after["earlier_statuses"], serde_json::json!([413]));
    assert_eq!(after["invocations"], 2, "the environment is kept");
    assert_eq!(
        api.never_initialised(),
        None,
        "its environment took invocations"
    );
    api.shutdown().await;
}

#[tokio::test]
async fn posts_for_another_request_id_or_a_second_answer_are_refused() {
    let api = misbehaving().await;

    let answer = json_response(act(&api, "stray").await);

    assert_eq!(
        answer,
        serde_json::json!({ "stray_response": 400, "stray_error": 400 })
    );
    let after = echo(&api).await;
    assert_eq!(
        after["earlier_statuses"],
        serde_json::json!([403]),
        "a second answer is an invalid state transition"
    );
    api.shutdown().await;
}

#[tokio::test]
async fn bytes_that_are_not_http_get_a_400_and_the_emulator_carries_on() {
    let api = misbehaving().await;

    let outcome = act(&api, "garbage-http").await;

    check_function_error(
        &outcome,
        "Runtime.ExitError",
        &["exit status 2", "answered garbage with: HTTP/1.1 400"],
    );
    assert_eq!(echo(&api).await["invocations"], 1);
    api.shutdown().await;
}

#[tokio::test]
async fn a_binary_that_does_not_exist_is_a_function_error_naming_it() {
    init_logs();
    let missing = manifest_dir().join("tests/functions/no-such-function/bootstrap");
    let api = RuntimeApi::new(definition("missing", &missing));

    let outcome = invoke(&api, "{}").await;

    check_function_error(
        &outcome,
        "Runtime.InvalidEntrypoint",
        &[
            missing.to_str().expect("UTF-8"),
            "could not start the binary",
        ],
    );
    assert_eq!(api.environments_started(), 0);
    api.shutdown().await;
}

// Stopping.

#[tokio::test]
async fn shutdown_stops_every_process_and_refuses_invocations() {
    let api = misbehaving().await;
    let (first, second) = tokio::join!(echo(&api), echo(&api));
    assert_ne!(pid(&first), pid(&second));
    assert!(process_exists(pid(&first)) && process_exists(pid(&second)));

    api.shutdown().await;

    assert!(!process_exists(pid(&first)), "{first}");
    assert!(!process_exists(pid(&second)), "{second}");
    let refused = api
        .invoke(Invocation::new(r#"{"act":"echo"}"#, FUNCTION_TIMEOUT))
        .await;
    assert!(
        matches!(refused, Err(InvokeError::Unreachable { .. })),
        "{refused:?}"
    );
}

/// Shutting down an environment whose runtime waits in `next` must not answer that poll with
/// something `lambda_runtime` cannot read (it panicked on an answer without a request id): the
/// process is stopped as Lambda stops it. The race is narrow, so many short runs are made, on a
/// multi-threaded runtime as `run` uses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutting_down_many_short_runs_never_makes_the_function_panic() {
    const RUNS: usize = 40;
    const NAME: &str = "shipping-stopped-often";
    init_logs();
    let binary = shipping_binary().await;
    for _ in 0..RUNS {
        let api = RuntimeApi::new(definition(NAME, binary));
        let event = TestEvent::new().json(&shipment(1, "1 Main St", "dhl"));
        let response = json_response(invoke(&api, event.to_json()).await);
        assert!(item_identifiers(&response).is_empty(), "{response}");
        api.shutdown().await;
    }

    let log = crate::support::runtime_api_log(NAME);
    let started = log
        .iter()
        .filter(|event| event.message == "started an execution environment")
        .count();
    assert_eq!(started, RUNS, "one environment per run: {log:#?}");
    let panics: Vec<&str> = log
        .iter()
        .map(|event| event.message.as_str())
        .filter(|line| line.contains("panicked") || line.contains("request-id header"))
        .collect();
    assert!(
        panics.is_empty(),
        "the function panicked at shutdown:\n{}",
        panics.join("\n")
    );
}

#[tokio::test]
async fn dropping_the_invoker_stops_its_processes() {
    let api = misbehaving().await;
    let pid = pid(&echo(&api).await);
    assert!(process_exists(pid));

    drop(api);

    // Nothing tells when a dropped invoker's process is gone: look until it is.
    let gone = async {
        while process_exists(pid) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(PATIENCE, gone)
        .await
        .unwrap_or_else(|_| panic!("process {pid} outlived its invoker"));
}

// Building.

#[tokio::test]
async fn a_failed_build_names_the_crate_the_binary_and_what_cargo_said() {
    let crate_dir = manifest_dir().join("tests/functions/misbehaving");
    let asked_for = crate_dir.clone();

    let built =
        tokio::task::spawn_blocking(move || build_function(&asked_for, "no-such-binary", false))
            .await
            .expect("the build does not panic");

    let error = built.expect_err("there is no such binary").to_string();
    for part in [
        crate_dir.to_str().expect("UTF-8"),
        "building binary `no-such-binary`",
        "no bin target named `no-such-binary`",
    ] {
        assert!(error.contains(part), "{part:?} is not in {error}");
    }
}
