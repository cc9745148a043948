//! The shipping function's contract, record by record, shown with the `lambda_kinesis` testing
//! kit: build the event Lambda would send, settle it with `ship`, and read what Lambda is told
//! and where the shard's checkpoint then stands.
//!
//! Run with `cargo test -p shipping --test contract`.

use lambda_kinesis::testing::{TestEvent, settle};
use lambda_kinesis::{
    Checkpoint, Context, DropReason, HoldReason, KinesisAdapter, KinesisBatch, RecordOutcome,
    RejectionKind, SkipReason, serde_json, tokio,
};
use shipping::{Shipment, ship};

fn shipment(id: u64, address: &str, carrier: &str) -> Shipment {
    Shipment {
        id,
        address: address.to_owned(),
        carrier: carrier.to_owned(),
    }
}

const AMSTERDAM: &str = "Keizersgracht 123, 1015 CJ Amsterdam";
const PARIS: &str = "Rue de Rivoli 10, 75001 Paris";

#[tokio::test(crate = "lambda_kinesis::tokio")]
async fn a_shipment_with_an_address_and_a_known_carrier_is_booked() {
    let event = TestEvent::new()
        .json_keyed("customer-17", &shipment(1, AMSTERDAM, "dhl"))
        .json_keyed("customer-42", &shipment(2, PARIS, "ups"));

    let settlement = settle(ship, &event).await;

    assert_eq!(
        settlement.outcomes(),
        [RecordOutcome::Acked, RecordOutcome::Acked]
    );
    assert_eq!(
        settlement.checkpoint(),
        Checkpoint::After(event.sequence_number(1))
    );
    let response = serde_json::to_string(&settlement.response()).unwrap();
    assert_eq!(response, r#"{"batchItemFailures":[]}"#);
}

#[tokio::test(crate = "lambda_kinesis::tokio")]
async fn a_shipment_without_an_address_is_dropped_and_never_comes_back() {
    let event = TestEvent::new()
        .json(&shipment(1, "", "dhl"))
        .json(&shipment(2, PARIS, "ups"));

    let settlement = settle(ship, &event).await;

    assert_eq!(
        settlement.outcomes(),
        [
            RecordOutcome::Dropped(DropReason::Handler),
            RecordOutcome::Acked
        ]
    );
    // Lambda sees a full success: the checkpoint passes the dropped shipment.
    assert_eq!(
        settlement.checkpoint(),
        Checkpoint::After(event.sequence_number(1))
    );
    assert_eq!(settlement.response().item_identifier(), None);
    assert_eq!(settlement.response().dropped(), [event.sequence_number(0)]);
}

#[tokio::test(crate = "lambda_kinesis::tokio")]
async fn a_shipment_for_an_unknown_carrier_holds_the_shipments_behind_it() {
    let event = TestEvent::new()
        .json(&shipment(1, AMSTERDAM, "dhl"))
        .json(&shipment(2, PARIS, "fedex"))
        .json(&shipment(3, AMSTERDAM, "ups"))
        .json(&shipment(4, PARIS, "dhl"));

    let settlement = settle(ship, &event).await;

    let behind = RecordOutcome::Skipped(SkipReason::BehindHeldRecord);
    assert_eq!(
        settlement.outcomes(),
        [
            RecordOutcome::Acked,
            RecordOutcome::Held(HoldReason::Retry),
            behind.clone(),
            behind
        ]
    );
    // The response names the held shipment; Lambda checkpoints in front of it and delivers it
    // and the two behind it again.
    let response = serde_json::to_string(&settlement.response()).unwrap();
    assert_eq!(
        response,
        format!(
            r#"{{"batchItemFailures":[{{"itemIdentifier":"{}"}}]}}"#,
            event.sequence_number(1)
        )
    );
    assert_eq!(
        settlement.checkpoint(),
        Checkpoint::After(event.sequence_number(0))
    );
    let again: Vec<&str> = settlement
        .redelivered()
        .map(|record| record.sequence_number())
        .collect();
    assert_eq!(again, [1, 2, 3].map(|index| event.sequence_number(index)));
}

#[tokio::test(crate = "lambda_kinesis::tokio")]
async fn shipments_of_several_customers() {
    // Customers are partition keys: customer-42's shipment waits for a carrier.
    let event = TestEvent::new()
        .json_keyed("customer-17", &shipment(1, AMSTERDAM, "dhl"))
        .json_keyed("customer-42", &shipment(2, PARIS, "fedex"))
        .json_keyed("customer-17", &shipment(3, AMSTERDAM, "ups"))
        .json_keyed("customer-99", &shipment(4, "", "dhl"))
        .json_keyed("customer-42", &shipment(5, PARIS, "ups"));

    // By default, nothing behind the held shipment is handled: Lambda delivers it all again.
    let in_order = settle(ship, &event).await;
    let words: Vec<&str> = in_order.outcomes().iter().map(word).collect();
    assert_eq!(words, ["ack", "retry", "skip", "skip", "skip"]);

    // In lanes, the other customers go on; customer-42's next shipment still waits behind the
    // held one. The response is the same: Lambda delivers everything from the held shipment on.
    let in_lanes = KinesisAdapter::new(ship)
        .per_key_lanes(8)
        .settle(KinesisBatch::from(&event), &Context::default())
        .await;
    let words: Vec<&str> = in_lanes.outcomes().iter().map(word).collect();
    assert_eq!(words, ["ack", "retry", "ack", "drop", "skip"]);
    assert_eq!(in_lanes.response(), in_order.response());
    assert_eq!(
        in_lanes.checkpoint(),
        Checkpoint::After(event.sequence_number(0))
    );
}

#[tokio::test(crate = "lambda_kinesis::tokio")]
async fn a_record_that_is_not_a_shipment_is_dropped_without_reaching_ship() {
    let event = TestEvent::new()
        .json(&shipment(1, AMSTERDAM, "dhl"))
        .bytes(&b"id=2;address=Via Roma 1;carrier=ups"[..])
        .bytes(&br#"{"id":3,"address":"Via Roma 1"}"#[..])
        .json(&shipment(4, PARIS, "ups"));

    let settlement = settle(ship, &event).await;

    let words: Vec<&str> = settlement.outcomes().iter().map(word).collect();
    assert_eq!(words, ["ack", "undecodable", "undecodable", "ack"]);
    let RecordOutcome::Dropped(DropReason::Undecodable(rejection)) = settlement.outcome(1) else {
        panic!("record 1 is dropped as undecodable");
    };
    assert_eq!(rejection.shard_id, "shardId-000000000000");
    assert_eq!(rejection.sequence_number, event.sequence_number(1));
    assert!(matches!(rejection.kind, RejectionKind::InvalidJson(_)));
    assert_eq!(settlement.response().item_identifier(), None);

    // A function that would rather wait for a deployment that reads them holds them instead.
    let held = KinesisAdapter::new(ship)
        .hold_undecodable()
        .settle(KinesisBatch::from(&event), &Context::default())
        .await;
    assert_eq!(
        held.response().item_identifier(),
        Some(event.sequence_number(1))
    );
}

/// One word per outcome, to read a settlement at a glance.
fn word(outcome: &RecordOutcome) -> &'static str {
    match outcome {
        RecordOutcome::Acked => "ack",
        RecordOutcome::Dropped(DropReason::Handler) => "drop",
        RecordOutcome::Dropped(_) => "undecodable",
        RecordOutcome::Held(HoldReason::Retry) => "retry",
        RecordOutcome::Held(_) => "held",
        RecordOutcome::Skipped(_) => "skip",
        _ => "other",
    }
}
