//! The chaos run's long form (`docs/lease-table.md` §8), against the servers
//! `scripts/local-stack` starts:
//!
//! ```text
//! scripts/local-stack run -- cargo run -p end-to-end --bin chaos -- --minutes 10
//! ```
//!
//! Options: `--minutes M` (of chaos per Kinesis, 10 by default; `--seconds S` for less),
//! `--seed N` (or `CHAOS_SEED`; printed either way), `--instances N` (3), `--shards N` (4),
//! `--kinesis local|embedded|both` (both, one after the other). It prints each run's report and
//! exits 1 if any run lost a record, delivered a key out of order or left a lease short of its
//! shard's end.

use std::process::ExitCode;
use std::time::Duration;

use end_to_end::chaos::{self, ChaosKinesis, ChaosPlan};

fn usage(problem: &str) -> ExitCode {
    eprintln!(
        "chaos: {problem}\nusage: chaos [--minutes M | --seconds S] [--seed N] [--instances N] \
         [--shards N] [--kinesis local|embedded|both]"
    );
    ExitCode::from(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut chaos_time = Duration::from_secs(600);
    let mut seed = chaos::seed_from_env();
    let mut instances = 3;
    let mut shards = 4;
    let mut kinesis = vec![ChaosKinesis::LocalServer, ChaosKinesis::Embedded];
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let [arg, value] = pair else {
            return usage(&format!("{} needs a value", pair[0]));
        };
        let Ok(number) = value.parse::<u64>() else {
            if arg != "--kinesis" {
                return usage(&format!("{arg} {value}: not a number"));
            }
            kinesis = match value.as_str() {
                "local" => vec![ChaosKinesis::LocalServer],
                "embedded" => vec![ChaosKinesis::Embedded],
                "both" => kinesis,
                _ => return usage(&format!("--kinesis {value}: local, embedded or both")),
            };
            continue;
        };
        match arg.as_str() {
            "--minutes" => chaos_time = Duration::from_secs(number * 60),
            "--seconds" => chaos_time = Duration::from_secs(number),
            "--seed" => seed = number,
            "--instances" => instances = number as usize,
            "--shards" => shards = number as u32,
            _ => return usage(&format!("unknown option {arg}")),
        }
    }
    if instances < 2 || shards < 2 {
        return usage("--instances and --shards must be 2 at least");
    }
    let mut faulty = false;
    for kinesis in kinesis {
        let plan = ChaosPlan {
            chaos_time,
            instances,
            shards,
            // Room for a longer run's backlog.
            drain_time: Duration::from_secs(180),
            ..ChaosPlan::short(kinesis, seed)
        };
        println!("chaos over {kinesis}: seed {seed}, {chaos_time:?} of chaos");
        let report = chaos::run(plan).await;
        println!("{report}");
        faulty |= !report.faults().is_empty();
    }
    if faulty {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
