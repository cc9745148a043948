//! Reading records again without a restart (`kinesis-esm replay`): the rules, with no I/O
//! (`rules.rs`), the registry of running readers a replay is handed to (`dispatch.rs`); the
//! control handle hands it over (`MappingControl::replay`) and each reader applies it between
//! batches (`reader/apply_replay.rs`).
//!
//! Lambda has no such operation (the AWS way is a new mapping whose `StartingPosition` is
//! `AT_TIMESTAMP`); this is a tool of the emulator and of `kinesis-esm` run off Lambda
//! (`docs/event-source-mapping.md` §9). The shard's reader, which holds the
//! lease, moves its checkpoint back with an ordinary checkpoint write (fenced by the lease
//! counter, as every checkpoint is) and reads on from there. A checkpoint names the last settled
//! record, so reading again from record `R` writes the record before `R` (or `TRIM_HORIZON`
//! when `R` is the shard's oldest).
//!
//! What is refused, and why:
//! - a timestamp in the future: no record arrived then, and the mapping would skip every record
//!   that comes until then;
//! - a position after the checkpoint: replay reads records again, it never skips unsettled ones;
//! - a shard at `SHARD_END`: its children have started (or finished) on the records that follow
//!   it, and reading the parent again would break the parent-before-child order of every key
//!   (`docs/resharding.md`). Its children are named, to replay instead.

mod dispatch;
mod rules;

pub(super) use dispatch::ReplayRegistry;
pub(super) use rules::{ReplayCommand, check_move, closed_shard};
pub use rules::{ReplayError, ReplayFrom, ReplayOutcome, ReplayReport, Replayed, check_timestamp};
