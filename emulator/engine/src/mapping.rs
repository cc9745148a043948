//! The event source mapping: shard readers, leases, and the order of parents and children.
//!
//! A coordinator lists the stream's shards, creates a lease for each, and starts a reader for
//! every shard whose parents have all reached `SHARD_END`. Each reader keeps one batch in flight,
//! invokes the function, reads its answer and retries as Lambda does
//! (`docs/event-source-mapping.md` §1-§2) and writes one checkpoint per settled batch. At the end
//! of a closed shard it creates its children's leases and checkpoints `SHARD_END`, which lets the
//! coordinator start the children (`docs/resharding.md`). Several workers sharing one lease table
//! share the shards out: each round, a coordinator takes free leases up to its fair share, or
//! steals one from the most loaded worker (`balance.rs`, `docs/lease-table.md` §6).

mod balance;
mod checkpointer;
mod control;
mod coordinator;
mod judgement;
mod lanes;
mod lineage;
pub mod metrics;
mod misconfiguration;
mod on_failure;
mod options;
mod oversize;
mod policy;
mod reader;
mod reader_exit;
pub mod replay;
mod resume;
mod shared;
mod status;
mod window;

pub use control::MappingControl;
pub use coordinator::{EventSourceMapping, RunningMapping, stable_mapping_uuid};
pub use options::MappingOptions;
pub use reader::event_records;
pub use status::{
    DiscardedRange, HeldRecord, InvocationVerdict, MappingEvent, MappingStatus, NextRetry,
    RECENT_INVOCATIONS_KEPT, RecentInvocation, RecentInvocations, ShardPhase, ShardStatus,
};
