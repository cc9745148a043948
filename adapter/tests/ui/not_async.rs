//! A handler written as a plain `fn`, not an `async fn`.

use lambda_kinesis::{HandlerOutcome, KinesisAdapter};

#[derive(serde::Deserialize)]
struct Shipment {
    id: u64,
}

fn ship(shipment: &Shipment) -> HandlerOutcome {
    let _ = shipment.id;
    HandlerOutcome::ack()
}

fn main() {
    let _adapter: KinesisAdapter<Shipment> = KinesisAdapter::new(ship)
        .hold_undecodable()
        .deadline_margin(std::time::Duration::from_secs(2));
}
