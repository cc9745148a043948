//! `kinesis-esm`: a local Kinesis event source mapping.
//!
//! It reads shards (from the embedded in-memory Kinesis by default, or any Kinesis endpoint),
//! keeps checkpoints (in memory by default, or in a DynamoDB lease table), honours parent/child
//! order after splits and merges, and invokes the function the way Lambda's event source mapping
//! does, so what you see locally is what Lambda would do.

pub mod aws;
pub mod backoff;
pub mod cli;
pub mod config;
pub mod control;
pub mod destination;
pub mod filter;
pub mod function;
pub mod invoke;
pub mod kinesis;
pub mod lease;
pub mod mapping;
pub mod metrics_report;
pub mod page;
pub mod records_file;
pub mod response;
pub mod sequence;
pub mod source;
pub mod state;
pub mod summary;
pub mod template;
mod time;
