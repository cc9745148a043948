//! Handlers with state: a client made once, borrowed by every call together with the record,
//! for every handler shape. These tests compile only because the adapter's bounds let a handler
//! hold both borrows across an `.await`; they then check that every call saw the one client.

use std::sync::Mutex;

use lambda_kinesis::handler::{Handler, WithState};
use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::testing::{TestEvent, settle_with_state};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};
use serde::{Deserialize, Serialize};

/// A record the handlers below book: they borrow its `carrier` across an await.
#[derive(Debug, Serialize, Deserialize)]
struct Parcel {
    id: u64,
    carrier: String,
}

/// A client as a real function holds one: made once, used by reference, awaited.
#[derive(Debug, Default)]
struct Carriers {
    booked: Mutex<Vec<(String, u64)>>,
}

impl Carriers {
    /// Books a parcel, borrowing both the client and the parcel's text across an await point.
    async fn book(&self, carrier: &str, id: u64) -> Result<(), String> {
        tokio::task::yield_now().await;
        if carrier == "fedex" {
            return Err(format!("carrier {carrier} refuses parcel {id}"));
        }
        self.booked.lock().unwrap().push((carrier.to_owned(), id));
        Ok(())
    }

    fn booked(&self) -> Vec<(String, u64)> {
        self.booked.lock().unwrap().clone()
    }
}

fn parcels() -> TestEvent {
    let parcel = |id, carrier: &str| Parcel {
        id,
        carrier: carrier.to_owned(),
    };
    TestEvent::new()
        .json(&parcel(1, "dhl"))
        .json(&parcel(2, "ups"))
        .json(&parcel(3, "fedex"))
        .json(&parcel(4, "dhl"))
}

async fn ship(carriers: &Carriers, parcel: &Parcel) -> Result<(), String> {
    carriers.book(&parcel.carrier, parcel.id).await
}

async fn ship_with_meta(
    carriers: &Carriers,
    parcel: &Parcel,
    meta: &RecordMeta<'_>,
) -> HandlerOutcome {
    // The metadata is borrowed across the await too.
    let key = meta.partition_key();
    match carriers.book(&parcel.carrier, parcel.id).await {
        Ok(()) if !key.is_empty() => HandlerOutcome::ack(),
        _ => HandlerOutcome::hold(),
    }
}

async fn ship_all(carriers: &Carriers, parcels: &[Parcel]) -> Vec<HandlerOutcome> {
    let mut outcomes = Vec::with_capacity(parcels.len());
    for parcel in parcels {
        outcomes.push(match carriers.book(&parcel.carrier, parcel.id).await {
            Ok(()) => HandlerOutcome::ack(),
            Err(_) => HandlerOutcome::hold(),
        });
    }
    outcomes
}

fn dhl_ups() -> Vec<(String, u64)> {
    vec![("dhl".to_owned(), 1), ("ups".to_owned(), 2)]
}

/// Settles [`parcels`] with `handler` and new carriers as its state: the settlement's summary,
/// and what the carriers booked.
async fn ship_parcels<H, K>(handler: H) -> (String, Vec<(String, u64)>)
where
    WithState<Carriers, H>: Handler<Parcel, K>,
    K: 'static,
{
    let adapter = KinesisAdapter::with_state(Carriers::default(), handler);
    let settlement = adapter.settle(&parcels(), &Context::default()).await;
    (settlement.summary(), booked_by(&adapter))
}

#[tokio::test]
async fn a_record_handler_borrows_its_state_and_the_record() {
    let (summary, booked) = ship_parcels(ship).await;
    assert_eq!(summary, "ack ack hold skip");
    assert_eq!(booked, dhl_ups());
}

#[tokio::test]
async fn a_record_handler_with_metadata_borrows_its_state_the_record_and_the_metadata() {
    let (summary, booked) = ship_parcels(ship_with_meta).await;
    assert_eq!(summary, "ack ack hold skip");
    assert_eq!(booked, dhl_ups());
}

#[tokio::test]
async fn a_batch_handler_borrows_its_state_and_the_records() {
    let (summary, booked) = ship_parcels(ship_all).await;
    assert_eq!(summary, "ack ack hold ack");
    let mut expected = dhl_ups();
    expected.push(("dhl".to_owned(), 4));
    assert_eq!(booked, expected);
}

#[tokio::test]
async fn an_async_closure_borrows_its_state_and_the_record() {
    let (summary, booked) = ship_parcels(async |carriers: &Carriers, parcel: &Parcel| {
        carriers.book(&parcel.carrier, parcel.id).await
    })
    .await;
    assert_eq!(summary, "ack ack hold skip");
    assert_eq!(booked, dhl_ups());
}

#[tokio::test]
async fn the_state_is_made_once_and_shared_by_every_invocation() {
    let adapter = KinesisAdapter::with_state(Carriers::default(), ship)
        .per_key_lanes(4)
        .hold_undecodable();
    let first = TestEvent::new().json(&Parcel {
        id: 7,
        carrier: "dhl".to_owned(),
    });
    let second = TestEvent::new().json(&Parcel {
        id: 8,
        carrier: "ups".to_owned(),
    });
    // Two invocations of one execution environment, as the runtime makes them: the adapter
    // (and the state in it) is cloned per call.
    adapter.clone().settle(&first, &Context::default()).await;
    adapter.clone().settle(&second, &Context::default()).await;
    assert_eq!(
        booked_by(&adapter),
        [("dhl".to_owned(), 7), ("ups".to_owned(), 8)]
    );
}

#[tokio::test]
async fn the_testing_kit_settles_a_handler_with_the_state_a_test_gives_it() {
    let settlement = settle_with_state(Carriers::default(), ship, parcels()).await;
    assert_eq!(settlement.summary(), "ack ack hold skip");
}

/// What the adapter's carriers booked: its state, read back by its type.
fn booked_by(adapter: &KinesisAdapter<Parcel>) -> Vec<(String, u64)> {
    adapter
        .state::<Carriers>()
        .expect("the adapter's state is its carriers")
        .booked()
}
