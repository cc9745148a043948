//! How the emulator runs a mapping: the knobs that are not Lambda properties.

use std::time::Duration;

/// How the emulator runs a mapping: knobs that are not Lambda properties.
#[derive(Debug, Clone)]
pub struct MappingOptions {
    /// This worker's name in the lease table (`leaseOwner`).
    pub worker_id: String,
    /// How long an idle shard waits before reading again when the source cannot signal new
    /// records (Lambda polls each shard about once a second).
    pub poll_interval: Duration,
    /// How often the coordinator lists shards and leases again.
    pub shard_sync_interval: Duration,
    /// How often the coordinator deletes the leases that nothing needs any more (finished
    /// parents, shards aged out of the stream), at its next shard sync (the KCL: every minute).
    pub lease_cleanup_interval: Duration,
    /// How long a lease may go unrenewed before another worker takes it (KCL: 10 s).
    pub failover_time: Duration,
    /// How many leases a worker below its fair share steals from a live worker in one round
    /// (the KCL's `maxLeasesToStealAtOneTime`: 1).
    pub max_leases_to_steal: usize,
    /// The first pause before retrying a failed batch.
    pub retry_backoff_initial: Duration,
    /// The longest pause between retries of a failed batch.
    pub retry_backoff_max: Duration,
    /// The execution role named in events (`invokeIdentityArn`).
    pub invoke_identity_arn: String,
    /// The mapping's UUID, as Lambda names it in S3 on-failure objects' keys.
    pub mapping_uuid: String,
}

impl Default for MappingOptions {
    fn default() -> Self {
        Self {
            worker_id: format!("kinesis-esm-{}", uuid::Uuid::new_v4()),
            poll_interval: Duration::from_secs(1),
            shard_sync_interval: Duration::from_secs(10),
            lease_cleanup_interval: Duration::from_secs(10),
            failover_time: Duration::from_secs(10),
            max_leases_to_steal: 1,
            retry_backoff_initial: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(2),
            invoke_identity_arn: "arn:aws:iam::000000000000:role/kinesis-esm".to_owned(),
            mapping_uuid: uuid::Uuid::new_v4().to_string(),
        }
    }
}
