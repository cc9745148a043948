//! The shipping service: books each shipment that arrives on the `shipments` stream.
//!
//! Run its tests with `cargo test -p shipping`; run it under the emulator with the README's
//! main command.

use lambda_kinesis::HandlerOutcome;
use lambda_kinesis::serde::{Deserialize, Serialize};

/// The carriers shipments can be booked with.
pub const CARRIERS: [&str; 2] = ["dhl", "ups"];

/// A shipment to book, as producers publish it (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(crate = "lambda_kinesis::serde")]
pub struct Shipment {
    /// The shipment's id.
    pub id: u64,
    /// Where it goes.
    pub address: String,
    /// Who carries it: one of [`CARRIERS`].
    pub carrier: String,
}

/// Books one shipment.
///
/// A shipment without an address can never be booked: it is dropped. A shipment for a carrier
/// this service does not know is held, since a deployment that knows the carrier may come.
pub async fn ship(shipment: &Shipment) -> HandlerOutcome {
    let span = lambda_kinesis::tracing::info_span!(
        "ship",
        shipment_id = shipment.id,
        carrier = %shipment.carrier
    );
    let _entered = span.enter();
    if shipment.address.is_empty() {
        lambda_kinesis::tracing::warn!("shipment without an address retired");
        return HandlerOutcome::drop();
    }
    if !CARRIERS.contains(&shipment.carrier.as_str()) {
        lambda_kinesis::tracing::warn!("unknown carrier, shipment held");
        return HandlerOutcome::retry();
    }
    lambda_kinesis::tracing::info!("shipment booked");
    HandlerOutcome::ack()
}

/// The README's examples, compiled as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;
