//! A running mapping as the control endpoint sees it (`kinesis-esm replay`, `/readyz`): a
//! handle that outlives no task and stops nothing.

use std::sync::Arc;

use tokio::sync::watch;

use super::{MappingStatus, RunningMapping, Shared};

/// A lease key no lease has: reading it asks the lease store whether it answers, without
/// reading the whole table.
const READINESS_PROBE_KEY: &str = "kinesis-esm:readiness-probe";

/// A handle on a running mapping for the control endpoint: its function and stream, replays,
/// and whether its stream and lease store answer.
#[derive(Clone)]
pub struct MappingControl {
    pub(super) shared: Arc<Shared>,
    pub(super) status: watch::Receiver<MappingStatus>,
}

impl RunningMapping {
    /// A handle for the control endpoint.
    pub fn control(&self) -> MappingControl {
        MappingControl {
            shared: Arc::clone(&self.shared),
            status: self.status.clone(),
        }
    }
}

impl MappingControl {
    /// The mapped function's name.
    pub fn function_name(&self) -> &str {
        &self.shared.config.function_name
    }

    /// The stream's name.
    pub fn stream_name(&self) -> &str {
        &self.shared.config.stream_name
    }

    /// Whether the mapping has seen a lease of a shard of this id.
    pub fn has_shard(&self, shard_id: &str) -> bool {
        self.status.borrow().shards.contains_key(shard_id)
    }

    /// Whether the mapping can work now: its stream answers `DescribeStream` and its lease
    /// store answers a read. The error is a sentence naming what does not answer.
    pub async fn check_ready(&self) -> Result<(), String> {
        let stream = self.stream_name();
        let function = self.function_name();
        self.shared
            .source
            .describe_stream(stream)
            .await
            .map_err(|error| {
                format!("{function} <- {stream}: the stream does not answer: {error}")
            })?;
        self.shared
            .leases
            .get_lease(READINESS_PROBE_KEY)
            .await
            .map_err(|error| {
                format!("{function} <- {stream}: the lease store does not answer: {error}")
            })?;
        Ok(())
    }
}
