//! `ParallelizationFactor` above 1: a shard's concurrent batches, its *lanes*, each running on
//! its own (`docs/event-source-mapping.md` §6).
//!
//! The reader takes records from its buffer into the lanes in shard order, each to the lane of
//! its partition key (a keyless record: of its sequence number, [`lane_of`]), and starts a
//! lane's next batch as soon as its last one is settled, while the other lanes still invoke: a slow batch holds only its own keys. Every lane
//! settles its batch by Lambda's rules (retries, bisection, partial responses, retry caps and
//! record age apply to the lane's batch alone), and the shard's checkpoint moves over the
//! ledger's settled prefix as lanes report. [`Lanes`] holds those rules, with no I/O: what is
//! taken in ahead of the checkpoint is bounded (every lane one batch in flight and one ready),
//! and a failed batch pauses the shard until it settles ("the event source mapping pauses
//! processing for the affected shard until the error is resolved").

use std::ops::Range;
use std::sync::Arc;

use futures_util::StreamExt as _;
use futures_util::future::{BoxFuture, FutureExt as _};
use futures_util::stream::FuturesUnordered;
use tokio::sync::mpsc;

use super::batch::{BatchContext, LaneMemory, Settlements};
use super::shard_reader::{ShardReader, event_size};
use crate::lease::Checkpoint;
use crate::mapping::lanes::{Lanes, lane_of};
use crate::mapping::oversize::MAX_PAYLOAD_BYTES;
use crate::mapping::reader_exit::ReaderExit;
use crate::mapping::status::Settled;
use crate::response::DropCounts;
use kinesis_source::Record;
use kinesis_source::sequence::SequenceNumber;

/// How many batches of each lane may be taken in ahead of the checkpoint: the one in flight and
/// the next, ready when it settles. A lane then always has a full batch to start, while a slow
/// lane holds back at most this many batches' worth of records of the others, which a restart
/// delivers again.
const BATCHES_AHEAD_PER_LANE: usize = 2;

/// What a lane reports of its batch, by the records' tickets in the ledger.
enum LaneEvent {
    /// The function settled these records, `dropped` of them by dropping.
    Settled {
        tickets: Vec<u64>,
        dropped: DropCounts,
    },
    /// These records were given up.
    Discarded { tickets: Vec<u64> },
    /// The lane's batch failed an invocation: it holds records until a retry settles them.
    Failed { lane: usize },
}

/// A lane's side of its settlements: it reports them to the reader, which checkpoints.
struct LaneSettlements {
    lane: usize,
    /// The ticket of each record of the lane's batch.
    tickets: Vec<u64>,
    events: mpsc::UnboundedSender<LaneEvent>,
}

impl LaneSettlements {
    fn report(&self, event: LaneEvent) {
        // The reader outlives its lanes: the receiver is there.
        let _ = self.events.send(event);
    }
}

impl Settlements for LaneSettlements {
    async fn settled(
        &mut self,
        _batch: &[Record],
        range: Range<usize>,
        dropped: DropCounts,
    ) -> Result<(), ReaderExit> {
        let tickets = self.tickets[range].to_vec();
        self.report(LaneEvent::Settled { tickets, dropped });
        Ok(())
    }

    async fn discarded(
        &mut self,
        _batch: &[Record],
        range: Range<usize>,
    ) -> Result<(), ReaderExit> {
        let tickets = self.tickets[range].to_vec();
        self.report(LaneEvent::Discarded { tickets });
        Ok(())
    }

    // The reader writes the checkpoints, while the lanes run; the lease renewer keeps confirming
    // the lease meanwhile, and the reader waits for a write whose lease may be lost before it
    // starts a lane's batch.
    async fn before_invoke(&mut self) -> Result<(), ReaderExit> {
        Ok(())
    }

    async fn before_retry_pause(&mut self) -> Result<(), ReaderExit> {
        Ok(())
    }

    fn failed(&mut self) {
        self.report(LaneEvent::Failed { lane: self.lane });
    }
}

/// A lane's batch, over: the lane, its memory, and how the batch ended.
type LaneEnd = (usize, LaneMemory, Result<(), ReaderExit>);

/// Settles `batch` in `lane`, reporting to `settlements`.
fn run_lane(
    ctx: Arc<BatchContext>,
    lane: usize,
    batch: Vec<Record>,
    mut memory: LaneMemory,
    mut settlements: LaneSettlements,
) -> BoxFuture<'static, LaneEnd> {
    async move {
        let result = ctx.process(&batch, &mut memory, &mut settlements).await;
        (lane, memory, result)
    }
    .boxed()
}

/// What the lanes owe the checkpoint: records settled since the last one written.
#[derive(Default)]
struct Owed {
    records: u64,
    dropped: DropCounts,
}

impl ShardReader {
    /// Runs the shard's lanes, each starting its next batch of at most `batch_size` records of
    /// its keys as soon as its last one settled, reading more as the buffer empties; returns
    /// once every record taken in is settled and the buffer is empty (or a replay waits, or the
    /// reader stops).
    pub(super) async fn process_lanes(&mut self, batch_size: usize) -> Result<(), ReaderExit> {
        let factor = self.shared.config.parallelization_factor;
        let mut lanes: Lanes<SequenceNumber, Record> = Lanes::new(
            factor,
            BATCHES_AHEAD_PER_LANE * factor * batch_size,
            BATCHES_AHEAD_PER_LANE * factor * MAX_PAYLOAD_BYTES,
        );
        self.lane_memories.resize_with(factor, LaneMemory::default);
        let (events, mut reported) = mpsc::unbounded_channel();
        let mut running: FuturesUnordered<BoxFuture<'static, LaneEnd>> = FuturesUnordered::new();
        let mut owed = Owed::default();
        let mut exit = None;
        loop {
            if exit.is_none()
                && let Err(stop) = self.take_in(&mut lanes, batch_size).await
            {
                exit = Some(stop);
            }
            if exit.is_none() {
                for lane in 0..factor {
                    let Some((tickets, batch)) =
                        lanes.next_batch(lane, batch_size, MAX_PAYLOAD_BYTES)
                    else {
                        continue;
                    };
                    if !self.checkpointer.lease_is_certainly_held()
                        && let Err(stop) = self.finish_checkpoint().await
                    {
                        exit = Some(stop);
                        lanes.finished(lane);
                        break;
                    }
                    let memory = std::mem::take(&mut self.lane_memories[lane]);
                    let settlements = LaneSettlements {
                        lane,
                        tickets,
                        events: events.clone(),
                    };
                    running.push(run_lane(
                        Arc::clone(&self.ctx),
                        lane,
                        batch,
                        memory,
                        settlements,
                    ));
                }
            }
            if running.is_empty() {
                // Every lane's reports are in the channel: a lane reports before it ends.
                while let Ok(event) = reported.try_recv() {
                    self.take_report(event, &mut lanes, &mut owed, &mut exit)
                        .await;
                }
                let done =
                    lanes.is_settled() && (self.buffer.is_empty() || self.pending_replay.is_some());
                if exit.is_some() || done {
                    break;
                }
                continue;
            }
            tokio::select! {
                Some((lane, memory, result)) = running.next() => {
                    // The lane's reports come first: a failure it reported belongs to the batch
                    // that just ended, not to the lane's next one.
                    while let Ok(event) = reported.try_recv() {
                        self.take_report(event, &mut lanes, &mut owed, &mut exit).await;
                    }
                    lanes.finished(lane);
                    self.lane_memories[lane] = memory;
                    if let Err(stop) = result {
                        // The other lanes see the lease lost or the mapping stopping, and end.
                        exit.get_or_insert(stop);
                    }
                }
                Some(event) = reported.recv() => {
                    self.take_report(event, &mut lanes, &mut owed, &mut exit).await;
                }
            }
        }
        match exit {
            Some(stop) => Err(stop),
            None => {
                debug_assert!(lanes.is_settled(), "every record taken in was settled");
                Ok(())
            }
        }
    }

    /// Reads when the buffer runs low, and takes buffered records into the lanes while the
    /// ledger has room. Takes nothing in while a replay waits: it applies once every lane has
    /// settled what it holds.
    async fn take_in(
        &mut self,
        lanes: &mut Lanes<SequenceNumber, Record>,
        batch_size: usize,
    ) -> Result<(), ReaderExit> {
        if self.pending_replay.is_none()
            && let Ok(replay) = self.replays.try_recv()
        {
            self.pending_replay = Some(replay);
        }
        if self.pending_replay.is_some() {
            return Ok(());
        }
        // A shard that is caught up is read again once the lanes are done (the read loop waits
        // for records then), not at every settled batch: that would spend its reads.
        if self.buffer.len() < batch_size && self.iterator.is_some() && !self.caught_up {
            self.read().await?;
        }
        let factor = self.shared.config.parallelization_factor;
        while let Some(record) = self.buffer.front() {
            let size = event_size(record);
            if !lanes.admits(size) {
                break;
            }
            let record = self.buffer.pop_front().expect("the front is there");
            let lane = lane_of(
                &record.partition_key,
                record.sequence_number.as_str(),
                factor,
            );
            lanes.admit(lane, record.sequence_number.clone(), size, record);
        }
        Ok(())
    }

    /// Takes one lane's report, and checkpoints when the ledger's settled prefix grew. After a
    /// failed write (`exit` set) nothing more is written: the reader stops.
    async fn take_report(
        &mut self,
        event: LaneEvent,
        lanes: &mut Lanes<SequenceNumber, Record>,
        owed: &mut Owed,
        exit: &mut Option<ReaderExit>,
    ) {
        let passed = match event {
            LaneEvent::Settled { tickets, dropped } => {
                owed.records += tickets.len() as u64;
                owed.dropped += dropped;
                lanes.settle(tickets)
            }
            LaneEvent::Discarded { tickets } => lanes.settle(tickets),
            LaneEvent::Failed { lane } => {
                lanes.failed(lane);
                None
            }
        };
        let Some(last) = passed else {
            return;
        };
        if exit.is_some() {
            return;
        }
        let settled = match std::mem::take(owed) {
            Owed { records: 0, .. } => Settled::Nothing,
            Owed { records, dropped } => Settled::Handled {
                records,
                dropped,
                last: last.clone(),
            },
        };
        if let Err(stop) = self
            .start_checkpoint(Checkpoint::SequenceNumber(last), settled)
            .await
        {
            *exit = Some(stop);
        }
    }
}
