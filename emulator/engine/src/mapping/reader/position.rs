//! Where a reader starts: shard iterators, and resuming at a checkpoint that the shard may no
//! longer back (`docs/checkpoints.md`).

use super::shard_reader::ShardReader;
use crate::backoff::RetryKind;
use crate::config::StartingPosition;
use crate::lease::Checkpoint;
use crate::mapping::reader_exit::ReaderExit;
use crate::mapping::reader_exit::stop_signal;
use crate::mapping::resume::Resume;
use kinesis_source::sequence::SequenceNumber;
use kinesis_source::{IteratorPosition, SourceError};

impl ShardReader {
    /// Where a shard that nothing was settled of starts, by its sentinel checkpoint.
    /// `AT_TIMESTAMP` is a sentinel without its time, as in the KCL's lease table: the time is
    /// the mapping's `StartingPositionTimestamp`, which every lease of the mapping shares.
    pub(super) fn initial_position(&self, checkpoint: &Checkpoint) -> IteratorPosition {
        match (checkpoint, &self.shared.config.starting_position) {
            (Checkpoint::Latest, _) => IteratorPosition::Latest,
            (Checkpoint::AtTimestamp, StartingPosition::AtTimestamp(at)) => {
                IteratorPosition::AtTimestamp(*at)
            }
            _ => IteratorPosition::TrimHorizon,
        }
    }

    /// Where to resume at checkpoint `checkpoint`: after it when the shard backs it, else at
    /// the shard's oldest record, with a warning (see [`Resume`]).
    pub(super) async fn resume_position(
        &mut self,
        checkpoint: &SequenceNumber,
    ) -> Result<IteratorPosition, ReaderExit> {
        let at_checkpoint = self
            .first_record_at(
                IteratorPosition::AtSequenceNumber(checkpoint.clone()),
                Some(checkpoint),
            )
            .await?;
        let oldest = match at_checkpoint {
            Some(_) => None,
            None => {
                self.first_record_at(IteratorPosition::TrimHorizon, None)
                    .await?
            }
        };
        let resume = Resume::decide(at_checkpoint.as_ref(), oldest.as_ref());
        let stream = &self.shared.config.stream_name;
        let shard_id = &self.shard.shard_id;
        match &resume {
            Resume::AfterCheckpoint => {}
            Resume::OldestBelowCheckpoint { oldest } => tracing::warn!(
                %stream,
                %shard_id,
                %checkpoint,
                oldest_record = %oldest,
                "the checkpoint lies beyond every record of the shard, so it does not belong to \
                 this stream's records (a stream created again under the same name, or an \
                 embedded Kinesis that did not keep its records: pass --state-dir DIR); reading \
                 the shard from its oldest record instead of skipping the records below the \
                 checkpoint"
            ),
            Resume::EmptyShard => tracing::info!(
                %stream,
                %shard_id,
                %checkpoint,
                "the shard holds no record at or after its checkpoint; reading from its oldest \
                 record, so that no record below the checkpoint is skipped"
            ),
        }
        Ok(resume.position(checkpoint))
    }

    /// The sequence number of the first record at `position`, if the shard holds one there;
    /// `on_error` when the read fails (the reader then starts as it would without the check).
    async fn first_record_at(
        &mut self,
        position: IteratorPosition,
        on_error: Option<&SequenceNumber>,
    ) -> Result<Option<SequenceNumber>, ReaderExit> {
        let iterator = self.shard_iterator(position).await?;
        match self.shared.source.get_records(&iterator, 1).await {
            Ok(output) => Ok(output
                .records
                .into_iter()
                .next()
                .map(|record| record.sequence_number)),
            Err(error) => {
                tracing::debug!(shard_id = %self.shard.shard_id, %error, "could not look at the records after the checkpoint");
                Ok(on_error.cloned())
            }
        }
    }

    pub(super) async fn shard_iterator(
        &mut self,
        position: IteratorPosition,
    ) -> Result<String, ReaderExit> {
        let shard_id = &self.shard.shard_id;
        let get = || {
            self.shared
                .source
                .shard_iterator(&self.shared.config.stream_name, shard_id, &position)
        };
        let failed = |error, _| match error {
            SourceError::NotFound { what } => {
                tracing::warn!(%shard_id, "{what} not found: the reader stops");
                Err(ReaderExit::ShardGone)
            }
            error => {
                tracing::warn!(%shard_id, %error, "getting a shard iterator failed; trying again");
                Ok(RetryKind::Error)
            }
        };
        let stopped = stop_signal(&self.stopping, &self.lease_lost);
        self.shared
            .retry_backoff()
            .retry_until_stopped(get, failed, stopped)
            .await
    }
}
