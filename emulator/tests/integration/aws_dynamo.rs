//! `DynamoLeaseStore` against dynalite, and the lease store contract for both stores.
//!
//! Run with `scripts/local-stack run -- cargo test --workspace --test integration aws_dynamo`.

use crate::support::lease_contract::lease_store_contract;
use crate::support::{dynamodb_endpoint, unique_name, within_timeout};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use kinesis_esm::aws::{AwsConnection, DynamoLeaseStore, TableError};
use kinesis_esm::lease::{Checkpoint, Lease, LeaseError, LeaseStore, MemoryLeaseStore};

/// A store on a table of its own, created for the test.
async fn fresh_store(prefix: &str) -> DynamoLeaseStore {
    crate::support::init_logging();
    let table = unique_name(prefix);
    within_timeout(
        "opening the lease table",
        DynamoLeaseStore::open(Some(&dynamodb_endpoint()), "us-east-1", table),
    )
    .await
    .unwrap()
}

/// A second store on the same table, through a client of its own (another process).
async fn second_client(store: &DynamoLeaseStore) -> DynamoLeaseStore {
    DynamoLeaseStore::open(Some(&dynamodb_endpoint()), "us-east-1", store.table_name())
        .await
        .unwrap()
}

#[tokio::test]
async fn the_memory_store_meets_the_lease_contract() {
    lease_store_contract(&MemoryLeaseStore::new()).await;
}

#[tokio::test]
async fn the_dynamo_store_meets_the_lease_contract() {
    let store = fresh_store("contract").await;
    within_timeout("the contract", lease_store_contract(&store)).await;
}

#[tokio::test]
async fn a_worker_whose_lease_was_taken_cannot_checkpoint_from_another_client() {
    let store_a = fresh_store("fencing").await;
    let store_b = second_client(&store_a).await;
    let lease = Lease::new(
        "orders:shardId-000000000000",
        "shardId-000000000000",
        Checkpoint::TrimHorizon,
    );
    assert!(store_a.create_lease_if_absent(&lease).await.unwrap());
    assert!(!store_b.create_lease_if_absent(&lease).await.unwrap());

    let held_by_a = store_a.take_lease(&lease, "worker-a").await.unwrap();
    let held_by_a = store_a
        .update_checkpoint(
            &held_by_a,
            Checkpoint::SequenceNumber("100".parse().unwrap()),
        )
        .await
        .unwrap();

    // Worker b sees the lease as stored and takes it.
    let seen_by_b = store_b.get_lease(&lease.lease_key).await.unwrap().unwrap();
    assert_eq!(seen_by_b, held_by_a);
    let held_by_b = store_b.take_lease(&seen_by_b, "worker-b").await.unwrap();

    // Worker a, unaware, tries to move the checkpoint on: refused, and nothing moves.
    let refused = store_a
        .update_checkpoint(
            &held_by_a,
            Checkpoint::SequenceNumber("200".parse().unwrap()),
        )
        .await;
    assert_eq!(
        refused,
        Err(LeaseError::LeaseLost {
            lease_key: lease.lease_key.clone(),
            expected_counter: held_by_a.lease_counter,
        })
    );
    let stored = store_a.get_lease(&lease.lease_key).await.unwrap().unwrap();
    assert_eq!(stored, held_by_b);
    assert_eq!(
        stored.checkpoint,
        Checkpoint::SequenceNumber("100".parse().unwrap())
    );

    // Worker b's checkpoint goes through.
    let moved = store_b
        .update_checkpoint(
            &held_by_b,
            Checkpoint::SequenceNumber("150".parse().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(moved.lease_owner.as_deref(), Some("worker-b"));
}

#[tokio::test]
async fn the_table_is_created_when_missing_and_reused_after() {
    let store = fresh_store("created").await;
    let description = store
        .client()
        .describe_table()
        .table_name(store.table_name())
        .send()
        .await
        .unwrap();
    let table = description.table().unwrap();
    assert_eq!(
        table.table_status().map(|status| status.as_str()),
        Some("ACTIVE")
    );
    let key: Vec<_> = table
        .key_schema()
        .iter()
        .map(|element| (element.attribute_name(), element.key_type().as_str()))
        .collect();
    assert_eq!(key, [("leaseKey", "HASH")]);
    assert_eq!(
        table
            .billing_mode_summary()
            .and_then(|summary| summary.billing_mode())
            .map(|mode| mode.as_str()),
        Some("PAY_PER_REQUEST")
    );

    // A lease written by one store is there for a store opened later on the same table.
    let lease = Lease::new("k", "shardId-000000000000", Checkpoint::Latest);
    store.create_lease_if_absent(&lease).await.unwrap();
    let reopened = second_client(&store).await;
    assert_eq!(reopened.get_lease("k").await.unwrap(), Some(lease));
}

#[tokio::test]
async fn a_table_with_another_key_is_refused() {
    let table = unique_name("wrong-key");
    let connection = AwsConnection::local(dynamodb_endpoint());
    let client = aws_sdk_dynamodb::Client::new(&connection.sdk_config().await.unwrap());
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let error = DynamoLeaseStore::connect(&connection, &table)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, TableError::WrongKeySchema { table: named, .. } if *named == table),
        "{error:?}"
    );
}

#[tokio::test]
async fn items_carry_the_kcl_attribute_names() {
    let store = fresh_store("kcl-names").await;
    let lease = Lease {
        parent_shard_ids: vec!["shardId-000000000000".into(), "shardId-000000000001".into()],
        starting_hash_key: Some("0".into()),
        ending_hash_key: Some("340282366920938463463374607431768211455".into()),
        ..Lease::new("k", "shardId-000000000002", Checkpoint::TrimHorizon)
    };
    store.create_lease_if_absent(&lease).await.unwrap();
    let held = store.take_lease(&lease, "worker-a").await.unwrap();
    let held = store
        .update_checkpoint(&held, Checkpoint::SequenceNumber("4959".parse().unwrap()))
        .await
        .unwrap();
    store
        .set_child_shard_ids(&held, &["shardId-000000000003".into()])
        .await
        .unwrap();

    let item = store
        .client()
        .get_item()
        .table_name(store.table_name())
        .key("leaseKey", AttributeValue::S("k".into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item()
        .cloned()
        .unwrap();
    let check = |name: &str, expected: AttributeValue| {
        assert_eq!(item.get(name), Some(&expected), "attribute {name}");
    };
    check("leaseKey", AttributeValue::S("k".into()));
    check("leaseOwner", AttributeValue::S("worker-a".into()));
    check("leaseCounter", AttributeValue::N("3".into()));
    check("checkpoint", AttributeValue::S("4959".into()));
    check("checkpointSubSequenceNumber", AttributeValue::N("0".into()));
    check(
        "ownerSwitchesSinceCheckpoint",
        AttributeValue::N("0".into()),
    );
    check("startingHashKey", AttributeValue::S("0".into()));
    check(
        "endingHashKey",
        AttributeValue::S("340282366920938463463374607431768211455".into()),
    );
    check(
        "childShardIds",
        AttributeValue::Ss(vec!["shardId-000000000003".into()]),
    );
    let Some(AttributeValue::Ss(parents)) = item.get("parentShardId") else {
        panic!("parentShardId is not a string set: {item:?}");
    };
    let mut parents = parents.clone();
    parents.sort();
    assert_eq!(parents, ["shardId-000000000000", "shardId-000000000001"]);
}

#[tokio::test]
async fn each_checkpoint_is_exactly_one_write() {
    let store = fresh_store("one-write").await;
    let lease = Lease::new("k", "shardId-000000000000", Checkpoint::TrimHorizon);
    store.create_lease_if_absent(&lease).await.unwrap();
    let mut held = store.take_lease(&lease, "worker-a").await.unwrap();
    let (writes, reads) = (store.writes(), store.reads());
    for sequence_number in 1..=10 {
        held = store
            .update_checkpoint(
                &held,
                Checkpoint::SequenceNumber(sequence_number.to_string().parse().unwrap()),
            )
            .await
            .unwrap();
    }
    assert_eq!(store.writes() - writes, 10);
    assert_eq!(store.reads() - reads, 0, "a checkpoint reads nothing");
}

#[tokio::test]
async fn a_malformed_checkpoint_names_its_lease() {
    let store = fresh_store("malformed").await;
    store
        .client()
        .put_item()
        .table_name(store.table_name())
        .item("leaseKey", AttributeValue::S("bad-lease".into()))
        .item("leaseCounter", AttributeValue::N("1".into()))
        .item("checkpoint", AttributeValue::S("SHARD-END".into()))
        .send()
        .await
        .unwrap();
    for result in [
        store.get_lease("bad-lease").await.map(|_| ()),
        store.list_leases().await.map(|_| ()),
    ] {
        match result {
            Err(LeaseError::Malformed { lease_key, message }) => {
                assert_eq!(lease_key, "bad-lease");
                assert!(message.contains("SHARD-END"), "{message}");
            }
            other => panic!("expected a malformed lease, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_unreachable_table_is_unavailable() {
    // Nothing listens on port 1 of the loopback address.
    let connection = AwsConnection::local("http://127.0.0.1:1");
    let client = aws_sdk_dynamodb::Client::new(&connection.sdk_config().await.unwrap());
    let store = DynamoLeaseStore::from_client(client, "nowhere");
    match store.get_lease("k").await {
        Err(LeaseError::Unavailable { message }) => {
            assert!(message.contains("lease k in table nowhere"), "{message}");
        }
        other => panic!("expected the store to be unavailable, got {other:?}"),
    }
}
