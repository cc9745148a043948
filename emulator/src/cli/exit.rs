//! What an exit code means, as `kinesis-esm` ends, and how a run's end decides it.

use std::process::ExitCode;

/// What an exit code means, as `kinesis-esm` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Every record read was settled.
    Settled,
    /// At least one shard is blocked on a held record.
    Held,
    /// The run could not start or failed: bad template, function that does not build, ...
    Error,
    /// `run --fail-on-discard`: the run discarded records.
    Discarded,
    /// A function never initialised: its records were retried and discarded without one
    /// invocation reaching its handler.
    NeverInitialised,
    /// A second Ctrl-C or SIGTERM stopped the run at once, without waiting for the batches in
    /// flight (130, as a shell reports a command stopped by Ctrl-C).
    Interrupted,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        match exit {
            Exit::Settled => ExitCode::SUCCESS,
            Exit::Held => ExitCode::from(1),
            Exit::Error => ExitCode::from(2),
            Exit::Discarded => ExitCode::from(3),
            Exit::NeverInitialised => ExitCode::from(4),
            Exit::Interrupted => ExitCode::from(130),
        }
    }
}

impl Exit {
    /// How a run whose mappings ended as `finals` exits. A function that never initialised wins:
    /// nothing of its records reached it. Discarded records (with `fail_on_discard`) win over a
    /// held shard: they will not come again, a held record will.
    pub(crate) fn of_run(
        finals: &[esm_engine::mapping::MappingStatus],
        fail_on_discard: bool,
        never_initialised: bool,
    ) -> Self {
        if never_initialised {
            return Self::NeverInitialised;
        }
        let discarded = finals.iter().any(|status| status.totals().discarded > 0);
        let held = finals
            .iter()
            .any(|status| status.shards.values().any(|shard| shard.held.is_some()));
        match (fail_on_discard && discarded, held) {
            (true, _) => Self::Discarded,
            (false, true) => Self::Held,
            (false, false) => Self::Settled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use esm_engine::mapping::{HeldRecord, MappingStatus, ShardStatus};

    fn ended(discarded: u64, held: bool) -> MappingStatus {
        let shard = ShardStatus {
            shard_id: "shardId-000000000000".to_owned(),
            discarded,
            held: held.then(|| HeldRecord {
                sequence_number: "1".parse().expect("a sequence number"),
                failed_deliveries: 2,
                reason: "function error".to_owned(),
                retries_capped: false,
                next_retry: None,
            }),
            ..ShardStatus::default()
        };
        MappingStatus {
            shards: [(shard.shard_id.clone(), shard)].into(),
            ..MappingStatus::default()
        }
    }

    #[test]
    fn a_run_that_discarded_exits_3_only_with_fail_on_discard() {
        let cases = [
            // (discarded, held, --fail-on-discard, exit)
            (0, false, false, Exit::Settled),
            (0, false, true, Exit::Settled),
            (0, true, true, Exit::Held),
            (6, false, false, Exit::Settled),
            (6, true, false, Exit::Held),
            (6, false, true, Exit::Discarded),
            (6, true, true, Exit::Discarded),
        ];
        for (discarded, held, fail_on_discard, expected) in cases {
            assert_eq!(
                Exit::of_run(
                    &[ended(0, false), ended(discarded, held)],
                    fail_on_discard,
                    false
                ),
                expected,
                "discarded {discarded}, held {held}, --fail-on-discard {fail_on_discard}"
            );
        }
        assert_eq!(ExitCode::from(Exit::Discarded), ExitCode::from(3));
    }

    #[test]
    fn a_function_that_never_initialised_exits_4_over_held_and_discarded() {
        for fail_on_discard in [false, true] {
            assert_eq!(
                Exit::of_run(&[ended(6, true)], fail_on_discard, true),
                Exit::NeverInitialised
            );
        }
        assert_eq!(ExitCode::from(Exit::NeverInitialised), ExitCode::from(4));
    }
}
