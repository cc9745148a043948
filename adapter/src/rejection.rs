//! Records whose data cannot become the handler's type.

use std::fmt;

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
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, detail) = match &self.kind {
            RejectionKind::InvalidBase64(detail) => ("data is not valid base64", detail),
            RejectionKind::InvalidJson(detail) => {
                ("data is not valid JSON for the handler's type", detail)
            }
        };
        write!(
            f,
            "record {} of {}: {what}: {detail}",
            self.sequence_number, self.shard_id
        )
    }
}

impl std::error::Error for Rejection {}
