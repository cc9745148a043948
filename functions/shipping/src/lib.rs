//! The shipping service: books each shipment that arrives on the `shipments` stream through the
//! carrier client it holds in its state, made once per execution environment. Its options (the
//! idempotency table, the retry and dead-letter streams) come from the environment, each read
//! by the crate that owns it, in `main`.
//!
//! Run its tests with `cargo test -p shipping`; run it under the emulator with the README's
//! main command.

use std::fmt;
use std::future::Future;

use lambda_kinesis::tracing::{self, Instrument as _};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
use lambda_kinesis_idempotency::{Idempotency, IdempotencyGuard, Store};

mod shipment;
pub mod tally;

pub use shipment::{CARRIERS, Shipment};

/// Why a carrier client did not book a shipment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BookingError {
    /// The client knows no carrier of the shipment's name.
    UnknownCarrier,
}

impl fmt::Display for BookingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownCarrier => f.write_str("no carrier of that name is known"),
        }
    }
}

impl std::error::Error for BookingError {}

/// What [`ship`] books through: a carrier client, made once per execution environment and
/// borrowed by every call. Tests give `ship` a client of their own.
pub trait CarrierClient: Send + Sync + 'static {
    /// Books `shipment` with the carrier it names.
    fn book(&self, shipment: &Shipment) -> impl Future<Output = Result<(), BookingError>> + Send;
}

/// This release's carrier client: it books with the carriers in [`CARRIERS`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Carriers;

impl CarrierClient for Carriers {
    async fn book(&self, shipment: &Shipment) -> Result<(), BookingError> {
        if CARRIERS.contains(&shipment.carrier.as_str()) {
            Ok(())
        } else {
            Err(BookingError::UnknownCarrier)
        }
    }
}

/// Books one shipment through `carriers`.
///
/// A shipment without an address can never be booked: it is dropped. A shipment for a carrier
/// the client does not know is held, since a deployment that knows the carrier may come.
pub async fn ship<C: CarrierClient>(carriers: &C, shipment: &Shipment) -> HandlerOutcome {
    let span = tracing::info_span!(
        "ship",
        shipment_id = shipment.id,
        carrier = %shipment.carrier
    );
    async {
        if shipment.address.is_empty() {
            tracing::warn!("shipment without an address retired");
            return HandlerOutcome::drop();
        }
        match carriers.book(shipment).await {
            Ok(()) => {
                tracing::info!("shipment booked");
                HandlerOutcome::ack()
            }
            Err(BookingError::UnknownCarrier) => {
                tracing::warn!("unknown carrier, shipment held");
                HandlerOutcome::hold()
            }
        }
    }
    .instrument(span)
    .await
}

/// The shipping function: [`ship`] with this release's [`Carriers`], under the adapter's default
/// rules, with no idempotency and no retry streams.
pub fn function() -> KinesisAdapter<Shipment> {
    KinesisAdapter::with_state(Carriers, ship)
}

/// Idempotency that books each shipment once: keyed by the shipment's id, so a shipment
/// delivered again settles as it did the first time.
pub fn once_per_shipment<St: Store>(
    idempotency: Idempotency<St>,
) -> IdempotencyGuard<Shipment, St> {
    idempotency.key(|shipment: &Shipment| shipment.id)
}

/// The shipping function with each shipment booked once, its keys in `store`.
pub fn idempotent_function<St: Store>(store: St) -> KinesisAdapter<Shipment> {
    function().guard(once_per_shipment(Idempotency::new(store)))
}

/// The README's examples, compiled as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;

/// `docs/writing-functions.md`'s examples, compiled as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/writing-functions.md")]
struct WritingFunctionsExamples;

/// `docs/testing-functions.md`'s examples, compiled as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/testing-functions.md")]
struct TestingFunctionsExamples;
