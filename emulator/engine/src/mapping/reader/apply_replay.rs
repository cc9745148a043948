//! A replay (`kinesis-esm replay`) as the shard's reader applies it, between batches: the
//! record to read again from, the checkpoint before it, a fenced checkpoint write, and a new
//! iterator (`mapping::replay` holds the rules).

use std::time::{Duration, SystemTime};

use super::shard_reader::ShardReader;
use crate::lease::Checkpoint;
use crate::mapping::reader_exit::ReaderExit;
use crate::mapping::replay::{
    ReplayCommand, ReplayError, ReplayFrom, ReplayOutcome, Replayed, check_move, check_timestamp,
};
use crate::mapping::status::ShardChange;
use kinesis_source::sequence::SequenceNumber;
use kinesis_source::{IteratorPosition, Record};

/// How far before a record the search for the record before it looks, widening each time
/// nothing older was found, before it reads from the shard's oldest record.
const LOOK_BACK: [Duration; 4] = [
    Duration::from_secs(1),
    Duration::from_secs(60),
    Duration::from_secs(3600),
    Duration::from_secs(86_400),
];

/// The most reads a search makes through empty pages before it gives up (a real Kinesis may
/// answer empty pages before it reaches records).
const MAX_EMPTY_READS: usize = 100;

/// How a replay ended for the reader.
enum Step {
    /// Refused: the answer says why; the reader goes on as before.
    Refused(ReplayError),
    /// The reader must stop (the mapping stops, or the lease was lost).
    Exit(ReaderExit),
}

impl From<ReaderExit> for Step {
    fn from(exit: ReaderExit) -> Self {
        Self::Exit(exit)
    }
}

impl From<ReplayError> for Step {
    fn from(error: ReplayError) -> Self {
        Self::Refused(error)
    }
}

impl ShardReader {
    /// Applies the replays asked for since the last look, answering each.
    pub(super) async fn apply_replays(&mut self) -> Result<(), ReaderExit> {
        loop {
            let command = match self.pending_replay.take() {
                Some(command) => command,
                None => match self.replays.try_recv() {
                    Ok(command) => command,
                    Err(_) => return Ok(()),
                },
            };
            let ReplayCommand { from, answer } = command;
            match self.replay(&from).await {
                Ok(outcome) => {
                    tracing::info!(
                        shard_id = %self.shard.shard_id,
                        from = %from,
                        previous_checkpoint = %outcome.previous_checkpoint,
                        checkpoint = %outcome.checkpoint,
                        "replay: the checkpoint moved back; reading again"
                    );
                    let _ = answer.send(Ok(outcome));
                }
                Err(Step::Refused(refused)) => {
                    let _ = answer.send(Err(refused));
                }
                Err(Step::Exit(exit)) => return Err(exit),
            }
        }
    }

    async fn replay(&mut self, from: &ReplayFrom) -> Result<ReplayOutcome, Step> {
        // The write in flight lands first: the replay's write comes after it.
        self.finish_checkpoint().await?;
        let shard_id = self.shard.shard_id.clone();
        let previous = self.checkpointer.lease.lock().await.checkpoint.clone();
        let (checkpoint, first_record) = match from {
            ReplayFrom::TrimHorizon => {
                let first = self.first_record(IteratorPosition::TrimHorizon).await?;
                (
                    Checkpoint::TrimHorizon,
                    first.map(|record| record.sequence_number),
                )
            }
            ReplayFrom::SequenceNumber(sequence_number) => {
                let record = self.record_at(sequence_number).await?;
                let before = self.checkpoint_before(&record).await?;
                (before, Some(record.sequence_number))
            }
            ReplayFrom::Timestamp(at) => {
                check_timestamp(*at, SystemTime::now())?;
                let Some(record) = self
                    .first_record(IteratorPosition::AtTimestamp(*at))
                    .await?
                else {
                    return Err(Step::Refused(ReplayError(format!(
                        "shard {shard_id}: no record arrived at or after {}: nothing to read again",
                        kinesis_source::time::iso8601_millis(*at)
                    ))));
                };
                let before = self.checkpoint_before(&record).await?;
                (before, Some(record.sequence_number))
            }
        };
        check_move(&shard_id, &previous, &checkpoint)?;
        // An ordinary checkpoint write: conditional on the lease counter this reader holds.
        self.checkpoint(checkpoint.clone()).await?;
        self.shared.update_shard(
            &shard_id,
            ShardChange::Replayed(Replayed {
                from: from.to_string(),
                previous_checkpoint: previous.clone(),
                checkpoint: checkpoint.clone(),
                at_epoch_millis: kinesis_source::time::millis_since_epoch(SystemTime::now()),
            }),
        );
        // Records read and not settled are read again from the new position.
        self.buffer.clear();
        self.filtered_tail = None;
        self.caught_up = false;
        let position = match &checkpoint {
            Checkpoint::SequenceNumber(last) => {
                self.last_read = Some(last.clone());
                self.started_at_oldest = false;
                IteratorPosition::AfterSequenceNumber(last.clone())
            }
            _ => {
                self.last_read = None;
                self.started_at_oldest = true;
                IteratorPosition::TrimHorizon
            }
        };
        self.iterator = Some(self.shard_iterator(position).await?);
        Ok(ReplayOutcome {
            shard_id,
            previous_checkpoint: previous,
            checkpoint,
            first_record,
        })
    }

    /// The record `sequence_number` names, refused when the shard holds no such record.
    async fn record_at(&mut self, sequence_number: &SequenceNumber) -> Result<Record, Step> {
        let shard_id = self.shard.shard_id.clone();
        let stream = self.shared.config.stream_name.clone();
        let not_in_shard = |detail: String| {
            Step::Refused(ReplayError(format!(
                "sequence number {sequence_number} is not a record of shard {shard_id} of stream \
                 {stream}: {detail}"
            )))
        };
        let position = IteratorPosition::AtSequenceNumber(sequence_number.clone());
        let iterator = match self
            .shared
            .source
            .shard_iterator(&stream, &shard_id, &position)
            .await
        {
            Ok(iterator) => iterator,
            Err(kinesis_source::SourceError::InvalidArgument { message }) => {
                return Err(not_in_shard(format!("Kinesis says: {message}")));
            }
            Err(error) => return Err(self.read_failed(error)),
        };
        let first = self.first_from(iterator).await?;
        match first {
            Some(record) if &record.sequence_number == sequence_number => Ok(record),
            Some(record) => Err(not_in_shard(format!(
                "the first record at or after it is {}",
                record.sequence_number
            ))),
            None => Err(not_in_shard(
                "the shard holds no record at or after it".to_owned(),
            )),
        }
    }

    /// The first record at `position`, if the shard holds one there.
    async fn first_record(&mut self, position: IteratorPosition) -> Result<Option<Record>, Step> {
        let iterator = self.iterator_at(&position).await?;
        self.first_from(iterator).await
    }

    /// An iterator at `position` in this shard.
    async fn iterator_at(&mut self, position: &IteratorPosition) -> Result<String, Step> {
        match self
            .shared
            .source
            .shard_iterator(
                &self.shared.config.stream_name,
                &self.shard.shard_id,
                position,
            )
            .await
        {
            Ok(iterator) => Ok(iterator),
            Err(error) => Err(self.read_failed(error)),
        }
    }

    /// The first record read from `iterator`, through empty pages.
    async fn first_from(&mut self, mut iterator: String) -> Result<Option<Record>, Step> {
        for _ in 0..MAX_EMPTY_READS {
            self.check_running()?;
            let output = match self.shared.source.get_records(&iterator, 1).await {
                Ok(output) => output,
                Err(error) => return Err(self.read_failed(error)),
            };
            if let Some(record) = output.records.into_iter().next() {
                return Ok(Some(record));
            }
            match output.next_shard_iterator {
                Some(next) if output.millis_behind_latest > 0 => iterator = next,
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The checkpoint that makes `record` the next one read: the record before it, or
    /// `TRIM_HORIZON` when it is the shard's oldest. Kinesis reads only forwards, so this reads
    /// from a little before the record's arrival, widening the look back until it finds an
    /// older record or reads from the shard's oldest.
    async fn checkpoint_before(&mut self, record: &Record) -> Result<Checkpoint, Step> {
        let windows = LOOK_BACK
            .iter()
            .map(|back| {
                record
                    .approximate_arrival
                    .checked_sub(*back)
                    .map_or(IteratorPosition::TrimHorizon, IteratorPosition::AtTimestamp)
            })
            .chain([IteratorPosition::TrimHorizon]);
        for position in windows {
            let from_oldest = position == IteratorPosition::TrimHorizon;
            let iterator = self.iterator_at(&position).await?;
            match self.last_before(iterator, &record.sequence_number).await? {
                Some(before) => return Ok(Checkpoint::SequenceNumber(before)),
                None if from_oldest => return Ok(Checkpoint::TrimHorizon),
                None => {}
            }
        }
        Ok(Checkpoint::TrimHorizon)
    }

    /// Reads from `iterator` up to `target`, and returns the last record read before it.
    async fn last_before(
        &mut self,
        mut iterator: String,
        target: &SequenceNumber,
    ) -> Result<Option<SequenceNumber>, Step> {
        let mut before = None;
        let mut empty_reads = 0;
        loop {
            self.check_running()?;
            let output = match self
                .shared
                .source
                .get_records(&iterator, super::shard_reader::READ_LIMIT)
                .await
            {
                Ok(output) => output,
                Err(error) => return Err(self.read_failed(error)),
            };
            if output.records.is_empty() {
                empty_reads += 1;
            }
            for record in output.records {
                if &record.sequence_number >= target {
                    return Ok(before);
                }
                before = Some(record.sequence_number);
            }
            match output.next_shard_iterator {
                Some(next) if empty_reads < MAX_EMPTY_READS => iterator = next,
                _ => return Ok(before),
            }
        }
    }

    fn read_failed(&self, error: kinesis_source::SourceError) -> Step {
        Step::Refused(ReplayError(format!(
            "shard {} of stream {}: reading it for the replay failed: {error}; the checkpoint did \
             not move",
            self.shard.shard_id, self.shared.config.stream_name
        )))
    }
}
