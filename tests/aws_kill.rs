//! `kill -9` of the `kinesis-esm` process in the middle of a run over a DynamoDB lease table,
//! then a restart over the same table by another worker: no record is lost, and only records
//! after the checkpoints the killed run had written come twice. The dead worker never gave its
//! leases up, so the restarted run waits for them to expire (`--failover-time 2s`) and takes them.

use std::collections::{BTreeMap, HashSet};

use end_to_end::aws::{
    Delivery, LedgerTemplate, LocalAws, Published, ScratchDir, build_ledger_function, by_shard,
    kill_after_ledger_batches, kinesis_esm_run, leases_by_shard, local_aws_args, read_ledger,
    run_kinesis_esm, shipment,
};
use kinesis_esm::sequence::SequenceNumber;
use shipping::Shipment;
use tokio::io::{AsyncBufReadExt as _, BufReader};

const SHIPMENTS: u64 = 300;
const SHARDS: u32 = 2;
const BATCH_SIZE: u32 = 10;
/// How long the function takes per batch: 30 batches a shard take about 2 s, time enough to land
/// the kill in the middle.
const DELAY_MS: u64 = 60;
/// How many batches the first run reports before it is killed.
const BATCHES_BEFORE_THE_KILL: usize = 12;
const FIRST_WORKER: &str = "worker-killed";
const SECOND_WORKER: &str = "worker-restarted";

#[tokio::test]
async fn a_killed_emulator_loses_nothing_and_repeats_only_what_followed_its_checkpoints() {
    let aws = LocalAws::connect().await;
    let stream = aws.create_stream("kill", SHARDS as i32).await;
    let shipments: Vec<Shipment> = (1..=SHIPMENTS).map(shipment).collect();
    let published = aws.publish_shipments(&stream, &shipments).await;
    let shards = by_shard(&published);
    assert_eq!(shards.len(), SHARDS as usize, "shipments on every shard");
    let table = aws.lease_table("kill").await;
    build_ledger_function().await;

    let scratch = ScratchDir::new("kill");
    let template = LedgerTemplate::new(&stream, SHARDS, BATCH_SIZE, DELAY_MS);
    let (first_template, first_ledger) = template.write_as(&scratch, "first");
    let (second_template, second_ledger) = template.write_as(&scratch, "second");
    let args = |template: &str, worker: &str| -> Vec<String> {
        let mut args = vec!["--template".to_owned(), template.to_owned()];
        args.extend(local_aws_args(&table));
        // Tests run side by side: none may take the default port.
        let more = [
            "--worker-id",
            worker,
            "--failover-time",
            "2s",
            "--no-listen",
        ];
        args.extend(more.map(str::to_owned));
        args
    };

    // The first run, killed once the function has reported a dozen batches.
    let first_args = args(&first_template, FIRST_WORKER);
    let first_args: Vec<&str> = first_args.iter().map(String::as_str).collect();
    let mut first = kinesis_esm_run(&first_args)
        .await
        .spawn()
        .expect("kinesis-esm starts");
    let mut log = BufReader::new(first.stderr.take().expect("a piped log")).lines();
    kill_after_ledger_batches(&mut first, &mut log, BATCHES_BEFORE_THE_KILL).await;

    let at_the_kill = leases_by_shard(&aws.raw_leases(&table).await);
    assert_eq!(at_the_kill.len(), SHARDS as usize, "{at_the_kill:#?}");
    for lease in at_the_kill.values() {
        assert_eq!(
            lease.lease_owner.as_deref(),
            Some(FIRST_WORKER),
            "a killed worker never gives its leases up: {lease:#?}"
        );
    }
    let checkpoint_at_the_kill: BTreeMap<String, Option<SequenceNumber>> = at_the_kill
        .iter()
        .map(|(shard, lease)| (shard.clone(), lease.checkpoint_sequence_number()))
        .collect();
    let mid_run = shards.iter().any(|(shard, records)| {
        checkpoint_at_the_kill[shard].as_ref() != Some(&records.last().unwrap().sequence_number)
    });
    assert!(
        mid_run,
        "the kill landed after the run: {checkpoint_at_the_kill:#?}"
    );

    // The restart: another worker over the same table, until every shard is settled.
    let second_args = args(&second_template, SECOND_WORKER);
    let mut second_args: Vec<&str> = second_args.iter().map(String::as_str).collect();
    second_args.push("--until-idle");
    let second = run_kinesis_esm("the restarted run", &second_args).await;
    second.check_code(0, "the restarted run settles everything");

    let before = read_ledger(&first_ledger);
    let after = read_ledger(&second_ledger);
    let after_checkpoint = |delivery: &Delivery| {
        checkpoint_at_the_kill[&delivery.shard_id]
            .as_ref()
            .is_none_or(|checkpoint| delivery.sequence_number > *checkpoint)
    };

    // Nothing is lost.
    let delivered: HashSet<_> = before
        .iter()
        .chain(&after)
        .map(Delivery::position)
        .collect();
    let missing: Vec<&Published> = published
        .iter()
        .filter(|record| !delivered.contains(&record.position()))
        .collect();
    assert!(missing.is_empty(), "never delivered: {missing:#?}");

    // The restart begins each shard right after the checkpoint the killed run left, and delivers
    // every record once.
    for (shard, records) in &shards {
        let first_after = after
            .iter()
            .find(|delivery| &delivery.shard_id == shard)
            .unwrap_or_else(|| panic!("nothing of {shard} after the restart"));
        let expected = records
            .iter()
            .find(|record| {
                checkpoint_at_the_kill[shard]
                    .as_ref()
                    .is_none_or(|checkpoint| record.sequence_number > *checkpoint)
            })
            .expect("the shard was not finished at the kill");
        assert_eq!(
            first_after.sequence_number, expected.sequence_number,
            "{shard}"
        );
    }
    assert!(
        after.iter().all(after_checkpoint),
        "nothing in front of a checkpoint comes again"
    );
    let once: HashSet<_> = after.iter().map(Delivery::position).collect();
    assert_eq!(
        once.len(),
        after.len(),
        "the restarted run delivers each record once"
    );

    // Duplicates: exactly the records the killed run was delivered after its last checkpoints.
    let duplicates: Vec<&Delivery> = before
        .iter()
        .filter(|delivery| once.contains(&delivery.position()))
        .collect();
    let unsettled_at_the_kill: Vec<&Delivery> = before
        .iter()
        .filter(|delivery| after_checkpoint(delivery))
        .collect();
    assert_eq!(duplicates, unsettled_at_the_kill);
    println!(
        "kill -9 after {} deliveries ({BATCHES_BEFORE_THE_KILL} batches reported): {} of \
         {SHIPMENTS} records delivered twice, all of them after the checkpoints at the kill",
        before.len(),
        duplicates.len()
    );

    // Every shard's checkpoint ends at its last record.
    let at_the_end = leases_by_shard(&aws.raw_leases(&table).await);
    for (shard, records) in &shards {
        assert_eq!(
            at_the_end[shard].checkpoint,
            records.last().unwrap().sequence_number.as_str(),
            "{shard}"
        );
    }
}
