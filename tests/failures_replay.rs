//! `kinesis-esm failures replay FILE` invokes the function again: the README's main run (kept
//! running, its state in a directory of its own) discards the fedex batch to the folder; the
//! replay reads the six records from the run's Kinesis, invokes the shipping function's binary
//! with them in one Lambda event, and prints its answer, which holds the fedex record again. The
//! run's mapping sees nothing of it: its summary counts what it counted before the replay.

use std::ffi::OsString;
use std::time::Duration;

use end_to_end::{kinesis_esm_binary, shipping_bootstrap, workspace_dir};

use end_to_end::run::{Running, check_row};

#[tokio::test]
async fn a_discarded_fedex_batch_replayed_into_the_function_is_held_again() {
    shipping_bootstrap().await;
    let state_dir = std::env::temp_dir().join(format!(
        "kinesis-esm-failures-replay-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&state_dir);
    let template = workspace_dir().join("template.yaml");
    let events = workspace_dir().join("functions/shipping/events");
    let mut args: Vec<OsString> = vec!["--state-dir".into(), state_dir.clone().into()];
    args.extend(["run".into(), "--template".into(), template.clone().into()]);
    args.extend([
        "--put".into(),
        events.into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
    ]);
    args.extend(["--retry-pause", "10ms", "--max-retry-pause", "50ms"].map(OsString::from));
    let mut run = Running::spawn(&args).await;
    let endpoint = run.kinesis_endpoint().await;
    let discarded = run.wait_for_line("batch discarded").await;
    let file = discarded
        .split("delivered_to=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("the discard names its file: {discarded}"))
        .to_owned();
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("the record's file"))
            .expect("the record is JSON");
    let fedex = record["KinesisBatchInfo"]["startSequenceNumber"]
        .as_str()
        .expect("the batch's first sequence number")
        .to_owned();

    let replay = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(kinesis_esm_binary().await)
            .args(["failures", "replay", "--endpoint", &endpoint, "--template"])
            .arg(&template)
            .arg(&file)
            .current_dir(workspace_dir())
            .env("KINESIS_ESM_LOG", "warn")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the replay ends within a minute")
    .expect("kinesis-esm starts");
    let stdout = String::from_utf8_lossy(&replay.stdout);
    let stderr = String::from_utf8_lossy(&replay.stderr);
    assert_eq!(replay.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "{file}: ShippingFunction answered for 6 records of shardId-000000000000"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("held record 1 of 6 (sequence number {fedex},")),
        "the function holds the fedex shipment again: {stdout}"
    );
    assert!(
        stderr.contains("unknown carrier, shipment held"),
        "the function's own lines are shown: {stderr}"
    );

    run.send_sigterm();
    let ended = run.ended_within(Duration::from_secs(60)).await;
    assert_eq!(ended.code, Some(0), "{ended:#?}");
    check_row(
        &ended,
        &[
            ("records", "12"),
            ("deliveries", "48"),
            ("invocations", "7"),
            ("discarded", "6"),
        ],
    );
    let _ = std::fs::remove_dir_all(&state_dir);
}
