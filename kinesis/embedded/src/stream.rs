//! One stream: its shards, their records and lineage, behind one lock.
//!
//! Every operation holds the stream's lock for its whole length, so a reader never sees half a
//! reshard and a put never lands in a shard that is being closed. The lock is short: a put
//! copies each record's partition key (and small data) next to the shard's previous records
//! (see [`DataArena`]), a read makes each record's sequence number and key anew and shares its
//! data (no copy of record data).

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use tokio::sync::watch;

use super::clock::{duration_millis, from_millis, millis_ceil};
use super::hash_key;
use super::journal::{Change, Journal, JournalError, encode_put};
use super::numbering::{Cursor, IteratorToken, SequenceLayout};
use super::status::Transition;
use crate::descriptions::ShardLifetime;
use crate::descriptions::StreamSummary;
use crate::entries::PutRecordOutput;
use crate::entries::PutRecordsEntry;
use crate::limits::MAX_GET_RECORDS_BYTES;
use crate::limits::MAX_RETENTION_HOURS;
use crate::limits::MIN_RETENTION_HOURS;
use crate::settings::StreamSettings;
use crate::status::StreamStatus;
use kinesis_source::sequence::SequenceNumber;
use kinesis_source::{
    ChildShard, GetRecordsOutput, HashKeyRange, IteratorPosition, Record, Shard, SourceError,
};

mod budget;
pub(crate) use budget::ShardBudget;

/// A stream, as the embedded Kinesis keeps it.
pub(crate) struct Stream {
    pub(crate) name: Arc<str>,
    pub(crate) arn: String,
    account_id: String,
    pub(crate) created: SystemTime,
    /// Tells this stream apart from an earlier or later one of the same name.
    pub(crate) generation: u64,
    layout: SequenceLayout,
    state: Mutex<StreamState>,
    /// The change the stream is going through, if one is still showing (status.rs).
    transition: Mutex<Option<Transition>>,
    /// What the stream is set to beside its shards (settings.rs).
    settings: Mutex<StreamSettings>,
    /// How many records `AUTO` distribution has placed: where the next one goes.
    pub(crate) spread: AtomicU64,
}

pub(crate) struct StreamState {
    /// Every shard ever created, by index: `shards[i]` is `shardId-<i>`. Children always come
    /// after their parents.
    pub(crate) shards: Vec<ShardState>,
    /// The open shards, in hash key order; their ranges tile the whole hash key space.
    pub(crate) open: Vec<u32>,
    /// The counter of the next sequence number (see [`SequenceLayout`]).
    pub(crate) next_counter: u64,
    /// The latest arrival time handed out, in ms: arrivals never go back, even if the clock
    /// does, so that records are ordered by arrival within every shard.
    pub(crate) last_arrival_ms: u64,
    pub(crate) retention: Duration,
}

impl StreamState {
    /// Where in `open` the shard holding `hash_key` is. The open ranges tile the space and the
    /// last ends at 2^128 - 1, so some range ends at or after any hash key.
    fn open_position(&self, hash_key: u128) -> usize {
        self.open
            .partition_point(|&open| self.shards[at(open)].range.ending_hash_key < hash_key)
    }
}

pub(crate) struct ShardState {
    pub(crate) id: Arc<str>,
    pub(crate) parent: Option<u32>,
    pub(crate) adjacent_parent: Option<u32>,
    pub(crate) range: HashKeyRange,
    pub(crate) starting_counter: u64,
    /// Set when the shard is closed: the counter of its `EndingSequenceNumber`, above every
    /// record it holds and below every record of its children.
    pub(crate) ending_counter: Option<u64>,
    pub(crate) closed_ms: Option<u64>,
    pub(crate) children: Vec<u32>,
    /// The records not yet trimmed, oldest first.
    pub(crate) records: VecDeque<StoredRecord>,
    /// Where the data of the shard's small records is kept.
    pub(crate) arena: DataArena,
    /// Bumped whenever the shard gains records or closes, so waiting readers wake at once.
    pub(crate) signal: watch::Sender<()>,
    /// Whether this put gave the shard records that readers have not been told of yet.
    pub(crate) signal_pending: bool,
}

/// A record as a shard keeps it: no allocation of its own (see [`DataArena`]). `GetRecords`
/// makes the [`Record`] a reader gets.
pub(crate) struct StoredRecord {
    counter: u64,
    arrival_ms: u64,
    /// The partition key's text.
    partition_key: Bytes,
    data: Bytes,
}

impl StoredRecord {
    /// What the record counts for against `GetRecords`' byte cap.
    fn size(&self) -> usize {
        self.data.len() + self.partition_key.len()
    }

    /// The record as `GetRecords` returns it, from shard `shard_index` of a stream whose
    /// sequence numbers `layout` spells.
    fn to_record(&self, layout: SequenceLayout, shard_index: u32) -> Record {
        let partition_key = std::str::from_utf8(&self.partition_key)
            .expect("a partition key is kept from its text, byte for byte");
        Record {
            sequence_number: layout.format(self.counter, shard_index),
            partition_key: Arc::from(partition_key),
            data: self.data.clone(),
            approximate_arrival: from_millis(self.arrival_ms),
        }
    }
}

impl ShardState {
    pub(crate) fn new(
        index: u32,
        parents: (Option<u32>, Option<u32>),
        range: HashKeyRange,
        starting_counter: u64,
    ) -> Self {
        Self {
            id: shard_id(index).into(),
            parent: parents.0,
            adjacent_parent: parents.1,
            range,
            starting_counter,
            ending_counter: None,
            closed_ms: None,
            children: Vec::new(),
            records: VecDeque::new(),
            arena: DataArena::default(),
            signal: watch::Sender::new(()),
            signal_pending: false,
        }
    }

    /// Whether the shard is closed and older than the retention period: gone from listings
    /// and no longer readable.
    fn is_expired(&self, now_ms: u64, retention_ms: u64) -> bool {
        self.closed_ms
            .is_some_and(|closed_ms| now_ms > closed_ms.saturating_add(retention_ms))
    }

    /// Drops the records that arrived before `horizon_ms`. Arrivals grow along the shard, so
    /// they are all at the front.
    fn trim(&mut self, horizon_ms: u64) {
        while self
            .records
            .front()
            .is_some_and(|oldest| oldest.arrival_ms < horizon_ms)
        {
            self.records.pop_front();
        }
    }

    fn parent_indexes(&self) -> impl Iterator<Item = u32> {
        self.parent.into_iter().chain(self.adjacent_parent)
    }
}

/// Where a shard keeps its records' partition keys and the data of its small records: copied,
/// in the shard's order, into chunks it shares among them.
///
/// A producer's records come in allocations of their own (a key, the data, and a sequence
/// number each, once stored), and a put spreads them over the shards: a shard's records then
/// lie scattered among every other shard's, and reading a backlog from one shard misses the
/// cache at every record, several times. Copied into the shard's chunks, its records lie in
/// order, and cloning their data counts on one shared counter per chunk. Data larger than
/// [`Self::LARGEST_COPIED`] keeps the producer's allocation: copying it would cost more than it
/// saves.
#[derive(Default)]
pub(crate) struct DataArena {
    /// The unused end of the current chunk.
    free: BytesMut,
}

impl DataArena {
    /// The size of a chunk. A shard holds at most one partly used chunk.
    const CHUNK_BYTES: usize = 16 * 1024;
    /// The largest data copied into a chunk (partition keys, at most 1 KiB, always are).
    const LARGEST_COPIED: usize = 1024;

    /// The record data to keep for `data`: the same bytes, copied into the shard's current
    /// chunk when they are small.
    pub(crate) fn keep(&mut self, data: Bytes) -> Bytes {
        if data.is_empty() || data.len() > Self::LARGEST_COPIED {
            return data;
        }
        self.copy(&data)
    }

    /// `bytes`, copied into the shard's current chunk (or a new chunk of their own size, for
    /// more than a chunk holds).
    fn copy(&mut self, bytes: &[u8]) -> Bytes {
        if self.free.capacity() < bytes.len() {
            self.free = BytesMut::with_capacity(Self::CHUNK_BYTES.max(bytes.len()));
        }
        self.free.extend_from_slice(bytes);
        self.free.split().freeze()
    }
}

/// The id of the shard at `index`: `shardId-` and twelve digits.
pub(crate) fn shard_id(index: u32) -> String {
    format!("shardId-{index:012}")
}

/// The index in a shard id, if it is one this Kinesis would issue.
fn shard_index(shard_id: &str) -> Option<u32> {
    let digits = shard_id.strip_prefix("shardId-")?;
    if digits.len() == 12 && digits.bytes().all(|byte| byte.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

pub(crate) fn at(index: u32) -> usize {
    usize::try_from(index).expect("shard indexes fit in usize")
}

impl Stream {
    /// A new stream of `shard_count` shards that split the hash key space evenly.
    pub(crate) fn new(
        name: &str,
        arn: String,
        account_id: &str,
        created: SystemTime,
        generation: u64,
        shard_count: u32,
        retention: Duration,
    ) -> Self {
        let created_seconds = created
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let shards: Vec<ShardState> = hash_key::uniform_ranges(shard_count)
            .into_iter()
            .zip(0..)
            .map(|(range, index)| ShardState::new(index, (None, None), range, 0))
            .collect();
        Self {
            name: name.into(),
            arn,
            account_id: account_id.to_owned(),
            created,
            generation,
            layout: SequenceLayout::new(created_seconds),
            transition: Mutex::new(None),
            settings: Mutex::default(),
            spread: AtomicU64::new(0),
            state: Mutex::new(StreamState {
                open: (0..shard_count).collect(),
                shards,
                next_counter: 0,
                last_arrival_ms: 0,
                retention,
            }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, StreamState> {
        // Every change to the state is completed before anything that could panic, so a
        // poisoned lock still guards consistent state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn described(&self) -> String {
        format!("stream {} under account {}", self.name, self.account_id)
    }

    /// The shard called `shard_id`, unless it does not exist or has expired.
    fn find_shard(
        &self,
        state: &StreamState,
        shard_id: &str,
        now_ms: u64,
    ) -> Result<u32, SourceError> {
        let retention_ms = duration_millis(state.retention);
        shard_index(shard_id)
            .filter(|&index| {
                state
                    .shards
                    .get(at(index))
                    .is_some_and(|shard| !shard.is_expired(now_ms, retention_ms))
            })
            .ok_or_else(|| SourceError::NotFound {
                what: format!("Shard {shard_id} in {}", self.described()),
            })
    }

    /// The shard called `shard_id`, which must be open: only open shards split and merge.
    pub(crate) fn find_open_shard(
        &self,
        state: &StreamState,
        shard_id: &str,
        now_ms: u64,
    ) -> Result<u32, SourceError> {
        let index = self.find_shard(state, shard_id, now_ms)?;
        if state.shards[at(index)].ending_counter.is_some() {
            return Err(SourceError::ResourceInUse {
                message: format!(
                    "Shard {shard_id} in {} is closed: only open shards can be split or merged",
                    self.described()
                ),
            });
        }
        Ok(index)
    }

    /// The counter of `sequence_number`, which must be one of shard `index`'s.
    fn counter_in_shard(
        &self,
        index: u32,
        sequence_number: &SequenceNumber,
    ) -> Result<u64, SourceError> {
        match self.layout.parse(sequence_number) {
            Some((counter, encoded)) if encoded == index => Ok(counter),
            Some((_, encoded)) => Err(SourceError::InvalidArgument {
                message: format!(
                    "Invalid StartingSequenceNumber. It encodes {}, while it was used in a call \
                     to a shard with {} in {}",
                    shard_id(encoded),
                    shard_id(index),
                    self.described()
                ),
            }),
            None => Err(SourceError::InvalidArgument {
                message: format!(
                    "StartingSequenceNumber {sequence_number} used in GetShardIterator on shard \
                     {} in {} is invalid: it is not a sequence number of this stream",
                    shard_id(index),
                    self.described()
                ),
            }),
        }
    }

    /// The status the stream shows at `now_ms`.
    pub(crate) fn status(&self, now_ms: u64) -> StreamStatus {
        Transition::status_at(*self.transition(), now_ms)
    }

    /// Whether a deletion of the stream is over at `now_ms`.
    pub(crate) fn is_deleted(&self, now_ms: u64) -> bool {
        Transition::is_deleted(*self.transition(), now_ms)
    }

    /// Shows `status` from `now_ms` for `delay_ms` (nothing when the delay is 0).
    pub(crate) fn begin(&self, status: StreamStatus, now_ms: u64, delay_ms: u64) {
        *self.transition() = Transition::begin(status, now_ms, delay_ms);
    }

    /// The stream's settings, locked: a change holds the lock across its journal write.
    pub(crate) fn settings(&self) -> MutexGuard<'_, StreamSettings> {
        // Settings are replaced whole, never left half-changed by a panic.
        self.settings.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn transition(&self) -> std::sync::MutexGuard<'_, Option<Transition>> {
        // A plain value that no panic can leave half-written.
        self.transition
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn summary(&self, now_ms: u64) -> StreamSummary {
        let status = self.status(now_ms);
        let state = self.lock();
        StreamSummary {
            name: self.name.to_string(),
            arn: self.arn.clone(),
            status,
            created: self.created,
            retention_period: state.retention,
            open_shard_count: state.open.len(),
        }
    }

    /// Every shard that has not expired, by index: parents before their children.
    ///
    /// Expired shards give their records' memory back here: nothing reads or writes them
    /// again, so nothing else would trim them.
    pub(crate) fn list_shards(&self, now_ms: u64) -> Vec<Shard> {
        self.list_shards_with_lifetimes(now_ms)
            .into_iter()
            .map(|(shard, _)| shard)
            .collect()
    }

    /// [`Self::list_shards`], each shard with when it opened and closed.
    pub(crate) fn list_shards_with_lifetimes(&self, now_ms: u64) -> Vec<(Shard, ShardLifetime)> {
        let mut state = self.lock();
        let retention_ms = duration_millis(state.retention);
        for shard in &mut state.shards {
            if shard.is_expired(now_ms, retention_ms) && !shard.records.is_empty() {
                shard.records = VecDeque::new();
                shard.arena = DataArena::default();
            }
        }
        let id_of = |index: u32| state.shards[at(index)].id.to_string();
        state
            .shards
            .iter()
            .zip(0..)
            .filter(|(shard, _)| !shard.is_expired(now_ms, retention_ms))
            .map(|(shard, index)| {
                let listed = Shard {
                    shard_id: shard.id.to_string(),
                    parent_shard_id: shard.parent.map(id_of),
                    adjacent_parent_shard_id: shard.adjacent_parent.map(id_of),
                    hash_key_range: shard.range,
                    starting_sequence_number: self.layout.format(shard.starting_counter, index),
                    ending_sequence_number: shard
                        .ending_counter
                        .map(|counter| self.layout.format(counter, index)),
                };
                // A shard opens the moment its parents close; the first shards open with the
                // stream.
                let opened = shard
                    .parent
                    .and_then(|parent| state.shards[at(parent)].closed_ms)
                    .map_or(self.created, from_millis);
                let lifetime = ShardLifetime {
                    opened,
                    closed: shard.closed_ms.map(from_millis),
                };
                (listed, lifetime)
            })
            .collect()
    }

    /// The index of the open shard whose range holds each hash key, as
    /// [`append`](Self::append) would route it now.
    pub(crate) fn route(&self, hash_keys: &[u128]) -> Vec<u32> {
        let state = self.lock();
        hash_keys
            .iter()
            .map(|&hash_key| state.open[state.open_position(hash_key)])
            .collect()
    }

    /// Appends records, each with its hash key, to the open shards whose ranges hold them.
    /// All records of one call share one arrival time. The journal keeps them first, in one
    /// write, or nothing is appended.
    pub(crate) fn append(
        &self,
        entries: Vec<PutRecordsEntry>,
        hash_keys: &[u128],
        now_ms: u64,
        journal: &dyn Journal,
    ) -> Result<Vec<PutRecordOutput>, SourceError> {
        let mut state = self.lock();
        let state = &mut *state;
        if journal.is_enabled() {
            let change = encode_put(&self.name, self.generation, now_ms, &entries, hash_keys);
            journal
                .append(&change)
                .map_err(|error| self.not_kept("PutRecords", &error))?;
        }
        let horizon_ms = now_ms.saturating_sub(duration_millis(state.retention));
        let arrival_ms = now_ms.max(state.last_arrival_ms);
        state.last_arrival_ms = arrival_ms;
        let mut results = Vec::with_capacity(entries.len());
        for (entry, &hash_key) in entries.into_iter().zip(hash_keys) {
            let index = state.open[state.open_position(hash_key)];
            let counter = state.next_counter;
            state.next_counter += 1;
            let shard = &mut state.shards[at(index)];
            if !shard.signal_pending {
                shard.trim(horizon_ms);
                shard.signal_pending = true;
            }
            let partition_key = shard.arena.copy(entry.partition_key.as_bytes());
            let data = shard.arena.keep(entry.data);
            shard.records.push_back(StoredRecord {
                counter,
                arrival_ms,
                partition_key,
                data,
            });
            results.push(PutRecordOutput {
                shard_id: shard.id.clone(),
                sequence_number: self.layout.format(counter, index),
            });
        }
        for &index in &state.open {
            let shard = &mut state.shards[at(index)];
            if shard.signal_pending {
                shard.signal_pending = false;
                shard.signal.send_modify(|()| ());
            }
        }
        Ok(results)
    }

    /// Why a change was refused: the journal could not keep it.
    fn not_kept(&self, operation: &str, error: &JournalError) -> SourceError {
        SourceError::Service {
            message: format!(
                "{operation} on {} was refused: the state directory could not keep it: {error}",
                self.described()
            ),
        }
    }

    /// Writes `change` to the journal (when it keeps changes), after the change was checked and
    /// before it is applied.
    pub(crate) fn keep(
        &self,
        journal: &dyn Journal,
        operation: &str,
        change: impl FnOnce() -> Change,
    ) -> Result<(), SourceError> {
        if !journal.is_enabled() {
            return Ok(());
        }
        journal
            .append(&change().encode())
            .map_err(|error| self.not_kept(operation, &error))
    }

    /// A shard iterator at `position` on the shard called `shard_id`.
    pub(crate) fn iterator(
        &self,
        shard_id: &str,
        position: &IteratorPosition,
        now_ms: u64,
    ) -> Result<IteratorToken, SourceError> {
        let state = self.lock();
        let shard_index = self.find_shard(&state, shard_id, now_ms)?;
        let cursor = match position {
            IteratorPosition::TrimHorizon => Cursor {
                counter: 0,
                arrival_ms: 0,
            },
            IteratorPosition::Latest => Cursor {
                counter: state.next_counter,
                arrival_ms: 0,
            },
            IteratorPosition::AtTimestamp(time) => Cursor {
                counter: 0,
                arrival_ms: millis_ceil(*time),
            },
            IteratorPosition::AtSequenceNumber(sequence_number) => Cursor {
                counter: self.counter_in_shard(shard_index, sequence_number)?,
                arrival_ms: 0,
            },
            IteratorPosition::AfterSequenceNumber(sequence_number) => Cursor {
                counter: self
                    .counter_in_shard(shard_index, sequence_number)?
                    .saturating_add(1),
                arrival_ms: 0,
            },
        };
        Ok(IteratorToken {
            stream_generation: self.generation,
            stream_name: self.name.to_string(),
            shard_index,
            cursor,
            issued_ms: now_ms,
        })
    }

    /// Reads up to `limit` records from where `token` points (`GetRecords`).
    pub(crate) fn read(
        &self,
        token: &IteratorToken,
        limit: usize,
        now_ms: u64,
    ) -> Result<GetRecordsOutput, SourceError> {
        let mut state = self.lock();
        let index = self.find_shard(&state, &shard_id(token.shard_index), now_ms)?;
        let horizon_ms = now_ms.saturating_sub(duration_millis(state.retention));
        let shard = &mut state.shards[at(index)];
        shard.trim(horizon_ms);

        let cursor = token.cursor;
        let start = shard.records.partition_point(|stored| {
            stored.counter < cursor.counter || stored.arrival_ms < cursor.arrival_ms
        });
        let wanted = limit.min(shard.records.len() - start);
        let mut records = Vec::with_capacity(wanted);
        let mut bytes = 0;
        for stored in shard.records.range(start..start + wanted) {
            bytes += stored.size();
            // One record is at most 10 MiB, so the first always fits.
            if bytes > MAX_GET_RECORDS_BYTES {
                break;
            }
            records.push(stored.to_record(self.layout, index));
        }

        let next = start + records.len();
        let unread = shard.records.get(next);
        // How long the oldest unread record has waited; never 0 while one waits, since 0
        // means caught up.
        let millis_behind_latest =
            unread.map_or(0, |oldest| now_ms.saturating_sub(oldest.arrival_ms).max(1));
        let next_cursor = match next.checked_sub(1).filter(|_| !records.is_empty()) {
            Some(last) => Cursor {
                counter: shard.records[last].counter + 1,
                arrival_ms: 0,
            },
            None => cursor,
        };
        let at_end = unread.is_none() && shard.ending_counter.is_some();
        let child_shards = if at_end {
            self.child_shards(&state, index)
        } else {
            Vec::new()
        };
        let next_shard_iterator = (!at_end).then(|| {
            IteratorToken {
                cursor: next_cursor,
                issued_ms: now_ms,
                ..token.clone()
            }
            .encode()
        });
        Ok(GetRecordsOutput {
            records,
            next_shard_iterator,
            millis_behind_latest,
            child_shards,
        })
    }

    fn child_shards(&self, state: &StreamState, index: u32) -> Vec<ChildShard> {
        state.shards[at(index)]
            .children
            .iter()
            .map(|&child| {
                let child = &state.shards[at(child)];
                ChildShard {
                    shard_id: child.id.to_string(),
                    parent_shards: child
                        .parent_indexes()
                        .map(|parent| state.shards[at(parent)].id.to_string())
                        .collect(),
                    hash_key_range: child.range,
                }
            })
            .collect()
    }

    /// A receiver that changes when the shard gains a record or closes, or `None` when the
    /// caller need not wait: the shard already holds a record after `after` (any record when
    /// `None`), is closed, is unknown, or `after` is not one of its sequence numbers.
    ///
    /// The receiver is taken under the same lock as the check, so a put that lands after the
    /// check is always seen by the receiver.
    /// The sequence number just before where a cursor of shard `shard_index` reads: what a
    /// reader there has read up to, whether or not a record had that number.
    pub(crate) fn sequence_number_before(&self, shard_index: u32, counter: u64) -> SequenceNumber {
        self.layout.format(counter.saturating_sub(1), shard_index)
    }

    pub(crate) fn watch_unless_ready(
        &self,
        shard_id: &str,
        after: Option<&SequenceNumber>,
        now_ms: u64,
    ) -> Option<watch::Receiver<()>> {
        let mut state = self.lock();
        let index = self.find_shard(&state, shard_id, now_ms).ok()?;
        let after = match after {
            Some(sequence_number) => Some(self.counter_in_shard(index, sequence_number).ok()?),
            None => None,
        };
        let horizon_ms = now_ms.saturating_sub(duration_millis(state.retention));
        let shard = &mut state.shards[at(index)];
        // Records past retention do not count: a reader would find nothing and wait again.
        shard.trim(horizon_ms);
        let receiver = shard.signal.subscribe();
        let has_new_record = shard
            .records
            .back()
            .is_some_and(|newest| after.is_none_or(|after| newest.counter > after));
        let ready = has_new_record || shard.ending_counter.is_some();
        (!ready).then_some(receiver)
    }

    /// `IncreaseStreamRetentionPeriod` (`increase`) or `DecreaseStreamRetentionPeriod`.
    pub(crate) fn change_retention(
        &self,
        hours: u32,
        increase: bool,
        journal: &dyn Journal,
    ) -> Result<(), SourceError> {
        if !(MIN_RETENTION_HOURS..=MAX_RETENTION_HOURS).contains(&hours) {
            return Err(SourceError::InvalidArgument {
                message: format!(
                    "Retention period hours {hours} for {} must be between \
                     {MIN_RETENTION_HOURS} and {MAX_RETENTION_HOURS}",
                    self.described()
                ),
            });
        }
        let requested = Duration::from_secs(u64::from(hours) * 3600);
        let mut state = self.lock();
        let (wrong_way, operation, other) = if increase {
            (
                requested < state.retention,
                "shorter",
                "DecreaseStreamRetentionPeriod",
            )
        } else {
            (
                requested > state.retention,
                "longer",
                "IncreaseStreamRetentionPeriod",
            )
        };
        if wrong_way {
            return Err(SourceError::InvalidArgument {
                message: format!(
                    "Requested retention period ({hours} hours) for {} can not be {operation} \
                     than the existing retention period ({} seconds). Use {other}.",
                    self.described(),
                    state.retention.as_secs()
                ),
            });
        }
        let operation = if increase {
            "IncreaseStreamRetentionPeriod"
        } else {
            "DecreaseStreamRetentionPeriod"
        };
        self.keep(journal, operation, || Change::Retention {
            stream: self.name.to_string(),
            generation: self.generation,
            hours,
            increase,
        })?;
        state.retention = requested;
        Ok(())
    }

    /// Readies the stream for deletion: wakes every waiting reader and returns how many open
    /// shards go back to the account's budget.
    pub(crate) fn retire(&self) -> usize {
        let state = self.lock();
        for shard in &state.shards {
            shard.signal.send_modify(|()| ());
        }
        state.open.len()
    }
}

#[cfg(test)]
mod tests;
