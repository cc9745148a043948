//! The rules of reading again, with no I/O: where from, what is refused and why (the face,
//! `mapping/replay.rs`, says why each refusal is made).

use std::fmt;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::lease::Checkpoint;
use kinesis_source::sequence::SequenceNumber;

/// Where a shard is read again from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayFrom {
    /// The oldest record the shard still holds.
    TrimHorizon,
    /// This record (it must be a record of the shard).
    SequenceNumber(SequenceNumber),
    /// The first record that arrived at or after this time.
    Timestamp(SystemTime),
}

impl fmt::Display for ReplayFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TrimHorizon => f.write_str("TRIM_HORIZON"),
            Self::SequenceNumber(sequence_number) => write!(f, "sequence number {sequence_number}"),
            Self::Timestamp(at) => write!(f, "{}", kinesis_source::time::iso8601_millis(*at)),
        }
    }
}

/// What a shard's status says about the last replay (`kinesis-esm status`: "replayed from X at
/// T").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replayed {
    /// What the replay asked for, as text (`TRIM_HORIZON`, a sequence number, a timestamp).
    pub from: String,
    /// The checkpoint before the replay.
    pub previous_checkpoint: Checkpoint,
    /// The checkpoint the replay wrote.
    pub checkpoint: Checkpoint,
    /// When it was written, in milliseconds since the Unix epoch.
    pub at_epoch_millis: i64,
}

/// How one shard's replay went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayOutcome {
    /// The shard.
    pub shard_id: String,
    /// Its checkpoint before.
    pub previous_checkpoint: Checkpoint,
    /// The checkpoint written: the reader reads on after it.
    pub checkpoint: Checkpoint,
    /// The first record read again, if the shard holds one there.
    pub first_record: Option<SequenceNumber>,
}

/// What a replay of a mapping did: the shards read again, and those passed over (with why).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// The shards whose checkpoint moved.
    pub replayed: Vec<ReplayOutcome>,
    /// Shards not replayed, each with a sentence saying why (read to their end, read by
    /// another instance).
    pub passed_over: Vec<String>,
}

/// Why a replay was refused: a sentence naming the function, shard, sequence number or time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReplayError(pub String);

/// A replay request handed to a shard's reader, and where its answer goes.
pub(in crate::mapping) struct ReplayCommand {
    pub(in crate::mapping) from: ReplayFrom,
    pub(in crate::mapping) answer: oneshot::Sender<Result<ReplayOutcome, ReplayError>>,
}

/// Refuses a timestamp in the future (`now` is the caller's clock).
pub fn check_timestamp(at: SystemTime, now: SystemTime) -> Result<(), ReplayError> {
    if at > now {
        return Err(ReplayError(format!(
            "{} is in the future (it is {} now): no record arrived then, and reading from it \
             would skip every record that comes before it",
            kinesis_source::time::iso8601_millis(at),
            kinesis_source::time::iso8601_millis(now)
        )));
    }
    Ok(())
}

/// Whether `shard_id`'s checkpoint may move from `current` to `new` for a replay: only back
/// (or to where it is), never past unsettled records, and never for a shard at `SHARD_END`.
pub(in crate::mapping) fn check_move(
    shard_id: &str,
    current: &Checkpoint,
    new: &Checkpoint,
) -> Result<(), ReplayError> {
    let forward = match (current, new) {
        (Checkpoint::ShardEnd, _) => return Err(closed_shard(shard_id, &[])),
        (_, Checkpoint::TrimHorizon) => false,
        (Checkpoint::SequenceNumber(current), Checkpoint::SequenceNumber(new)) => new > current,
        // Nothing settled past the oldest record: any later position skips records.
        (Checkpoint::TrimHorizon, _) => true,
        // A reader that started at the newest record or at a timestamp has settled nothing
        // before it: reading older records is what a replay is for.
        (Checkpoint::Latest | Checkpoint::AtTimestamp, _) => false,
        (_, Checkpoint::Latest | Checkpoint::AtTimestamp | Checkpoint::ShardEnd) => true,
    };
    if forward {
        return Err(ReplayError(format!(
            "shard {shard_id}: that position lies after its checkpoint {current}: a replay reads \
             settled records again and never skips records not yet settled"
        )));
    }
    Ok(())
}

/// The refusal for a shard read to its end.
pub(in crate::mapping) fn closed_shard(shard_id: &str, children: &[String]) -> ReplayError {
    let children = match children {
        [] => String::new(),
        children => format!(" (its children: {})", children.join(", ")),
    };
    ReplayError(format!(
        "shard {shard_id} is closed and read to its end (SHARD_END): its children took its hash \
         keys over{children}, and reading it again would deliver its records after theirs; \
         replay its children instead, or read the stream again with a new mapping at \
         AT_TIMESTAMP"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn seq(digits: &str) -> Checkpoint {
        Checkpoint::SequenceNumber(digits.parse().unwrap())
    }

    #[test]
    fn a_replay_moves_a_checkpoint_back_never_forward() {
        let shard = "shardId-000000000000";
        assert_eq!(check_move(shard, &seq("500"), &seq("100")), Ok(()));
        assert_eq!(check_move(shard, &seq("500"), &seq("500")), Ok(()));
        assert_eq!(
            check_move(shard, &seq("500"), &Checkpoint::TrimHorizon),
            Ok(())
        );
        assert_eq!(check_move(shard, &Checkpoint::Latest, &seq("100")), Ok(()));
        let forward = check_move(shard, &seq("500"), &seq("900")).unwrap_err();
        assert!(
            forward.0.contains("lies after its checkpoint 500"),
            "{forward}"
        );
        assert!(check_move(shard, &Checkpoint::TrimHorizon, &seq("100")).is_err());
        let closed =
            check_move(shard, &Checkpoint::ShardEnd, &Checkpoint::TrimHorizon).unwrap_err();
        assert!(closed.0.contains("SHARD_END"), "{closed}");
    }

    #[test]
    fn a_closed_shard_names_its_children() {
        let refused = closed_shard("shardId-000000000000", &["shardId-000000000001".into()]);
        assert!(
            refused.0.contains("(its children: shardId-000000000001)"),
            "{refused}"
        );
    }

    #[test]
    fn a_timestamp_in_the_future_is_refused() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(check_timestamp(now, now), Ok(()));
        assert_eq!(check_timestamp(now - Duration::from_secs(60), now), Ok(()));
        let refused = check_timestamp(now + Duration::from_secs(60), now).unwrap_err();
        assert_eq!(
            refused.0,
            "2023-11-14T22:14:20.000Z is in the future (it is 2023-11-14T22:13:20.000Z now): no \
             record arrived then, and reading from it would skip every record that comes before it"
        );
    }
}
