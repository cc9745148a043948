//! One shard's reader: reads, batches, invokes, retries and checkpoints, one batch in flight
//! (with `ParallelizationFactor` above 1, one batch in flight per lane: [`concurrent`]).
//!
//! A settled batch's checkpoint is written while the next batch is invoked: the write runs in a
//! task of its own ([`Checkpointer`](super::checkpointer::Checkpointer)), and the reader waits for
//! it before it starts the next write, before it pauses (a retry's backoff, or waiting for records
//! once caught up), before `SHARD_END`, and before it gives its lease up. So writes land one at a
//! time and in order, one per settled batch; a shard that is caught up, or waiting to retry a held
//! record, has written every checkpoint it owes; and a function slower than the lease table hides
//! the write entirely (against DynamoDB, a write takes milliseconds).
//!
//! The reader invokes a batch with a write still in flight only while its lease is certainly its
//! own: a lease write (checkpoint or renewal) succeeded less than half the failover time ago, and
//! no other worker takes a lease before the failover time has passed without a write. Otherwise it
//! waits for the write first, and a write that finds the lease lost stops the reader before it
//! invokes anything more, as without the overlap.

mod apply_replay;
mod batch;
mod concurrent;
mod position;
mod shard_end;
mod shard_reader;
mod windows;

/// The records of an event, as the mapping writes them (`failures replay` writes its events so).
pub use batch::event_records;
pub(super) use shard_reader::ShardReader;
