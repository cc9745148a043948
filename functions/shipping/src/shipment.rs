//! What the shipping service books: a [`Shipment`], with one of the [`CARRIERS`].

use serde::{Deserialize, Serialize};

/// The carriers this release's client books with.
pub const CARRIERS: [&str; 2] = ["dhl", "ups"];

/// A shipment to book, as producers publish it (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Shipment {
    /// The shipment's id.
    pub id: u64,
    /// Where it goes.
    pub address: String,
    /// Who carries it: one of [`CARRIERS`].
    pub carrier: String,
}
