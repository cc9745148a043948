//! `kinesis-esm replay`: reads a running mapping's shards again, from a record, a time or the
//! oldest record, without a restart (`crate::control`, `esm_engine::mapping::replay`).

use std::io::Write as _;

use anyhow::{Context as _, bail};
use clap::{ArgGroup, Args};

use super::control_client::{ask, control_uri};
use crate::control::{MappingReplay, REPLAY_PATH, ReplayRequest};

/// What `replay --help` adds.
pub(super) const REPLAY_AFTER_HELP: &str = "\
How it works:
  The running `kinesis-esm run` hands the replay to each shard's reader, which holds the lease:
  between two batches it writes the checkpoint before the record to read again from (a fenced
  checkpoint write, as every checkpoint is), drops what it read and did not settle, and reads on
  from there. The lease store (memory, --state-dir, --lease-table) keeps the new checkpoint.

Refused: an unknown function or shard, a sequence number that is not a record of the shard, a
  time in the future, a position after the checkpoint (a replay never skips records), and a
  shard read to its end (SHARD_END: its children carry on after it; replay them instead).

Lambda has no such operation: on AWS, read a stream again with a new event source mapping at
  StartingPosition AT_TIMESTAMP (StartingPositionTimestamp).";

/// `kinesis-esm replay`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("position").required(true).args(["from", "at", "trim_horizon"])))]
pub(super) struct ReplayArgs {
    /// The function whose mappings read again (its FunctionName).
    #[arg(long, env = "KINESIS_ESM_FUNCTION")]
    function: String,
    /// Only this shard; by default every shard the run reads.
    #[arg(long, value_name = "SHARD_ID")]
    shard: Option<String>,
    /// From this record (a sequence number of the shard): it and every record after it come
    /// again.
    #[arg(long, value_name = "SEQUENCE_NUMBER")]
    from: Option<String>,
    /// From the first record that arrived at or after this time, in seconds since the Unix
    /// epoch (as StartingPositionTimestamp), fractions allowed.
    #[arg(long, value_name = "EPOCH_SECONDS", value_parser = parse_epoch_seconds)]
    at: Option<i64>,
    /// From the oldest record each shard holds.
    #[arg(long)]
    trim_horizon: bool,
    /// The endpoint `kinesis-esm run` serves.
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:4566",
        env = "KINESIS_ESM_ENDPOINT"
    )]
    endpoint: String,
    /// Prints the answer as JSON.
    #[arg(long)]
    json: bool,
}

/// Reads seconds since the epoch (fractions allowed) into milliseconds.
fn parse_epoch_seconds(text: &str) -> Result<i64, String> {
    let seconds: f64 = text
        .parse()
        .ok()
        .filter(|seconds: &f64| seconds.is_finite() && *seconds >= 0.0)
        .ok_or_else(|| format!("`{text}` is not a time in seconds since the Unix epoch"))?;
    Ok((seconds * 1000.0).round() as i64)
}

pub(super) async fn replay(args: ReplayArgs) -> anyhow::Result<()> {
    let request = ReplayRequest {
        function: args.function.clone(),
        shard: args.shard.clone(),
        sequence_number: args.from.clone(),
        at_epoch_millis: args.at,
        trim_horizon: args.trim_horizon,
    };
    let uri = control_uri(&args.endpoint, REPLAY_PATH);
    let body = serde_json::to_vec(&request)?;
    let (status, body) = ask(&args.endpoint, hyper::Method::POST, &uri, Some(body)).await?;
    if !status.is_success() {
        let error = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|answer| answer.get("error")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| {
                format!(
                    "{uri} answered {status}: {}",
                    String::from_utf8_lossy(&body)
                )
            });
        bail!("replay refused: {error}");
    }
    let replays: Vec<MappingReplay> = serde_json::from_slice(&body)
        .with_context(|| format!("{uri} did not answer a kinesis-esm replay"))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &replays)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", render(&replays))?;
    }
    Ok(())
}

/// The answer as lines for a terminal.
fn render(replays: &[MappingReplay]) -> String {
    let mut out = String::new();
    for replay in replays {
        out.push_str(&format!(
            "{} <- stream {}\n",
            replay.function, replay.stream
        ));
        for shard in &replay.report.replayed {
            let first = match &shard.first_record {
                Some(first) => format!("reading again from {first}"),
                None => "no record there yet".to_owned(),
            };
            out.push_str(&format!(
                "  {}  checkpoint {} -> {}  {first}\n",
                shard.shard_id, shard.previous_checkpoint, shard.checkpoint
            ));
        }
        for passed_over in &replay.report.passed_over {
            out.push_str(&format!("  passed over: {passed_over}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use esm_engine::mapping::replay::{ReplayOutcome, ReplayReport};

    #[test]
    fn times_are_epoch_seconds_with_fractions() {
        assert_eq!(parse_epoch_seconds("1700000000"), Ok(1_700_000_000_000));
        assert_eq!(parse_epoch_seconds("1700000000.25"), Ok(1_700_000_000_250));
        assert!(parse_epoch_seconds("-1").is_err());
        assert!(parse_epoch_seconds("yesterday").is_err());
    }

    #[test]
    fn a_replay_shows_each_shard_s_checkpoint_move() {
        let replays = [MappingReplay {
            function: "ship".to_owned(),
            stream: "shipments".to_owned(),
            report: ReplayReport {
                replayed: vec![ReplayOutcome {
                    shard_id: "shardId-000000000000".to_owned(),
                    previous_checkpoint: "900".parse().unwrap(),
                    checkpoint: "TRIM_HORIZON".parse().unwrap(),
                    first_record: Some("100".parse().unwrap()),
                }],
                passed_over: vec!["shard shardId-000000000001 is closed".to_owned()],
            },
        }];
        assert_eq!(
            render(&replays),
            "ship <- stream shipments\n  shardId-000000000000  checkpoint 900 -> TRIM_HORIZON  \
             reading again from 100\n  passed over: shard shardId-000000000001 is closed\n"
        );
    }
}
