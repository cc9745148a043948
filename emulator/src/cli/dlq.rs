//! `kinesis-esm dlq`: lists a dead-letter stream's records (lambda-kinesis' retry envelopes,
//! `docs/retry-streams.md`) decoded, and `dlq redrive` publishes each one's original data back
//! to the stream it first arrived on, under its own partition key (after a release that can
//! handle them, say). Kinesis cannot delete records: a redriven record stays in the
//! dead-letter stream until its retention passes, so `redrive --after SEQUENCE` skips those
//! sent back already.

use std::fmt::Write as _;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use lambda_kinesis::retry::Envelope;

use super::commands::{KinesisTarget, put_every_record};
use crate::records_file::RecordToPut;
use crate::summary::counted;
use kinesis_source::sequence::SequenceNumber;
use kinesis_source::{IteratorPosition, Record, ShardSource};

/// `kinesis-esm dlq`.
#[derive(Debug, Args)]
pub(super) struct DlqArgs {
    #[command(subcommand)]
    action: Option<DlqAction>,
    /// The dead-letter stream (the shipping template's is `shipments-dlq`).
    #[arg(long, value_name = "STREAM", global = true)]
    stream: Option<String>,
    #[command(flatten)]
    pub(super) target: KinesisTarget,
}

#[derive(Debug, Subcommand)]
enum DlqAction {
    /// Publishes each record's original data back to the stream it first arrived on.
    Redrive(RedriveArgs),
}

#[derive(Debug, Args)]
struct RedriveArgs {
    /// Only the records after this sequence number of their dead-letter shard (the last one a
    /// previous redrive printed).
    #[arg(long, value_name = "SEQUENCE")]
    after: Option<String>,
}

pub(super) async fn dlq(args: DlqArgs) -> anyhow::Result<()> {
    let Some(stream) = args.stream.as_deref() else {
        anyhow::bail!("name the dead-letter stream: --stream STREAM");
    };
    let kinesis = args.target.connect().await?;
    let records = read_stream(&kinesis, stream).await?;
    match &args.action {
        None => {
            for (shard_id, record) in &records {
                println!("{}", listing_line(shard_id, record));
            }
            if records.is_empty() {
                say!("kinesis-esm: no records in stream {stream}");
            }
            Ok(())
        }
        Some(DlqAction::Redrive(redrive)) => {
            let after = redrive
                .after
                .as_deref()
                .map(str::parse::<SequenceNumber>)
                .transpose()
                .map_err(|error| anyhow::anyhow!("--after: {error}"))?;
            redrive_records(&kinesis, stream, &records, after.as_ref()).await
        }
    }
}

/// One line per record: where it is in the dead-letter stream, where it came from, its
/// retries, why it was held and its data (as text when it is UTF-8).
fn listing_line(shard_id: &str, record: &Record) -> String {
    let mut line = format!("{shard_id}  {}  ", record.sequence_number);
    match Envelope::from_slice(&record.data) {
        Ok(envelope) => {
            let origin = &envelope.origin;
            let _ = write!(
                line,
                "from {} {} {}  key {}  {} {}  {}  data {}",
                origin.stream,
                origin.shard_id,
                origin.sequence_number,
                origin.partition_key,
                envelope.attempt,
                if envelope.attempt == 1 {
                    "retry"
                } else {
                    "retries"
                },
                envelope.reason,
                shown(&envelope.data),
            );
        }
        Err(problem) => {
            let _ = write!(line, "not readable: {problem}");
        }
    }
    line
}

/// Data as text when it is UTF-8, else in base64.
fn shown(data: &[u8]) -> String {
    match std::str::from_utf8(data) {
        Ok(text) => text.to_owned(),
        Err(_) => {
            use base64::Engine as _;
            format!(
                "(base64) {}",
                base64::engine::general_purpose::STANDARD.encode(data)
            )
        }
    }
}

/// Publishes each envelope's data back to its origin stream, in the dead-letter stream's order.
async fn redrive_records(
    kinesis: &esm_engine::aws::SdkKinesis,
    stream: &str,
    records: &[(String, Record)],
    after: Option<&SequenceNumber>,
) -> anyhow::Result<()> {
    let mut sent: u64 = 0;
    for (shard_id, record) in records {
        if after.is_some_and(|after| record.sequence_number <= *after) {
            continue;
        }
        let envelope = Envelope::from_slice(&record.data).map_err(|problem| {
            anyhow::anyhow!(
                "record {} of {stream} {shard_id} cannot be redriven: {problem}",
                record.sequence_number
            )
        })?;
        let to_put = RecordToPut {
            partition_key: envelope.origin.partition_key.clone(),
            data: envelope.data.clone().into(),
            explicit_hash_key: None,
        };
        let placed = put_every_record(kinesis, &envelope.origin.stream, &[to_put])
            .await
            .with_context(|| {
                format!(
                    "redriving record {} of {stream} {shard_id}",
                    record.sequence_number
                )
            })?;
        let landed = placed
            .first()
            .map_or_else(String::new, |(to_shard, to_sequence)| {
                format!(" {to_shard} {to_sequence}")
            });
        println!(
            "{shard_id}  {}  sent back to {}{landed}",
            record.sequence_number, envelope.origin.stream
        );
        sent += 1;
    }
    say!(
        "kinesis-esm: {} of {stream} sent back to their streams",
        counted(sent, "record", "records")
    );
    Ok(())
}

/// Every record of `stream`, shard by shard (parents first), from the trim horizon.
async fn read_stream(
    kinesis: &dyn ShardSource,
    stream: &str,
) -> anyhow::Result<Vec<(String, Record)>> {
    let shards = kinesis
        .list_shards(stream)
        .await
        .with_context(|| format!("listing the shards of {stream}"))?;
    let mut records = Vec::new();
    for shard in shards {
        let mut iterator = Some(
            kinesis
                .shard_iterator(stream, &shard.shard_id, &IteratorPosition::TrimHorizon)
                .await
                .with_context(|| format!("reading {stream} {}", shard.shard_id))?,
        );
        while let Some(current) = iterator.take() {
            let read = kinesis
                .get_records(&current, 1000)
                .await
                .with_context(|| format!("reading {stream} {}", shard.shard_id))?;
            let caught_up = read.millis_behind_latest == 0 && read.records.is_empty();
            records.extend(
                read.records
                    .into_iter()
                    .map(|record| (shard.shard_id.clone(), record)),
            );
            if !caught_up {
                iterator = read.next_shard_iterator;
            }
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use lambda_kinesis::retry::{Hop, Origin, RetryPlan};

    use super::*;

    fn record(data: Vec<u8>) -> Record {
        Record {
            sequence_number: "49000000000000000000000000000000000000000000000000000001"
                .parse()
                .expect("a sequence number"),
            partition_key: "shipment-7".into(),
            data: data.into(),
            approximate_arrival: SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn a_dead_letter_record_is_listed_with_its_origin_retries_reason_and_data() {
        let envelope = RetryPlan::default().envelope(
            Hop::DeadLetter {
                stream: "shipments-dlq",
                attempts: 3,
            },
            Origin {
                stream: "shipments".into(),
                shard_id: "shardId-000000000000".into(),
                sequence_number: "4901".into(),
                sub_sequence_number: 0,
                partition_key: "shipment-7".into(),
                arrival_millis: 0,
            },
            br#"{"id":7}"#.to_vec(),
            "the handler held it".into(),
            SystemTime::UNIX_EPOCH,
        );
        let line = listing_line("shardId-000000000000", &record(envelope.to_vec()));
        assert_eq!(
            line,
            "shardId-000000000000  49000000000000000000000000000000000000000000000000000001  \
             from shipments shardId-000000000000 4901  key shipment-7  3 retries  \
             the handler held it  data {\"id\":7}"
        );
    }

    #[test]
    fn a_record_that_is_no_envelope_is_listed_as_such() {
        let line = listing_line("shardId-000000000000", &record(b"plain".to_vec()));
        assert!(line.ends_with("not readable: not a lambda-kinesis retry envelope: expected value at line 1 column 1"), "{line}");
    }
}
