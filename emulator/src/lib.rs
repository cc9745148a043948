//! `kinesis-esm`: a local Kinesis event source mapping.
//!
//! It reads shards (from the embedded in-memory Kinesis by default, or any Kinesis endpoint),
//! keeps checkpoints (in memory by default, or in a DynamoDB lease table), honours parent/child
//! order after splits and merges, and invokes the function the way Lambda's event source mapping
//! does, so what you see locally is what Lambda would do.

pub mod cli;
pub mod control;
pub mod endpoint;
pub mod function;
pub mod metrics_report;
pub mod page;
pub mod records_file;
pub mod state;
pub(crate) mod suggest;
pub mod summary;
pub mod template;

// The engine and the local Kinesis keep the paths they had when they were modules of this crate.
pub use embedded_kinesis as kinesis;
pub use esm_engine::{aws, backoff, config, destination, filter, invoke, lease, mapping, response};
pub use kinesis_source::sequence;

/// Where shard readers get records: `kinesis-source`'s seam, and the enhanced fan-out source.
pub mod source {
    pub use kinesis_source::{
        ChildShard, GetRecordsOutput, HashKeyRange, IteratorPosition, Record, Shard, ShardSource,
        SourceError, StreamDescription,
    };

    /// Enhanced fan-out as a [`ShardSource`]: `esm-engine`'s source and `kinesis-source`'s seam.
    pub mod fan_out {
        pub use esm_engine::fan_out_source::FanOutSource;
        pub use kinesis_source::{ShardEvent, ShardSubscriber, Subscription};
    }
}
