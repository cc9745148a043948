//! Where a record's fields lie in the batch's text, as spans of it.

use crate::aggregate::AggregateError;

/// Where one record's fields lie in the batch's text.
#[derive(Clone, Copy)]
pub(super) struct Spans {
    pub(super) shard_id: Span,
    pub(super) sequence_number: Span,
    pub(super) partition_key: Span,
    pub(super) data_base64: Span,
    pub(super) event_source_arn: Span,
    pub(super) arrival_millis: i64,
    /// For a user record of a KPL aggregate, `partition_key` is the user record's own and
    /// `data_base64` the whole aggregate's.
    pub(super) aggregated: Aggregated,
}

/// Whether a record is a KPL aggregate's user record (see `docs/kpl-aggregation.md`).
#[derive(Clone, Copy)]
pub(super) enum Aggregated {
    /// A record as the producer put it.
    Plain,
    /// A user record: its index in `KinesisBatch::user_records`.
    User(u32),
    /// An aggregate that cannot be read, kept whole to be rejected.
    Corrupt(AggregateError),
}

/// What a user record of an aggregate has of its own.
#[derive(Clone, Copy)]
pub(super) struct UserSpans {
    pub(super) sub_sequence_number: u32,
    /// In `KinesisBatch::user_data`.
    pub(super) data: Span,
    /// In the batch's text.
    pub(super) explicit_hash_key: Option<Span>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
}
