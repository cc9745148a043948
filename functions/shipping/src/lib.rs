//! The shipping service: books each shipment that arrives on the `shipments` stream through the
//! carrier client it holds in its state, made once per execution environment.
//!
//! Run its tests with `cargo test -p shipping`; run it under the emulator with the README's
//! main command.

use std::fmt;
use std::future::Future;

use lambda_kinesis::handler::{Handler, kind};
use lambda_kinesis::tracing::{self, Instrument as _};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
use lambda_kinesis_idempotency::{Idempotency, Store};
use serde::{Deserialize, Serialize};

pub mod tally;

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

/// The shipping function as its `bootstrap` runs it: [`ship`] with this release's [`Carriers`],
/// under the adapter's default rules.
pub fn function() -> KinesisAdapter<
    impl Handler<Shipment, kind::Stateful<kind::Record>>,
    Shipment,
    kind::Stateful<kind::Record>,
> {
    KinesisAdapter::with_state(Carriers, ship)
}

/// The variable that names the idempotency table (the template's `IdempotencyTable`).
pub const IDEMPOTENCY_TABLE_VARIABLE: &str = "IDEMPOTENCY_TABLE";

/// The idempotency table a value of [`IDEMPOTENCY_TABLE_VARIABLE`] names: none when it is unset
/// or empty (kinesis-esm gives an empty name when it has no local DynamoDB).
pub fn idempotency_table(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_variables_name_the_streams_and_the_cap() {
        assert_eq!(
            RetryStreams::from_values(Some("shipments-retry"), Some("5"), Some("shipments-dlq")),
            Ok(Some(RetryStreams {
                retry: Some(("shipments-retry".into(), 5)),
                dead_letter: Some("shipments-dlq".into()),
            }))
        );
        assert_eq!(
            RetryStreams::from_values(Some("r"), None, None),
            Ok(Some(RetryStreams {
                retry: Some(("r".into(), 3)),
                dead_letter: None,
            })),
            "3 retries by default"
        );
        assert_eq!(RetryStreams::from_values(Some(" "), None, None), Ok(None));
        assert_eq!(
            RetryStreams::from_values(Some("r"), Some("many"), None),
            Err("MAX_RETRIES is \"many\", not a number of retries".to_owned())
        );
    }
}

/// The shipping function with each shipment booked once: [`ship`] with [`Carriers`], keyed by
/// the shipment's id in `store`, so a shipment delivered again settles as it did the first time.
pub fn idempotent_function<St: Store>(
    store: St,
) -> KinesisAdapter<
    impl Handler<Shipment, kind::Stateful<kind::RecordWithMeta>>,
    Shipment,
    kind::Stateful<kind::RecordWithMeta>,
> {
    Idempotency::new(store)
        .wrap_with_state(Carriers, ship)
        .key(|shipment: &Shipment| shipment.id)
        .into_adapter()
}

/// The variables that name the retry stream, its cap and the dead-letter stream (the
/// template's `RetryStream`, `MAX_RETRIES` and `DeadLetterStream`).
pub const RETRY_STREAM_VARIABLE: &str = "RETRY_STREAM";
/// See [`RETRY_STREAM_VARIABLE`].
pub const MAX_RETRIES_VARIABLE: &str = "MAX_RETRIES";
/// See [`RETRY_STREAM_VARIABLE`].
pub const DEAD_LETTER_STREAM_VARIABLE: &str = "DEAD_LETTER_STREAM";

/// Where a held shipment goes instead of holding its shard: a retry stream (at most
/// `max_retries` times) and a dead-letter stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryStreams {
    /// The retry stream and its cap.
    pub retry: Option<(String, u32)>,
    /// The dead-letter stream.
    pub dead_letter: Option<String>,
}

impl RetryStreams {
    /// The streams the variables' values name (unset or empty: none), or why they do not make
    /// sense; `None` when neither stream is named, and shipments are held as by [`function`].
    pub fn from_values(
        retry: Option<&str>,
        max_retries: Option<&str>,
        dead_letter: Option<&str>,
    ) -> Result<Option<Self>, String> {
        let named = |value: Option<&str>| {
            value
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
        };
        let max_retries = match named(max_retries) {
            None => 3,
            Some(text) => text.parse::<u32>().map_err(|_| {
                format!("{MAX_RETRIES_VARIABLE} is {text:?}, not a number of retries")
            })?,
        };
        let streams = Self {
            retry: named(retry).map(|stream| (stream, max_retries)),
            dead_letter: named(dead_letter),
        };
        Ok((streams.retry.is_some() || streams.dead_letter.is_some()).then_some(streams))
    }

    /// `adapter` with these streams.
    pub fn apply<H, T, K>(&self, adapter: KinesisAdapter<H, T, K>) -> KinesisAdapter<H, T, K> {
        let adapter = match &self.retry {
            Some((stream, max_retries)) => adapter.retry_stream(stream, *max_retries),
            None => adapter,
        };
        match &self.dead_letter {
            Some(stream) => adapter.dead_letter_stream(stream),
            None => adapter,
        }
    }
}

/// The README's examples, compiled as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;
