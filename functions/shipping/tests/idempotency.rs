//! The shipping function with its idempotency table, over the in-memory store.
//!
//! Run with `cargo test -p shipping --test idempotency`.

use std::sync::Arc;

use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::testing::TestEvent;
use lambda_kinesis_idempotency::table_of;
use lambda_kinesis_idempotency::{MemoryStore, Status, StoredOutcome};
use shipping::{Shipment, idempotent_function};

fn shipment(id: u64, carrier: &str) -> Shipment {
    Shipment {
        id,
        address: "1 Main St".into(),
        carrier: carrier.into(),
    }
}

#[tokio::test]
async fn a_redelivered_shipment_settles_from_its_stored_outcome() {
    let store = Arc::new(MemoryStore::new());
    let event = TestEvent::new()
        .json(&shipment(1, "dhl"))
        .json(&shipment(2, "pigeon"))
        .json(&shipment(3, "ups"));
    let first = idempotent_function(store.clone())
        .settle(&event, &Context::default())
        .await;
    assert_eq!(first.summary(), "ack hold skip");
    let again = idempotent_function(store.clone())
        .settle(&event, &Context::default())
        .await;
    assert_eq!(again.summary(), "ack hold skip");
    let booked = store.get("function#1").expect("shipment 1 has its item");
    assert_eq!(booked.status, Status::Completed);
    assert_eq!(booked.outcome, Some(StoredOutcome::Ack));
    // A held shipment leaves no item: its next delivery books it.
    assert_eq!(store.get("function#2"), None);
}

#[test]
fn an_unset_or_empty_table_name_means_no_idempotency() {
    let table = |value: Option<&'static str>| table_of(|_| value.map(str::to_owned));
    assert_eq!(table(None), Ok(None));
    assert_eq!(table(Some("")), Ok(None));
    assert_eq!(
        table(Some(" shipping-idempotency ")),
        Ok(Some("shipping-idempotency".to_owned()))
    );
    assert_eq!(
        table(Some("no spaces")).unwrap_err().to_string(),
        "IDEMPOTENCY_TABLE is \"no spaces\": expected a DynamoDB table name (3 to 255 letters, \
         digits, `_`, `-` and `.`)"
    );
}
