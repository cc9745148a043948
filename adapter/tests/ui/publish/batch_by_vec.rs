//! A batch handler that takes its records as an owned `Vec`, not a slice, with the retry
//! options of the `publish` feature set.

use std::time::Duration;

use lambda_kinesis::{HandlerOutcome, KinesisAdapter};

#[derive(serde::Deserialize)]
struct Shipment {
    id: u64,
}

async fn ship_all(shipments: Vec<Shipment>) -> Vec<HandlerOutcome> {
    shipments.iter().map(|_| HandlerOutcome::ack()).collect()
}

fn main() {
    let _adapter: KinesisAdapter<Shipment> = KinesisAdapter::new(ship_all)
        .retry_stream("shipments-retry", 3)
        .retry_delay(Duration::from_secs(5))
        .dead_letter_stream("shipments-dlq");
}
