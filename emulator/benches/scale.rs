//! How the emulator's cost grows with the number of shards (`docs/scale.md`).
//!
//! Run with `scripts/local-stack run -- cargo bench -p kinesis-esm --bench scale` (parts 2 and
//! 3 need kinesis-local and dynalite: `KINESIS_ENDPOINT` and `DYNAMODB_ENDPOINT`, which
//! `scripts/local-stack run` sets; without them they fail, naming the variable). It takes a few
//! minutes. Three parts, in one run:
//!
//! 1. **Embedded Kinesis, function in process** (the in-process invoker the `esm_throughput`
//!    bench uses, leases in memory), for `SCALE_SHARDS` (default 1,000) and `SCALE_BASE_SHARDS`
//!    (default 100) shards, each in a process of its own: the time from `start()` to every
//!    shard read to its tip; resident memory per idle shard (`VmRSS` before the mapping
//!    starts and once it is idle, over the shards; the stream's own apart); CPU per idle shard
//!    per second over `SCALE_IDLE_SECONDS` (default 10) with nothing watching the status, and
//!    again with one watcher that reads the status on every change as `run --until-idle` does;
//!    the `GetRecords` calls and status changes per idle shard per second; records per second
//!    for `SCALE_RECORDS` (default 100,000) shipments spread over every shard, put while the
//!    mapping runs (the same records and batches, 100 a batch, for both shard counts), and the
//!    CPU per record; every shard split at once: the time until every child is read to its
//!    tip, the lease-table scans and the leases they read per parent, and the CPU per parent
//!    (leases counted at the `LeaseStore` boundary); the time `stop()` takes. Then the ratios of the per-shard figures, large
//!    against small: a ratio well above 1 is a cost that grows faster than the shard count.
//! 2. **kinesis-local**: `SCALE_AWS_SHARDS` (default 64) shards read through the SDK source at
//!    Kinesis' read pacing: time to every shard reading, `GetRecords` calls per idle shard per
//!    second (Lambda polls an idle shard once a second), idle CPU, and records per second for
//!    `SCALE_AWS_RECORDS` (default 6,400).
//! 3. **The lease table on dynalite**: 1 and 3 instances over one table and `SCALE_LEASE_SHARDS`
//!    (default 32) shards, counted at the `LeaseStore` boundary over `SCALE_LEASE_SECONDS`
//!    (default 30) after `SCALE_LEASE_WARM_UP_SECONDS` (default 20): renewals, checkpoints,
//!    takes, shard sync scans and the items they read, per shard per second.
//!
//! `SCALE_PART=embedded`, `kinesis` or `leases` (or a comma-separated list) runs only those.
//! CPU is this process's threads' run time (`/proc/self/task/*/schedstat`); the load average
//! and the cores the rest of the machine used are printed beside it, as the machine is shared.

#[path = "scale/counting_store.rs"]
mod counting_store;
#[path = "scale/embedded.rs"]
mod embedded;
#[path = "scale/lease_table.rs"]
mod lease_table;
#[path = "scale/measure.rs"]
mod measure;
#[path = "scale/over_aws.rs"]
mod over_aws;
mod support;

use std::time::Duration;

use support::{env_or, load_average};

const PARTS: [&str; 3] = ["embedded", "kinesis", "leases"];

fn main() {
    if let Ok(shards) = std::env::var(embedded::CHILD_SHARDS) {
        embedded::child(shards.parse().expect("a shard count"));
        return;
    }
    let parts: Vec<String> = std::env::var("SCALE_PART")
        .map(|parts| {
            parts
                .split(',')
                .map(|part| part.trim().to_owned())
                .collect()
        })
        .unwrap_or_else(|_| PARTS.map(str::to_owned).to_vec());
    for part in &parts {
        assert!(
            PARTS.contains(&part.as_str()),
            "SCALE_PART={part}: say one or more of {PARTS:?}, comma-separated"
        );
    }
    let wants = |part: &str| parts.iter().any(|wanted| wanted == part);
    // Fail before minutes of work, not after them.
    if wants("kinesis") {
        test_support::kinesis_endpoint();
    }
    if wants("leases") {
        test_support::dynamodb_endpoint();
    }
    println!(
        "{} cores; load average at the start: {}",
        std::thread::available_parallelism().map_or(0, usize::from),
        load_average()
    );
    if wants("embedded") {
        let base = env_or("SCALE_BASE_SHARDS", 100);
        let large = env_or("SCALE_SHARDS", 1_000);
        println!("\n1. embedded Kinesis, the shipping function in process, leases in memory");
        embedded::compare(&[base, large]);
    }
    let runtime = support::runtime();
    if wants("kinesis") {
        println!(
            "\n2. kinesis-local through the SDK source, Kinesis' read pacing, leases in memory"
        );
        runtime.block_on(over_aws::measure(
            env_or("SCALE_AWS_SHARDS", 64),
            env_or("SCALE_AWS_RECORDS", 6_400),
            Duration::from_secs(env_or("SCALE_IDLE_SECONDS", 10)),
        ));
    }
    if wants("leases") {
        println!("\n3. the lease table on dynalite, counted at the LeaseStore boundary");
        let shards = env_or("SCALE_LEASE_SHARDS", 32);
        let warm_up = Duration::from_secs(env_or("SCALE_LEASE_WARM_UP_SECONDS", 20));
        let window = Duration::from_secs(env_or("SCALE_LEASE_SECONDS", 30));
        for instances in [1, 3] {
            runtime.block_on(lease_table::measure(shards, instances, warm_up, window));
        }
    }
    println!("\nload average at the end: {}", load_average());
}
