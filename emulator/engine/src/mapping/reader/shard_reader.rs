//! The shard reader: its state, its read loop, and its checkpoint writes, one batch in flight.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{Mutex, mpsc, watch};
use tokio::task::JoinHandle;

use crate::mapping::checkpointer::{Checkpointer, renew};
use crate::mapping::reader_exit::ReaderExit;
use crate::response::DropCounts;

use crate::mapping::lanes::batch_len;

use super::batch::{BatchContext, LaneMemory, Settlements};
use crate::backoff::{Backoff, RetryKind, Retryable as _};
use crate::lease::{Checkpoint, Lease};
use crate::mapping::oversize::MAX_PAYLOAD_BYTES;
use crate::mapping::replay::ReplayCommand;
use crate::mapping::shared::Shared;
use crate::mapping::status::Settled;
use crate::mapping::status::ShardChange;
use kinesis_source::sequence::SequenceNumber;
use kinesis_source::{ChildShard, IteratorPosition, Record, Shard, SourceError, StreamDescription};

/// The most records one `GetRecords` call asks for (the API's limit).
pub(super) const READ_LIMIT: usize = 10_000;
/// What an event spends on one record besides its key and data (field names, ids, ARNs).
const EVENT_BYTES_PER_RECORD: usize = 512;

/// How one read went.
pub(super) enum Read {
    /// Records were added to the buffer.
    Records,
    /// The shard holds nothing more for now.
    Nothing,
    /// The read failed in a way that a new try may fix (the pause is already taken).
    TryAgain,
}

pub(in crate::mapping) struct ShardReader {
    pub(super) shared: Arc<Shared>,
    pub(super) stream: Arc<StreamDescription>,
    pub(super) shard: Shard,
    pub(super) stopping: watch::Receiver<bool>,
    pub(super) lease_lost: watch::Receiver<bool>,
    /// The lease, and the writes of it.
    pub(super) checkpointer: Checkpointer,
    /// The checkpoint write of the last settled batch, if it may still be running.
    pending_checkpoint: Option<JoinHandle<Result<(), ReaderExit>>>,
    /// What the reader's batches share.
    pub(super) ctx: Arc<BatchContext>,
    /// What the reader's one lane remembers between batches (`ParallelizationFactor` 1).
    pub(super) memory: LaneMemory,
    /// What each lane remembers, with `ParallelizationFactor` above 1.
    pub(super) lane_memories: Vec<LaneMemory>,
    /// Records read and not yet handed to a batch.
    pub(super) buffer: VecDeque<Record>,
    /// Where to read next; `None` once the shard has been read to its end.
    pub(super) iterator: Option<String>,
    /// The children named at the end of the shard.
    pub(super) children: Vec<ChildShard>,
    /// Whether the last read reached the shard's newest record (`MillisBehindLatest` 0).
    pub(super) caught_up: bool,
    /// The last record read, or the checkpoint the reader resumed after.
    pub(super) last_read: Option<SequenceNumber>,
    /// Whether every record of the shard lies ahead of the reader until it reads one (it started
    /// at `TRIM_HORIZON`), so that "any record" is what it waits for.
    pub(super) started_at_oldest: bool,
    /// The last record read that the filters removed, when no record to deliver was read after
    /// it: the checkpoint still owes it a write (`docs/filtering.md`, "Records that do not match").
    pub(super) filtered_tail: Option<SequenceNumber>,
    /// Pauses between failed reads, growing while reads keep failing.
    read_backoff: Backoff,
    /// When the last read started (a tumbling window closes on what a read after its end saw).
    pub(super) last_read_at: SystemTime,
    /// Replays asked for (`kinesis-esm replay`), applied between batches.
    pub(super) replays: mpsc::Receiver<ReplayCommand>,
    /// This reader's id in the mapping's replay registry.
    replay_registration: u64,
    /// A replay received while waiting for records, applied next.
    pub(super) pending_replay: Option<ReplayCommand>,
}

impl ShardReader {
    pub(in crate::mapping) fn new(
        shared: Arc<Shared>,
        stream: Arc<StreamDescription>,
        shard: Shard,
        lease: Lease,
        lease_taken_at: Instant,
        stopping: watch::Receiver<bool>,
    ) -> Self {
        let (lease_lost_signal, lease_lost) = watch::channel(false);
        let ctx = Arc::new(BatchContext::new(
            Arc::clone(&shared),
            Arc::clone(&stream),
            shard.shard_id.clone(),
            stopping.clone(),
            lease_lost.clone(),
        ));
        let read_backoff = shared.retry_backoff();
        let registration = shared.replay_registry.register(&shard.shard_id);
        let checkpointer = Checkpointer {
            shared: Arc::clone(&shared),
            shard_id: shard.shard_id.clone(),
            lease: Arc::new(Mutex::new(lease)),
            confirmed_at: Arc::new(std::sync::Mutex::new(lease_taken_at)),
            stopping: stopping.clone(),
            lease_lost_signal,
        };
        Self {
            shared,
            stream,
            shard,
            stopping,
            lease_lost,
            checkpointer,
            pending_checkpoint: None,
            ctx,
            memory: LaneMemory::default(),
            lane_memories: Vec::new(),
            buffer: VecDeque::new(),
            iterator: None,
            children: Vec::new(),
            caught_up: false,
            last_read: None,
            started_at_oldest: false,
            filtered_tail: None,
            read_backoff,
            last_read_at: SystemTime::UNIX_EPOCH,
            replays: registration.replays,
            replay_registration: registration.id,
            pending_replay: None,
        }
    }

    pub(super) fn shard_id(&self) -> &str {
        &self.shard.shard_id
    }

    pub(in crate::mapping) async fn run(mut self) -> ReaderExit {
        let renewer = tokio::spawn(renew(self.checkpointer.clone()));
        let mut exit = match self.read_loop().await {
            Ok(never) => match never {},
            Err(exit) => exit,
        };
        // A clean stop resumes right after the last settled batch: its checkpoint lands first.
        if let Err(ReaderExit::LeaseLost) = self.finish_checkpoint().await {
            exit = ReaderExit::LeaseLost;
        }
        // Stop renewing between renewals, never during one: the renewer holds the lease while
        // its write is in flight, and a write aborted after it reached the table would leave
        // this copy of the lease a counter behind, so that giving the lease up were refused.
        let lease = self.checkpointer.lease.lock().await;
        renewer.abort();
        // Whatever the source holds open for the shard (an enhanced fan-out subscription) is
        // closed before the exit is reported, so before any new reader of the shard starts.
        self.shared
            .source
            .release_shard(&self.stream.name, &self.shard.shard_id)
            .await;
        self.shared
            .replay_registry
            .unregister(&self.shard.shard_id, self.replay_registration);
        self.shared
            .update_shard(&self.shard.shard_id, ShardChange::Finished(exit));
        if exit == ReaderExit::Stopped {
            // Give the lease up so that the next instance takes the shard at once instead of
            // waiting for the lease to expire.
            if let Err(error) = self.shared.leases.evict_lease(&lease).await {
                tracing::warn!(
                    shard_id = %self.shard.shard_id,
                    %error,
                    "could not give the lease up: another instance takes the shard once the lease expires"
                );
            }
        }
        exit
    }

    async fn read_loop(&mut self) -> Result<std::convert::Infallible, ReaderExit> {
        let checkpoint = self.checkpointer.lease.lock().await.checkpoint.clone();
        let position = match &checkpoint {
            Checkpoint::ShardEnd => return Err(ReaderExit::Ended),
            Checkpoint::TrimHorizon | Checkpoint::Latest | Checkpoint::AtTimestamp => {
                self.initial_position(&checkpoint)
            }
            Checkpoint::SequenceNumber(last) => {
                let position = self.resume_position(last).await?;
                // New records are those after the checkpoint, not any record of the shard.
                if matches!(position, IteratorPosition::AfterSequenceNumber(_)) {
                    self.last_read = Some(last.clone());
                }
                position
            }
        };
        self.started_at_oldest = position == IteratorPosition::TrimHorizon;
        let shard_id = self.shard.shard_id.clone();
        self.shared
            .update_shard(&shard_id, ShardChange::Started { checkpoint });
        self.iterator = Some(self.shard_iterator(position).await?);

        let batch_size = self.shared.config.batch_size.max(1);
        let window = self.shared.config.maximum_batching_window;
        let tumbling = self.tumbling_window();
        let mut window_start = Instant::now();
        loop {
            self.check_running()?;
            self.apply_replays().await?;
            let mut read = Read::Nothing;
            // Without a batching window, records read up to the shard's tip are invoked at once:
            // reading again first would only delay them by a call, and spend one of the
            // shard's five reads a second.
            let invoke_now = window.is_zero() && self.caught_up && !self.buffer.is_empty();
            if self.buffer.len() < batch_size && self.iterator.is_some() && !invoke_now {
                read = self.read().await?;
            }
            if matches!(read, Read::TryAgain) {
                continue;
            }
            if self.buffer.is_empty() {
                self.pass_filtered().await?;
                // Records the filters removed are not a reason to wait: more may lie behind them.
                if matches!(read, Read::Records) && !self.caught_up && self.iterator.is_some() {
                    continue;
                }
                // A window closes before the shard ends or waits past the window's end.
                if let Some(length) = tumbling
                    && self.close_due_window(length).await?
                {
                    continue;
                }
                if self.iterator.is_none() {
                    return Err(self.end_shard().await);
                }
                self.finish_checkpoint().await?;
                self.shared.update_shard(&shard_id, ShardChange::CaughtUp);
                self.wait_for_records(self.window_wait(self.shared.options.poll_interval))
                    .await?;
                window_start = Instant::now();
                continue;
            }
            // Lambda invokes when the batch is full, the window has passed, or the shard has
            // nothing more (a closed shard's end does not wait for the window).
            let full = self.buffer.len() >= batch_size
                || tumbling.is_some_and(|length| self.window_batch_is_complete(length));
            if !full && self.iterator.is_some() && !window.is_zero() {
                if matches!(read, Read::Records) {
                    continue;
                }
                let window_end = window_start + window;
                let now = Instant::now();
                if now < window_end {
                    self.wait_for_records(window_end - now).await?;
                    continue;
                }
            }
            if let Some(length) = tumbling {
                // Windows run with one lane: the template refuses them with more.
                self.process_window(batch_size, length).await?;
            } else if self.shared.config.parallelization_factor > 1 {
                self.process_lanes(batch_size).await?;
            } else {
                let batch = self.take_batch(batch_size);
                self.process(batch).await?;
            }
            window_start = Instant::now();
        }
    }

    pub(super) fn check_running(&self) -> Result<(), ReaderExit> {
        self.ctx.check_running()
    }

    /// Sleeps for `pause`, or less if the mapping stops or the lease is lost.
    async fn pause(&mut self, pause: Duration) -> Result<(), ReaderExit> {
        self.ctx.pause(pause).await
    }

    async fn wait_for_records(&mut self, timeout: Duration) -> Result<(), ReaderExit> {
        if self.last_read.is_none()
            && !self.started_at_oldest
            && !self.shared.source.pushes_records()
        {
            // A reader that started at `LATEST` or at a timestamp and has read nothing yet sits
            // after records it will never read: waiting for "any record" would return at once
            // and spin. Only polling tells when new records come.
            return self.pause(timeout).await;
        }
        let source = Arc::clone(&self.shared.source);
        let stream = self.shared.config.stream_name.clone();
        tokio::select! {
            () = source.wait_for_records(&stream, &self.shard.shard_id, self.last_read.as_ref(), timeout) => {}
            _ = self.stopping.wait_for(|stop| *stop) => {}
            _ = self.lease_lost.wait_for(|lost| *lost) => {}
            replay = self.replays.recv(), if self.pending_replay.is_none() => self.pending_replay = replay,
        }
        self.check_running()
    }

    /// Reads once from the shard into the buffer.
    pub(super) async fn read(&mut self) -> Result<Read, ReaderExit> {
        let Some(iterator) = self.iterator.as_deref() else {
            return Ok(Read::Nothing);
        };
        self.last_read_at = SystemTime::now();
        match self.shared.source.get_records(iterator, READ_LIMIT).await {
            Ok(output) => {
                self.read_backoff.reset();
                let count = output.records.len();
                if let Some(last) = output.records.last() {
                    self.last_read = Some(last.sequence_number.clone());
                }
                let kept = self.keep_matching(output.records);
                let filtered = count - kept;
                self.iterator = output.next_shard_iterator;
                if self.iterator.is_none() {
                    self.children = output.child_shards;
                }
                let behind = output.millis_behind_latest;
                self.caught_up = behind == 0;
                self.shared.update_shard(
                    &self.shard.shard_id,
                    ShardChange::Read {
                        read: count,
                        filtered,
                        millis_behind_latest: behind,
                    },
                );
                Ok(if count > 0 {
                    Read::Records
                } else {
                    Read::Nothing
                })
            }
            Err(SourceError::ExpiredIterator) => {
                // Resume right after the last record read (or from the checkpoint).
                let position = match &self.last_read {
                    Some(last) => IteratorPosition::AfterSequenceNumber(last.clone()),
                    None => match self.checkpointer.lease.lock().await.checkpoint.clone() {
                        Checkpoint::SequenceNumber(last) => {
                            IteratorPosition::AfterSequenceNumber(last)
                        }
                        other => self.initial_position(&other),
                    },
                };
                tracing::debug!(shard_id = %self.shard.shard_id, "the shard iterator expired; renewing it");
                self.iterator = Some(self.shard_iterator(position).await?);
                Ok(Read::TryAgain)
            }
            Err(SourceError::NotFound { what }) => {
                tracing::warn!(shard_id = %self.shard.shard_id, "{what} not found: the reader stops");
                Err(ReaderExit::ShardGone)
            }
            Err(error) => {
                tracing::warn!(shard_id = %self.shard.shard_id, %error, "reading the shard failed; trying again");
                let kind = error.retry_kind().unwrap_or(RetryKind::Error);
                let pause = self.read_backoff.next_pause(kind);
                self.pause(pause).await?;
                Ok(Read::TryAgain)
            }
        }
    }

    /// Buffers the records that match the mapping's filters, and returns how many it kept. A
    /// record that matches none is not delivered; the checkpoint passes it with the next batch,
    /// or by itself when nothing to deliver follows it ([`Self::pass_filtered`]).
    fn keep_matching(&mut self, records: Vec<Record>) -> usize {
        let filter = &self.shared.config.filter_criteria;
        if filter.is_empty() {
            let count = records.len();
            self.buffer.extend(records);
            return count;
        }
        let before = self.buffer.len();
        for record in records {
            if filter.matches(&record) {
                self.filtered_tail = None;
                self.buffer.push_back(record);
            } else {
                self.filtered_tail = Some(record.sequence_number);
            }
        }
        self.buffer.len() - before
    }

    /// Checkpoints past the records the filters removed after every buffered record, if any: a
    /// read whose records all fail the filters invokes nothing but still moves the checkpoint.
    async fn pass_filtered(&mut self) -> Result<(), ReaderExit> {
        match self.filtered_tail.take() {
            Some(last) => {
                self.start_checkpoint(Checkpoint::SequenceNumber(last), Settled::Nothing)
                    .await
            }
            None => Ok(()),
        }
    }

    /// Takes the next batch from the buffer: up to `batch_size` records and 6 MB of event.
    pub(super) fn take_batch(&mut self, batch_size: usize) -> Vec<Record> {
        let count = batch_len(
            self.buffer.iter().map(event_size),
            batch_size,
            MAX_PAYLOAD_BYTES,
        );
        self.buffer.drain(..count).collect()
    }

    /// Settles one batch, checkpointing after each range it settles or gives up.
    pub(super) async fn process(&mut self, batch: Vec<Record>) -> Result<(), ReaderExit> {
        let ctx = Arc::clone(&self.ctx);
        let mut memory = std::mem::take(&mut self.memory);
        let result = ctx.process(&batch, &mut memory, self).await;
        self.memory = memory;
        result
    }

    /// Checkpoints past `records`, which the function settled (`dropped` of them by dropping).
    pub(super) async fn settle(
        &mut self,
        records: &[Record],
        dropped: DropCounts,
    ) -> Result<(), ReaderExit> {
        let last = records[records.len() - 1].sequence_number.clone();
        let count = records.len() as u64;
        // The counters change with the checkpoint, in one status update: every update wakes
        // whoever waits on the status, and a batch is settled thousands of times a second.
        let checkpoint = Checkpoint::SequenceNumber(last.clone());
        let settled = Settled::Handled {
            records: count,
            dropped,
            last,
        };
        self.start_checkpoint(checkpoint, settled).await
    }

    /// Writes a checkpoint, conditional on still holding the lease, and waits until it is written.
    pub(super) async fn checkpoint(&mut self, checkpoint: Checkpoint) -> Result<(), ReaderExit> {
        self.start_checkpoint(checkpoint, Settled::Nothing).await?;
        self.finish_checkpoint().await
    }

    /// Starts writing a checkpoint once the write before it has landed, and returns while it
    /// runs. Once written, it is recorded in the shard's status together with what it `settled`.
    pub(super) async fn start_checkpoint(
        &mut self,
        checkpoint: Checkpoint,
        settled: Settled,
    ) -> Result<(), ReaderExit> {
        self.finish_checkpoint().await?;
        let mut write = Box::pin(self.checkpointer.clone().write(checkpoint, settled));
        // A store that answers at once (the memory store) is done on the first poll: only a
        // write that has to wait gets a task of its own.
        match std::future::poll_fn(|context| Poll::Ready(write.as_mut().poll(context))).await {
            Poll::Ready(result) => result,
            Poll::Pending => {
                self.pending_checkpoint = Some(tokio::spawn(write));
                Ok(())
            }
        }
    }

    /// Waits for the checkpoint write in flight, if any.
    pub(super) async fn finish_checkpoint(&mut self) -> Result<(), ReaderExit> {
        let Some(write) = self.pending_checkpoint.take() else {
            return Ok(());
        };
        match write.await {
            Ok(result) => result,
            Err(error) => std::panic::resume_unwind(error.into_panic()),
        }
    }
}

/// What `record` adds to an event: its data in base64, its key, and the fields around them.
pub(super) fn event_size(record: &Record) -> usize {
    record.data.len().div_ceil(3) * 4 + record.partition_key.len() + EVENT_BYTES_PER_RECORD
}

/// With one batch in flight, a settled or discarded range is checkpointed at once.
impl Settlements for ShardReader {
    async fn settled(
        &mut self,
        batch: &[Record],
        range: Range<usize>,
        dropped: DropCounts,
    ) -> Result<(), ReaderExit> {
        self.settle(&batch[range], dropped).await
    }

    async fn discarded(&mut self, batch: &[Record], range: Range<usize>) -> Result<(), ReaderExit> {
        let last = batch[range.end - 1].sequence_number.clone();
        self.checkpoint(Checkpoint::SequenceNumber(last)).await
    }

    async fn before_invoke(&mut self) -> Result<(), ReaderExit> {
        if self.checkpointer.lease_is_certainly_held() {
            return Ok(());
        }
        self.finish_checkpoint().await
    }

    async fn before_retry_pause(&mut self) -> Result<(), ReaderExit> {
        self.finish_checkpoint().await
    }
}
