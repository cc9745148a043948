//! The shipping function's contract, record by record, shown with the `lambda_kinesis` testing
//! kit: build the event Lambda would send, settle it with `ship` and a carrier client, and read
//! what Lambda is told and where the shard's checkpoint then stands.
//!
//! Run with `cargo test -p shipping --test contract`.

use std::sync::Mutex;

use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::settlement::{DecodeFailure, DropReason, HoldReason, RecordOutcome};
use lambda_kinesis::testing::{TestEvent, settle_with_state};
use shipping::{BookingError, CarrierClient, Carriers, Shipment, ship};

fn shipment(id: u64, address: &str, carrier: &str) -> Shipment {
    Shipment {
        id,
        address: address.to_owned(),
        carrier: carrier.to_owned(),
    }
}

const AMSTERDAM: &str = "Keizersgracht 123, 1015 CJ Amsterdam";
const PARIS: &str = "Rue de Rivoli 10, 75001 Paris";

#[tokio::test]
async fn a_shipment_with_an_address_and_a_known_carrier_is_booked() {
    let event = TestEvent::new()
        .json_keyed("customer-17", &shipment(1, AMSTERDAM, "dhl"))
        .json_keyed("customer-42", &shipment(2, PARIS, "ups"));

    let settlement = settle_with_state(Carriers, ship, &event).await;

    assert_eq!(settlement.summary(), "ack ack");
    // Nothing is named: the checkpoint moves past the batch.
    assert_eq!(settlement.cut(), None);
    let response = serde_json::to_string(&settlement.response()).unwrap();
    assert_eq!(response, r#"{"batchItemFailures":[]}"#);
}

#[tokio::test]
async fn a_shipment_without_an_address_is_dropped_and_never_comes_back() {
    let event = TestEvent::new()
        .json(&shipment(1, "", "dhl"))
        .json(&shipment(2, PARIS, "ups"));

    let settlement = settle_with_state(Carriers, ship, &event).await;

    assert_eq!(
        settlement.outcomes(),
        [
            RecordOutcome::Dropped(DropReason::Handler),
            RecordOutcome::Acked
        ]
    );
    // Lambda sees a full success: the checkpoint passes the dropped shipment.
    assert_eq!(settlement.cut(), None);
    assert_eq!(settlement.response().dropped(), [event.sequence_number(0)]);
}

#[tokio::test]
async fn a_shipment_for_an_unknown_carrier_holds_the_shipments_behind_it() {
    let event = TestEvent::new()
        .json(&shipment(1, AMSTERDAM, "dhl"))
        .json(&shipment(2, PARIS, "fedex"))
        .json(&shipment(3, AMSTERDAM, "ups"))
        .json(&shipment(4, PARIS, "dhl"));

    let settlement = settle_with_state(Carriers, ship, &event).await;

    assert_eq!(settlement.summary(), "ack hold skip skip");
    assert_eq!(
        settlement.outcome(1),
        &RecordOutcome::Held(HoldReason::Handler)
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
    assert_eq!(settlement.cut(), Some(event.cut_at(1)));
    let again: Vec<&str> = settlement
        .redelivered()
        .map(|record| record.sequence_number())
        .collect();
    assert_eq!(again, [1, 2, 3].map(|index| event.sequence_number(index)));
}

#[tokio::test]
async fn shipments_of_several_customers() {
    // Customers are partition keys: customer-42's shipment waits for a carrier.
    let event = TestEvent::new()
        .json_keyed("customer-17", &shipment(1, AMSTERDAM, "dhl"))
        .json_keyed("customer-42", &shipment(2, PARIS, "fedex"))
        .json_keyed("customer-17", &shipment(3, AMSTERDAM, "ups"))
        .json_keyed("customer-99", &shipment(4, "", "dhl"))
        .json_keyed("customer-42", &shipment(5, PARIS, "ups"));

    // By default, nothing behind the held shipment is handled: Lambda delivers it all again.
    let in_order = shipping::function()
        .settle(&event, &Context::default())
        .await;
    assert_eq!(in_order.summary(), "ack hold skip skip skip");

    // In lanes, the other customers go on; customer-42's next shipment still waits behind the
    // held one. The response is the same: Lambda delivers everything from the held shipment on.
    let in_lanes = shipping::function()
        .per_key_lanes(8)
        .settle(&event, &Context::default())
        .await;
    assert_eq!(in_lanes.summary(), "ack hold ack drop skip");
    assert_eq!(in_lanes.response(), in_order.response());
    assert_eq!(in_lanes.cut(), Some(event.cut_at(1)));
}

#[tokio::test]
async fn a_record_that_is_not_a_shipment_is_dropped_without_reaching_ship() {
    let event = TestEvent::new()
        .json(&shipment(1, AMSTERDAM, "dhl"))
        .bytes(&b"id=2;address=Via Roma 1;carrier=ups"[..])
        .bytes(&br#"{"id":3,"address":"Via Roma 1"}"#[..])
        .json(&shipment(4, PARIS, "ups"));

    let settlement = settle_with_state(Carriers, ship, &event).await;

    assert_eq!(settlement.summary(), "ack drop drop ack");
    let RecordOutcome::Dropped(DropReason::Undecodable(undecodable)) = settlement.outcome(1) else {
        panic!("record 1 is dropped as undecodable");
    };
    assert_eq!(undecodable.shard_id, "shardId-000000000000");
    assert_eq!(undecodable.sequence_number, event.sequence_number(1));
    assert!(matches!(undecodable.failure, DecodeFailure::InvalidData(_)));
    assert_eq!(settlement.cut(), None);

    // A function that would rather wait for a deployment that reads them holds them instead.
    let held = shipping::function()
        .hold_undecodable()
        .settle(&event, &Context::default())
        .await;
    assert_eq!(held.summary(), "ack hold skip skip");
    assert_eq!(held.cut(), Some(event.cut_at(1)));
}

/// A carrier client a test gives `ship`: it knows the carriers it is told, and notes every
/// booking.
#[derive(Debug, Default)]
struct Recording {
    known: Vec<&'static str>,
    booked: Mutex<Vec<u64>>,
}

impl CarrierClient for Recording {
    async fn book(&self, shipment: &Shipment) -> Result<(), BookingError> {
        if !self.known.contains(&shipment.carrier.as_str()) {
            return Err(BookingError::UnknownCarrier);
        }
        self.booked.lock().unwrap().push(shipment.id);
        Ok(())
    }
}

#[tokio::test]
async fn ship_books_through_the_client_it_is_given() {
    let event = TestEvent::new()
        .json(&shipment(1, AMSTERDAM, "dhl"))
        .json(&shipment(2, PARIS, "fedex"))
        .json(&shipment(3, "", "fedex"))
        .json(&shipment(4, PARIS, "ups"));
    // A client that knows fedex but not ups: the held shipment is whichever it does not know.
    let client = Recording {
        known: vec!["dhl", "fedex"],
        ..Recording::default()
    };
    let adapter = lambda_kinesis::KinesisAdapter::with_state(client, ship);

    let settlement = adapter.settle(&event, &Context::default()).await;

    assert_eq!(settlement.summary(), "ack ack drop hold");
    let client = adapter.state::<Recording>().expect("the adapter's state");
    assert_eq!(*client.booked.lock().unwrap(), [1, 2]);
}
