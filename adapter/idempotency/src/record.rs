//! The idempotency record: one item per key, and the pure rules over it (see
//! `docs/idempotency.md`).
//!
//! The rules here decide without I/O: whether a stored item may be taken over (the same test the
//! DynamoDB store writes as its condition expression), and what an item that could not be taken
//! means for the record at hand.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lambda_kinesis::HandlerOutcome;

/// Where a key stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// An invocation took the key and is running the handler.
    InProgress,
    /// The handler ran; its outcome is stored.
    Completed,
}

impl Status {
    /// The status as it is stored (`INPROGRESS`, `COMPLETED`, as in Powertools).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InProgress => "INPROGRESS",
            Self::Completed => "COMPLETED",
        }
    }

    /// Reads a stored status.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "INPROGRESS" => Some(Self::InProgress),
            "COMPLETED" => Some(Self::Completed),
            _ => None,
        }
    }
}

/// The outcome a completed record settles with: the handler's `ack` or `drop`. A `hold` is never
/// stored: it releases the key, so that the next delivery runs the handler again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredOutcome {
    /// The handler acked the record.
    Ack,
    /// The handler dropped the record.
    Drop,
}

impl StoredOutcome {
    /// The outcome to store for what a handler returned, if it settles the record.
    pub fn of(outcome: HandlerOutcome) -> Option<Self> {
        match outcome {
            HandlerOutcome::Ack => Some(Self::Ack),
            HandlerOutcome::Drop => Some(Self::Drop),
            HandlerOutcome::Hold => None,
        }
    }

    /// The outcome a duplicate is settled with.
    pub fn outcome(self) -> HandlerOutcome {
        match self {
            Self::Ack => HandlerOutcome::ack(),
            Self::Drop => HandlerOutcome::drop(),
        }
    }

    /// The outcome as it is stored (`ack`, `drop`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ack => "ack",
            Self::Drop => "drop",
        }
    }

    /// Reads a stored outcome.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ack" => Some(Self::Ack),
            "drop" => Some(Self::Drop),
            _ => None,
        }
    }
}

/// One key's item, as every store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The namespaced key (the table's partition key, `id`).
    pub id: String,
    /// Where the key stands.
    pub status: Status,
    /// When the item lapses, in seconds since the Unix epoch: DynamoDB's TTL attribute, and the
    /// time after which the key may be taken again whatever its status.
    pub expiration: u64,
    /// When an in-progress item lapses, in milliseconds since the Unix epoch: the deadline of the
    /// invocation that took it. `None` when the invocation had no deadline; the item then lapses
    /// at [`expiration`](Self::expiration) only.
    pub in_progress_expiration: Option<u64>,
    /// The hash of the payload the key was taken for.
    pub payload_hash: String,
    /// The handler's outcome, once completed.
    pub outcome: Option<StoredOutcome>,
}

impl IdempotencyRecord {
    /// The item an invocation writes to take `id` at `now`: in progress until `deadline` (the
    /// invocation's), lapsing after `expires_after` in any case.
    pub fn in_progress(
        id: String,
        payload_hash: String,
        now: SystemTime,
        expires_after: Duration,
        deadline: Option<SystemTime>,
    ) -> Self {
        Self {
            id,
            status: Status::InProgress,
            expiration: unix_seconds(now + expires_after),
            in_progress_expiration: deadline.map(unix_millis),
            payload_hash,
            outcome: None,
        }
    }

    /// The item once the handler settled the record with `outcome`.
    pub fn completed(&self, outcome: StoredOutcome) -> Self {
        Self {
            status: Status::Completed,
            in_progress_expiration: None,
            outcome: Some(outcome),
            ..self.clone()
        }
    }
}

/// Whether a key whose item is `existing` may be taken at `now`: no item, a lapsed item, or an
/// in-progress item whose invocation's deadline passed. The DynamoDB store writes the same test
/// as its condition expression.
pub fn may_take(existing: Option<&IdempotencyRecord>, now: SystemTime) -> bool {
    let Some(existing) = existing else {
        return true;
    };
    existing.expiration < unix_seconds(now)
        || (existing.status == Status::InProgress
            && existing
                .in_progress_expiration
                .is_some_and(|lapses| lapses < unix_millis(now)))
}

/// What an item that could not be taken means for a record whose payload hashes to `payload_hash`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The record was handled: settle it with the stored outcome, without running the handler.
    Completed(HandlerOutcome),
    /// Another invocation is running the handler for this key: hold the record.
    InProgress,
    /// The key was taken for another payload: a named error, and the record is held.
    PayloadMismatch {
        /// The hash stored with the key.
        stored: String,
    },
    /// A completed item without an outcome (written by something else): the record is held.
    NoOutcome,
}

/// Judges an item that could not be taken. The payload is checked first, as Powertools does: a
/// key reused for another payload is an error whatever the item's status.
pub fn judge(existing: &IdempotencyRecord, payload_hash: &str) -> Found {
    if existing.payload_hash != payload_hash {
        return Found::PayloadMismatch {
            stored: existing.payload_hash.clone(),
        };
    }
    match (existing.status, existing.outcome) {
        (Status::InProgress, _) => Found::InProgress,
        (Status::Completed, Some(outcome)) => Found::Completed(outcome.outcome()),
        (Status::Completed, None) => Found::NoOutcome,
    }
}

/// Seconds since the Unix epoch (0 before it).
pub(crate) fn unix_seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// Milliseconds since the Unix epoch (0 before it).
pub(crate) fn unix_millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    fn taken_at(seconds: u64, deadline: Option<u64>) -> IdempotencyRecord {
        IdempotencyRecord::in_progress(
            "f#1".into(),
            "hash".into(),
            at(seconds),
            HOUR,
            deadline.map(at),
        )
    }

    #[track_caller]
    fn check_may_take(existing: Option<IdempotencyRecord>, now: u64, expected: bool) {
        assert_eq!(may_take(existing.as_ref(), at(now)), expected);
    }

    #[test]
    fn a_key_without_an_item_is_taken() {
        check_may_take(None, 1_000, true);
    }

    #[test]
    fn a_running_invocation_keeps_its_key_until_its_deadline() {
        check_may_take(Some(taken_at(1_000, Some(1_900))), 1_899, false);
        check_may_take(Some(taken_at(1_000, Some(1_900))), 1_901, true);
    }

    #[test]
    fn an_in_progress_item_without_a_deadline_lapses_at_its_expiration() {
        check_may_take(Some(taken_at(1_000, None)), 1_000 + 3_599, false);
        check_may_take(Some(taken_at(1_000, None)), 1_000 + 3_601, true);
    }

    #[test]
    fn a_completed_item_holds_its_key_until_it_expires() {
        let completed = taken_at(1_000, Some(1_010)).completed(StoredOutcome::Ack);
        check_may_take(Some(completed.clone()), 1_020, false);
        check_may_take(Some(completed), 1_000 + 3_601, true);
    }

    #[test]
    fn a_completed_item_settles_with_its_outcome() {
        let dropped = taken_at(1_000, None).completed(StoredOutcome::Drop);
        assert_eq!(
            judge(&dropped, "hash"),
            Found::Completed(HandlerOutcome::Drop)
        );
        let acked = taken_at(1_000, None).completed(StoredOutcome::Ack);
        assert_eq!(judge(&acked, "hash"), Found::Completed(HandlerOutcome::Ack));
    }

    #[test]
    fn an_in_progress_item_holds_the_record() {
        assert_eq!(judge(&taken_at(1_000, None), "hash"), Found::InProgress);
    }

    #[test]
    fn another_payload_under_the_key_is_a_mismatch_whatever_the_status() {
        let expected = Found::PayloadMismatch {
            stored: "hash".into(),
        };
        assert_eq!(judge(&taken_at(1_000, None), "other"), expected);
        let completed = taken_at(1_000, None).completed(StoredOutcome::Ack);
        assert_eq!(judge(&completed, "other"), expected);
    }

    #[test]
    fn a_completed_item_without_outcome_is_named() {
        let mut completed = taken_at(1_000, None).completed(StoredOutcome::Ack);
        completed.outcome = None;
        assert_eq!(judge(&completed, "hash"), Found::NoOutcome);
    }

    #[test]
    fn only_settling_outcomes_are_stored() {
        assert_eq!(StoredOutcome::of(HandlerOutcome::hold()), None);
        for outcome in [StoredOutcome::Ack, StoredOutcome::Drop] {
            assert_eq!(StoredOutcome::of(outcome.outcome()), Some(outcome));
            assert_eq!(StoredOutcome::parse(outcome.as_str()), Some(outcome));
        }
        for status in [Status::InProgress, Status::Completed] {
            assert_eq!(Status::parse(status.as_str()), Some(status));
        }
    }
}
