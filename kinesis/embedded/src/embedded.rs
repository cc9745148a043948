//! [`EmbeddedKinesis`]: the streams behind one lock each, their lifecycle (create, delete,
//! describe, list, retention) and how it is built. The write path is `put.rs`, the read path
//! `read.rs`, resharding `reshard.rs`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use crate::attachments::{Attachments, StreamKey};
use crate::clock::{Clock, SystemClock};
use crate::clock::{duration_millis, millis_floor};
use crate::commitment::Commitment;
use crate::descriptions::{ShardLifetime, StreamSummary};
use crate::journal::Change;
use crate::journal::{Journal, JournalError, NoJournal};
use crate::limits::{
    DEFAULT_ITERATOR_TTL, DEFAULT_RETENTION, DEFAULT_SHARD_LIMIT, DEFAULT_SUBSCRIPTION_LIFETIME,
};
use crate::status::{self, Needs, Refusal, StreamStatus};
use crate::stream::{self, ShardBudget, Stream};
use crate::throughput::{self, Throughput};
use kinesis_source::{Shard, SourceError};

/// An in-memory Kinesis. Cloning is cheap: clones share the same streams.
#[derive(Clone)]
pub struct EmbeddedKinesis {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) region: String,
    pub(crate) account_id: String,
    pub(crate) retention: Duration,
    pub(crate) iterator_ttl: Duration,
    pub(crate) status_delay_ms: u64,
    pub(crate) subscription_lifetime: Duration,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) journal: Arc<dyn Journal>,
    pub(crate) budget: ShardBudget,
    pub(crate) throughput: Throughput,
    pub(crate) streams: RwLock<BTreeMap<String, Arc<Stream>>>,
    pub(crate) generations: AtomicU64,
    /// When each stream name was last created: a stream created again under the same name is
    /// created at least a second later, so that its creation time (which identifies it, in its
    /// sequence numbers and in lease keys) differs, as it always does on Kinesis, where deleting
    /// and creating take seconds.
    pub(crate) creations: std::sync::Mutex<BTreeMap<String, SystemTime>>,
    /// Each stream's tags, resource policy and consumers.
    pub(crate) attachments: Attachments,
    /// The account's minimum throughput billing commitment (commitment.rs).
    pub(crate) commitment: std::sync::Mutex<Commitment>,
}

/// Settings of an [`EmbeddedKinesis`]; start from [`EmbeddedKinesis::builder`].
#[derive(Debug, Clone)]
pub struct EmbeddedKinesisBuilder {
    region: String,
    account_id: String,
    retention: Duration,
    iterator_ttl: Duration,
    shard_limit: usize,
    status_delay: Duration,
    subscription_lifetime: Duration,
    clock: Arc<dyn Clock>,
    journal: Arc<dyn Journal>,
    throttle: bool,
}

impl EmbeddedKinesisBuilder {
    /// The region in stream ARNs (default `us-east-1`).
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.region = region.into();
        self
    }

    /// The account id in stream ARNs (default `000000000000`).
    pub fn account_id(mut self, account_id: impl Into<String>) -> Self {
        self.account_id = account_id.into();
        self
    }

    /// How long new streams keep records (default 24 hours). Unlike
    /// `IncreaseStreamRetentionPeriod`, any length is accepted, so a test can expire records
    /// quickly.
    pub fn retention_period(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// How long a shard iterator stays valid (default 5 minutes).
    pub fn iterator_ttl(mut self, ttl: Duration) -> Self {
        self.iterator_ttl = ttl;
        self
    }

    /// How long a stream shows `CREATING`, `UPDATING` or `DELETING` after the call that
    /// changed it (default 0: `ACTIVE`, or gone, at once).
    pub fn stream_status_delay(mut self, delay: Duration) -> Self {
        self.status_delay = delay;
        self
    }

    /// How long a `SubscribeToShard` subscription lasts before the endpoint ends it (default
    /// 5 minutes, as on Kinesis), on tokio's timer: a test can make it short.
    pub fn subscription_lifetime(mut self, lifetime: Duration) -> Self {
        self.subscription_lifetime = lifetime;
        self
    }

    /// How many open shards all streams together may have (default 500).
    pub fn shard_limit(mut self, limit: usize) -> Self {
        self.shard_limit = limit;
        self
    }

    /// The clock that stamps arrivals and ages records and iterators (default: the system
    /// clock).
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Applies AWS's throughput limits (default off: nothing is throttled): 1 MiB and 1,000
    /// records a second written per shard, 5 `GetRecords` calls and 2 MiB a second read per
    /// shard, 5 `GetShardIterator` calls a second per shard, and the rates of `ListShards` and
    /// `DescribeStream(Summary)` (docs/kinesis.md, "Throughput limits").
    pub fn throttle(mut self, throttle: bool) -> Self {
        self.throttle = throttle;
        self
    }

    /// Where every change is written before it is applied (default [`NoJournal`]: nowhere).
    /// Build, [`restore`](EmbeddedKinesis::restore) what the journal kept, then serve.
    pub fn journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.journal = journal;
        self
    }

    /// The embedded Kinesis, with no streams.
    pub fn build(self) -> EmbeddedKinesis {
        EmbeddedKinesis {
            inner: Arc::new(Inner {
                budget: ShardBudget::new(self.shard_limit, self.account_id.clone()),
                throughput: Throughput::new(self.throttle, self.account_id.clone()),
                region: self.region,
                account_id: self.account_id,
                retention: self.retention,
                iterator_ttl: self.iterator_ttl,
                status_delay_ms: duration_millis(self.status_delay),
                subscription_lifetime: self.subscription_lifetime,
                clock: self.clock,
                journal: self.journal,
                streams: RwLock::default(),
                generations: AtomicU64::new(0),
                creations: std::sync::Mutex::default(),
                attachments: Attachments::default(),
                commitment: std::sync::Mutex::default(),
            }),
        }
    }
}

/// The start of the second after the one `time` falls in.
fn whole_second_after(time: SystemTime) -> SystemTime {
    let seconds = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    SystemTime::UNIX_EPOCH + Duration::from_secs(seconds + 1)
}

impl Default for EmbeddedKinesis {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for EmbeddedKinesis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedKinesis")
            .field("region", &self.inner.region)
            .field("account_id", &self.inner.account_id)
            .field("streams", &self.list_streams())
            .finish_non_exhaustive()
    }
}

impl EmbeddedKinesis {
    /// An embedded Kinesis with the defaults: region `us-east-1`, account `000000000000`,
    /// 24-hour retention, 5-minute iterators, 500 open shards, the system clock.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Settings to change before building.
    pub fn builder() -> EmbeddedKinesisBuilder {
        EmbeddedKinesisBuilder {
            region: "us-east-1".to_owned(),
            account_id: "000000000000".to_owned(),
            retention: DEFAULT_RETENTION,
            iterator_ttl: DEFAULT_ITERATOR_TTL,
            shard_limit: DEFAULT_SHARD_LIMIT,
            status_delay: Duration::ZERO,
            subscription_lifetime: DEFAULT_SUBSCRIPTION_LIFETIME,
            clock: Arc::new(SystemClock),
            journal: Arc::new(NoJournal),
            throttle: false,
        }
    }

    /// The ARN a stream of this name has (or would have).
    pub fn stream_arn(&self, stream_name: &str) -> String {
        format!("{}{stream_name}", self.arn_prefix())
    }

    pub(crate) fn arn_prefix(&self) -> String {
        format!(
            "arn:aws:kinesis:{}:{}:stream/",
            self.inner.region, self.inner.account_id
        )
    }

    pub(crate) fn now(&self) -> (SystemTime, u64) {
        let now = self.inner.clock.now();
        (now, millis_floor(now))
    }

    pub(crate) fn streams(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Stream>>> {
        // The map is only ever changed by single inserts and removals, never left half-done.
        self.inner
            .streams
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn streams_mut(
        &self,
    ) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<Stream>>> {
        self.inner
            .streams
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn stream_not_found(&self, stream: &str) -> SourceError {
        SourceError::NotFound {
            what: format!("Stream {stream} under account {}", self.inner.account_id),
        }
    }

    /// The name of a stream given by name or by ARN.
    pub(crate) fn stream_name<'a>(&self, name_or_arn: &'a str) -> Result<&'a str, SourceError> {
        if !name_or_arn.starts_with("arn:") {
            return Ok(name_or_arn);
        }
        name_or_arn
            .strip_prefix(&self.arn_prefix())
            .ok_or_else(|| self.stream_not_found(name_or_arn))
    }

    /// The stream given by name or ARN. A stream whose deletion is over is removed here.
    pub(crate) fn stream(&self, name_or_arn: &str) -> Result<Arc<Stream>, SourceError> {
        let name = self.stream_name(name_or_arn)?;
        let stream = self
            .streams()
            .get(name)
            .cloned()
            .ok_or_else(|| self.stream_not_found(name))?;
        if stream.is_deleted(self.now().1) {
            self.forget_deleted(name);
            return Err(self.stream_not_found(name));
        }
        Ok(stream)
    }

    /// Drops a stream whose deletion is over, and gives its shards back to the budget.
    pub(crate) fn forget_deleted(&self, name: &str) {
        let mut streams = self.streams_mut();
        let now_ms = self.now().1;
        if streams
            .get(name)
            .is_some_and(|stream| stream.is_deleted(now_ms))
        {
            let removed = streams.remove(name).expect("the stream was just found");
            drop(streams);
            self.inner.throughput.forget(name, removed.generation);
            self.inner.budget.release(removed.retire());
        }
    }

    /// The stream given by name or ARN, if its status allows an operation that `needs` it.
    pub(crate) fn stream_for(
        &self,
        name_or_arn: &str,
        needs: Needs,
    ) -> Result<Arc<Stream>, SourceError> {
        let stream = self.stream(name_or_arn)?;
        let status = stream.status(self.now().1);
        match status::refusal(needs, status) {
            None => Ok(stream),
            Some(Refusal::NotFound) => Err(self.stream_not_found(&stream.name)),
            Some(Refusal::InUse) => Err(SourceError::ResourceInUse {
                message: format!(
                    "Stream {} under account {} not ACTIVE, instead in state {}",
                    stream.name,
                    self.inner.account_id,
                    status.as_str()
                ),
            }),
        }
    }

    /// Makes `change` to an `ACTIVE` stream, which then shows `UPDATING` for the status delay:
    /// the embedded Kinesis changes at once what Kinesis takes a while over.
    pub(crate) fn update<T>(
        &self,
        name_or_arn: &str,
        change: impl FnOnce(&Stream) -> Result<T, SourceError>,
    ) -> Result<T, SourceError> {
        let stream = self.stream_for(name_or_arn, Needs::Active)?;
        let changed = change(&stream)?;
        stream.begin(
            StreamStatus::Updating,
            self.now().1,
            self.inner.status_delay_ms,
        );
        Ok(changed)
    }

    /// Checks that a stream is `ACTIVE` and shows it `UPDATING` for the status delay: for
    /// changes kept outside the stream, such as `UpdateStreamMode`.
    pub fn begin_update(&self, stream: &str) -> Result<(), SourceError> {
        self.update(stream, |_| Ok(()))
    }

    /// `CreateStream`: a stream of `shard_count` shards that split the hash key space evenly,
    /// `shardId-000000000000` upwards. The stream is `ACTIVE` when this returns.
    ///
    /// Errors: `ResourceInUse` if a stream of that name exists, `InvalidArgument` for a name
    /// that is not 1 to 128 of `[a-zA-Z0-9_.-]` or a shard count of 0, `LimitExceeded` past
    /// the account's shard limit.
    pub fn create_stream(&self, stream_name: &str, shard_count: u32) -> Result<(), SourceError> {
        self.create_stream_in_mode(stream_name, shard_count, false)
    }

    /// `CreateStream` of an `ON_DEMAND` stream (no `ShardCount`, or `StreamModeDetails`
    /// `ON_DEMAND`): [`create_stream`](Self::create_stream) with the mode set at once and kept
    /// with the creation, so that `--state-dir` brings the stream back `ON_DEMAND`.
    pub fn create_on_demand_stream(
        &self,
        stream_name: &str,
        shard_count: u32,
    ) -> Result<(), SourceError> {
        self.create_stream_in_mode(stream_name, shard_count, true)
    }

    pub(crate) fn create_stream_in_mode(
        &self,
        stream_name: &str,
        shard_count: u32,
        on_demand: bool,
    ) -> Result<(), SourceError> {
        let name_is_valid = (1..=128).contains(&stream_name.len())
            && stream_name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"_.-".contains(&byte));
        if !name_is_valid {
            return Err(SourceError::InvalidArgument {
                message: format!(
                    "Stream name `{stream_name}` must be 1 to 128 characters of [a-zA-Z0-9_.-]"
                ),
            });
        }
        if shard_count == 0 {
            return Err(SourceError::InvalidArgument {
                message: format!("ShardCount of stream {stream_name} must be at least 1"),
            });
        }
        let (now, _) = self.now();
        let mut streams = self.streams_mut();
        if streams.contains_key(stream_name) {
            return Err(SourceError::ResourceInUse {
                message: format!(
                    "Stream {stream_name} under account {} already exists.",
                    self.inner.account_id
                ),
            });
        }
        self.inner.budget.reserve(stream::at(shard_count))?;
        let now = {
            let mut creations = self
                .inner
                .creations
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let earliest = creations
                .get(stream_name)
                .map(|previous| whole_second_after(*previous));
            let created = earliest.map_or(now, |earliest| now.max(earliest));
            creations.insert(stream_name.to_owned(), created);
            created
        };
        let generation = self.inner.generations.fetch_add(1, Ordering::Relaxed);
        if self.inner.journal.is_enabled() {
            let change = Change::CreateStream {
                name: stream_name.to_owned(),
                created: now,
                generation,
                shard_count,
                retention: self.inner.retention,
                on_demand,
            };
            if let Err(error) = self.inner.journal.append(&change.encode()) {
                self.inner.budget.release(stream::at(shard_count));
                return Err(not_kept("CreateStream", stream_name, &error));
            }
        }
        self.insert_stream(
            &mut streams,
            stream_name,
            now,
            generation,
            shard_count,
            self.inner.retention,
        );
        if on_demand {
            self.inner
                .throughput
                .mark_on_demand(throughput::key_of(&streams[stream_name]), true);
        }
        streams[stream_name].begin(
            StreamStatus::Creating,
            millis_floor(self.inner.clock.now()),
            self.inner.status_delay_ms,
        );
        Ok(())
    }

    pub(crate) fn insert_stream(
        &self,
        streams: &mut BTreeMap<String, Arc<Stream>>,
        stream_name: &str,
        created: SystemTime,
        generation: u64,
        shard_count: u32,
        retention: Duration,
    ) {
        let stream = Stream::new(
            stream_name,
            self.stream_arn(stream_name),
            &self.inner.account_id,
            created,
            generation,
            shard_count,
            retention,
        );
        streams.insert(stream_name.to_owned(), Arc::new(stream));
    }

    /// `DeleteStream`: the stream, its shards and records are gone when this returns; readers
    /// waiting on it wake, and its iterators stop working (`ResourceNotFound`).
    /// With a status delay, the stream shows `DELETING` for that long first (still readable,
    /// no longer writable).
    pub fn delete_stream(&self, stream: &str) -> Result<(), SourceError> {
        if self.inner.status_delay_ms == 0 {
            return self.remove_stream(stream, &*self.inner.journal);
        }
        let found = self.stream(stream)?;
        if found.status(self.now().1) == StreamStatus::Deleting {
            return Ok(());
        }
        if self.inner.journal.is_enabled() {
            let change = Change::DeleteStream {
                name: found.name.to_string(),
                generation: found.generation,
            };
            self.inner
                .journal
                .append(&change.encode())
                .map_err(|error| not_kept("DeleteStream", &found.name, &error))?;
        }
        found.begin(
            StreamStatus::Deleting,
            self.now().1,
            self.inner.status_delay_ms,
        );
        Ok(())
    }

    pub(crate) fn remove_stream(
        &self,
        stream: &str,
        journal: &dyn Journal,
    ) -> Result<(), SourceError> {
        let name = self.stream_name(stream)?;
        let mut streams = self.streams_mut();
        let generation = streams
            .get(name)
            .ok_or_else(|| self.stream_not_found(name))?
            .generation;
        if journal.is_enabled() {
            let change = Change::DeleteStream {
                name: name.to_owned(),
                generation,
            };
            journal
                .append(&change.encode())
                .map_err(|error| not_kept("DeleteStream", name, &error))?;
        }
        let removed = streams.remove(name).expect("the stream was just found");
        drop(streams);
        self.inner.throughput.forget(name, generation);
        self.inner.budget.release(removed.retire());
        Ok(())
    }

    /// `DescribeStreamSummary`.
    pub fn describe_stream_summary(&self, stream: &str) -> Result<StreamSummary, SourceError> {
        Ok(self.stream(stream)?.summary(self.now().1))
    }

    /// Returns once `stream` is `ACTIVE`: at once without a status delay, else after it (as
    /// the SDK's `stream_exists` waiter does against Kinesis, on tokio's timer).
    pub async fn wait_until_active(&self, stream: &str) -> Result<(), SourceError> {
        let poll = Duration::from_millis(self.inner.status_delay_ms.clamp(1, 100));
        while self.describe_stream_summary(stream)?.status != StreamStatus::Active {
            tokio::time::sleep(poll).await;
        }
        Ok(())
    }

    /// `ListStreams`: the names of all streams, in alphabetical order.
    pub fn list_streams(&self) -> Vec<String> {
        let now_ms = self.now().1;
        let (names, deleted): (Vec<_>, Vec<_>) = self
            .streams()
            .iter()
            .map(|(name, stream)| (name.clone(), stream.is_deleted(now_ms)))
            .partition(|(_, deleted)| !deleted);
        for (name, _) in deleted {
            self.forget_deleted(&name);
        }
        names.into_iter().map(|(name, _)| name).collect()
    }

    /// `ListShards` (all pages): every shard that has not expired, open or closed, in order of
    /// creation, so parents come before their children.
    pub fn list_shards(&self, stream: &str) -> Result<Vec<Shard>, SourceError> {
        let stream = self.stream(stream)?;
        Ok(stream.list_shards(self.now().1))
    }

    /// [`list_shards`](Self::list_shards), each shard with when it opened and closed, read
    /// under one lock so that the two always agree.
    pub fn list_shards_with_lifetimes(
        &self,
        stream: &str,
    ) -> Result<Vec<(Shard, ShardLifetime)>, SourceError> {
        let stream = self.stream(stream)?;
        Ok(stream.list_shards_with_lifetimes(self.now().1))
    }

    /// The tags, policies and consumers kept beside the streams.
    pub(crate) fn attachments(&self) -> &Attachments {
        &self.inner.attachments
    }

    /// The key `stream`'s (a name or ARN) attachments are kept by: its name and creation time,
    /// so that a stream deleted and created again starts without any.
    pub(crate) fn stream_key(&self, stream: &str) -> Result<StreamKey, SourceError> {
        let summary = self.describe_stream_summary(stream)?;
        Ok((summary.name, summary.created))
    }

    /// The time on this Kinesis' clock: what arrival timestamps, iterator ages and trim
    /// horizons are measured against.
    pub fn current_time(&self) -> SystemTime {
        self.inner.clock.now()
    }

    /// How long a stream (or a stream consumer) shows a passing status after a change.
    pub fn stream_status_delay(&self) -> Duration {
        Duration::from_millis(self.inner.status_delay_ms)
    }

    /// How long a `SubscribeToShard` subscription lasts.
    pub fn subscription_lifetime(&self) -> Duration {
        self.inner.subscription_lifetime
    }

    /// How long a shard iterator stays valid.
    pub fn iterator_ttl(&self) -> Duration {
        self.inner.iterator_ttl
    }

    /// `IncreaseStreamRetentionPeriod`: to `hours` (24 to 8,760), no shorter than now.
    pub fn increase_stream_retention_period(
        &self,
        stream: &str,
        hours: u32,
    ) -> Result<(), SourceError> {
        self.update(stream, |stream| {
            stream.change_retention(hours, true, &*self.inner.journal)
        })
    }

    /// `DecreaseStreamRetentionPeriod`: to `hours` (24 to 8,760), no longer than now. Records
    /// older than the new period are no longer returned.
    pub fn decrease_stream_retention_period(
        &self,
        stream: &str,
        hours: u32,
    ) -> Result<(), SourceError> {
        self.update(stream, |stream| {
            stream.change_retention(hours, false, &*self.inner.journal)
        })
    }
}

/// Why a change was refused: the journal could not keep it.
pub(crate) fn not_kept(operation: &str, stream: &str, error: &JournalError) -> SourceError {
    SourceError::Service {
        message: format!(
            "{operation} of stream {stream} was refused: the state directory could not keep it: \
             {error}"
        ),
    }
}
