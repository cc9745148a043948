//! The `kinesis-esm` command run as a process, as a user runs it: `kinesis-esm run --template T
//! --put RECORDS --until-idle`. Exit codes: 0 every record settled, 1 a shard held, 2 an error.
//!
//! Bad input must stop the run with a message that says where the fault is; a function that
//! crashes or answers garbage must be retried without losing a record.

use std::path::Path;
use std::time::Duration;

use end_to_end::cargo_lambda::{FIRST_INVOCATION_TIMEOUT, Watch};
use end_to_end::run::{
    KinesisEsm, MAIN_COMMAND_SETTLED, RUN_TIMEOUT, Run, Running, assert_says_all,
    check_each_booked_once, check_row, cli_template, kinesis_esm_with, main_command, main_events,
    main_template, read_every_shard, records, run_large_shipments, sdk_client, temp_file,
};
use end_to_end::{canned_answer_bootstrap, shipping_bootstrap, workspace_dir};
use kinesis_esm::invoke::invoke_api::{InvokeApi, InvokeApiOptions};
use kinesis_esm::invoke::{Invocation, InvokeOutcome, Invoker as _};
use lambda_kinesis::testing::TestEvent;

/// Runs a template that kinesis-esm must refuse, and checks that it ends with exit code 2, no
/// summary, and a message holding every one of `fragments`.
async fn check_refused(template: &str, fragments: &[&str]) {
    let run = kinesis_esm_with(&cli_template(template), &records(), &[]).await;
    assert_eq!(run.code, Some(2), "{template}: {run:#?}");
    assert_eq!(run.stdout, "", "{template}: no summary");
    assert_says_all(&run.stderr, fragments);
}

#[tokio::test]
async fn invalid_yaml_is_reported_with_its_file_line_and_column() {
    check_refused(
        "broken-yaml.yaml",
        &["templates/cli/broken-yaml.yaml:7:6: invalid YAML"],
    )
    .await;
}

#[tokio::test]
async fn an_unknown_or_unsupported_property_is_reported_with_its_resource() {
    check_refused(
        "unknown-property.yaml",
        &[
            "templates/cli/unknown-property.yaml: resource ShippingFunction, event \
             ShipmentsStream: property BatchSizes is not a property kinesis-esm knows here",
        ],
    )
    .await;
    check_refused(
        "unsupported-property.yaml",
        &[
            "templates/cli/unsupported-property.yaml: resource ShippingFunction, event \
             ShipmentsStream: property TumblingWindowInSeconds = 60 with ParallelizationFactor 2 is not reproduced by kinesis-esm",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_function_that_does_not_compile_is_reported_with_its_crate() {
    check_refused(
        "does-not-compile.yaml",
        &[
            "templates/cli/does-not-compile.yaml: resource BrokenFunction: building binary \
             `bootstrap` of the crate in ",
            "tests/fixtures/functions/does-not-compile failed",
            "could not compile `does-not-compile`",
            "expected `u32`, found `&str`",
        ],
    )
    .await;
}

/// A function whose every invocation fails is held on the shard's first record: nothing is
/// acked or discarded, the checkpoint does not move, and the run ends held (exit code 1).
#[track_caller]
fn check_held_with_nothing_lost(run: &Run, reason: &str) {
    check_row(
        run,
        &[
            ("state", "held"),
            ("acked", "0"),
            ("dropped", "0"),
            ("discarded", "0"),
            ("held", "6"),
            ("checkpoint", "TRIM_HORIZON"),
        ],
    );
    let invocations: u64 = run.shard_rows()[0]["invocations"]
        .parse()
        .expect("a number of invocations");
    assert!(invocations >= 2, "retried at least once: {}", run.stdout);
    // The summary says why.
    assert_says_all(&run.stdout, &[reason]);
}

#[tokio::test]
async fn a_function_that_exits_at_once_is_retried_and_loses_nothing() {
    canned_answer_bootstrap().await;
    let run = kinesis_esm_with(&cli_template("exits-at-once.yaml"), &records(), &[]).await;
    assert_eq!(
        run.code,
        Some(4),
        "a function that never initialised: {run:#?}"
    );
    check_held_with_nothing_lost(&run, "Runtime.ExitError");
    assert!(run.stdout.contains("exit status 3"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("CrashingFunction never initialised: all ")
            && run.stdout.contains("the last failure: Runtime.ExitError"),
        "the summary names the function that never initialised:\n{}",
        run.stdout
    );
}

#[tokio::test]
async fn a_function_that_answers_garbage_is_retried_and_loses_nothing() {
    canned_answer_bootstrap().await;
    let run = kinesis_esm_with(&cli_template("answers-garbage.yaml"), &records(), &[]).await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    check_held_with_nothing_lost(&run, "bad response: the response is not JSON");
}

/// The README's main command: the repository's `template.yaml` over the sample events in
/// `functions/shipping/events/` (12 records: 6 settle in the first invocation, 5 booked and 1
/// without an address; the 7th names a carrier the function does not know). The held shipment's
/// batch (it and the 5 records behind it) is retried 5 times (`MaximumRetryAttempts: 5`), then
/// discarded to the on-failure destination as Lambda does, and the run ends settled. The 6
/// redeliveries of those 6 records make 48 deliveries of 12 records; the first delivery of the
/// held record's batch after the partial response starts its retries afresh, so 5 retries.
#[tokio::test]
async fn the_main_command_runs_the_shipping_service() {
    let run = main_command(&[]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    check_row(&run, MAIN_COMMAND_SETTLED);
    check_row(&run, &[("invocations", "7"), ("splits", "0")]);
    run.check_checkpoint_written(
        "the checkpoint is the last shipment's sequence number, shortened",
    );
    assert!(
        run.stdout.contains(
            "6 records in 1 batch discarded and sent to the on-failure destination Queue"
        ),
        "{}",
        run.stdout
    );
    // With no destination endpoint, the record is a file under .kinesis-esm/destinations/, in
    // the SQS body's shape, named in the summary.
    let file = *run
        .destination_files()
        .first()
        .unwrap_or_else(|| panic!("the summary names the record's file: {}", run.stdout));
    assert!(
        file.starts_with(".kinesis-esm/destinations/shardId-000000000000/"),
        "{file}"
    );
    let path = workspace_dir().join(file);
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the record's file"))
            .expect("the file is the record as JSON");
    assert_eq!(record["KinesisBatchInfo"]["batchSize"], 6, "{record}");
    assert_eq!(
        record["requestContext"]["condition"], "RetryAttemptsExhausted",
        "{record}"
    );
    assert!(
        record.get("payload").is_none(),
        "an SQS record has no payload: {record}"
    );
    // `kinesis-esm failures` lists it.
    let listed = KinesisEsm::new(["failures"]).output().await.stdout;
    assert!(
        listed.lines().any(
            |line| line.starts_with(file) && line.contains("6 records  RetryAttemptsExhausted")
        ),
        "{listed}"
    );
    std::fs::remove_file(path).expect("cleaned");
}

/// `--put` with a 10 MiB records file: the records are published in as many `PutRecords`
/// requests as Kinesis' limits need (500 records, 5 MiB), and every one is delivered and booked.
#[tokio::test]
async fn run_put_publishes_a_file_larger_than_one_request() {
    // 100 shipments of about 104 KiB: over 10 MiB.
    let run = run_large_shipments("large-run-put", 100, &[]).await;
    check_each_booked_once(&run, 100);
}

/// `cargo lambda watch` as the invoke target (`--invoke-endpoint`): the emulator drives the
/// shipping function through the Invoke API, and every shard ends exactly as it does when the
/// emulator runs the function's binary through the Runtime API.
#[tokio::test]
async fn cargo_lambda_watch_as_the_invoke_target_settles_as_the_runtime_api_does() {
    shipping_bootstrap().await;
    let watch = Watch::start().await;
    // `cargo lambda watch` builds the function when it is first invoked: build it before the run,
    // whose invocations must meet the function's Timeout.
    let warm_up = InvokeApi::new(&watch.endpoint, "bootstrap", InvokeApiOptions::default())
        .unwrap()
        .invoke(Invocation::new(
            TestEvent::new().to_json(),
            FIRST_INVOCATION_TIMEOUT,
        ))
        .await;
    assert!(
        matches!(warm_up, Ok(InvokeOutcome::Response(_))),
        "{warm_up:?}:\n{}",
        watch.log()
    );
    let template = workspace_dir().join("template.yaml");
    let events = workspace_dir().join("functions/shipping/events");

    let through_watch = kinesis_esm_with(
        &template,
        &events,
        &[
            "--invoke-endpoint",
            &watch.endpoint,
            "--invoke-name",
            "binary",
        ],
    )
    .await;
    let through_runtime_api = kinesis_esm_with(&template, &events, &[]).await;
    watch.stop().await;

    assert_eq!(through_watch.code, Some(0), "{through_watch:#?}");
    assert_eq!(
        through_runtime_api.code,
        Some(0),
        "{through_runtime_api:#?}"
    );
    // Sequence numbers differ from run to run; every count, state and checkpoint position must not.
    let without_checkpoint = |run: &Run| {
        run.shard_rows()
            .into_iter()
            .map(|mut row| {
                let checkpoint = row.remove("checkpoint").unwrap_or_default();
                (row, checkpoint.len())
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        without_checkpoint(&through_watch),
        without_checkpoint(&through_runtime_api),
        "{through_watch:#?}\n{through_runtime_api:#?}"
    );
    assert!(!through_watch.shard_rows().is_empty(), "{through_watch:#?}");
}

// Stopping: Ctrl-C and SIGTERM.

/// SIGTERM (what `docker stop`, `timeout` and CI runners send) stops `run` as Ctrl-C does: the
/// batch in flight finishes, its checkpoint is written and the summary printed.
#[tokio::test]
async fn sigterm_lets_the_batch_in_flight_finish_and_prints_the_summary() {
    canned_answer_bootstrap().await;
    let mut run = Running::start_with(&cli_template("slow-answer.yaml"), &records(), &[]).await;
    run.wait_for_line("canned-answer: invocation taken").await;

    run.send_sigterm();

    let run = run.ended_within(RUN_TIMEOUT).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stderr
            .contains("kinesis-esm: SIGTERM: stopping after the batches in flight"),
        "{run:#?}"
    );
    check_row(
        &run,
        &[
            ("acked", "6"),
            ("held", "0"),
            ("invocations", "1"),
            ("retries", "0"),
        ],
    );
    run.check_checkpoint_written("the batch's checkpoint was written");
}

/// A second SIGTERM stops at once (exit 130) without waiting for the invocation in flight, and
/// leaves no function process behind.
#[tokio::test]
async fn a_second_sigterm_stops_at_once_and_leaves_no_function_process() {
    canned_answer_bootstrap().await;
    let mut run = Running::start_with(&cli_template("hanging-answer.yaml"), &records(), &[]).await;
    let taken = run.wait_for_line("canned-answer: invocation taken").await;
    let function_pid: u32 = taken
        .split_once("(pid ")
        .and_then(|(_, rest)| rest.split_once(')'))
        .and_then(|(pid, _)| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {taken:?}"));

    run.send_sigterm();
    run.wait_for_line("stopping after the batches in flight")
        .await;
    run.send_sigterm();

    // The function answers only after a minute: a run that waited for it would time out here.
    let run = run.ended_within(Duration::from_secs(20)).await;
    assert_eq!(run.code, Some(130), "{run:#?}");
    assert!(
        run.stderr
            .contains("SIGTERM again: stopping at once, without the batches in flight"),
        "{run:#?}"
    );
    assert_eq!(run.stdout, "", "no summary after an immediate stop");
    let gone = async {
        while Path::new(&format!("/proc/{function_pid}")).exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .unwrap_or_else(|_| panic!("the function's process {function_pid} outlived the run"));
}

#[tokio::test]
async fn run_help_lists_the_exit_codes_and_how_to_stop() {
    let run = KinesisEsm::new(["run", "--help"]).output().await;
    let help = run.stdout;
    assert_eq!(run.code, Some(0), "{help}");
    for line in [
        "Ctrl-C or SIGTERM stops gracefully",
        "0    every record read was settled",
        "1    a shard is blocked on a held record",
        "2    an error",
        "4    a function never initialised",
        "130  a second Ctrl-C or SIGTERM",
    ] {
        assert_says_all(&help, &[line]);
    }
}

// Invoke targets.

/// A stand-in for an Invoke API that has no function at all: it answers every request as Lambda
/// answers for a function that does not exist.
async fn invoke_api_without_functions() -> String {
    let body = r#"{"Type":"User","message":"Function not found: arn:aws:lambda:us-east-1:123456789012:function:ShippingFunction"}"#;
    end_to_end::run::canned_http_server(
        "404 Not Found",
        &[
            ("x-amzn-errortype", "ResourceNotFoundException"),
            ("content-type", "application/json"),
        ],
        body,
    )
    .await
}

/// An invoke target that has no such function is a configuration error: `run` stops with exit
/// 2 and says which `--invoke-name` to pass, instead of retrying for ever.
#[tokio::test]
async fn an_invoke_target_without_the_function_stops_the_run_with_exit_2() {
    let endpoint = invoke_api_without_functions().await;
    let run = kinesis_esm_with(
        &main_template(),
        &main_events(),
        &["--invoke-endpoint", &endpoint],
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert_eq!(run.stdout, "", "no summary: {run:#?}");
    assert_says_all(
        &run.stderr,
        &[
            "HTTP 404 Not Found [ResourceNotFoundException]: Function not found",
            "pass --invoke-name binary for cargo lambda watch",
        ],
    );
}

// The default port.

/// With no `--listen`, a taken 127.0.0.1:4566 (LocalStack's port) stops the run with exit 2,
/// naming the process that holds it and how to choose another address, instead of running on
/// while `put` and `status` would talk to that other process.
#[tokio::test]
async fn a_taken_default_port_stops_the_run_and_names_its_owner() {
    // Hold the port, unless something else already does: either way it is taken.
    let held = std::net::TcpListener::bind("127.0.0.1:4566").ok();
    // No --listen: the run takes the default port.
    let run = KinesisEsm::new([
        "run".into(),
        "--template".into(),
        main_template().into_os_string(),
    ])
    .args(["--invoke-endpoint", "http://127.0.0.1:9", "--until-idle"])
    .log("warn")
    .output()
    .await;
    let stderr = run.stderr;
    assert_eq!(run.code, Some(2), "{stderr}");
    assert_says_all(
        &stderr,
        &[
            "cannot serve the Kinesis API on 127.0.0.1:4566",
            "listens on port 4566",
            "pass --listen 127.0.0.1:PORT (127.0.0.1:0 for any free port), or --no-listen",
        ],
    );
    assert_eq!(
        stderr.matches("os error").count(),
        1,
        "the OS error once:\n{stderr}"
    );
    if held.is_some() {
        let owner = format!("(pid {}) listens on port 4566", std::process::id());
        assert_says_all(&stderr, &[&owner]);
    }
}

// SAM's habits: --env-vars, options before or after the command.

/// Runs `answers-garbage.yaml` with `--env-vars` of a file `name` holding `text` (removed after
/// the run); returns how the run ended and the file's path as passed.
async fn run_with_env_vars(name: &str, text: &str) -> (Run, String) {
    let env_vars = temp_file(name, text);
    let env_vars_arg = env_vars.to_string_lossy().into_owned();
    let run = kinesis_esm_with(
        &cli_template("answers-garbage.yaml"),
        &records(),
        &["--env-vars", &env_vars_arg],
    )
    .await;
    let _ = std::fs::remove_file(&env_vars);
    (run, env_vars_arg)
}

/// `--env-vars` in SAM's shape: the function's own object wins over the template's value (the
/// canned answer becomes `exit`, so the function now exits at start), and a variable the
/// template does not declare, or a key that names no function, is said and not used.
#[tokio::test]
async fn env_vars_override_the_templates_declared_variables_as_sam_does() {
    canned_answer_bootstrap().await;
    let (run, _) = run_with_env_vars(
        "env-vars.json",
        r#"{"Parameters": {"ANSWER": "garbage", "UNDECLARED": "1"},
            "GarbageFunction": {"ANSWER": "exit"},
            "NoSuchFunction": {"ANSWER": "{}"}}"#,
    )
    .await;
    check_held_with_nothing_lost(&run, "Runtime.ExitError");
    assert!(run.stdout.contains("exit status 3"), "{}", run.stdout);
    assert_says_all(
        &run.stderr,
        &[
            "NoSuchFunction names no function of the template with a Kinesis event, and is not \
             used; the template has GarbageFunction",
            "not passed to the function: its Environment.Variables does not declare them",
            "UNDECLARED",
        ],
    );
}

/// A malformed `--env-vars` file stops the run before anything starts, naming the file, line
/// and column.
#[tokio::test]
async fn a_malformed_env_vars_file_is_refused_with_its_position() {
    let (run, env_vars_arg) = run_with_env_vars(
        "broken-env-vars.json",
        "{\n  \"GarbageFunction\": {\"A\": 1,}\n}",
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert_eq!(run.stdout, "", "no summary: {run:#?}");
    let expected =
        format!("kinesis-esm: --env-vars {env_vars_arg}:2:30: invalid JSON: trailing comma");
    assert_says_all(&run.stderr, &[&expected]);
}

/// The shared options (`--template`, `--region`, `--state-dir`, `--listen`, ...) are read before
/// the command's name as after it, and a command that has no use for one refuses it.
#[tokio::test]
async fn shared_options_go_before_or_after_the_command() {
    let template = cli_template("broken-yaml.yaml");
    let template = template.to_string_lossy();
    let invalid_yaml = "templates/cli/broken-yaml.yaml:7:6: invalid YAML";
    for (args, expected) in [
        (
            vec![
                "--template",
                &template,
                "--listen",
                "127.0.0.1:0",
                "run",
                "--until-idle",
            ],
            invalid_yaml,
        ),
        (
            vec![
                "run",
                "--until-idle",
                "--template",
                &template,
                "--listen",
                "127.0.0.1:0",
            ],
            invalid_yaml,
        ),
        (
            vec![
                "--region",
                "eu-west-1",
                "run",
                "--template",
                &template,
                "--no-listen",
            ],
            invalid_yaml,
        ),
        (
            vec!["--template", "t.yaml", "put", "--stream", "s", "x"],
            "kinesis-esm: --template is not an option of `kinesis-esm put` (only of run and serve)",
        ),
        (
            vec!["status", "--state-dir", "d"],
            "kinesis-esm: --state-dir is not an option of `kinesis-esm status` (only of run and serve)",
        ),
        (
            vec!["serve", "--no-listen"],
            "kinesis-esm: --no-listen is not an option of `kinesis-esm serve` (only of run)",
        ),
    ] {
        let Run { code, stderr, .. } = KinesisEsm::new(&args).log("warn").output().await;
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{args:?}: {expected:?} is not in:\n{stderr}"
        );
    }
}

// A plain local Kinesis: `kinesis-esm serve`.

/// Every record's data on every shard of `stream`, sorted.
async fn read_every_record(client: &aws_sdk_kinesis::Client, stream: &str) -> Vec<String> {
    let mut data: Vec<String> = read_every_shard(client, stream)
        .await
        .iter()
        .map(|record| String::from_utf8_lossy(record.data().as_ref()).into_owned())
        .collect();
    data.sort();
    data
}

/// `kinesis-esm serve` with no function: a template's streams and `--stream`s, served to an SDK
/// producer and consumer; SIGTERM stops it (exit 0), and with `--state-dir` a second `serve`
/// still holds the records.
#[tokio::test]
async fn serve_is_a_local_kinesis_for_sdk_clients_that_keeps_its_records() {
    use aws_sdk_kinesis::primitives::Blob;
    use aws_sdk_kinesis::types::PutRecordsRequestEntry;
    let state_dir = std::env::temp_dir().join(format!("kinesis-esm-serve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state_dir);
    let args: Vec<std::ffi::OsString> = vec![
        "--state-dir".into(),
        state_dir.clone().into(),
        "serve".into(),
        "--template".into(),
        cli_template("streams-only.yaml").into(),
        "--stream".into(),
        "clicks:3".into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
    ];
    let mut served = Running::spawn(args).await;
    let endpoint = served.kinesis_endpoint().await;
    let client = sdk_client(&endpoint);
    let streams = client
        .list_streams()
        .send()
        .await
        .expect("ListStreams answers");
    let mut names: Vec<&str> = streams.stream_names().iter().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["audit", "clicks", "orders"]);
    let entries: Vec<PutRecordsRequestEntry> = (0..20)
        .map(|index| {
            PutRecordsRequestEntry::builder()
                .partition_key(format!("key-{index}"))
                .data(Blob::new(format!("order-{index:02}")))
                .build()
                .expect("an entry")
        })
        .collect();
    let put = client
        .put_records()
        .stream_name("orders")
        .set_records(Some(entries))
        .send()
        .await
        .expect("PutRecords answers");
    assert_eq!(put.failed_record_count(), Some(0));
    let expected: Vec<String> = (0..20).map(|index| format!("order-{index:02}")).collect();
    assert_eq!(read_every_record(&client, "orders").await, expected);

    served.send_sigterm();
    let ended = served.ended_within(RUN_TIMEOUT).await;
    assert_eq!(ended.code, Some(0), "{ended:#?}");
    assert!(
        ended.stderr.contains("kinesis-esm: SIGTERM: stopping"),
        "{ended:#?}"
    );

    // Started again on the same state directory, with no template: the records are there.
    let args: Vec<std::ffi::OsString> = vec![
        "serve".into(),
        "--state-dir".into(),
        state_dir.clone().into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
    ];
    let mut served = Running::spawn(args).await;
    let endpoint = served.kinesis_endpoint().await;
    let client = sdk_client(&endpoint);
    assert_eq!(read_every_record(&client, "orders").await, expected);
    served.send_sigterm();
    let ended = served.ended_within(RUN_TIMEOUT).await;
    assert_eq!(ended.code, Some(0), "{ended:#?}");
    let _ = std::fs::remove_dir_all(&state_dir);
}
