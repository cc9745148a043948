//! A handler with state whose state comes after the record: the state is the first argument.

use lambda_kinesis::guard::{Entry, RecordGuard};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};

#[derive(serde::Deserialize)]
struct Shipment {
    id: u64,
}

struct Carriers;

struct Logged;

impl RecordGuard<Shipment> for Logged {
    type Pass = ();
    async fn enter(&self, _: &Shipment, _: &RecordMeta<'_>) -> Entry<()> {
        Entry::Run(())
    }
    async fn leave(&self, _: (), _: Option<HandlerOutcome>) {}
}

async fn ship(shipment: &Shipment, _carriers: &Carriers) -> HandlerOutcome {
    let _ = shipment.id;
    HandlerOutcome::ack()
}

fn main() {
    let _adapter = KinesisAdapter::with_state(Carriers, ship)
        .guard(Logged)
        .optional_guard(None::<Logged>)
        .hold_undecodable();
}
