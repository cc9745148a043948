//! The account's minimum throughput billing commitment as pure rules of it and the time
//! (`MinimumThroughputBillingCommitmentInput` in the API reference: at least 24 hours once
//! enabled; disabled sooner, it ends at the earliest allowed time unless enabled again first).

/// How long a commitment lasts at least once enabled: the API reference's
/// `MinimumThroughputBillingCommitmentInput` ("a minimum duration of 24 hours").
pub(crate) const MINIMUM_COMMITMENT_MS: u64 = 24 * 3600 * 1000;

/// The account's minimum throughput billing commitment, with its times in epoch milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Commitment {
    /// Never enabled: `DISABLED`, with no times.
    #[default]
    Never,
    /// `ENABLED`.
    Enabled {
        /// When it was enabled.
        started_ms: u64,
    },
    /// `ENABLED_UNTIL_EARLIEST_ALLOWED_END`: disabled within its first 24 hours, so it ends at
    /// the earliest time allowed.
    EndingAtEarliest {
        /// When it was enabled.
        started_ms: u64,
    },
    /// `DISABLED` after it ran for a while.
    Ended {
        /// When it was enabled.
        started_ms: u64,
        /// When it ended.
        ended_ms: u64,
    },
}

impl Commitment {
    /// The commitment as it stands at `now_ms`: one due to end has ended.
    pub fn at(self, now_ms: u64) -> Self {
        match self {
            Self::EndingAtEarliest { started_ms } if now_ms >= earliest_end(started_ms) => {
                Self::Ended {
                    started_ms,
                    ended_ms: earliest_end(started_ms),
                }
            }
            other => other,
        }
    }

    /// The commitment after `UpdateAccountSettings` asks for `ENABLED` (`enable`) or
    /// `DISABLED` at `now_ms`. Disabling within the first 24 hours schedules the end at the
    /// earliest allowed time, and enabling again before then cancels it.
    pub fn updated(self, enable: bool, now_ms: u64) -> Self {
        match (self.at(now_ms), enable) {
            (Self::Never | Self::Ended { .. }, true) => Self::Enabled { started_ms: now_ms },
            (Self::EndingAtEarliest { started_ms } | Self::Enabled { started_ms }, true) => {
                Self::Enabled { started_ms }
            }
            (Self::Enabled { started_ms }, false) if now_ms < earliest_end(started_ms) => {
                Self::EndingAtEarliest { started_ms }
            }
            (Self::Enabled { started_ms }, false) => Self::Ended {
                started_ms,
                ended_ms: now_ms,
            },
            (other, false) => other,
        }
    }

    /// `Status`, as the API spells it.
    pub fn status(self) -> &'static str {
        match self {
            Self::Never | Self::Ended { .. } => "DISABLED",
            Self::Enabled { .. } => "ENABLED",
            Self::EndingAtEarliest { .. } => "ENABLED_UNTIL_EARLIEST_ALLOWED_END",
        }
    }

    /// `StartedAt`, `EndedAt` and `EarliestAllowedEndAt`, in epoch milliseconds, where they
    /// apply.
    pub fn times(self) -> (Option<u64>, Option<u64>, Option<u64>) {
        match self {
            Self::Never => (None, None, None),
            Self::Enabled { started_ms } | Self::EndingAtEarliest { started_ms } => {
                (Some(started_ms), None, Some(earliest_end(started_ms)))
            }
            Self::Ended {
                started_ms,
                ended_ms,
            } => (Some(started_ms), Some(ended_ms), None),
        }
    }
}

fn earliest_end(started_ms: u64) -> u64 {
    started_ms.saturating_add(MINIMUM_COMMITMENT_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = MINIMUM_COMMITMENT_MS;

    #[track_caller]
    fn check(steps: &[(u64, bool, Commitment)]) {
        let mut commitment = Commitment::Never;
        for (position, &(at_ms, enable, expected)) in steps.iter().enumerate() {
            commitment = commitment.updated(enable, at_ms);
            assert_eq!(commitment, expected, "step {position} at {at_ms} ms");
        }
    }

    #[test]
    fn a_commitment_runs_at_least_a_day() {
        check(&[
            (10, false, Commitment::Never),
            (10, true, Commitment::Enabled { started_ms: 10 }),
            // Enabling again changes nothing.
            (20, true, Commitment::Enabled { started_ms: 10 }),
            // Disabled within its first day: it ends at the earliest allowed time.
            (30, false, Commitment::EndingAtEarliest { started_ms: 10 }),
            // Enabled again before then: the end is cancelled.
            (40, true, Commitment::Enabled { started_ms: 10 }),
            (
                DAY + 10,
                false,
                Commitment::Ended {
                    started_ms: 10,
                    ended_ms: DAY + 10,
                },
            ),
            // A new commitment starts afresh.
            (
                DAY + 20,
                true,
                Commitment::Enabled {
                    started_ms: DAY + 20,
                },
            ),
        ]);
    }

    #[test]
    fn a_scheduled_end_happens_at_the_earliest_allowed_time() {
        let ending = Commitment::EndingAtEarliest { started_ms: 10 };
        assert_eq!(ending.at(DAY + 9), ending);
        let ended = Commitment::Ended {
            started_ms: 10,
            ended_ms: DAY + 10,
        };
        assert_eq!(ending.at(DAY + 10), ended);
        assert_eq!(ended.status(), "DISABLED");
        assert_eq!(ended.times(), (Some(10), Some(DAY + 10), None));
        assert_eq!(ending.status(), "ENABLED_UNTIL_EARLIEST_ALLOWED_END");
        assert_eq!(ending.times(), (Some(10), None, Some(DAY + 10)));
        assert_eq!(Commitment::Never.times(), (None, None, None));
    }
}
