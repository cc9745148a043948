//! What `ship` logs: a warning for each shipment it drops or holds, an info line for each it
//! books, each in a span that carries the shipment's id and carrier.
//!
//! Run with `cargo test -p shipping --test logs`. This binary holds a single test: it captures
//! logs with a subscriber of its own, which no other test running alongside can disturb.

use std::io;
use std::sync::{Arc, Mutex};

use lambda_kinesis::lambda_runtime::tracing::subscriber;
use lambda_kinesis::testing::{TestEvent, settle_with_state};
use shipping::{Carriers, Shipment, ship};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl subscriber::fmt::MakeWriter<'_> for Captured {
    type Writer = Captured;

    fn make_writer(&self) -> Captured {
        self.clone()
    }
}

#[tokio::test]
async fn every_decision_is_logged_with_the_shipment() {
    let captured = Captured::default();
    let collector = subscriber::fmt()
        .json()
        .with_current_span(true)
        .with_writer(captured.clone())
        .finish();
    let _guard = lambda_kinesis::tracing::subscriber::set_default(collector);

    let shipment = |id, address: &str, carrier: &str| Shipment {
        id,
        address: address.to_owned(),
        carrier: carrier.to_owned(),
    };
    let event = TestEvent::new()
        .json(&shipment(7, "Via Roma 1, 00184 Roma", "ups"))
        .json(&shipment(8, "", "dhl"))
        .json(&shipment(9, "Via Roma 1, 00184 Roma", "fedex"));
    settle_with_state(Carriers, ship, &event).await;

    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .filter(|line: &serde_json::Value| line["target"] == "shipping")
        .collect();
    let seen: Vec<(&str, &str, u64, &str)> = lines
        .iter()
        .map(|line| {
            (
                line["level"].as_str().unwrap(),
                line["fields"]["message"].as_str().unwrap(),
                line["span"]["shipment_id"].as_u64().unwrap(),
                line["span"]["carrier"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("INFO", "shipment booked", 7, "ups"),
            ("WARN", "shipment without an address retired", 8, "dhl"),
            ("WARN", "unknown carrier, shipment held", 9, "fedex"),
        ]
    );
}
