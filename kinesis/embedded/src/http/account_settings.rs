//! The account's operations: `DescribeLimits`, `DescribeAccountSettings` and
//! `UpdateAccountSettings`.

use serde::{Deserialize, Serialize};

use super::codec::{Request, WireTime};
use super::error::Answer;
use super::validation::Violations;
use crate::clock::from_millis;
use crate::commitment::Commitment;
use crate::embedded::EmbeddedKinesis;

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct DescribeLimitsOutput {
    shard_limit: usize,
    open_shard_count: usize,
    on_demand_stream_count: usize,
    on_demand_stream_count_limit: usize,
}

/// `DescribeLimits`: the shard limit (`--shard-limit`, 500 by default), the shards open across
/// every stream, and the `ON_DEMAND` streams with their limit of 50.
pub(super) fn describe_limits(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let limits = kinesis.describe_limits();
    Ok(request.reply(&DescribeLimitsOutput {
        shard_limit: limits.shard_limit,
        open_shard_count: limits.open_shard_count,
        on_demand_stream_count: limits.on_demand_stream_count,
        on_demand_stream_count_limit: limits.on_demand_stream_count_limit,
    }))
}

/// `MinimumThroughputBillingCommitmentOutput`.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireCommitment {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    started_at: Option<WireTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ended_at: Option<WireTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    earliest_allowed_end_at: Option<WireTime>,
}

impl From<Commitment> for WireCommitment {
    fn from(commitment: Commitment) -> Self {
        let time = |millis: Option<u64>| millis.map(|millis| WireTime(from_millis(millis)));
        let (started, ended, earliest_end) = commitment.times();
        Self {
            status: commitment.status(),
            started_at: time(started),
            ended_at: time(ended),
            earliest_allowed_end_at: time(earliest_end),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct AccountSettingsOutput {
    minimum_throughput_billing_commitment: WireCommitment,
}

/// `DescribeAccountSettings`: the minimum throughput billing commitment (`DISABLED` with no
/// times until one is enabled).
pub(super) fn describe_account_settings(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    Ok(request.reply(&AccountSettingsOutput {
        minimum_throughput_billing_commitment: kinesis.account_commitment().into(),
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct UpdateAccountSettingsInput {
    minimum_throughput_billing_commitment: Option<CommitmentInput>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CommitmentInput {
    status: Option<String>,
}

/// `UpdateAccountSettings`: enables or disables the commitment and answers it as it then
/// stands. A commitment disabled within its first 24 hours runs until then
/// (`ENABLED_UNTIL_EARLIEST_ALLOWED_END`).
pub(super) fn update_account_settings(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: UpdateAccountSettingsInput = request.parse()?;
    let mut violations = Violations::new();
    let commitment = violations.required(
        input.minimum_throughput_billing_commitment,
        "MinimumThroughputBillingCommitment",
    );
    let status = commitment.and_then(|commitment| {
        violations.required(
            commitment.status,
            "MinimumThroughputBillingCommitment.Status",
        )
    });
    violations.one_of(
        "MinimumThroughputBillingCommitment.Status",
        status.as_deref(),
        &["ENABLED", "DISABLED"],
    );
    violations.finish()?;
    let updated = kinesis.update_account_commitment(status.as_deref() == Some("ENABLED"))?;
    Ok(request.reply(&AccountSettingsOutput {
        minimum_throughput_billing_commitment: updated.into(),
    }))
}
