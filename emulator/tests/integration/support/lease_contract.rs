//! What every [`LeaseStore`] must do, written once and run against each store.

use kinesis_esm::lease::{Checkpoint, Lease, LeaseError, LeaseStore};

fn sequence(digits: &str) -> Checkpoint {
    Checkpoint::SequenceNumber(digits.parse().unwrap())
}

/// A split child's lease, with everything set. Parents are in sorted order, since DynamoDB keeps
/// no order in sets.
fn child_lease(key: &str) -> Lease {
    Lease {
        parent_shard_ids: vec!["shardId-000000000000".into()],
        starting_hash_key: Some("0".into()),
        ending_hash_key: Some("170141183460469231731687303715884105727".into()),
        ..Lease::new(key, "shardId-000000000001", Checkpoint::TrimHorizon)
    }
}

#[track_caller]
fn assert_lost<T: std::fmt::Debug>(result: Result<T, LeaseError>, lease: &Lease) {
    match result {
        Err(LeaseError::LeaseLost {
            lease_key,
            expected_counter,
        }) => {
            assert_eq!(lease_key, lease.lease_key);
            assert_eq!(expected_counter, lease.lease_counter);
        }
        other => panic!(
            "a write with counter {} on {} should be refused, got {other:?}",
            lease.lease_counter, lease.lease_key
        ),
    }
}

/// Runs the whole contract against `store`, which must start empty.
pub(crate) async fn lease_store_contract(store: &dyn LeaseStore) {
    assert_eq!(store.list_leases().await.unwrap(), []);
    assert_eq!(store.get_lease("missing").await.unwrap(), None);

    // Creation happens once per key; a second create leaves the first lease alone.
    let merge_child = Lease {
        parent_shard_ids: vec!["shardId-000000000002".into(), "shardId-000000000003".into()],
        ..Lease::new("b-merge", "shardId-000000000004", Checkpoint::TrimHorizon)
    };
    let lease = child_lease("a-split");
    assert!(store.create_lease_if_absent(&lease).await.unwrap());
    assert!(store.create_lease_if_absent(&merge_child).await.unwrap());
    let other_version = Lease {
        checkpoint: Checkpoint::Latest,
        ..lease.clone()
    };
    assert!(!store.create_lease_if_absent(&other_version).await.unwrap());
    assert_eq!(
        store.get_lease("a-split").await.unwrap().as_ref(),
        Some(&lease)
    );
    assert_eq!(
        store.list_leases().await.unwrap(),
        [lease.clone(), merge_child.clone()]
    );

    // Taking sets the owner, counts a switch only when the owner changes, and moves the counter.
    let held_by_a = store.take_lease(&lease, "worker-a").await.unwrap();
    assert_eq!(held_by_a.lease_owner.as_deref(), Some("worker-a"));
    assert_eq!(held_by_a.lease_counter, lease.lease_counter + 1);
    assert_eq!(held_by_a.owner_switches_since_checkpoint, 1);
    let retaken = store.take_lease(&held_by_a, "worker-a").await.unwrap();
    assert_eq!(retaken.owner_switches_since_checkpoint, 1);

    // Renewing moves only the counter.
    let renewed = store.renew_lease(&retaken).await.unwrap();
    assert_eq!(
        renewed,
        Lease {
            lease_counter: retaken.lease_counter + 1,
            ..retaken.clone()
        }
    );
    assert_lost(store.renew_lease(&retaken).await, &retaken);

    // Checkpoints: every kind of value comes back as written, and owner switches reset.
    let mut held = renewed;
    for checkpoint in [
        sequence("49590338271490256608559692538361571095921575989136588898"),
        sequence("0"),
        Checkpoint::AtTimestamp,
        Checkpoint::Latest,
        Checkpoint::TrimHorizon,
        Checkpoint::ShardEnd,
    ] {
        let moved = store
            .update_checkpoint(&held, checkpoint.clone())
            .await
            .unwrap();
        assert_eq!(moved.checkpoint, checkpoint);
        assert_eq!(moved.owner_switches_since_checkpoint, 0);
        assert_eq!(moved.lease_counter, held.lease_counter + 1);
        assert_eq!(
            store.get_lease("a-split").await.unwrap().as_ref(),
            Some(&moved)
        );
        held = moved;
    }

    // Fencing: once worker-b has taken the lease, worker-a's view is stale for every write.
    let stale = held.clone();
    let held_by_b = store.take_lease(&held, "worker-b").await.unwrap();
    assert_eq!(held_by_b.owner_switches_since_checkpoint, 1);
    assert_lost(store.update_checkpoint(&stale, sequence("9")).await, &stale);
    assert_lost(store.renew_lease(&stale).await, &stale);
    assert_lost(store.take_lease(&stale, "worker-a").await, &stale);
    assert_lost(store.evict_lease(&stale).await, &stale);
    assert_lost(
        store
            .set_child_shard_ids(&stale, &["shardId-000000000009".into()])
            .await,
        &stale,
    );
    assert_eq!(
        store.get_lease("a-split").await.unwrap().as_ref(),
        Some(&held_by_b),
        "refused writes change nothing"
    );

    // Children are recorded, and can be cleared again.
    let children = vec!["shardId-000000000005".into(), "shardId-000000000006".into()];
    let with_children = store
        .set_child_shard_ids(&held_by_b, &children)
        .await
        .unwrap();
    assert_eq!(with_children.child_shard_ids, children);
    let without_children = store
        .set_child_shard_ids(&with_children, &[])
        .await
        .unwrap();
    assert!(without_children.child_shard_ids.is_empty());

    // Evicting frees the lease for anyone; the other fields stay.
    let evicted = store.evict_lease(&without_children).await.unwrap();
    assert_eq!(
        evicted,
        Lease {
            lease_owner: None,
            lease_counter: without_children.lease_counter + 1,
            ..without_children.clone()
        }
    );
    let held_by_c = store.take_lease(&evicted, "worker-c").await.unwrap();
    assert_eq!(held_by_c.lease_owner.as_deref(), Some("worker-c"));
    assert_eq!(held_by_c.owner_switches_since_checkpoint, 2);

    // Deleting removes the lease; writes against it are refused; deleting twice is fine; the
    // key can be created afresh.
    store.delete_lease("a-split").await.unwrap();
    assert_eq!(store.get_lease("a-split").await.unwrap(), None);
    assert_lost(store.renew_lease(&held_by_c).await, &held_by_c);
    assert_lost(
        store.update_checkpoint(&held_by_c, sequence("1")).await,
        &held_by_c,
    );
    store.delete_lease("a-split").await.unwrap();
    assert_eq!(store.list_leases().await.unwrap(), [merge_child]);
    assert!(store.create_lease_if_absent(&lease).await.unwrap());
    assert_eq!(store.get_lease("a-split").await.unwrap(), Some(lease));
}
