//! What a running mapping reports: per shard, its phase, its counters and its checkpoint.

mod mapping_status;
mod recent;
mod shard_status;
#[cfg(test)]
mod tests;

pub use mapping_status::{MappingEvent, MappingStatus};
pub use recent::{InvocationVerdict, RECENT_INVOCATIONS_KEPT, RecentInvocation, RecentInvocations};
pub use shard_status::{DiscardedRange, HeldRecord, NextRetry, ShardPhase, ShardStatus};
pub(super) use shard_status::{Settled, ShardChange};
