//! What a handler says about a record: its outcome, or an error that holds the record.

use std::fmt;

/// What a handler decided about one record.
///
/// | outcome | the record | the shard's checkpoint |
/// |---|---|---|
/// | [`ack`](Self::ack) | handled | moves past it once every earlier record of the shard is handled |
/// | [`drop`](Self::drop) | retired, never read again | as for ack |
/// | [`hold`](Self::hold) | left unhandled, delivered again | stops in front of it; only its own shard waits |
///
/// Lambda has no per-record "drop": a dropped record is reported to Lambda exactly like an acked
/// one. The difference is the intent, which the adapter logs and reports to the emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use = "an outcome only counts once it is returned to the adapter"]
pub enum HandlerOutcome {
    /// The record was handled.
    Ack,
    /// The record can never be handled (another try would give the same answer): retire it.
    Drop,
    /// The record could not be handled now: hold it, so that Lambda delivers it again.
    Hold,
}

impl HandlerOutcome {
    /// The record was handled.
    pub const fn ack() -> Self {
        Self::Ack
    }

    /// The record is retired without being handled; it is never read again.
    pub const fn drop() -> Self {
        Self::Drop
    }

    /// The record is held: the shard's checkpoint stops in front of it and Lambda delivers it
    /// (and every record behind it) again. Other Kinesis libraries call this `retry`
    /// (`docs/coming-from-ruststream.md`); with a retry stream
    /// ([`KinesisAdapter::retry_plan`](crate::KinesisAdapter)) a held record is published there
    /// instead, and its shard moves on.
    #[doc(alias = "retry")]
    pub const fn hold() -> Self {
        Self::Hold
    }

    /// Whether this outcome settles the record (ack or drop), letting the checkpoint pass it.
    pub const fn settles(self) -> bool {
        !matches!(self, Self::Hold)
    }
}

/// An error a handler returned instead of an outcome. It holds the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerError {
    message: String,
}

impl HandlerError {
    /// Wraps anything printable; the text is what gets logged.
    pub fn new(error: impl fmt::Display) -> Self {
        Self {
            message: error.to_string(),
        }
    }

    /// The error's text.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Anything a record handler may return.
///
/// Implemented for [`HandlerOutcome`], for `Result<HandlerOutcome, E>` and for `Result<(), E>`
/// (where `Ok(())` acks), with any printable `E`, so a handler can use `?`. An `Err` holds the
/// record and is logged as an error.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a record outcome",
    note = "a record handler returns `HandlerOutcome`, `Result<HandlerOutcome, E>` or `Result<(), E>` where `E: Display`"
)]
pub trait IntoOutcome {
    /// Converts into an outcome, or the error that holds the record.
    fn into_outcome(self) -> Result<HandlerOutcome, HandlerError>;
}

impl IntoOutcome for HandlerOutcome {
    fn into_outcome(self) -> Result<HandlerOutcome, HandlerError> {
        Ok(self)
    }
}

impl<E: fmt::Display> IntoOutcome for Result<HandlerOutcome, E> {
    fn into_outcome(self) -> Result<HandlerOutcome, HandlerError> {
        self.map_err(HandlerError::new)
    }
}

impl<E: fmt::Display> IntoOutcome for Result<(), E> {
    fn into_outcome(self) -> Result<HandlerOutcome, HandlerError> {
        self.map(|()| HandlerOutcome::Ack)
            .map_err(HandlerError::new)
    }
}

/// What a batch handler returned, before it is matched against the records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOutcome {
    /// One outcome that settles every record of the batch.
    All(HandlerOutcome),
    /// One outcome per record, in the order of the slice the handler was given.
    Each(Vec<HandlerOutcome>),
}

/// Anything a batch handler may return: [`HandlerOutcome`] (it settles every record),
/// `Vec<HandlerOutcome>` (one per record), or either inside a `Result<_, E>`, or `Result<(), E>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a batch outcome",
    note = "a batch handler returns `HandlerOutcome`, `Vec<HandlerOutcome>`, or one of them (or `()`) inside `Result<_, E>` where `E: Display`"
)]
pub trait IntoBatchOutcome {
    /// Converts into a batch outcome, or the error that holds the batch.
    fn into_batch_outcome(self) -> Result<BatchOutcome, HandlerError>;
}

impl IntoBatchOutcome for HandlerOutcome {
    fn into_batch_outcome(self) -> Result<BatchOutcome, HandlerError> {
        Ok(BatchOutcome::All(self))
    }
}

impl IntoBatchOutcome for Vec<HandlerOutcome> {
    fn into_batch_outcome(self) -> Result<BatchOutcome, HandlerError> {
        Ok(BatchOutcome::Each(self))
    }
}

impl<E: fmt::Display> IntoBatchOutcome for Result<HandlerOutcome, E> {
    fn into_batch_outcome(self) -> Result<BatchOutcome, HandlerError> {
        self.map(BatchOutcome::All).map_err(HandlerError::new)
    }
}

impl<E: fmt::Display> IntoBatchOutcome for Result<Vec<HandlerOutcome>, E> {
    fn into_batch_outcome(self) -> Result<BatchOutcome, HandlerError> {
        self.map(BatchOutcome::Each).map_err(HandlerError::new)
    }
}

impl<E: fmt::Display> IntoBatchOutcome for Result<(), E> {
    fn into_batch_outcome(self) -> Result<BatchOutcome, HandlerError> {
        self.map(|()| BatchOutcome::All(HandlerOutcome::Ack))
            .map_err(HandlerError::new)
    }
}
