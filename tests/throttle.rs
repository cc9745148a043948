//! `kinesis-esm run --throttle`: the embedded Kinesis applies AWS's per-shard throughput
//! limits (docs/kinesis.md, "Throughput limits"), and the mapping keeps delivering: its reader
//! backs off on `ProvisionedThroughputExceededException` (`emulator/engine/src/backoff.rs`) and `--put`
//! sends again what a shard refused, so every record settles as it does without the limits.

use end_to_end::run::{
    MAIN_COMMAND_SETTLED, check_row, kinesis_esm_with, main_command, main_template,
};
use end_to_end::{shipping_bootstrap, workspace_dir, write_large_shipments};

/// The README's main command with `--throttle`: the shipping events end exactly as in
/// `cli::the_main_command_runs_the_shipping_service`.
#[tokio::test]
async fn the_shipping_events_settle_under_the_throughput_limits() {
    let run = main_command(&["--throttle"]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    check_row(&run, MAIN_COMMAND_SETTLED);
    // The discarded batch went to a file of its own; the test leaves none behind.
    for file in run.destination_files() {
        let _ = std::fs::remove_file(workspace_dir().join(file));
    }
}

/// 40 shipments of about 104 KiB (4 MiB) to one shard: more than a second of its write limit
/// (1 MiB/s) and of its read limit (2 MiB/s), so puts and reads are throttled on the way, and
/// every shipment is still delivered once and booked.
#[tokio::test]
async fn shipments_past_a_shards_limits_are_all_delivered() {
    shipping_bootstrap().await;
    let records =
        std::env::temp_dir().join(format!("kinesis-esm-throttle-{}.jsonl", std::process::id()));
    write_large_shipments(&records, 40);
    let run = kinesis_esm_with(&main_template(), &records, &["--throttle"]).await;
    let _ = std::fs::remove_file(&records);
    assert_eq!(run.code, Some(0), "{run:#?}");
    check_row(
        &run,
        &[
            ("state", "caught up"),
            ("records", "40"),
            ("deliveries", "40"),
            ("acked", "40"),
            ("held", "0"),
            ("retries", "0"),
        ],
    );
}
