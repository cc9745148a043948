//! The account beside its streams: its limits (`DescribeLimits`) and its minimum throughput
//! billing commitment (`DescribeAccountSettings`, `UpdateAccountSettings`), whose rules are in
//! `commitment.rs`; [`EmbeddedKinesis`] keeps it, journaled so that `--state-dir` keeps it.
//! Nothing is billed and nothing depends on it.

use std::sync::PoisonError;

use kinesis_source::SourceError;

use crate::commitment::Commitment;
use crate::embedded::{EmbeddedKinesis, not_kept};
use crate::journal::Change;
use crate::limits::ON_DEMAND_STREAM_LIMIT;

/// What `DescribeLimits` tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountLimits {
    /// How many open shards the account may hold (the builder's `shard_limit`).
    pub shard_limit: usize,
    /// How many shards are open across the account's streams.
    pub open_shard_count: usize,
    /// How many streams are `ON_DEMAND`.
    pub on_demand_stream_count: usize,
    /// How many `ON_DEMAND` streams the account may hold (shown, not enforced).
    pub on_demand_stream_count_limit: usize,
}

impl EmbeddedKinesis {
    /// `DescribeLimits`: the account's shard limit and open shards, and its `ON_DEMAND` streams.
    pub fn describe_limits(&self) -> AccountLimits {
        let on_demand_stream_count = self
            .list_streams()
            .iter()
            .filter(|stream| self.is_on_demand(stream).unwrap_or(false))
            .count();
        AccountLimits {
            shard_limit: self.inner.budget.limit(),
            open_shard_count: self.inner.budget.open(),
            on_demand_stream_count,
            on_demand_stream_count_limit: ON_DEMAND_STREAM_LIMIT,
        }
    }

    /// `DescribeAccountSettings`: the minimum throughput billing commitment, as it stands now.
    pub fn account_commitment(&self) -> Commitment {
        let now_ms = self.now().1;
        self.commitment().at(now_ms)
    }

    /// `UpdateAccountSettings`: asks for the commitment `ENABLED` (`enable`) or `DISABLED`;
    /// the commitment as it then stands.
    pub fn update_account_commitment(&self, enable: bool) -> Result<Commitment, SourceError> {
        let now_ms = self.now().1;
        let mut commitment = self.commitment();
        let updated = commitment.updated(enable, now_ms);
        if updated != *commitment && self.inner.journal.is_enabled() {
            let change = Change::Account {
                commitment: updated,
            };
            self.inner
                .journal
                .append(&change.encode())
                .map_err(|error| not_kept("UpdateAccountSettings", "(the account)", &error))?;
        }
        *commitment = updated;
        Ok(updated)
    }

    /// The commitment, locked: an update holds the lock across its journal write.
    pub(crate) fn commitment(&self) -> std::sync::MutexGuard<'_, Commitment> {
        // A plain value, replaced whole.
        self.inner
            .commitment
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
