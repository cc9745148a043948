//! A handler that takes its record by value, not by reference.

use lambda_kinesis::guard::{Entry, RecordGuard};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};

#[derive(serde::Deserialize)]
struct Shipment {
    id: u64,
}

struct Logged;

impl RecordGuard<Shipment> for Logged {
    type Pass = ();
    async fn enter(&self, _: &Shipment, _: &RecordMeta<'_>) -> Entry<()> {
        Entry::Run(())
    }
    async fn leave(&self, _: (), _: Option<HandlerOutcome>) {}
}

async fn ship(shipment: Shipment) -> HandlerOutcome {
    let _ = shipment.id;
    HandlerOutcome::ack()
}

fn main() {
    let _adapter: KinesisAdapter<Shipment> = KinesisAdapter::new(ship)
        .guard(Logged)
        .per_key_lanes(16)
        .deadline_margin(std::time::Duration::from_secs(2));
}
