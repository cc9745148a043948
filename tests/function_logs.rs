//! The function's own log lines as `kinesis-esm run` shows them (`docs/function-logs.md`): at
//! their own level, compact by default, filtered by `--log-level` and `--function-log-level`,
//! silenced by `--quiet`, kept whole in `--log-format json`, and never lengthened by the host's
//! `RUST_LOG` or `RUST_BACKTRACE`.
//!
//! Run with `cargo test -p end-to-end --test end_to_end function_logs`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use end_to_end::run::{KinesisEsm, Run, cli_template, main_events, main_template};
use end_to_end::shipping_bootstrap;

/// How long one run may take: the function is built beforehand, so cargo only checks it is fresh.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// The line the held fedex shipment (2004 of `functions/shipping/events`) gives, compact.
const HELD_LINE: &str =
    " WARN ShippingFunction: unknown carrier, shipment held shipment_id=2004 carrier=fedex";

/// The longest a compact function line may be, timestamp included.
const SHORT_LINE: usize = 140;

fn function_lines(run: &Run) -> Vec<&str> {
    run.stderr
        .lines()
        .filter(|line| line.contains("ShippingFunction: "))
        .collect()
}

fn shipping_template() -> PathBuf {
    main_template()
}

/// Runs `kinesis-esm <global> run --template T --put functions/shipping/events --until-idle`
/// with `host` added to its environment and `KINESIS_ESM_LOG` removed, so that the options
/// decide what is logged.
async fn run_shipping(
    template: &Path,
    global: &[&str],
    more: &[&str],
    host: &[(&str, &str)],
) -> Run {
    shipping_bootstrap().await;
    let mut command = KinesisEsm::new(global)
        .args(["run".as_ref(), "--template".as_ref(), template.as_os_str()])
        .args(["--put".as_ref(), main_events().as_os_str()])
        .args(["--until-idle", "--listen", "127.0.0.1:0"])
        .args(["--retry-pause", "10ms", "--max-retry-pause", "20ms"])
        .args(more)
        .env_remove("KINESIS_ESM_LOG")
        .timeout(RUN_TIMEOUT);
    for (key, value) in host {
        command = command.env(key, value);
    }
    let run = command.output().await;
    assert_eq!(
        run.code,
        Some(0),
        "the run settles every record:\n{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("ShippingFunction <- stream shipments"),
        "the summary is printed:\n{}",
        run.stdout
    );
    run
}

#[tokio::test]
async fn function_lines_are_compact_at_their_own_level() {
    let run = run_shipping(&shipping_template(), &[], &[], &[]).await;
    let lines = function_lines(&run);
    assert!(
        lines.iter().any(|line| line.ends_with(HELD_LINE)),
        "the held shipment's line, compact and at WARN:\n{}",
        run.stderr
    );
    assert!(
        lines.iter().any(|line| line
            .ends_with(" INFO ShippingFunction: shipment booked shipment_id=1001 carrier=dhl")),
        "a booked shipment's line, at INFO:\n{}",
        run.stderr
    );
    for line in &lines {
        assert!(line.len() <= SHORT_LINE, "a long line: {line}");
        assert!(
            !line.contains("requestId"),
            "the request span is left out: {line}"
        );
    }
}

#[tokio::test]
async fn verbose_shows_the_request_id_and_every_span() {
    let run = run_shipping(&shipping_template(), &["--verbose"], &[], &[]).await;
    assert!(
        function_lines(&run).iter().any(|line| line
            .contains("WARN ShippingFunction: Lambda runtime invoke{requestId=")
            && line
                .contains(":ship{shipment_id=2004 carrier=fedex}: unknown carrier, shipment held")),
        "the held shipment's line, whole:\n{}",
        run.stderr
    );
}

#[tokio::test]
async fn function_log_level_filters_the_function_lines_only() {
    let run = run_shipping(
        &shipping_template(),
        &["--function-log-level", "warn"],
        &[],
        &[],
    )
    .await;
    let lines = function_lines(&run);
    assert!(
        lines.iter().any(|line| line.ends_with(HELD_LINE)),
        "WARN lines stay:\n{}",
        run.stderr
    );
    assert!(
        lines.iter().all(|line| !line.contains(" INFO ")),
        "no INFO line of the function:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("INFO started an execution environment"),
        "the emulator's own INFO lines stay:\n{}",
        run.stderr
    );

    let run = run_with_level("warn").await;
    assert!(
        !run.stderr.contains(" INFO "),
        "--log-level warn leaves no INFO line:\n{}",
        run.stderr
    );
    assert!(run.stderr.contains(HELD_LINE), "{}", run.stderr);
}

async fn run_with_level(level: &str) -> Run {
    run_shipping(&shipping_template(), &["--log-level", level], &[], &[]).await
}

#[tokio::test]
async fn quiet_leaves_the_summary_alone() {
    let run = run_shipping(&shipping_template(), &["--quiet"], &[], &[]).await;
    assert_eq!(run.stderr, "", "nothing but the summary");
    assert!(
        run.stdout.contains("shardId-000000000000"),
        "{}",
        run.stdout
    );
}

#[tokio::test]
async fn json_logs_keep_each_function_lines_level_and_fields() {
    let run = run_shipping(&shipping_template(), &["--log-format", "json"], &[], &[]).await;
    let lines: Vec<serde_json::Value> = run
        .stderr
        .lines()
        // The emulator's notes to the user (`kinesis-esm: Kinesis API at ...`) are not logs.
        .filter(|line| !line.starts_with("kinesis-esm: "))
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect();
    let function_line = |message: &str| {
        lines
            .iter()
            .find(|line| {
                line["fields"]["function"] == "ShippingFunction"
                    && line["fields"]["message"] == message
            })
            .unwrap_or_else(|| panic!("no line {message:?}:\n{}", run.stderr))
    };
    let held = function_line("unknown carrier, shipment held");
    assert_eq!(held["level"], "WARN", "{held}");
    assert_eq!(
        held["fields"]["fields"], "shipment_id=2004 carrier=fedex",
        "{held}"
    );
    let booked = function_line("shipment booked");
    assert_eq!(booked["level"], "INFO", "{booked}");
}

#[tokio::test]
async fn the_hosts_rust_log_and_rust_backtrace_do_not_reach_the_function() {
    // Were `RUST_LOG=trace` passed, the function's subscriber would write its DEBUG and TRACE
    // lines (the Runtime API client's), and `--function-log-level trace` would show them.
    let run = run_shipping(
        &cli_template("shipping-without-rust-log.yaml"),
        &["--function-log-level", "trace"],
        &[],
        &[("RUST_LOG", "trace"), ("RUST_BACKTRACE", "1")],
    )
    .await;
    let lines = function_lines(&run);
    assert!(
        lines.iter().any(|line| line.ends_with(HELD_LINE)),
        "{}",
        run.stderr
    );
    for line in &lines {
        assert!(
            !line.contains("DEBUG ") && !line.contains("TRACE "),
            "the function logged below INFO, so it got the host's RUST_LOG: {line}"
        );
        assert!(line.len() <= SHORT_LINE, "a long line: {line}");
    }

    // The way to give the function a variable is to say so.
    let run = run_shipping(
        &cli_template("shipping-without-rust-log.yaml"),
        &["--function-log-level", "trace"],
        &["--function-env", "RUST_LOG=debug"],
        &[],
    )
    .await;
    assert!(
        function_lines(&run)
            .iter()
            .any(|line| line.contains("DEBUG ShippingFunction: ")),
        "--function-env RUST_LOG=debug reaches the function:\n{}",
        run.stderr
    );
}
