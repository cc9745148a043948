//! `esm-engine`: the event source mapping's engine, the library `kinesis-esm` runs.
//!
//! It reads shards through any [`ShardSource`](kinesis_source::ShardSource) (the embedded
//! Kinesis, or any Kinesis endpoint through [`aws::SdkKinesis`]), keeps checkpoints in a
//! [`LeaseStore`](lease::LeaseStore) (in memory, or a DynamoDB lease table shaped like the
//! KCL's), honours parent/child order after splits and merges, and invokes the function the way
//! Lambda's event source mapping does ([`mapping::EventSourceMapping`]), through an
//! [`Invoker`](invoke::Invoker): in process, the function's binary under the Lambda Runtime
//! API, or a Lambda Invoke API endpoint. Lambda's rules live here as pure functions (retries,
//! bisection, record age, filters, `ParallelizationFactor`, tumbling windows); the command
//! line, the template reader and the live page are `kinesis-esm`'s.

pub mod aws;
pub mod backoff;
pub mod config;
pub mod destination;
pub mod fan_out_source;
pub mod filter;
pub mod invoke;
pub mod lease;
pub mod mapping;
pub mod response;
