//! `kinesis-esm run --kinesis-endpoint` over kinesis-local with a template whose event reads
//! through an enhanced fan-out consumer (`docs/event-source-mapping.md` §10): the run registers
//! the consumer on kinesis-local, and the records put with the SDK are pushed to the function by
//! `SubscribeToShard` (through `aws-sdk-kinesis`), in order on each shard; a held record holds
//! its shard, redelivered while the other shard goes on; and the checkpoints land in the
//! DynamoDB lease table as the checkpoint contract says (the last settled record: right in front
//! of the held one, and each other shard's newest record).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use end_to_end::aws::{
    Delivery, EsmProcess, LedgerTemplate, LocalAws, ScratchDir, build_ledger_function, by_shard,
    leases_by_shard, local_aws_args, read_ledger, shipment_id, shipments_held_at, within,
};
use kinesis_esm::sequence::SequenceNumber;

const SHARDS: u32 = 2;
const SHIPMENTS: u64 = 40;
/// The shipment the shipping function holds (its carrier is unknown); retries are unlimited.
const HELD: u64 = 25;
const CONSUMER: &str = "ledger-reader";
/// How often the test looks at the ledger and the lease table.
const LOOK_EVERY: Duration = Duration::from_millis(200);
/// How long the records may take to be delivered and checkpointed.
const WAIT: Duration = Duration::from_secs(90);

/// The first delivery of each record, shard by shard, in the order the function was given them.
fn first_deliveries(ledger: &[Delivery]) -> BTreeMap<String, Vec<SequenceNumber>> {
    let mut seen = HashSet::new();
    let mut shards: BTreeMap<String, Vec<SequenceNumber>> = BTreeMap::new();
    for delivery in ledger {
        if seen.insert(delivery.position()) {
            shards
                .entry(delivery.shard_id.clone())
                .or_default()
                .push(delivery.sequence_number.clone());
        }
    }
    shards
}

#[tokio::test]
async fn a_mapping_reads_kinesis_local_through_its_consumer_in_order_held_and_checkpointed() {
    let aws = LocalAws::connect().await;
    let stream = aws.create_stream("fan-out", SHARDS as i32).await;
    let table = aws.lease_table("fan-out").await;
    build_ledger_function().await;
    let scratch = ScratchDir::new("fan-out");
    let template = scratch.join("template.yaml");
    let ledger = scratch.join("ledger");
    LedgerTemplate {
        stream: stream.clone(),
        shards: SHARDS,
        batch_size: 10,
        ledger: ledger.clone(),
        delay_ms: 0,
    }
    .write_through_consumer(&template, CONSUMER);
    let template = template.to_string_lossy();
    let lease_args = local_aws_args(&table);
    let mut run = EsmProcess::start(
        &[
            &["--template", &template][..],
            &lease_args.each_ref().map(String::as_str),
            // Tests run side by side: none may take the default port.
            &[
                "--retry-pause",
                "200ms",
                "--max-retry-pause",
                "200ms",
                "--no-listen",
            ],
        ]
        .concat(),
        &scratch.join("run.log"),
    )
    .await;

    // The run registered the consumer on kinesis-local.
    let stream_arn = aws
        .kinesis()
        .client()
        .describe_stream_summary()
        .stream_name(&stream)
        .send()
        .await
        .expect("kinesis-local describes the stream")
        .stream_description_summary
        .expect("a summary")
        .stream_arn;
    within("the consumer to be registered", async {
        loop {
            let consumers = aws
                .kinesis()
                .client()
                .list_stream_consumers()
                .stream_arn(&stream_arn)
                .send()
                .await
                .expect("kinesis-local lists the consumers")
                .consumers
                .unwrap_or_default();
            if consumers
                .iter()
                .any(|consumer| consumer.consumer_name == CONSUMER)
            {
                return;
            }
            assert_eq!(run.ended(), None, "the run ended: {}", log(&scratch));
            tokio::time::sleep(LOOK_EVERY).await;
        }
    })
    .await;

    let published = aws
        .publish_shipments(&stream, &shipments_held_at(SHIPMENTS, HELD))
        .await;
    let shards = by_shard(&published);
    assert_eq!(shards.len(), SHARDS as usize, "shipments on every shard");
    let held = published
        .iter()
        .find(|record| shipment_id(&record.partition_key) == HELD)
        .expect("the held shipment was published")
        .clone();
    // The checkpoints the contract asks for: the last settled record of each shard, which on
    // the held one's shard is the record right in front of it.
    let expected: BTreeMap<String, String> = shards
        .iter()
        .map(|(shard_id, records)| {
            let last_settled = if *shard_id == held.shard_id {
                records
                    .iter()
                    .take_while(|record| record.sequence_number != held.sequence_number)
                    .last()
            } else {
                records.last()
            };
            let checkpoint = last_settled.map_or("TRIM_HORIZON".to_owned(), |record| {
                record.sequence_number.to_string()
            });
            (shard_id.clone(), checkpoint)
        })
        .collect();

    // How many records of each shard must reach the function: all, but on the held one's
    // shard only those up to it (a batch retried after a partial response is the rest of the
    // same batch, so records behind it may never be delivered while it is held).
    let must_reach: BTreeMap<String, usize> = shards
        .iter()
        .map(|(shard_id, records)| {
            let count = match records.iter().position(|record| *record == held) {
                Some(at) => at + 1,
                None => records.len(),
            };
            (shard_id.clone(), count)
        })
        .collect();
    let started = std::time::Instant::now();
    let (deliveries, checkpoints) = {
        loop {
            let deliveries = read_ledger(&ledger);
            let checkpoints: BTreeMap<String, String> =
                leases_by_shard(&aws.raw_leases(&table).await)
                    .into_iter()
                    .map(|(shard_id, lease)| (shard_id, lease.checkpoint))
                    .collect();
            let held_deliveries = deliveries
                .iter()
                .filter(|delivery| delivery.position() == held.position())
                .count();
            let first = first_deliveries(&deliveries);
            let reached = must_reach
                .iter()
                .all(|(shard_id, count)| first.get(shard_id).map_or(0, Vec::len) >= *count);
            if reached && held_deliveries >= 3 && checkpoints == expected {
                break (deliveries, checkpoints);
            }
            assert_eq!(run.ended(), None, "the run ended: {}", log(&scratch));
            assert!(
                started.elapsed() < WAIT,
                "after {WAIT:?}: {} deliveries ({held_deliveries} of the held one), first \
                 deliveries {:?} of {must_reach:?}, checkpoints {checkpoints:#?}, expected \
                 {expected:#?}; the run's log:\n{}",
                deliveries.len(),
                first.values().map(Vec::len).collect::<Vec<_>>(),
                log(&scratch)
            );
            tokio::time::sleep(LOOK_EVERY).await;
        }
    };

    // In order on each shard: each record's first delivery comes in its shard's order, every
    // record of the other shards delivered.
    let first = first_deliveries(&deliveries);
    for (shard_id, records) in &shards {
        let in_order: Vec<SequenceNumber> = records
            .iter()
            .map(|record| record.sequence_number.clone())
            .collect();
        let delivered = &first[shard_id];
        assert_eq!(delivered[..], in_order[..delivered.len()], "{shard_id}");
        if *shard_id != held.shard_id {
            assert_eq!(delivered.len(), in_order.len(), "{shard_id}");
        }
    }
    // The held record holds its shard: it is delivered again, and no record in front of it
    // is (every batch after the first starts at it).
    let redelivered: HashSet<(String, SequenceNumber)> = {
        let mut seen = HashSet::new();
        deliveries
            .iter()
            .filter(|delivery| !seen.insert(delivery.position()))
            .map(Delivery::position)
            .collect()
    };
    assert!(redelivered.contains(&held.position()), "{deliveries:#?}");
    for position in &redelivered {
        assert_eq!(position.0, held.shard_id, "only the held shard repeats");
        assert!(
            position.1 >= held.sequence_number,
            "{position:?} is in front of the held record yet came again"
        );
    }
    // Still held a while later: the checkpoint does not pass it.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let later = leases_by_shard(&aws.raw_leases(&table).await);
    assert_eq!(
        later[&held.shard_id].checkpoint,
        checkpoints[&held.shard_id]
    );

    // A run stopped with a shard blocked on a held record says so (exit 1).
    assert_eq!(run.stop().await, Some(1), "{}", log(&scratch));
}

/// The run's log, for a failure's message.
fn log(scratch: &ScratchDir) -> String {
    std::fs::read_to_string(scratch.join("run.log")).unwrap_or_default()
}
