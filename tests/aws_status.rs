//! `kinesis-esm status` against a `kinesis-esm run` that reads kinesis-local
//! (`--kinesis-endpoint`): the run serves its mappings' status on its listen address, without
//! the Kinesis API, and `status` reads it there as it does beside the embedded Kinesis.

use std::process::Stdio;
use std::time::Duration;

use end_to_end::aws::{
    LedgerTemplate, LocalAws, ScratchDir, TIMEOUT, build_ledger_function, kinesis_endpoint,
    kinesis_esm_binary, kinesis_esm_run, shipments_held_at, within,
};
use end_to_end::served_address;
use kinesis_esm::mapping::MappingStatus;
use tokio::process::Command;

/// The shipment the function holds.
const HELD: u64 = 3;

/// Runs `kinesis-esm <args>` to its end; returns its exit code, stdout and stderr.
async fn kinesis_esm(args: &[&str]) -> (Option<i32>, String, String) {
    let output = within(
        &format!("kinesis-esm {args:?}"),
        Command::new(kinesis_esm_binary().await)
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("kinesis-esm starts");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn status_reads_a_run_over_kinesis_local() {
    let aws = LocalAws::connect().await;
    let stream = aws.create_stream("status", 1).await;
    let shipments = shipments_held_at(5, HELD);
    let published = aws.publish_shipments(&stream, &shipments).await;
    let held_at = published[(HELD - 1) as usize].sequence_number.to_string();

    build_ledger_function().await;
    let scratch = ScratchDir::new("status");
    let (template, _) = LedgerTemplate::new(&stream, 1, 10, 0).write_as(&scratch, "status");
    let kinesis = kinesis_endpoint();
    let mut run = kinesis_esm_run(&[
        "--template",
        &template,
        "--kinesis-endpoint",
        &kinesis,
        "--listen",
        "127.0.0.1:0",
        // The held shipment stays held while the test looks: its retries are slow.
        "--retry-pause",
        "60s",
        "--max-retry-pause",
        "60s",
    ])
    .await
    .spawn()
    .expect("kinesis-esm run starts");
    // `run` says where it serves its status before the mappings start.
    let endpoint = served_address(&mut run, "status at ", TIMEOUT).await;

    let status = within("the shard to be held at the fedex shipment", async {
        loop {
            let (code, json, stderr) =
                kinesis_esm(&["status", "--endpoint", &endpoint, "--json"]).await;
            assert_eq!(code, Some(0), "status fails: {stderr}");
            let statuses: Vec<MappingStatus> = serde_json::from_str(&json).unwrap();
            assert!(statuses.len() <= 1, "one mapping: {statuses:#?}");
            if let Some(status) = statuses.into_iter().next().filter(|status| {
                status.shards.values().any(|shard| {
                    shard
                        .held
                        .as_ref()
                        .is_some_and(|held| held.sequence_number.to_string() == held_at)
                })
            }) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert_eq!(status.stream_name, stream);
    assert_eq!(status.totals().acked, HELD - 1, "{status:#?}");

    let (code, tree, _) = kinesis_esm(&["status", "--endpoint", &endpoint]).await;
    assert_eq!(code, Some(0));
    assert!(tree.contains(&format!("held at {held_at}")), "{tree}");

    // The endpoint is not a Kinesis: a Kinesis call there is refused, saying where to go.
    let (code, _, stderr) =
        kinesis_esm(&["put", "--endpoint", &endpoint, "--stream", &stream, "lost?"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("serves no Kinesis API"),
        "the refusal says why: {stderr}"
    );

    let killed = Command::new("kill")
        .args(["-INT", &run.id().unwrap().to_string()])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let code = within("the run to stop after Ctrl-C", run.wait())
        .await
        .unwrap();
    assert_eq!(code.code(), Some(1), "the run ends held");
}
