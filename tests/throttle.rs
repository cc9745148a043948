//! `kinesis-esm run --throttle`: the embedded Kinesis applies AWS's per-shard throughput
//! limits (docs/kinesis.md, "Throughput limits"), and the mapping keeps delivering: its reader
//! backs off on `ProvisionedThroughputExceededException` (`emulator/engine/src/backoff.rs`) and `--put`
//! sends again what a shard refused, so every record settles as it does without the limits.

use end_to_end::run::{
    MAIN_COMMAND_SETTLED, check_each_booked_once, check_row, main_command, run_large_shipments,
};
use end_to_end::workspace_dir;

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
    let run = run_large_shipments("throttle", 40, &["--throttle"]).await;
    check_each_booked_once(&run, 40);
}
