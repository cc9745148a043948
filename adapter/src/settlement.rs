//! What the adapter concluded about a batch: each record's outcome, where the batch is cut, and
//! the response Lambda is given. Tests read it through the [`testing`](crate::testing) kit.
//!
//! One rule decides everything: the response names the first record, in shard order, that is
//! not settled (acked or dropped): the [`Cut`]. Lambda checkpoints in front of it and delivers it
//! and every record behind it again; with nothing named, Lambda checkpoints past the whole batch.
//! A response can only name a Kinesis record, so when that first record is a user record of a KPL
//! aggregate the cut is the aggregate's first user record (see [`aggregate`](crate::aggregate)).
//!
//! ```
//! use lambda_kinesis::HandlerOutcome;
//! use lambda_kinesis::settlement::Cut;
//! use lambda_kinesis::testing::{TestEvent, settle};
//!
//! async fn even_only(n: &u32) -> HandlerOutcome {
//!     match n % 2 {
//!         0 => HandlerOutcome::ack(),
//!         _ => HandlerOutcome::hold(),
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let event = TestEvent::new().json(&2).json(&4).json(&5).json(&6);
//! let settlement = settle(even_only, &event).await;
//!
//! assert_eq!(settlement.summary(), "ack ack hold skip");
//! assert_eq!(
//!     settlement.cut(),
//!     Some(Cut { index: 2, sequence_number: event.sequence_number(2) })
//! );
//! # }
//! ```

use std::fmt;

use crate::aggregate::AggregateError;
use crate::batch::{KinesisBatch, RecordMeta};
use crate::outcome::HandlerError;
use crate::wire::BatchResponse;

/// How one record of a batch ended up, as the adapter settled it.
///
/// | variant | [`summary`](Settlement::summary) word | the record |
/// |---|---|---|
/// | [`Acked`](Self::Acked) | `ack` | the handler acked it |
/// | [`Dropped`](Self::Dropped) | `drop` | retired: by the handler, or undecodable |
/// | [`Held`](Self::Held) | `hold` | delivered again: the handler held it, failed, panicked, or it is undecodable and held |
/// | [`Skipped`](Self::Skipped) | `skip` | never handed to the handler (behind a held record, or the deadline); delivered again |
/// | [`Republished`](Self::Republished) | `retry` or `dead-letter` | held, and published to the retry or dead-letter stream (see [`retry`](crate::retry)) |
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RecordOutcome {
    /// The handler acked it.
    Acked,
    /// It was retired without being handled.
    Dropped(DropReason),
    /// It is held: Lambda will deliver it again.
    Held(HoldReason),
    /// The handler was never called for it; Lambda will deliver it again.
    Skipped(SkipReason),
    /// The handler held it, and it was published to the adapter's retry or dead-letter stream:
    /// settled here, it comes again from there.
    Republished(Republished),
}

/// Where a held record was published.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Republished {
    /// The stream it went to.
    pub stream: String,
    /// For the retry stream, the attempt it will be (from 1); for the dead-letter stream, the
    /// retries it had.
    pub attempt: u32,
    /// Whether it went to the dead-letter stream.
    pub dead_letter: bool,
}

impl RecordOutcome {
    /// Whether the record is settled (acked, dropped or republished), so the checkpoint may
    /// pass it.
    pub fn is_settled(&self) -> bool {
        matches!(self, Self::Acked | Self::Dropped(_) | Self::Republished(_))
    }

    /// The outcome's one word in a [`Settlement::summary`]: `ack`, `drop`, `hold`, `skip`,
    /// `retry` or `dead-letter`.
    pub fn word(&self) -> &'static str {
        match self {
            Self::Acked => "ack",
            Self::Dropped(_) => "drop",
            Self::Held(_) => "hold",
            Self::Skipped(_) => "skip",
            Self::Republished(Republished {
                dead_letter: false, ..
            }) => "retry",
            Self::Republished(Republished {
                dead_letter: true, ..
            }) => "dead-letter",
        }
    }
}

/// Why a record was retired.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DropReason {
    /// The handler returned [`HandlerOutcome::drop`](crate::HandlerOutcome::drop).
    Handler,
    /// The record's data could not be decoded, and undecodable records are dropped.
    Undecodable(UndecodableRecord),
}

/// Why a record is held.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HoldReason {
    /// The handler returned [`HandlerOutcome::hold`](crate::HandlerOutcome::hold).
    Handler,
    /// The handler returned an error.
    Error(HandlerError),
    /// The handler panicked; the text is the panic's message.
    Panicked(String),
    /// The record's data could not be decoded, and undecodable records are held.
    Undecodable(UndecodableRecord),
    /// A batch handler returned a number of outcomes that does not match the records it was given.
    OutcomeCountMismatch {
        /// How many records the handler was given.
        records: usize,
        /// How many outcomes it returned.
        outcomes: usize,
    },
}

/// Why the handler was not called for a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// An earlier record of the shard (in lanes mode: of the same partition key) is held, and
    /// Lambda delivers this record again anyway.
    BehindHeldRecord,
    /// The invocation's remaining time fell under the deadline margin before this record started.
    Deadline,
}

/// A record the adapter could not decode for the handler, named so it can be logged and matched.
///
/// It settles by a rule fixed before the handler runs: dropped by default (another try would get
/// the same answer), or held when [`KinesisAdapter::hold_undecodable`](crate::KinesisAdapter::hold_undecodable)
/// is set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UndecodableRecord {
    /// The shard the record came from.
    pub shard_id: String,
    /// The record's sequence number.
    pub sequence_number: String,
    /// For a user record of a KPL aggregate, its position in the aggregate.
    pub sub_sequence_number: Option<u64>,
    /// What was wrong with it.
    pub failure: DecodeFailure,
}

/// What made a record undecodable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeFailure {
    /// The record's `data` field is not standard base64. Lambda never sends this; a hand-written
    /// event can.
    InvalidBase64(String),
    /// The data does not decode as the handler's type: not valid JSON for it, or refused by its
    /// own [`FromRecordData`](crate::handler::FromRecordData) decoder. The text is the decoder's.
    InvalidData(String),
    /// The data starts as a KPL aggregate does, but the aggregate cannot be read (see
    /// [`aggregate`](crate::aggregate)).
    CorruptAggregate(AggregateError),
    /// The record was read from the adapter's retry stream but its data is not a retry
    /// envelope (see [`retry`](crate::retry)). The text says what is wrong with it.
    NotAnEnvelope(String),
}

impl fmt::Display for UndecodableRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(sub_sequence_number) = self.sub_sequence_number {
            write!(f, "user record {sub_sequence_number} of ")?;
        }
        write!(f, "record {} of {}: ", self.sequence_number, self.shard_id)?;
        match &self.failure {
            DecodeFailure::InvalidBase64(detail) => write!(f, "data is not valid base64: {detail}"),
            DecodeFailure::InvalidData(detail) => {
                write!(f, "data does not decode as the handler's type: {detail}")
            }
            DecodeFailure::CorruptAggregate(error) => {
                write!(f, "a KPL aggregate that cannot be read: {error}")
            }
            DecodeFailure::NotAnEnvelope(detail) => {
                write!(f, "read from the retry stream, but {detail}")
            }
        }
    }
}

impl std::error::Error for UndecodableRecord {}

/// A batch and how each of its records was settled.
#[derive(Debug, Clone)]
pub struct Settlement {
    batch: KinesisBatch,
    outcomes: Vec<RecordOutcome>,
}

/// Where a batch is cut: its first record, in shard order, that is not settled or, when that
/// one is a user record of a KPL aggregate, the aggregate's first user record, since the response
/// can only name the aggregate (see `docs/kpl-aggregation.md`).
///
/// The response names it; Lambda checkpoints in front of it (after the record at `index - 1`,
/// or where the checkpoint stood when `index` is 0) and delivers it and every record behind it
/// again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut<'a> {
    /// The record's index in the batch.
    pub index: usize,
    /// The record's sequence number: the `itemIdentifier` of the response.
    pub sequence_number: &'a str,
}

impl Settlement {
    pub(crate) fn new(batch: KinesisBatch, outcomes: Vec<RecordOutcome>) -> Self {
        debug_assert_eq!(batch.len(), outcomes.len());
        Self { batch, outcomes }
    }

    /// Every record with its outcome, in shard order.
    pub fn records(&self) -> impl ExactSizeIterator<Item = (RecordMeta<'_>, &RecordOutcome)> + '_ {
        self.batch.records().zip(&self.outcomes)
    }

    /// Each record's outcome, in shard order.
    pub fn outcomes(&self) -> &[RecordOutcome] {
        &self.outcomes
    }

    /// The outcome of the record at `index`.
    ///
    /// # Panics
    /// When the batch has no record at `index`; the message names the index and the number of
    /// records, at the caller's line.
    #[track_caller]
    pub fn outcome(&self, index: usize) -> &RecordOutcome {
        match self.outcomes.get(index) {
            Some(outcome) => outcome,
            None => panic!(
                "no outcome at index {index}: the settlement holds {} record(s)",
                self.outcomes.len()
            ),
        }
    }

    /// Every outcome's [`word`](RecordOutcome::word), in shard order, separated by spaces, such
    /// as `"ack ack drop hold skip"`: a whole settlement in one assertion. Match the outcomes
    /// themselves for their reasons.
    pub fn summary(&self) -> String {
        let words: Vec<&str> = self.outcomes.iter().map(RecordOutcome::word).collect();
        words.join(" ")
    }

    /// Where the batch is cut: the first record Lambda delivers again, which the response
    /// names; `None` when every record is settled and the checkpoint moves past the batch.
    ///
    /// For a user record of a KPL aggregate the cut is the aggregate's first user record: the
    /// response names the aggregate, which Lambda delivers again whole.
    pub fn cut(&self) -> Option<Cut<'_>> {
        let unsettled = self
            .outcomes
            .iter()
            .position(|outcome| !outcome.is_settled())?;
        let record = self.batch.record(unsettled)?;
        let index = unsettled - record.sub_sequence_number() as usize;
        Some(Cut {
            index,
            sequence_number: record.sequence_number(),
        })
    }

    /// The index of the first record Lambda delivers again: the cut's, or the batch's length
    /// when every record is settled.
    fn redelivered_from(&self) -> usize {
        self.cut().map_or(self.outcomes.len(), |cut| cut.index)
    }

    /// The records Lambda delivers again: the one at the cut and every record behind it.
    pub fn redelivered(&self) -> impl Iterator<Item = RecordMeta<'_>> + '_ {
        self.batch.records().skip(self.redelivered_from())
    }

    /// The response for Lambda.
    pub fn response(&self) -> BatchResponse {
        // A record dropped behind the cut is delivered again, so it is not retired yet: only
        // the drops the checkpoint passes are reported. An aggregate is reported once, when
        // any of its user records was dropped. Only dropped records are read: reading every
        // record's sequence number would cost a pass over the batch's text.
        let cut = self.cut();
        let settled = cut.map_or(self.outcomes.len(), |cut| cut.index);
        let mut dropped: Vec<String> = Vec::new();
        let mut undecodable: Vec<String> = Vec::new();
        for (index, outcome) in self.outcomes[..settled].iter().enumerate() {
            let RecordOutcome::Dropped(reason) = outcome else {
                continue;
            };
            let Some(record) = self.batch.record(index) else {
                continue;
            };
            let sequence_number = record.sequence_number();
            if dropped.last().map(String::as_str) != Some(sequence_number) {
                dropped.push(sequence_number.to_owned());
            }
            let unread = matches!(reason, DropReason::Undecodable(_));
            if unread && undecodable.last().map(String::as_str) != Some(sequence_number) {
                undecodable.push(sequence_number.to_owned());
            }
        }
        BatchResponse::new(cut.map(|cut| cut.sequence_number), dropped, undecodable)
    }
}
