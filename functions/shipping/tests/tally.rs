//! The window function's contract, run as Lambda runs a window: state carried between
//! invocations, a held shipment, the final invocation.

use std::time::Duration;

use lambda_kinesis::testing::{TestEvent, WindowRun};
use shipping::Shipment;
use shipping::tally::{CarrierTally, tally};

fn shipment(id: u64, carrier: &str) -> Shipment {
    Shipment {
        id,
        address: "Keizersgracht 123, Amsterdam".into(),
        carrier: carrier.into(),
    }
}

fn counts(pairs: &[(&str, u64)]) -> CarrierTally {
    CarrierTally {
        per_carrier: pairs.iter().map(|(c, n)| ((*c).to_owned(), *n)).collect(),
    }
}

#[tokio::test]
async fn a_window_counts_shipments_per_carrier_across_invocations() {
    let mut run = WindowRun::new(tally, Duration::from_secs(60));
    run.invoke(
        &TestEvent::new()
            .json(&shipment(1, "dhl"))
            .json(&shipment(2, "ups")),
    )
    .await
    .unwrap();
    run.invoke(&TestEvent::new().json(&shipment(3, "dhl")))
        .await
        .unwrap();
    let last = run.final_invoke(&TestEvent::new()).await.unwrap();
    assert_eq!(
        last.state,
        serde_json::json!({"per_carrier": {"dhl": 2, "ups": 1}})
    );
    assert_eq!(run.state(), None);
}

#[tokio::test]
async fn an_unknown_carrier_is_held_and_the_tally_stops_in_front_of_it() {
    let event = TestEvent::new()
        .json(&shipment(1, "dhl"))
        .json(&shipment(2, "fedex"))
        .json(&shipment(3, "ups"));
    let mut run = WindowRun::new(tally, Duration::from_secs(60));
    let response = run.invoke(&event).await.unwrap();
    assert_eq!(
        response.batch_item_failures[0].item_identifier,
        event.sequence_number(1)
    );
    assert_eq!(run.state(), Some(counts(&[("dhl", 1)])));
}
