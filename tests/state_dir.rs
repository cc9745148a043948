//! `run --state-dir`: `kill -9` of the `kinesis-esm` process while a producer puts records
//! through its Kinesis API and the function reads them, then a restart over the same state
//! directory, on the embedded defaults (no other server). No record whose `PutRecords` answered
//! is lost, no checkpoint moves backwards, and the restart resumes each shard right after the
//! checkpoint the killed run wrote; the test reports the records lost (0) and delivered twice.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use end_to_end::aws::{
    Delivery, LedgerTemplate, ScratchDir, build_ledger_function, kill_after_ledger_batches,
    kinesis_esm_run, partition_key, read_ledger, run_kinesis_esm, shipment, within,
};
use kinesis_esm::aws::{AwsConnection, SdkKinesis};
use kinesis_esm::lease::{Checkpoint, LeaseStore as _};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::state::StateDir;
use tokio::io::{AsyncBufReadExt as _, BufReader};

const STREAM: &str = "state-dir-kill";
const SHARDS: u32 = 2;
const BATCH_SIZE: u32 = 10;
/// How long the function takes per batch, so the kill lands while records are still unread.
const DELAY_MS: u64 = 40;
/// Records per `PutRecords` call of the producer.
const PUT_SIZE: u64 = 25;
/// How many batches the first run reports before it is killed.
const BATCHES_BEFORE_THE_KILL: usize = 10;

/// The checkpoint of each shard, as the state directory holds it.
async fn checkpoints(state_dir: &std::path::Path) -> BTreeMap<String, Option<SequenceNumber>> {
    let state = StateDir::open(state_dir).expect("the state directory opens");
    let leases = state.lease_store().expect("the leases read back");
    leases
        .list_leases()
        .await
        .expect("the leases list")
        .into_iter()
        .map(|lease| {
            let checkpoint = match lease.checkpoint {
                Checkpoint::SequenceNumber(number) => Some(number),
                _ => None,
            };
            (lease.shard_id, checkpoint)
        })
        .collect()
}

#[tokio::test]
async fn a_killed_run_over_a_state_dir_loses_no_acknowledged_record_and_resumes_at_its_checkpoints()
{
    build_ledger_function().await;
    let scratch = ScratchDir::new("state-dir-kill");
    let state_dir = scratch.join("state");
    let state_arg = state_dir.to_string_lossy().into_owned();
    let template = LedgerTemplate::new(STREAM, SHARDS, BATCH_SIZE, DELAY_MS);
    let (first_template, first_ledger) = template.write_as(&scratch, "first");
    let (second_template, second_ledger) = template.write_as(&scratch, "second");

    // The first run serves its Kinesis on a free port; a producer puts into it until the kill.
    let mut first = kinesis_esm_run(&[
        "--template",
        &first_template,
        "--state-dir",
        &state_arg,
        "--listen",
        "127.0.0.1:0",
    ])
    .await
    .spawn()
    .expect("kinesis-esm starts");
    let mut log = BufReader::new(first.stderr.take().expect("a piped log")).lines();
    let endpoint = within("the Kinesis API's address", async {
        loop {
            match log.next_line().await.expect("the log can be read") {
                Some(line) => {
                    if let Some(rest) = line.split("Kinesis API at ").nth(1) {
                        break rest.split_whitespace().next().unwrap().to_owned();
                    }
                }
                None => panic!("kinesis-esm ended before serving its Kinesis API"),
            }
        }
    })
    .await;
    let kinesis = SdkKinesis::connect(&AwsConnection::local(&endpoint))
        .await
        .expect("an SDK client for the run's Kinesis");
    let acknowledged: Arc<Mutex<Vec<(String, SequenceNumber)>>> = Arc::default();
    let producer = tokio::spawn({
        let acknowledged = Arc::clone(&acknowledged);
        async move {
            for call in 0.. {
                let shipments: Vec<(String, Vec<u8>)> = (0..PUT_SIZE)
                    .map(|n| {
                        let id = call * PUT_SIZE + n + 1;
                        (
                            partition_key(id),
                            serde_json::to_vec(&shipment(id)).unwrap(),
                        )
                    })
                    .collect();
                let records: Vec<(&str, &[u8])> = shipments
                    .iter()
                    .map(|(key, data)| (key.as_str(), data.as_slice()))
                    .collect();
                // Only an answered call counts: one cut short by the kill may or may not have
                // landed, as with any Kinesis.
                let Ok(outcomes) = kinesis.put_records(STREAM, &records).await else {
                    return call;
                };
                acknowledged
                    .lock()
                    .unwrap()
                    .extend(outcomes.into_iter().map(|outcome| {
                        outcome.expect("the embedded Kinesis refuses no single record")
                    }));
                tokio::time::sleep(std::time::Duration::from_millis(15)).await;
            }
            unreachable!()
        }
    });
    kill_after_ledger_batches(&mut first, &mut log, BATCHES_BEFORE_THE_KILL).await;
    let calls = within("the producer to see the kill", producer)
        .await
        .expect("the producer ends");
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        calls >= 2,
        "the producer put {calls} batches before the kill"
    );

    let at_the_kill = checkpoints(&state_dir).await;
    assert_eq!(at_the_kill.len(), SHARDS as usize, "{at_the_kill:#?}");

    // The restart: the same state directory, until every shard is settled.
    let second = run_kinesis_esm(
        "the restarted run",
        &[
            "--template",
            &second_template,
            "--state-dir",
            &state_arg,
            "--no-listen",
            "--until-idle",
        ],
    )
    .await;
    second.check_code(0, "the restarted run settles everything");
    let before = read_ledger(&first_ledger);
    let after = read_ledger(&second_ledger);

    let delivered: HashSet<_> = before
        .iter()
        .chain(&after)
        .map(Delivery::position)
        .collect();
    let lost: Vec<&(String, SequenceNumber)> = acknowledged
        .iter()
        .filter(|record| !delivered.contains(*record))
        .collect();
    let once: HashSet<_> = after.iter().map(Delivery::position).collect();
    let duplicates = before
        .iter()
        .filter(|delivery| once.contains(&delivery.position()))
        .count();
    println!(
        "kill -9 after {} acknowledged records ({calls} PutRecords) and {} deliveries: {} lost, \
         {duplicates} delivered twice",
        acknowledged.len(),
        before.len(),
        lost.len()
    );
    assert!(
        lost.is_empty(),
        "acknowledged but never delivered: {lost:#?}"
    );

    // Nothing in front of a checkpoint comes again, and each shard resumes right after it.
    let behind = |delivery: &Delivery| {
        at_the_kill[&delivery.shard_id]
            .as_ref()
            .is_some_and(|checkpoint| delivery.sequence_number <= *checkpoint)
    };
    assert!(
        !after.iter().any(behind),
        "a record covered by a checkpoint came again"
    );
    assert_eq!(
        once.len(),
        after.len(),
        "the restart delivers each record once"
    );
    let end = checkpoints(&state_dir).await;
    for (shard, checkpoint) in &at_the_kill {
        let mut records: Vec<&SequenceNumber> = acknowledged
            .iter()
            .filter(|(shard_id, _)| shard_id == shard)
            .map(|(_, sequence_number)| sequence_number)
            .collect();
        records.sort();
        let expected_first = records.iter().find(|record| {
            checkpoint
                .as_ref()
                .is_none_or(|checkpoint| **record > checkpoint)
        });
        let first_after = after.iter().find(|delivery| &delivery.shard_id == shard);
        if let Some(expected_first) = expected_first {
            assert_eq!(
                first_after.map(|delivery| &delivery.sequence_number),
                Some(*expected_first),
                "{shard} resumes right after its checkpoint"
            );
        }
        assert!(
            end[shard] >= *checkpoint,
            "{shard}: the checkpoint moved back from {checkpoint:?} to {:?}",
            end[shard]
        );
    }
}
