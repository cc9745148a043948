//! The restart story on `run --state-dir`, with no DynamoDB and no other server: shipments with
//! one held are published and run until idle; the run stops; a second run over the same state
//! directory delivers the held shipment first, and every shipment behind it again, and nothing
//! before it.

use std::collections::BTreeSet;

use end_to_end::aws::{
    Delivery, LedgerTemplate, ScratchDir, build_ledger_function, partition_key, read_ledger,
    run_kinesis_esm, shipment_id, shipments_held_at,
};

const STREAM: &str = "state-dir-restart";
const SHIPMENTS: u64 = 8;
const HELD: u64 = 4;

/// The invocations in a ledger, as lists of shipment ids: a new invocation starts wherever the
/// ids stop rising (the function writes one invocation's records in one write, in shard order).
fn invocations(ledger: &[Delivery]) -> Vec<Vec<u64>> {
    let mut invocations: Vec<Vec<u64>> = Vec::new();
    for delivery in ledger {
        let id = shipment_id(&delivery.partition_key);
        match invocations.last_mut() {
            Some(last) if last.last().is_some_and(|&previous| previous < id) => last.push(id),
            _ => invocations.push(vec![id]),
        }
    }
    invocations
}

#[tokio::test]
async fn a_restart_over_the_state_dir_delivers_the_held_shipment_first_and_everything_behind_it() {
    build_ledger_function().await;
    let scratch = ScratchDir::new("state-dir-restart");
    let state_dir = scratch.join("state").to_string_lossy().into_owned();
    let records = scratch.join("shipments.jsonl");
    let lines: String = shipments_held_at(SHIPMENTS, HELD)
        .iter()
        .map(|shipment| {
            format!(
                "{}\n",
                serde_json::json!({"partitionKey": partition_key(shipment.id), "data": shipment})
            )
        })
        .collect();
    std::fs::write(&records, lines).expect("the records file is written");
    let run = |name: &str, put: bool| {
        let (template, ledger) = LedgerTemplate::new(STREAM, 1, 100, 0).write_as(&scratch, name);
        let mut args: Vec<String> = [
            "--template",
            &template,
            "--state-dir",
            &state_dir,
            "--until-idle",
            "--no-listen",
            "--retry-pause",
            "10ms",
            "--max-retry-pause",
            "20ms",
        ]
        .map(str::to_owned)
        .into();
        if put {
            args.extend(["--put".to_owned(), records.to_string_lossy().into_owned()]);
        }
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let output = run_kinesis_esm("a run until idle", &args).await;
            (output, read_ledger(&ledger))
        }
    };

    let (first, first_ledger) = run("first", true).await;
    assert_eq!(
        first.code,
        Some(1),
        "held at shipment {HELD}:\n{}",
        first.stderr
    );
    let first_invocations = invocations(&first_ledger);
    let behind_the_held: Vec<u64> = (HELD..=SHIPMENTS).collect();
    assert_eq!(
        first_invocations.first(),
        Some(&(1..=SHIPMENTS).collect::<Vec<u64>>()),
        "the first invocation has every shipment: {first_invocations:?}"
    );
    assert!(
        first_invocations.len() >= 2
            && first_invocations[1..]
                .iter()
                .all(|invocation| *invocation == behind_the_held),
        "the retries start at the held shipment: {first_invocations:?}"
    );

    // The second run publishes nothing: the records are those the state directory kept.
    let (second, second_ledger) = run("second", false).await;
    assert_eq!(second.code, Some(1), "held again:\n{}", second.stderr);
    let resumed = "the counts are this run's: it resumed from the checkpoints kept in the state \
                   directory";
    assert!(
        !first.stdout.contains(resumed) && second.stdout.contains(resumed),
        "only the second run resumed from stored checkpoints:\n{}\n---\n{}",
        first.stdout,
        second.stdout
    );
    let second_invocations = invocations(&second_ledger);
    assert_eq!(
        second_invocations.first(),
        Some(&behind_the_held),
        "the held shipment comes first, then every shipment behind it: {second_invocations:?}"
    );
    assert!(
        second_invocations
            .iter()
            .all(|invocation| *invocation == behind_the_held),
        "nothing before the held shipment comes again: {second_invocations:?}"
    );
    let positions =
        |ledger: &[Delivery]| -> BTreeSet<_> { ledger.iter().map(Delivery::position).collect() };
    let held_and_behind: BTreeSet<_> = first_ledger
        .iter()
        .filter(|delivery| shipment_id(&delivery.partition_key) >= HELD)
        .map(Delivery::position)
        .collect();
    assert_eq!(
        positions(&second_ledger),
        held_and_behind,
        "the same records, at the same sequence numbers"
    );
}
