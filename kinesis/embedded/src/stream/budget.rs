//! The account's budget of open shards, which every stream of one embedded Kinesis draws on:
//! kept apart from the stream, which only takes shards from it and gives them back.

use std::sync::atomic::{AtomicUsize, Ordering};

use kinesis_source::SourceError;

/// The account-wide limit on open shards, shared by every stream of one embedded Kinesis.
#[derive(Debug)]
pub(crate) struct ShardBudget {
    open: AtomicUsize,
    limit: usize,
    account_id: String,
}

impl ShardBudget {
    pub(crate) fn new(limit: usize, account_id: String) -> Self {
        Self {
            open: AtomicUsize::new(0),
            limit,
            account_id,
        }
    }

    /// Takes `more` open shards from the budget, or fails as Kinesis does past the limit.
    pub(crate) fn reserve(&self, more: usize) -> Result<(), SourceError> {
        self.open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |open| {
                open.checked_add(more).filter(|&total| total <= self.limit)
            })
            .map(drop)
            .map_err(|open| SourceError::LimitExceeded {
                message: format!(
                    "This request would exceed the shard limit for the account {}. Current \
                     shard count for the account: {open}. Limit: {}. Number of additional \
                     shards that would have resulted from this request: {more}.",
                    self.account_id, self.limit
                ),
            })
    }

    /// How many shards are open.
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// How many shards may be open.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Gives `fewer` open shards back.
    pub(crate) fn release(&self, fewer: usize) {
        self.open.fetch_sub(fewer, Ordering::SeqCst);
    }
}
