//! The scenarios of `resharding_twice` on kinesis-local, with the leases in a DynamoDB table at
//! dynalite and, for a split then a merge, two mappings sharing that table: every record
//! delivered, none settled delivered again, per-key order kept, and the table left with only the
//! open shards' leases (`docs/resharding.md`).

use std::sync::Arc;

use end_to_end::aws::LocalAws;

use crate::resharding_twice::{Kinesis, Reshard, check_lifecycle};

#[tokio::test]
async fn a_split_then_a_merge_on_kinesis_local_delivers_nothing_twice() {
    let aws = LocalAws::connect().await;
    let kinesis = Kinesis::local(&aws, "twice-split-merge", 1).await;
    let table = aws.lease_table("twice-split-merge").await;
    let leases = Arc::new(aws.lease_store(&table).await);
    check_lifecycle(kinesis, leases, 2, &[Reshard::Split(0), Reshard::Merge(0)]).await;
}

#[tokio::test]
async fn a_merge_then_a_split_on_kinesis_local_delivers_nothing_twice() {
    let aws = LocalAws::connect().await;
    let kinesis = Kinesis::local(&aws, "twice-merge-split", 2).await;
    let table = aws.lease_table("twice-merge-split").await;
    let leases = Arc::new(aws.lease_store(&table).await);
    check_lifecycle(kinesis, leases, 1, &[Reshard::Merge(0), Reshard::Split(0)]).await;
}

#[tokio::test]
async fn update_shard_count_1_2_4_2_on_kinesis_local_delivers_nothing_twice() {
    let aws = LocalAws::connect().await;
    let kinesis = Kinesis::local(&aws, "twice-count", 1).await;
    let table = aws.lease_table("twice-count").await;
    let leases = Arc::new(aws.lease_store(&table).await);
    check_lifecycle(
        kinesis,
        leases,
        1,
        &[Reshard::Count(2), Reshard::Count(4), Reshard::Count(2)],
    )
    .await;
}
