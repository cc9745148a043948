//! `kinesis-esm replay` over a DynamoDB lease table (dynalite, under `scripts/local-stack`): the
//! records come again and the table ends at the last record (`replay.rs` does the same over the
//! memory store and the state directory).

use std::sync::Arc;

use end_to_end::aws::{LocalAws, unique_name};

use crate::replay::replays_deliver_records_again;

#[tokio::test]
async fn a_replay_over_a_dynamodb_lease_table_delivers_the_records_again() {
    let aws = LocalAws::connect().await;
    let leases = aws.lease_store(&unique_name("replay-leases")).await;
    replays_deliver_records_again("replay-dynamodb", Arc::new(leases)).await;
}
