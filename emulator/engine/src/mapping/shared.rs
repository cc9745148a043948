//! What a mapping's coordinator and its shard readers share: the function, the lease store,
//! the status they report to and the replays they take.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use crate::backoff::{Backoff, BackoffConfig};
use crate::config::MappingConfig;
use crate::destination::Destination;
use crate::invoke::Invoker;
use crate::lease::LeaseStore;
use kinesis_source::ShardSource;

use super::status::ShardChange;
use super::status::{MappingEvent, MappingStatus, ShardStatus};

use super::options::MappingOptions;

/// What the coordinator and the readers share.
pub(super) struct Shared {
    pub(super) config: MappingConfig,
    pub(super) source: Arc<dyn ShardSource>,
    pub(super) invoker: Arc<dyn Invoker>,
    pub(super) leases: Arc<dyn LeaseStore>,
    pub(super) options: MappingOptions,
    pub(super) observer: Option<mpsc::UnboundedSender<MappingEvent>>,
    /// Where the records of discarded batches go, if anywhere.
    pub(super) destination: Option<Arc<dyn Destination>>,
    pub(super) status: watch::Sender<MappingStatus>,
    /// The misconfiguration warning, given once per mapping.
    pub(super) ignored_item_failures_warning: super::misconfiguration::WarnOnce,
    /// The running readers, which take replays (`kinesis-esm replay`).
    pub(super) replay_registry: super::replay::ReplayRegistry,
}

impl Shared {
    /// Reports a change in a shard's life: to its status (`ShardStatus::apply` says what it
    /// changes), then to the observer, if any (`MappingEvent::of` says what it hears). A change
    /// that leaves the status as it is wakes no watcher (`ShardStatus::unchanged_by`).
    pub(super) fn update_shard(&self, shard_id: &str, change: ShardChange<'_>) {
        let event = self
            .observer
            .as_ref()
            .and_then(|observer| Some((observer, MappingEvent::of(shard_id, &change)?)));
        self.apply_to_status(shard_id, change);
        if let Some((observer, event)) = event {
            // A gone observer only means nobody listens any more.
            let _ = observer.send(event);
        }
    }

    fn apply_to_status(&self, shard_id: &str, change: ShardChange<'_>) {
        self.status.send_if_modified(|status| {
            if let Some(shard) = status.shards.get_mut(shard_id) {
                if shard.unchanged_by(&change) {
                    return false;
                }
                shard.apply(change);
                return true;
            }
            let mut shard = ShardStatus {
                shard_id: shard_id.to_owned(),
                metrics: super::metrics::ShardMetrics::new(self.config.event_count_metrics),
                ..ShardStatus::default()
            };
            shard.apply(change);
            status.shards.insert(shard_id.to_owned(), shard);
            true
        });
    }

    pub(super) fn retry_backoff(&self) -> Backoff {
        Backoff::new(BackoffConfig {
            initial: self.options.retry_backoff_initial,
            max: self.options.retry_backoff_max,
            ..BackoffConfig::default()
        })
    }
}
