//! Records whose data cannot become the handler's type.

use std::fmt;

use crate::aggregate::AggregateError;

/// A record the adapter could not decode for the handler, named so it can be logged and matched.
///
/// It settles by a rule fixed before the handler runs: dropped by default (another try would get
/// the same answer), or held when [`KinesisAdapter::hold_undecodable`](crate::KinesisAdapter::hold_undecodable)
/// is set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rejection {
    /// The shard the record came from.
    pub shard_id: String,
    /// The record's sequence number.
    pub sequence_number: String,
    /// For a user record of a KPL aggregate, its position in the aggregate.
    pub sub_sequence_number: Option<u64>,
    /// What was wrong with it.
    pub kind: RejectionKind,
}

/// What made a record undecodable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectionKind {
    /// The record's `data` field is not standard base64. Lambda never sends this; a hand-written
    /// event can.
    InvalidBase64(String),
    /// The decoded data is not valid JSON for the handler's type.
    InvalidJson(String),
    /// The data starts as a KPL aggregate does, but the aggregate cannot be read (see
    /// [`aggregate`](crate::aggregate)).
    CorruptAggregate(AggregateError),
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(sub_sequence_number) = self.sub_sequence_number {
            write!(f, "user record {sub_sequence_number} of ")?;
        }
        write!(f, "record {} of {}: ", self.sequence_number, self.shard_id)?;
        match &self.kind {
            RejectionKind::InvalidBase64(detail) => write!(f, "data is not valid base64: {detail}"),
            RejectionKind::InvalidJson(detail) => {
                write!(f, "data is not valid JSON for the handler's type: {detail}")
            }
            RejectionKind::CorruptAggregate(error) => {
                write!(f, "a KPL aggregate that cannot be read: {error}")
            }
        }
    }
}

impl std::error::Error for Rejection {}
