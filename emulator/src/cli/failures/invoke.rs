//! `kinesis-esm failures replay` without `--to-stream`: a discarded batch's records, read again
//! from their shard, handed to the function once more as one Lambda event per on-failure
//! record, built as the mapping builds its events and sent through the same invoker `run` uses
//! (the function's own binary under the Runtime API). What the function answers is read by
//! Lambda's rules and printed; nothing else happens: no checkpoint moves, no lease is touched,
//! no retry follows. It answers "does the fixed release handle these records now?".

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;
use lambda_kinesis::wire::{EventSource, write_event};

use super::super::function_binary::{BinaryOptions, runtime_api_invoker};
use crate::cli::function_binary::FunctionLogs;
use crate::summary::counted;
use crate::template::{FunctionResource, Template};
use esm_engine::config::MappingConfig;
use esm_engine::destination::shape::BatchPosition;
use esm_engine::invoke::runtime_api::RuntimeApi;
use esm_engine::invoke::{Invocation, InvokeOutcome, Invoker as _};
use esm_engine::mapping::event_records;
use esm_engine::response::{Verdict, read_response};
use kinesis_source::Record;
use kinesis_source::sequence::SequenceNumber;

/// A discarded batch read again: the on-failure record's file, where it lay, its records.
pub(super) struct ReadAgain {
    pub(super) path: String,
    pub(super) position: BatchPosition,
    pub(super) records: Vec<Record>,
}

/// What the function is and how it runs.
pub(super) struct InvokeOptions<'a> {
    /// The template the function comes from.
    pub(super) template: &'a Template,
    /// `--function`: the function to invoke, rather than the one that reads the batch's stream.
    pub(super) function: Option<&'a str>,
    /// The binary, its environment and the Kinesis it is pointed at.
    pub(super) binary: BinaryOptions<'a>,
    /// How the function's lines are written.
    pub(super) logs: FunctionLogs,
}

/// Invokes the function chosen for each batch with its records, one invocation per batch, and
/// prints its answer. The function's process starts once per function and is stopped at the end.
pub(super) async fn invoke_again(
    batches: &[ReadAgain],
    options: &InvokeOptions<'_>,
) -> anyhow::Result<()> {
    let mut invokers: BTreeMap<String, RuntimeApi> = BTreeMap::new();
    let result = async {
        for batch in batches {
            let (function, mapping) = choose_function(
                options.template,
                &batch.position.stream_name,
                options.function,
            )
            .map_err(|problem| anyhow::anyhow!("{}: {problem}", batch.path))?;
            if !invokers.contains_key(&function.logical_id) {
                let invoker =
                    runtime_api_invoker(function, &options.binary, None, 1, options.logs)?;
                invokers.insert(function.logical_id.clone(), invoker);
            }
            let invoker = &invokers[&function.logical_id];
            let payload = event(batch, options.binary.region, options.binary.account_id);
            let outcome = invoker
                .invoke(Invocation::new(payload, mapping.function_timeout))
                .await
                .map_err(|error| {
                    anyhow::anyhow!("{}: invoking {}: {error}", batch.path, function.logical_id)
                })?;
            println!(
                "{}: {} answered for {} of {} {}..{}: {}",
                batch.path,
                function.logical_id,
                counted(batch.records.len() as u64, "record", "records"),
                batch.position.shard_id,
                batch.position.first,
                batch.position.last,
                answer_text(&outcome, &batch.records, mapping.report_batch_item_failures)
            );
        }
        Ok(())
    }
    .await;
    for invoker in invokers.values() {
        invoker.shutdown().await;
    }
    result
}

/// The event Lambda would send with the batch's records, from the batch's own shard and stream.
fn event(batch: &ReadAgain, region: &str, account_id: &str) -> Vec<u8> {
    let mut payload = Vec::new();
    let source = EventSource {
        stream_arn: &batch.position.stream_arn,
        shard_id: &batch.position.shard_id,
        region,
        // The identity `run` gives its mappings.
        invoke_identity_arn: &format!("arn:aws:iam::{account_id}:role/kinesis-esm"),
    };
    write_event(&mut payload, &source, event_records(&batch.records));
    payload
}

/// The function to invoke with a batch of `stream` and its mapping on that stream (whose
/// `FunctionResponseTypes` and `Timeout` apply): the one named, or the template's only function
/// reading the stream.
fn choose_function<'t>(
    template: &'t Template,
    stream: &str,
    named: Option<&str>,
) -> Result<(&'t FunctionResource, &'t MappingConfig), String> {
    let path = template.path.display();
    let reading = |function: &'t FunctionResource| {
        function
            .mappings
            .iter()
            .find(|mapping| mapping.stream_name == stream)
            .map(|mapping| (function, mapping))
    };
    if let Some(name) = named {
        let Some(function) = template
            .functions
            .iter()
            .find(|function| function.logical_id == name || function.function_name == name)
        else {
            return Err(format!(
                "--function {name}: {path} has no function of that logical id or name with a \
                 Kinesis event"
            ));
        };
        return reading(function).ok_or_else(|| {
            format!("--function {name}: it has no Kinesis event on stream {stream}")
        });
    }
    let candidates: Vec<_> = template.functions.iter().filter_map(reading).collect();
    match candidates.as_slice() {
        [only] => Ok(*only),
        [] => Err(format!(
            "no function of {path} reads stream {stream}: name one with --function"
        )),
        several => Err(format!(
            "{} functions of {path} read stream {stream} ({}): name one with --function",
            several.len(),
            several
                .iter()
                .map(|(function, _)| function.logical_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// What the function's answer means for the batch, as the mapping would read it.
fn answer_text(
    outcome: &InvokeOutcome,
    records: &[Record],
    report_batch_item_failures: bool,
) -> String {
    const AGAIN: &str = "the mapping would deliver the whole batch again";
    match outcome {
        InvokeOutcome::Response(body) => {
            let sequence_numbers: Vec<SequenceNumber> = records
                .iter()
                .map(|record| record.sequence_number.clone())
                .collect();
            let read = read_response(body, &sequence_numbers, report_batch_item_failures);
            let dropped = match read.dropped.len() {
                0 => String::new(),
                count => format!(", {count} of them dropped"),
            };
            match read.verdict {
                Verdict::Success => format!("settled all {}{dropped}", records.len()),
                Verdict::PartialFailure { first_failed } => {
                    let held = &records[first_failed];
                    let before = match first_failed {
                        0 => "it is the first".to_owned(),
                        settled => format!("the {settled} before it settled"),
                    };
                    format!(
                        "held record {} of {} (sequence number {}, partition key {}); \
                         {before}{dropped}",
                        first_failed + 1,
                        records.len(),
                        held.sequence_number,
                        held.partition_key,
                    )
                }
                Verdict::Failure { reason } => format!("bad response: {reason}: {AGAIN}"),
            }
        }
        InvokeOutcome::FunctionError {
            error_type,
            message,
        } => format!("function error {error_type}: {message}: {AGAIN}"),
        InvokeOutcome::Timeout => format!("timed out: {AGAIN}"),
    }
}

/// Refuses a template path with no file there, saying what the template is needed for.
pub(super) fn check_template_file(path: &Path) -> anyhow::Result<()> {
    if !path.is_file() {
        bail!(
            "{}: no template there: failures replay invokes a template's function (pass \
             --template FILE), or publishes with --to-stream STREAM",
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::UNIX_EPOCH;

    use bytes::Bytes;

    use super::*;
    use crate::template::TemplateOptions;

    const TEMPLATE: &str = "Transform: AWS::Serverless-2016-10-31
Resources:
  Shipments:
    Type: AWS::Kinesis::Stream
    Properties: {Name: shipments, ShardCount: 1}
  Retries:
    Type: AWS::Kinesis::Stream
    Properties: {Name: shipments-retry, ShardCount: 1}
  Shipping:
    Type: AWS::Serverless::Function
    Properties:
      Handler: bootstrap
      Runtime: provided.al2023
      Events:
        FromShipments:
          Type: Kinesis
          Properties: {Stream: !GetAtt Shipments.Arn, StartingPosition: TRIM_HORIZON, FunctionResponseTypes: [ReportBatchItemFailures]}
        FromRetries:
          Type: Kinesis
          Properties: {Stream: !GetAtt Retries.Arn, StartingPosition: TRIM_HORIZON}
  Audit:
    Type: AWS::Serverless::Function
    Properties:
      Handler: bootstrap
      Runtime: provided.al2023
      Events:
        FromRetries:
          Type: Kinesis
          Properties: {Stream: !GetAtt Retries.Arn, StartingPosition: TRIM_HORIZON}
";

    fn template() -> Template {
        Template::parse("/app/template.yaml", TEMPLATE, &TemplateOptions::default())
            .expect("the template reads")
    }

    #[test]
    fn the_function_is_the_one_reading_the_stream_or_the_one_named() {
        let template = template();
        let (function, mapping) = choose_function(&template, "shipments", None).unwrap();
        assert_eq!(function.logical_id, "Shipping");
        assert!(mapping.report_batch_item_failures);
        let (function, mapping) =
            choose_function(&template, "shipments-retry", Some("Shipping")).unwrap();
        assert_eq!(function.logical_id, "Shipping");
        assert_eq!(mapping.stream_name, "shipments-retry");
        assert_eq!(
            choose_function(&template, "shipments-retry", None).unwrap_err(),
            "2 functions of /app/template.yaml read stream shipments-retry (Shipping, Audit): \
             name one with --function"
        );
        assert_eq!(
            choose_function(&template, "orders", None).unwrap_err(),
            "no function of /app/template.yaml reads stream orders: name one with --function"
        );
        assert_eq!(
            choose_function(&template, "shipments", Some("Audit")).unwrap_err(),
            "--function Audit: it has no Kinesis event on stream shipments"
        );
        assert!(
            choose_function(&template, "shipments", Some("Nope"))
                .unwrap_err()
                .starts_with("--function Nope: /app/template.yaml has no function")
        );
    }

    fn records() -> Vec<Record> {
        ["49001", "49002", "49003"]
            .iter()
            .zip(["dhl-1", "fedex-2", "ups-3"])
            .map(|(sequence_number, key)| Record {
                sequence_number: sequence_number.parse().unwrap(),
                partition_key: Arc::from(key),
                data: Bytes::from_static(b"{}"),
                approximate_arrival: UNIX_EPOCH,
            })
            .collect()
    }

    fn answer(body: &str, report_batch_item_failures: bool) -> String {
        let outcome = InvokeOutcome::Response(Bytes::copy_from_slice(body.as_bytes()));
        answer_text(&outcome, &records(), report_batch_item_failures)
    }

    #[test]
    fn the_answer_is_read_as_the_mapping_reads_it() {
        assert_eq!(answer("{}", true), "settled all 3");
        assert_eq!(
            answer(
                r#"{"batchItemFailures": [{"itemIdentifier": "49003"}, {"itemIdentifier": "49002"}]}"#,
                true
            ),
            "held record 2 of 3 (sequence number 49002, partition key fedex-2); the 1 before it \
             settled"
        );
        assert_eq!(
            answer(
                r#"{"batchItemFailures": [{"itemIdentifier": "49002"}]}"#,
                false
            ),
            "settled all 3",
            "without ReportBatchItemFailures Lambda reads no body"
        );
        assert!(
            answer("not json", true).starts_with("bad response: the response is not JSON"),
            "{}",
            answer("not json", true)
        );
        let error = InvokeOutcome::FunctionError {
            error_type: esm_engine::invoke::LambdaError::ExitError.into(),
            message: "exit status 101".to_owned(),
        };
        assert_eq!(
            answer_text(&error, &records(), true),
            "function error Runtime.ExitError: exit status 101: the mapping would deliver the \
             whole batch again"
        );
    }
}
