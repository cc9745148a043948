use super::*;

fn full_lease() -> Lease {
    Lease {
        lease_owner: Some("worker-1".into()),
        lease_counter: 7,
        checkpoint_sub_sequence_number: 0,
        owner_switches_since_checkpoint: 2,
        parent_shard_ids: vec!["shardId-000000000000".into(), "shardId-000000000001".into()],
        child_shard_ids: vec!["shardId-000000000003".into()],
        starting_hash_key: Some("0".into()),
        ending_hash_key: Some("340282366920938463463374607431768211455".into()),
        ..Lease::new(
            "123456789012:orders:1700000000:shardId-000000000002",
            "shardId-000000000002",
            Checkpoint::SequenceNumber(
                "49590338271490256608559692538361571095921575989136588898"
                    .parse()
                    .unwrap(),
            ),
        )
    }
}

#[test]
fn leases_round_trip_through_items() {
    for lease in [
        full_lease(),
        Lease::new("k", "shardId-000000000000", Checkpoint::TrimHorizon),
        Lease::new("k", "shardId-000000000000", Checkpoint::ShardEnd),
    ] {
        assert_eq!(lease_from_item(&lease_to_item(&lease)), Ok(lease));
    }
}

#[test]
fn items_use_the_kcl_attribute_names() {
    let item = lease_to_item(&full_lease());
    let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "checkpoint",
            "checkpointSubSequenceNumber",
            "childShardIds",
            "endingHashKey",
            "leaseCounter",
            "leaseKey",
            "leaseOwner",
            "ownerSwitchesSinceCheckpoint",
            "parentShardId",
            "shardId",
            "startingHashKey",
        ]
    );
    assert_eq!(item["leaseCounter"], AttributeValue::N("7".into()));
    assert!(matches!(item["parentShardId"], AttributeValue::Ss(_)));
    // An unowned lease with no parents has no owner or set attribute at all.
    let bare = lease_to_item(&Lease::new("k", "s", Checkpoint::Latest));
    assert!(!bare.contains_key("leaseOwner"));
    assert!(!bare.contains_key("parentShardId"));
}

#[track_caller]
fn check_malformed(name: &str, value: AttributeValue, expected_message: &str) {
    let mut item = lease_to_item(&full_lease());
    item.insert(name.to_owned(), value);
    match lease_from_item(&item) {
        Err(LeaseError::Malformed { lease_key, message }) => {
            assert_eq!(lease_key, full_lease().lease_key);
            assert!(
                message.contains(expected_message),
                "`{message}` should say `{expected_message}`"
            );
        }
        other => panic!("expected a malformed lease, got {other:?}"),
    }
}

#[test]
fn malformed_items_name_their_lease() {
    check_malformed(
        "checkpoint",
        AttributeValue::S("SHARD-END".into()),
        "`SHARD-END`",
    );
    check_malformed(
        "leaseCounter",
        AttributeValue::S("7".into()),
        "leaseCounter",
    );
    check_malformed("leaseCounter", AttributeValue::N("-1".into()), "`-1`");
    check_malformed(
        "parentShardId",
        AttributeValue::N("1".into()),
        "parentShardId",
    );
}

#[test]
fn kcl_single_stream_items_read_their_shard_from_the_key() {
    let mut item = lease_to_item(&Lease::new(
        "shardId-000000000004",
        "x",
        Checkpoint::TrimHorizon,
    ));
    item.remove("shardId");
    item.remove("checkpointSubSequenceNumber");
    let lease = lease_from_item(&item).unwrap();
    assert_eq!(lease.shard_id, "shardId-000000000004");
    assert_eq!(lease.checkpoint_sub_sequence_number, 0);
}
