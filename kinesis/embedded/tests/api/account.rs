//! The account's limits and settings: `DescribeLimits`, `DescribeAccountSettings` and
//! `UpdateAccountSettings`, the commitment kept across a restart.

use std::time::{Duration, SystemTime};

use aws_sdk_kinesis::primitives::DateTime;
use aws_sdk_kinesis::types::{
    MinimumThroughputBillingCommitmentInput, MinimumThroughputBillingCommitmentInputStatus,
    MinimumThroughputBillingCommitmentOutput, MinimumThroughputBillingCommitmentOutputStatus,
};
use embedded_kinesis::{EmbeddedKinesis, ManualClock};

use crate::support::{Endpoint, MemoryJournal, expect_errors, serve};

/// When the manual clock of these tests starts: 2023-11-14T22:13:20Z.
const START_SECONDS: i64 = 1_700_000_000;
const DAY: Duration = Duration::from_secs(24 * 3600);

impl Endpoint {
    async fn commitment(&self) -> MinimumThroughputBillingCommitmentOutput {
        let settings = self
            .client
            .describe_account_settings()
            .send()
            .await
            .unwrap();
        settings.minimum_throughput_billing_commitment.unwrap()
    }

    async fn commit(&self, status: MinimumThroughputBillingCommitmentInputStatus) {
        let commitment = MinimumThroughputBillingCommitmentInput::builder()
            .status(status)
            .build()
            .unwrap();
        self.client
            .update_account_settings()
            .minimum_throughput_billing_commitment(commitment)
            .send()
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn describe_limits_counts_open_shards_and_on_demand_streams() {
    let endpoint = serve(EmbeddedKinesis::builder().shard_limit(40).build()).await;
    endpoint.kinesis.create_stream("provisioned", 3).unwrap();
    endpoint
        .client
        .create_stream()
        .stream_name("on-demand")
        .send()
        .await
        .unwrap();

    let limits = endpoint.client.describe_limits().send().await.unwrap();
    assert_eq!(limits.shard_limit(), 40);
    assert_eq!(limits.open_shard_count(), 3 + 4);
    assert_eq!(limits.on_demand_stream_count(), 1);
    assert_eq!(limits.on_demand_stream_count_limit(), 50);
}

#[tokio::test]
async fn a_commitment_is_disabled_until_enabled_and_runs_at_least_a_day() {
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(START_SECONDS as u64);
    let clock = ManualClock::new(start);
    let endpoint = serve(EmbeddedKinesis::builder().clock(clock.clone()).build()).await;
    use MinimumThroughputBillingCommitmentOutputStatus as Status;

    let never = endpoint.commitment().await;
    assert_eq!(never.status(), &Status::Disabled);
    assert_eq!(never.started_at(), None);

    endpoint
        .commit(MinimumThroughputBillingCommitmentInputStatus::Enabled)
        .await;
    let enabled = endpoint.commitment().await;
    assert_eq!(enabled.status(), &Status::Enabled);
    assert_eq!(
        enabled.started_at(),
        Some(&DateTime::from_secs(START_SECONDS))
    );
    let a_day_later = DateTime::from_secs(START_SECONDS + DAY.as_secs() as i64);
    assert_eq!(enabled.earliest_allowed_end_at(), Some(&a_day_later));

    // Disabled within its first day, it runs until the earliest allowed end.
    clock.advance(Duration::from_secs(3600));
    endpoint
        .commit(MinimumThroughputBillingCommitmentInputStatus::Disabled)
        .await;
    let ending = endpoint.commitment().await;
    assert_eq!(ending.status(), &Status::EnabledUntilEarliestAllowedEnd);
    clock.advance(DAY);
    let ended = endpoint.commitment().await;
    assert_eq!(ended.status(), &Status::Disabled);
    assert_eq!(ended.ended_at(), Some(&a_day_later));
}

#[tokio::test]
async fn update_account_settings_validates_its_status() {
    let endpoint = serve(EmbeddedKinesis::new()).await;
    let unknown = MinimumThroughputBillingCommitmentInput::builder()
        .status(MinimumThroughputBillingCommitmentInputStatus::from("MAYBE"))
        .build()
        .unwrap();
    expect_errors! {
        endpoint.client.update_account_settings().minimum_throughput_billing_commitment(unknown)
            => "ValidationException", &["'MAYBE' at 'minimumThroughputBillingCommitment.status'"];
    }
}

#[tokio::test]
async fn the_commitment_is_kept_across_a_restart() {
    let (journal, endpoint) = MemoryJournal::serve().await;
    endpoint
        .commit(MinimumThroughputBillingCommitmentInputStatus::Enabled)
        .await;
    let restarted = serve(journal.restored()).await;
    assert_eq!(
        restarted.commitment().await.status(),
        &MinimumThroughputBillingCommitmentOutputStatus::Enabled
    );
}
