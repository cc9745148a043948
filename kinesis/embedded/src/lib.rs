//! The embedded Kinesis: an in-memory Kinesis Data Streams, the emulator's default source.
//!
//! [`EmbeddedKinesis`] keeps streams, shards and records in memory and answers the Kinesis
//! operations a producer, a consumer and an operator use, with Kinesis' inputs, limits and
//! errors ([`SourceError`](kinesis_source::SourceError) variants carry the Kinesis exception names), so that serving it over
//! the Kinesis JSON API is a thin translation. It also implements
//! [`ShardSource`](kinesis_source::ShardSource), so the event source mapping reads it as it reads
//! a real Kinesis, and its [`wait_for_records`](kinesis_source::ShardSource::wait_for_records)
//! wakes a reader the moment a record lands.
//!
//! ```
//! use bytes::Bytes;
//! use embedded_kinesis::{EmbeddedKinesis, PutRecordsEntry};
//! use kinesis_source::IteratorPosition;
//!
//! let kinesis = EmbeddedKinesis::new();
//! kinesis.create_stream("orders", 2)?;
//! let put = kinesis.put_record("orders", PutRecordsEntry::new("order-1", Bytes::from("{}")))?;
//! let iterator =
//!     kinesis.get_shard_iterator("orders", &put.shard_id, &IteratorPosition::TrimHorizon)?;
//! let read = kinesis.get_records(&iterator, 100)?;
//! assert_eq!(read.records[0].sequence_number, put.sequence_number);
//! # Ok::<(), kinesis_source::SourceError>(())
//! ```
//!
//! How it differs from the service, on purpose:
//! - Creating, deleting and resharding take effect before the call returns. By default the
//!   stream is `ACTIVE` at once; with a [`stream_status_delay`](EmbeddedKinesisBuilder::stream_status_delay)
//!   it shows `CREATING`, `UPDATING` or `DELETING` for that long first, and refuses what
//!   Kinesis refuses in those states (docs/kinesis.md, "Stream statuses").
//! - Throughput is modelled only when asked: with
//!   [`throttle`](EmbeddedKinesisBuilder::throttle) (`--throttle`) AWS's per-shard limits apply
//!   to writes, standard consumers' reads and `GetShardIterator` (the `_limited` and
//!   `put_records_each` entry points; docs/kinesis.md, "Throughput limits").
//! - Sequence numbers have 56 digits: `49`, the stream's creation time in seconds, a counter
//!   shared by all shards of the stream, and the shard's index. So they grow within a shard, a
//!   child's exceed its parents', and a number names its shard and stream (one from elsewhere
//!   is an `InvalidArgument`). A closed shard's `EndingSequenceNumber` lies above its last
//!   record and below its children's first.
//! - Arrival timestamps never go backwards within a stream (the service only promises
//!   approximately increasing ones), which lets `AT_TIMESTAMP` find its record by binary search.
//! - Records are trimmed lazily: a record older than the retention period is never returned,
//!   and its memory goes when its shard is next written or read. A closed shard expires (is no
//!   longer listed or readable) one retention period after it closed.
//! - `UpdateShardCount` splits and merges single shards, as the service does, so every new
//!   shard has real parents; see [`EmbeddedKinesis::update_shard_count`].
//!
//! [`http`] serves it over the Kinesis API, for SDKs, the aws CLI and boto3.

mod account;
mod attachments;
mod clock;
mod commitment;
mod consumer_registry;
mod descriptions;
mod embedded;
mod entries;
mod hash_key;
pub mod http;
mod journal;
mod limited;
mod limits;
mod numbering;
mod on_demand;
mod put;
mod read;
mod reshard;
mod restore;
mod settings;
mod shard_changes;
mod status;
mod stream;
mod stream_settings;
mod stream_tags;
mod throttle;
mod throughput;
pub use self::account::AccountLimits;
pub use self::clock::{Clock, ManualClock, SystemClock};
pub use self::commitment::Commitment;
pub use self::descriptions::{ShardLifetime, StreamSummary};
pub use self::embedded::{EmbeddedKinesis, EmbeddedKinesisBuilder};
pub use self::entries::{PutRecordOutput, PutRecordsEntry};
pub use self::journal::{Journal, JournalError, NoJournal};
pub use self::limits::{
    DEFAULT_ITERATOR_TTL, DEFAULT_RETENTION, DEFAULT_SHARD_LIMIT, DEFAULT_SUBSCRIPTION_LIFETIME,
    MAX_GET_RECORDS_BYTES, MAX_GET_RECORDS_LIMIT, MAX_PARTITION_KEY_CHARS, MAX_PUT_RECORDS_BYTES,
    MAX_PUT_RECORDS_ENTRIES, MAX_RECORD_BYTES, MAX_RETENTION_HOURS, MAX_SHARDS_PER_STREAM,
    MIN_RETENTION_HOURS, ON_DEMAND_STREAM_LIMIT,
};

pub use self::reshard::{ScalingType, UpdateShardCountOutput};
pub use self::restore::RestoreError;
pub use self::settings::{
    DEFAULT_MAX_RECORD_SIZE_KIB, MAX_LARGE_PUT_RECORDS_BYTES, MAX_MAX_RECORD_SIZE_KIB,
    RecordDistribution, StreamSettings,
};
pub use self::status::StreamStatus;
pub use self::throughput::{ApiCall, PutRecordsResult, ThroughputExceeded};
