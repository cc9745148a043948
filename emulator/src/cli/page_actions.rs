//! The live page's actions (`crate::page`) for `kinesis-esm run`: the code of the `put` and
//! `reshard` commands, through the SDK, against the Kinesis the run reads (its own endpoint for
//! the embedded Kinesis), so a record published or a shard split from the page goes exactly as
//! from the command line.

use std::sync::{Arc, OnceLock};

use anyhow::Context as _;
use async_trait::async_trait;
use bytes::Bytes;

use super::commands::{merge_shards, put_every_record, split_shard};
use crate::page::{PageActions, Reshard};
use crate::records_file::RecordToPut;
use esm_engine::aws::SdkKinesis;

/// The page's actions, once the Kinesis client is known: `run` serves the page before it knows
/// its own endpoint's port.
#[derive(Default)]
pub(super) struct RunActions {
    kinesis: OnceLock<Arc<SdkKinesis>>,
}

impl RunActions {
    /// From now on the actions go to `kinesis`.
    pub(super) fn connect(&self, kinesis: Arc<SdkKinesis>) {
        let _ = self.kinesis.set(kinesis);
    }

    fn kinesis(&self) -> anyhow::Result<&SdkKinesis> {
        self.kinesis
            .get()
            .map(Arc::as_ref)
            .context("kinesis-esm is still starting: try again in a moment")
    }
}

#[async_trait]
impl PageActions for RunActions {
    async fn put(
        &self,
        stream: &str,
        partition_key: &str,
        data: Vec<u8>,
    ) -> anyhow::Result<String> {
        let record = RecordToPut {
            partition_key: partition_key.to_owned(),
            data: Bytes::from(data),
            explicit_hash_key: None,
        };
        let placed = put_every_record(self.kinesis()?, stream, &[record]).await?;
        let Some((shard_id, sequence_number)) = placed.first() else {
            anyhow::bail!("stream {stream} took the record without saying where it went");
        };
        Ok(format!(
            "published to stream {stream}, {shard_id}, sequence number {sequence_number}"
        ))
    }

    async fn reshard(&self, stream: &str, change: Reshard) -> anyhow::Result<()> {
        let kinesis = self.kinesis()?;
        match change {
            Reshard::Split { shard } => split_shard(kinesis, stream, &shard, None).await,
            Reshard::Merge {
                shard,
                adjacent_shard,
            } => merge_shards(kinesis, stream, &shard, &adjacent_shard).await,
        }
    }
}
