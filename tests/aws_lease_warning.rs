//! The warning of a lease left by a stream of the same name created at another time, through the
//! real CLI, with the lease table on dynalite (`scripts/local-stack run -- cargo test -p
//! end-to-end aws_`).

use std::time::Duration;

use end_to_end::aws::{LocalAws, dynamodb_endpoint};
use end_to_end::shipping_bootstrap;

use end_to_end::run::{check_row, cli_template, kinesis_esm_with, records};

/// Issue 10's skip, told: `run --lease-table` over the embedded Kinesis keeps the checkpoints
/// in DynamoDB (dynalite) while the stream ends with the run, so the next run meets a stream of
/// the same name created at another time. It warns of each old lease and reads the new stream
/// from `TRIM_HORIZON`: every shipment is delivered again.
#[tokio::test]
async fn a_lease_of_a_stream_created_at_another_time_is_warned_of() {
    shipping_bootstrap().await;
    let aws = LocalAws::connect().await;
    let table = aws.lease_table("summary-creation").await;
    let endpoint = dynamodb_endpoint();
    let template = cli_template("without-report-batch-item-failures.yaml");
    let args = [
        "--lease-table",
        table.as_str(),
        "--dynamodb-endpoint",
        endpoint.as_str(),
    ];
    let first = kinesis_esm_with(&template, &records(), &args).await;
    assert_eq!(first.code, Some(0), "{first:#?}");
    check_row(&first, &[("records", "6"), ("held", "0")]);
    let warning = "a lease is for a stream of this name created at another time";
    assert!(!first.stderr.contains(warning), "{}", first.stderr);

    // Lease keys name the stream's creation time in seconds.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = kinesis_esm_with(&template, &records(), &args).await;
    assert_eq!(second.code, Some(0), "{second:#?}");
    let line = second
        .stderr
        .lines()
        .find(|line| line.contains(warning))
        .unwrap_or_else(|| panic!("the second run warns: {}", second.stderr));
    assert!(
        line.contains("shard_id=shardId-000000000000"),
        "names the shard: {line}"
    );
    assert!(
        line.contains("stream=shipments"),
        "names the stream: {line}"
    );
    check_row(&second, &[("records", "6"), ("held", "0")]);
}
