//! The scenarios of `resharding_twice` on kinesis-local, with the leases in a DynamoDB table at
//! dynalite and, for a split then a merge, two mappings sharing that table: every record
//! delivered, none settled delivered again, per-key order kept, and the table left with only the
//! open shards' leases (`docs/resharding.md`).

use std::sync::Arc;

use end_to_end::aws::LocalAws;

use crate::resharding_twice::{Kinesis, Reshard, check_lifecycle};

/// [`check_lifecycle`] over a new stream of `shards` shards on kinesis-local (its name from
/// `prefix`), with `instances` mappings sharing a lease table at dynalite.
async fn local_lifecycle(prefix: &str, shards: i32, instances: usize, reshards: &[Reshard]) {
    let aws = LocalAws::connect().await;
    let kinesis = Kinesis::local(&aws, prefix, shards).await;
    let table = aws.lease_table(prefix).await;
    let leases = Arc::new(aws.lease_store(&table).await);
    check_lifecycle(kinesis, leases, instances, reshards).await;
}

end_to_end::scenario_tests! {
    local_lifecycle {
        a_split_then_a_merge_on_kinesis_local_delivers_nothing_twice(
            "twice-split-merge",
            1,
            2,
            &[Reshard::Split(0), Reshard::Merge(0)],
        ),
        a_merge_then_a_split_on_kinesis_local_delivers_nothing_twice(
            "twice-merge-split",
            2,
            1,
            &[Reshard::Merge(0), Reshard::Split(0)],
        ),
        update_shard_count_1_2_4_2_on_kinesis_local_delivers_nothing_twice(
            "twice-count",
            1,
            1,
            &[Reshard::Count(2), Reshard::Count(4), Reshard::Count(2)],
        ),
    }
}
