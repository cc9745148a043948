//! What `kinesis-esm run` and `kinesis-esm status` tell a user, through the real CLI: records
//! counted apart from deliveries so that they add up to what was published, the retry a held
//! shard waits for, discards and where they went, `--fail-on-discard`, and the warning of a
//! misconfigured mapping (`aws_lease_warning.rs` has the warning of a lease left by another
//! stream of the same name).

use std::time::Duration;

use end_to_end::run::{
    Running, check_row, cli_template, kinesis_esm_with, main_command, records, status_output,
    statuses, temp_file,
};
use end_to_end::{fixture, shipping_bootstrap};
use kinesis_esm::mapping::InvocationVerdict;

/// How long a held shipment waits for its retry in [`the_records_add_up_with_acks_drops_holds_and_a_discard`]:
/// long enough to read the status while it waits, on a busy machine.
const RETRY_PAUSE: &str = "8s";

/// Reads `kinesis-esm status` from the run at `endpoint` until `ready` accepts its text tree.
async fn status_until(endpoint: &str, ready: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        if let Some(tree) = status_output(endpoint, false).await {
            if ready(&tree) {
                return tree;
            }
            last = tree;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the status never became what the test waits for; the last one:\n{last}");
}

/// Eight shipments one at a time, `MaximumRetryAttempts: 1`, no on-failure destination: 1, 2, 5
/// are booked (acked), 3 has no address (dropped), 4 is for fedex, which the function does not
/// know, and is discarded after its one retry, and 6 (fedex too) is held, with 7 and 8 behind it,
/// while it waits for its retry. Stopped then (SIGTERM), the run's counts add up to the 8
/// published: 3 acked + 1 dropped + 1 discarded + 3 held; the deliveries (7) and the retries (1,
/// shipment 4's) are counted apart.
#[tokio::test]
async fn the_records_add_up_with_acks_drops_holds_and_a_discard() {
    shipping_bootstrap().await;
    let mut run = Running::start_with(
        &cli_template("summary-counts.yaml"),
        &fixture("records/summary-counts.jsonl"),
        &[
            "--retry-pause",
            RETRY_PAUSE,
            "--max-retry-pause",
            RETRY_PAUSE,
        ],
    )
    .await;
    let endpoint = run.kinesis_endpoint().await;
    run.wait_for_line("batch discarded").await;

    // While shipment 6 waits for its retry, the text status says which retry it waits for, and
    // what was discarded.
    let tree = status_until(&endpoint, |tree| tree.contains("retry 1 of 1, next in ")).await;
    assert!(tree.contains("  held  checkpoint "), "{tree}");
    assert!(
        tree.contains("(1 failed delivery; retry 1 of 1, next in "),
        "{tree}"
    );
    assert!(tree.contains("  discarded 1 (the last: "), "{tree}");
    assert!(tree.contains(", RetryAttemptsExhausted)"), "{tree}");
    assert!(
        tree.contains("1 record in 1 batch discarded (no on-failure destination)"),
        "{tree}"
    );
    // The shard's newest invocations, with what each answer did: shipment 3 dropped, 4 held
    // twice and then discarded, 5 booked, 6 held.
    let recent_lines: Vec<&str> = tree
        .lines()
        .skip_while(|line| !line.contains("the last 5 of 7 invocations:"))
        .skip(1)
        .take(5)
        .collect();
    let verdicts: Vec<&str> = recent_lines
        .iter()
        .map(|line| {
            assert!(line.contains(", 1 record, "), "{tree}");
            line.rsplit_once(" ms: ")
                .or_else(|| line.rsplit_once(" µs: "))
                .or_else(|| line.rsplit_once(" s: "))
                .expect("a duration and a verdict")
                .1
        })
        .collect();
    let expected = [
        "all settled, 1 dropped",
        "held at ",
        "held at ",
        "all acked",
        "held at ",
    ];
    assert_eq!(verdicts.len(), expected.len(), "{tree}");
    for (verdict, start) in verdicts.iter().zip(expected) {
        assert!(
            verdict.starts_with(start),
            "{verdict:?}, not {start:?}: {tree}"
        );
    }
    assert!(
        verdicts[2].ends_with("(0 settled before it), then discarded"),
        "{tree}"
    );
    assert!(!verdicts[1].contains("discarded"), "{tree}");
    // The JSON has every invocation kept (the held shipment's retry may have come meanwhile:
    // an eighth).
    let statuses = statuses(&endpoint).await;
    let shard = statuses[0].shards.values().next().expect("one shard");
    let kinds: Vec<(&str, bool)> = shard
        .recent_invocations
        .iter()
        .take(7)
        .map(|invocation| (invocation.verdict.kind(), invocation.discarded))
        .collect();
    assert_eq!(
        kinds,
        [
            ("all_acked", false),
            ("all_acked", false),
            ("all_acked", false),
            ("held_at", false),
            ("held_at", true),
            ("all_acked", false),
            ("held_at", false),
        ],
        "{:#?}",
        shard.recent_invocations
    );
    let held = shard.held.as_ref().expect("shipment 6 is held");
    let shipment_6 = shard.recent_invocations.iter().nth(6).unwrap();
    assert_eq!(
        shipment_6.verdict,
        InvocationVerdict::HeldAt {
            sequence_number: held.sequence_number.clone(),
            settled: 0
        }
    );
    assert_eq!(
        (&shipment_6.first, &shipment_6.last),
        (&held.sequence_number, &held.sequence_number)
    );
    assert_eq!(
        shard.recent_invocations.iter().nth(2).map(|i| &i.verdict),
        Some(&InvocationVerdict::AllAcked { dropped: 1 })
    );

    run.send_sigterm();
    let run = run.ended_within(Duration::from_secs(60)).await;
    assert_eq!(run.code, Some(1), "held at the end: {run:#?}");
    check_row(
        &run,
        &[
            ("state", "held"),
            ("records", "8"),
            ("acked", "3"),
            ("dropped", "1"),
            ("discarded", "1"),
            ("held", "3"),
            ("deliveries", "7"),
            ("invocations", "7"),
            ("retries", "1"),
            ("splits", "0"),
        ],
    );
    assert!(
        run.stdout.contains(
            "8 records: 3 acked, 1 dropped, 1 discarded, 3 held; 7 deliveries in 7 invocations, \
             1 retry, 0 splits"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("1 record in 1 batch discarded (no on-failure destination)"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("sent to"), "{}", run.stdout);
}

/// `--fail-on-discard`: the README's main command discards the held shipment's batch, and exits 3
/// instead of 0, the summary printed all the same and naming the destination.
#[tokio::test]
async fn fail_on_discard_makes_a_run_that_discarded_exit_3() {
    let run = main_command(&["--fail-on-discard"]).await;
    assert_eq!(run.code, Some(3), "{run:#?}");
    check_row(
        &run,
        &[("records", "12"), ("discarded", "6"), ("held", "0")],
    );
    assert!(
        run.stdout.contains(
            "6 records in 1 batch discarded and sent to the on-failure destination Queue"
        ),
        "{}",
        run.stdout
    );

    // Nothing discarded: 0 with the option too.
    let run = kinesis_esm_with(
        &cli_template("without-report-batch-item-failures.yaml"),
        &records(),
        &["--fail-on-discard"],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
}

/// The function names shipment 6 (fedex) in `batchItemFailures`, but the mapping does not ask
/// for the partial response: Lambda settles the batch all the same, and the run warns once,
/// naming the record and the line to add.
#[tokio::test]
async fn a_partial_response_the_mapping_ignores_is_warned_of_once() {
    shipping_bootstrap().await;
    let template = cli_template("without-report-batch-item-failures.yaml");
    let run = kinesis_esm_with(&template, &records(), &[]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    check_row(
        &run,
        &[
            ("records", "6"),
            ("discarded", "0"),
            ("held", "0"),
            ("retries", "0"),
        ],
    );
    let warning = "the function answered with batchItemFailures, but its event source mapping \
                   has no `FunctionResponseTypes: [ReportBatchItemFailures]`";
    assert_eq!(
        run.stderr.matches(warning).count(),
        1,
        "warned once: {}",
        run.stderr
    );
    let line = run
        .stderr
        .lines()
        .find(|line| line.contains(warning))
        .expect("the warning");
    assert!(
        line.contains("add `FunctionResponseTypes: [ReportBatchItemFailures]` to the event source's Properties"),
        "{line}"
    );
    // The held shipment's sequence number, as the function named it.
    let named = line
        .split("records=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the records named");
    assert!(
        named.len() == 56 && named.bytes().all(|byte| byte.is_ascii_digit()),
        "{line}"
    );
}

/// A record the shipping function cannot decode (a producer writing another format) is dropped
/// by the adapter, and counted apart from the handler's drop: the summary's `undecodable`
/// column and totals say which records point at a producer rather than at the handler.
#[tokio::test]
async fn undecodable_records_are_counted_apart_from_the_handlers_drops() {
    shipping_bootstrap().await;
    let records = temp_file(
        "undecodable.jsonl",
        concat!(
            r#"{"partitionKey": "shipment-1", "data": {"id": 1, "address": "1 Quay Street, Dublin", "carrier": "dhl"}}"#,
            "\n",
            r#"{"partitionKey": "legacy-producer", "data": "id=2;carrier=dhl"}"#,
            "\n",
            r#"{"partitionKey": "shipment-3", "data": {"id": 3, "address": "", "carrier": "dhl"}}"#,
            "\n",
        ),
    );
    let run = kinesis_esm_with(&cli_template("summary-counts.yaml"), &records, &[]).await;
    std::fs::remove_file(&records).expect("cleaned");
    assert_eq!(run.code, Some(0), "{run:#?}");
    check_row(
        &run,
        &[
            ("records", "3"),
            ("acked", "1"),
            ("dropped", "1"),
            ("undecodable", "1"),
            ("discarded", "0"),
            ("held", "0"),
        ],
    );
    assert!(
        run.stdout
            .contains("3 records: 1 acked, 1 dropped, 1 undecodable, 0 discarded, 0 held;"),
        "{}",
        run.stdout
    );
}
