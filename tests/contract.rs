//! The checkpoint contract, row by row, with the shipping function behind the mapping: each
//! scenario runs once in process (`InProcess::service(shipping::function())`) and once through the
//! Runtime API with the function's own `bootstrap`.
//!
//! | shipment | outcome | what the mapping must do |
//! |---|---|---|
//! | empty address | drop | deliver it once, never again; the checkpoint passes it |
//! | unknown carrier | retry | stop the shard's checkpoint right in front of it; other shards go on |
//! | unknown carrier, retry cap | retry | retry the cap's number of times, discard, move on |

use std::sync::Arc;

use end_to_end::{Observed, TestStream, Via, at, config, json_fields, shard, shipment};
use kinesis_esm::config::StartingPosition;
use kinesis_esm::mapping::ShardPhase;
use serde_json::{Value, json};

const ADDRESS: &str = "1 Quay Street, Dublin";

/// A dropped shipment is delivered once, never again, and the checkpoint passes it.
async fn a_dropped_shipment_is_delivered_once(via: Via) {
    let stream = TestStream::create(&format!("dropped-{}", via.name()), 1);
    let shard_id = stream.open_shards()[0].shard_id.clone();
    let booked = stream.put("a", shipment(1, ADDRESS, "dhl")).sequence_number;
    let dropped = stream.put("b", shipment(2, "", "ups")).sequence_number;
    let behind = stream.put("c", shipment(3, ADDRESS, "ups")).sequence_number;
    let invoker = via.shipping().await;
    let mut observed = Observed::start(
        config("shipping", &stream.name, StartingPosition::TrimHorizon),
        &stream,
        Arc::clone(&invoker),
    );
    observed.wait_for_checkpoint(&shard_id, &at(&behind)).await;

    // A record put later is delivered on its own: the dropped one does not come back with it.
    let later = stream.put("d", shipment(4, ADDRESS, "dhl")).sequence_number;
    let status = observed.wait_for_checkpoint(&shard_id, &at(&later)).await;
    let shard = shard(&status, &shard_id);
    assert_eq!(
        (
            shard.acked,
            shard.dropped,
            shard.discarded,
            shard.held.as_ref()
        ),
        (3, 1, 0, None),
        "{via:?}: acked, dropped, discarded, held: {shard:#?}"
    );
    assert_eq!(
        observed.invocations_on(&shard_id),
        vec![vec![booked, dropped.clone(), behind], vec![later]],
        "{via:?}: the dropped shipment is delivered once"
    );
    observed.stop().await;
    invoker.shutdown().await;
}

/// A held shipment stops its shard's checkpoint right in front of it; with unlimited retries the
/// shard stays blocked, redelivering the held shipment with the ones behind it, while another
/// shard of the stream moves on to its newest record.
async fn a_held_shipment_blocks_only_its_shard(via: Via) {
    let stream = TestStream::create(&format!("held-{}", via.name()), 2);
    let shards = stream.open_shards();
    let (blocked, free) = (shards[0].shard_id.clone(), shards[1].shard_id.clone());
    let before = stream.put_on(&blocked, "a", shipment(1, ADDRESS, "dhl"));
    let held = stream.put_on(&blocked, "b", shipment(2, ADDRESS, "fedex"));
    let behind = stream.put_on(&blocked, "c", shipment(3, ADDRESS, "ups"));
    stream.put_on(&free, "d", shipment(4, ADDRESS, "dhl"));
    let free_last = stream.put_on(&free, "e", shipment(5, ADDRESS, "ups"));
    let invoker = via.shipping().await;
    let mut config = config("shipping", &stream.name, StartingPosition::TrimHorizon);
    config.maximum_retry_attempts = None;
    let mut observed = Observed::start(config, &stream, Arc::clone(&invoker));

    let status = observed
        .wait_for("the held shipment to fail three times", |status| {
            status
                .shards
                .get(&blocked)
                .and_then(|shard| shard.held.as_ref())
                .is_some_and(|held| held.failed_deliveries >= 3)
        })
        .await;
    let blocked_status = shard(&status, &blocked);
    assert_eq!(blocked_status.phase, ShardPhase::Held, "{via:?}");
    assert_eq!(
        blocked_status
            .held
            .as_ref()
            .map(|held| &held.sequence_number),
        Some(&held),
        "{via:?}: the shard is blocked on the unknown carrier"
    );
    assert_eq!(
        blocked_status.checkpoint,
        Some(at(&before)),
        "{via:?}: the checkpoint stops right in front of the held shipment"
    );
    let invocations = observed.invocations_on(&blocked);
    assert_eq!(
        invocations[0],
        [before.clone(), held.clone(), behind.clone()]
    );
    assert!(invocations.len() >= 4, "{via:?}: {invocations:?}");
    for redelivery in &invocations[1..] {
        assert_eq!(
            redelivery,
            &[held.clone(), behind.clone()],
            "{via:?}: the held shipment comes again with the one behind it"
        );
    }

    // The other shard is not held up: it reaches its newest record, and keeps going.
    observed.wait_for_checkpoint(&free, &at(&free_last)).await;
    let free_later = stream.put_on(&free, "f", shipment(6, ADDRESS, "dhl"));
    let status = observed.wait_for_checkpoint(&free, &at(&free_later)).await;
    let blocked_status = shard(&status, &blocked);
    assert_eq!(blocked_status.checkpoint, Some(at(&before)), "{via:?}");
    assert_eq!(
        blocked_status.acked, 1,
        "{via:?}: only the shipment before it"
    );
    assert_eq!(shard(&status, &free).acked, 3, "{via:?}");
    observed.stop().await;
    invoker.shutdown().await;
}

/// With `MaximumRetryAttempts: 2` the held batch is retried twice after its first failure, then
/// discarded with an on-failure record, and the shard moves on past it.
async fn a_retry_cap_discards_the_held_batch(via: Via) {
    let stream = TestStream::create(&format!("capped-{}", via.name()), 1);
    let shard_id = stream.open_shards()[0].shard_id.clone();
    let before = stream.put("a", shipment(1, ADDRESS, "dhl")).sequence_number;
    let held = stream
        .put("b", shipment(2, ADDRESS, "fedex"))
        .sequence_number;
    let behind = stream.put("c", shipment(3, ADDRESS, "ups")).sequence_number;
    let invoker = via.shipping().await;
    let mut config = config("shipping", &stream.name, StartingPosition::TrimHorizon);
    config.maximum_retry_attempts = Some(2);
    let mut observed = Observed::start(config, &stream, Arc::clone(&invoker));

    let status = observed
        .wait_for("the held batch to be discarded", |status| {
            !status.on_failure.is_empty()
        })
        .await;
    assert_eq!(shard(&status, &shard_id).checkpoint, Some(at(&behind)));
    assert_eq!(
        status.on_failure.len(),
        1,
        "{via:?}: {:#?}",
        status.on_failure
    );
    let record = &status.on_failure[0];
    let expected = json!({
        "condition": "RetryAttemptsExhausted",
        "approximateInvokeCount": 3,
        "functionError": null,
        "statusCode": 200,
        "shardId": shard_id,
        "startSequenceNumber": held.as_str(),
        "endSequenceNumber": behind.as_str(),
        "batchSize": 2,
        "streamArn": stream.kinesis.stream_arn(&stream.name),
    });
    assert_eq!(
        on_failure_summary(record),
        expected,
        "{via:?}: the on-failure record {record:#}"
    );
    // The first invocation settled the shipment before the held one; the narrowed batch then
    // failed once and was retried exactly twice.
    assert_eq!(
        observed.invocations_on(&shard_id),
        vec![
            vec![before, held.clone(), behind.clone()],
            vec![held.clone(), behind.clone()],
            vec![held.clone(), behind.clone()],
            vec![held.clone(), behind.clone()],
        ],
        "{via:?}"
    );

    let after = stream.put("d", shipment(4, ADDRESS, "dhl")).sequence_number;
    let status = observed.wait_for_checkpoint(&shard_id, &at(&after)).await;
    let shard = shard(&status, &shard_id);
    assert_eq!(
        (shard.acked, shard.discarded, shard.held.as_ref()),
        (2, 2, None),
        "{via:?}: {shard:#?}"
    );
    assert_eq!(
        observed.invocations_on(&shard_id).last(),
        Some(&vec![after]),
        "{via:?}: the shard moved on past the discarded batch"
    );
    assert_eq!(observed.delivery_counts()[&held], 4, "{via:?}");
    observed.stop().await;
    invoker.shutdown().await;
}

/// The fields of an on-failure record that a test can know in advance.
fn on_failure_summary(record: &Value) -> Value {
    json_fields(
        record,
        &[
            ("condition", "/requestContext/condition"),
            (
                "approximateInvokeCount",
                "/requestContext/approximateInvokeCount",
            ),
            ("functionError", "/responseContext/functionError"),
            ("statusCode", "/responseContext/statusCode"),
            ("shardId", "/KinesisBatchInfo/shardId"),
            (
                "startSequenceNumber",
                "/KinesisBatchInfo/startSequenceNumber",
            ),
            ("endSequenceNumber", "/KinesisBatchInfo/endSequenceNumber"),
            ("batchSize", "/KinesisBatchInfo/batchSize"),
            ("streamArn", "/KinesisBatchInfo/streamArn"),
        ],
    )
}

end_to_end::scenario_tests! {
    a_dropped_shipment_is_delivered_once {
        a_dropped_shipment_is_delivered_once_in_process(Via::InProcess),
        a_dropped_shipment_is_delivered_once_through_the_runtime_api(Via::RuntimeApi),
    }
    a_held_shipment_blocks_only_its_shard {
        a_held_shipment_blocks_only_its_shard_in_process(Via::InProcess),
        a_held_shipment_blocks_only_its_shard_through_the_runtime_api(Via::RuntimeApi),
    }
    a_retry_cap_discards_the_held_batch {
        a_retry_cap_discards_the_held_batch_in_process(Via::InProcess),
        a_retry_cap_discards_the_held_batch_through_the_runtime_api(Via::RuntimeApi),
    }
}
