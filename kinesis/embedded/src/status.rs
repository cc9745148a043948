//! A stream's status over time: `CREATING`, `UPDATING` or `DELETING` for a set delay after the
//! call that began the change, `ACTIVE` (or gone) after it. Pure: the caller says what time it
//! is, so the rules are tested without waiting.

use super::StreamStatus;

/// A change a stream is going through: the status it shows until `until_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Transition {
    status: StreamStatus,
    until_ms: u64,
}

impl Transition {
    /// `status` from `now_ms` for `delay_ms`; `None` for no delay, when the change is over at
    /// once (the default, which keeps the local loop fast).
    pub(crate) fn begin(status: StreamStatus, now_ms: u64, delay_ms: u64) -> Option<Self> {
        (delay_ms > 0).then(|| Self {
            status,
            until_ms: now_ms.saturating_add(delay_ms),
        })
    }

    /// What the stream shows at `now_ms`: the change's status while it lasts, then `ACTIVE`.
    /// A deletion that is over shows `DELETING` still; [`is_deleted`](Self::is_deleted) says
    /// the stream is gone.
    pub(crate) fn status_at(transition: Option<Self>, now_ms: u64) -> StreamStatus {
        match transition {
            Some(change) if change.status == StreamStatus::Deleting => StreamStatus::Deleting,
            Some(change) if now_ms < change.until_ms => change.status,
            _ => StreamStatus::Active,
        }
    }

    /// Whether a deletion is over at `now_ms`.
    pub(crate) fn is_deleted(transition: Option<Self>, now_ms: u64) -> bool {
        transition.is_some_and(|change| {
            change.status == StreamStatus::Deleting && now_ms >= change.until_ms
        })
    }
}

/// What an operation needs of its stream's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    /// Resharding, changing retention or mode, deleting: `ACTIVE` only, else
    /// `ResourceInUseException`.
    Active,
    /// Writing: `ACTIVE` or `UPDATING`; Kinesis answers a write to a stream still being created
    /// or being deleted as to one it does not know.
    Writable,
}

/// Why `status` does not allow an operation that `needs` it, if it does not.
pub(crate) fn refusal(needs: Needs, status: StreamStatus) -> Option<Refusal> {
    match (needs, status) {
        (_, StreamStatus::Active) | (Needs::Writable, StreamStatus::Updating) => None,
        (Needs::Active, _) => Some(Refusal::InUse),
        (Needs::Writable, _) => Some(Refusal::NotFound),
    }
}

/// How a refused operation is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `ResourceInUseException`: `... not ACTIVE, instead in state UPDATING`.
    InUse,
    /// `ResourceNotFoundException`, as for a stream that does not exist.
    NotFound,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_delay_means_no_transition() {
        assert_eq!(Transition::begin(StreamStatus::Creating, 1_000, 0), None);
        assert_eq!(Transition::status_at(None, 1_000), StreamStatus::Active);
        assert!(!Transition::is_deleted(None, 1_000));
    }

    #[test]
    fn a_change_shows_its_status_for_the_delay_then_active() {
        let creating = Transition::begin(StreamStatus::Creating, 1_000, 500);
        assert_eq!(
            Transition::status_at(creating, 1_000),
            StreamStatus::Creating
        );
        assert_eq!(
            Transition::status_at(creating, 1_499),
            StreamStatus::Creating
        );
        assert_eq!(Transition::status_at(creating, 1_500), StreamStatus::Active);
        assert!(!Transition::is_deleted(creating, 9_999));
    }

    #[test]
    fn a_deletion_ends_with_the_stream_gone() {
        let deleting = Transition::begin(StreamStatus::Deleting, 1_000, 500);
        assert_eq!(
            Transition::status_at(deleting, 1_200),
            StreamStatus::Deleting
        );
        assert!(!Transition::is_deleted(deleting, 1_499));
        assert!(Transition::is_deleted(deleting, 1_500));
    }

    #[test]
    fn writes_go_on_while_updating_and_control_operations_wait_for_active() {
        use StreamStatus::*;
        assert_eq!(refusal(Needs::Writable, Updating), None);
        assert_eq!(refusal(Needs::Writable, Creating), Some(Refusal::NotFound));
        assert_eq!(refusal(Needs::Writable, Deleting), Some(Refusal::NotFound));
        assert_eq!(refusal(Needs::Active, Active), None);
        assert_eq!(refusal(Needs::Active, Updating), Some(Refusal::InUse));
        assert_eq!(refusal(Needs::Active, Creating), Some(Refusal::InUse));
    }
}
