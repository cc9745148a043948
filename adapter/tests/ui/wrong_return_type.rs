//! An `async fn` handler that returns something other than an outcome.

use lambda_kinesis::KinesisAdapter;

#[derive(serde::Deserialize)]
struct Shipment {
    id: u64,
}

async fn ship(shipment: &Shipment) -> bool {
    shipment.id > 0
}

fn main() {
    let _adapter: KinesisAdapter<Shipment> = KinesisAdapter::new(ship).per_key_lanes(4);
}
