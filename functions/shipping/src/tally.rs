//! A tumbling-window function over the same stream: how many shipments each carrier took in
//! each window (`TumblingWindowInSeconds`), logged when the window closes.

use std::collections::BTreeMap;

use lambda_kinesis::tracing;
use lambda_kinesis::window::{Window, WindowOutcome};
use serde::{Deserialize, Serialize};

use crate::shipment::{CARRIERS, Shipment};

/// A window's shipments per carrier: the state Lambda carries between its invocations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarrierTally {
    /// Shipments counted, per carrier.
    pub per_carrier: BTreeMap<String, u64>,
}

/// Counts the window's shipments per carrier. A shipment for a carrier this release cannot book
/// is held, as [`ship`](crate::ship) holds it: it comes again, within the same window, once a
/// release knows the carrier.
pub async fn tally(
    state: Option<CarrierTally>,
    window: &Window,
    shipments: &[Shipment],
) -> WindowOutcome<CarrierTally> {
    let mut tally = state.unwrap_or_default();
    for (index, shipment) in shipments.iter().enumerate() {
        if !CARRIERS.contains(&shipment.carrier.as_str()) {
            return WindowOutcome::state(tally).hold_from(index);
        }
        *tally
            .per_carrier
            .entry(shipment.carrier.clone())
            .or_default() += 1;
    }
    if window.is_final() {
        tracing::info!(shard_id = window.shard_id(), per_carrier = ?tally.per_carrier, "window closed");
    }
    WindowOutcome::state(tally)
}
