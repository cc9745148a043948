//! `ParallelizationFactor` above 1: a round of concurrent batches of one shard
//! (`docs/event-source-mapping.md` §6).
//!
//! A round takes a prefix of the buffer ([`plan_round`]) and gives each lane its records, routed
//! by partition key ([`lane_of`]); every lane settles its batch by Lambda's rules at the same
//! time as the others (retries, bisection, partial responses, retry caps and record age apply to
//! the lane's batch alone), and the shard's checkpoint moves over the round's settled prefix as
//! lanes report ([`SettledPrefix`]). The next round starts once every lane is done, so a held
//! record holds the next batch of every lane of its shard, not only its own: what Lambda
//! documents for a failing batch ("the event source mapping pauses processing for the affected
//! shard"), and what keeps the records read ahead of the checkpoint bounded.

use std::ops::Range;
use std::pin::pin;
use std::sync::Arc;

use futures_util::future::join_all;
use tokio::sync::mpsc;

use super::batch::{LaneMemory, Settlements};
use super::{MAX_PAYLOAD_BYTES, ReaderExit, ShardReader, event_size};
use crate::lease::Checkpoint;
use crate::mapping::Settled;
use crate::mapping::lanes::{SettledPrefix, lane_of, plan_round};
use crate::source::Record;

/// What a lane reports of its batch, by the records' positions in the round.
enum LaneEvent {
    /// The function settled these records, `dropped` of them by dropping.
    Settled {
        positions: Vec<usize>,
        dropped: usize,
    },
    /// These records were given up.
    Discarded { positions: Vec<usize> },
}

/// A lane's side of its settlements: it reports them to the round, which checkpoints.
struct LaneSettlements {
    /// The round position of each record of the lane's batch.
    positions: Vec<usize>,
    events: mpsc::UnboundedSender<LaneEvent>,
}

impl LaneSettlements {
    fn report(&self, event: LaneEvent) {
        // The round outlives its lanes: the receiver is there.
        let _ = self.events.send(event);
    }
}

impl Settlements for LaneSettlements {
    async fn settled(
        &mut self,
        _batch: &[Record],
        range: Range<usize>,
        dropped: usize,
    ) -> Result<(), ReaderExit> {
        let positions = self.positions[range].to_vec();
        self.report(LaneEvent::Settled { positions, dropped });
        Ok(())
    }

    async fn discarded(
        &mut self,
        _batch: &[Record],
        range: Range<usize>,
    ) -> Result<(), ReaderExit> {
        let positions = self.positions[range].to_vec();
        self.report(LaneEvent::Discarded { positions });
        Ok(())
    }

    // The round writes the checkpoints, while the lanes run; the lease renewer keeps confirming
    // the lease meanwhile, and the round waits for a write whose lease may be lost before it
    // starts the lanes.
    async fn before_invoke(&mut self) -> Result<(), ReaderExit> {
        Ok(())
    }

    async fn before_retry_pause(&mut self) -> Result<(), ReaderExit> {
        Ok(())
    }
}

/// What the round owes the checkpoint: records settled since the last one it wrote.
#[derive(Default)]
struct Owed {
    records: u64,
    dropped: u64,
}

impl ShardReader {
    /// Settles one round of up to `ParallelizationFactor` concurrent batches, each of at most
    /// `batch_size` records of the lane's keys, taken from the front of the buffer.
    pub(super) async fn process_round(&mut self, batch_size: usize) -> Result<(), ReaderExit> {
        let lanes = self.shared.config.parallelization_factor;
        let plan = plan_round(
            self.buffer
                .iter()
                .map(|record| (lane_of(&record.partition_key, lanes), event_size(record))),
            lanes,
            batch_size,
            MAX_PAYLOAD_BYTES,
        );
        let records: Vec<Record> = self.buffer.drain(..plan.taken).collect();
        if !self.checkpointer.lease_is_certainly_held() {
            self.finish_checkpoint().await?;
        }
        let ctx = Arc::clone(&self.ctx);
        let mut memories = std::mem::take(&mut self.lane_memories);
        memories.resize_with(lanes, LaneMemory::default);
        let (events, mut reported) = mpsc::unbounded_channel();
        let runs = plan
            .lanes
            .into_iter()
            .zip(memories.iter_mut())
            .filter(|(positions, _)| !positions.is_empty())
            .map(|(positions, memory)| {
                let batch: Vec<Record> = positions
                    .iter()
                    .map(|&position| records[position].clone())
                    .collect();
                let mut settlements = LaneSettlements {
                    positions,
                    events: events.clone(),
                };
                let ctx = &*ctx;
                async move { ctx.process(&batch, memory, &mut settlements).await }
            })
            .collect::<Vec<_>>();
        drop(events);

        let mut prefix = SettledPrefix::new(records.len());
        let mut owed = Owed::default();
        let mut write_failed = None;
        let results = {
            let mut runs = pin!(join_all(runs));
            loop {
                tokio::select! {
                    results = &mut runs => break results,
                    Some(event) = reported.recv() => {
                        if write_failed.is_none()
                            && let Err(exit) =
                                self.take(event, &records, &mut prefix, &mut owed).await
                        {
                            // The lanes see the lease lost or the mapping stopping, and end.
                            write_failed = Some(exit);
                        }
                    }
                }
            }
        };
        while let Ok(event) = reported.try_recv() {
            if write_failed.is_none()
                && let Err(exit) = self.take(event, &records, &mut prefix, &mut owed).await
            {
                write_failed = Some(exit);
            }
        }
        self.lane_memories = memories;
        if let Some(exit) = write_failed {
            return Err(exit);
        }
        results.into_iter().collect::<Result<Vec<()>, _>>()?;
        debug_assert_eq!(
            prefix.prefix(),
            records.len(),
            "a finished round settled every record"
        );
        Ok(())
    }

    /// Takes one lane's report into the round, and checkpoints when the settled prefix grew.
    async fn take(
        &mut self,
        event: LaneEvent,
        records: &[Record],
        prefix: &mut SettledPrefix,
        owed: &mut Owed,
    ) -> Result<(), ReaderExit> {
        let grown = match event {
            LaneEvent::Settled { positions, dropped } => {
                owed.records += positions.len() as u64;
                owed.dropped += dropped as u64;
                prefix.settle(positions)
            }
            LaneEvent::Discarded { positions } => prefix.settle(positions),
        };
        let Some(settled_prefix) = grown else {
            return Ok(());
        };
        let last = records[settled_prefix - 1].sequence_number.clone();
        let settled = match std::mem::take(owed) {
            Owed { records: 0, .. } => Settled::Nothing,
            Owed { records, dropped } => Settled::Handled {
                records,
                dropped,
                last: last.clone(),
            },
        };
        self.start_checkpoint(Checkpoint::SequenceNumber(last), settled)
            .await
    }
}
