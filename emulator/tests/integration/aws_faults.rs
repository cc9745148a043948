//! Both backends behind a fault-injecting proxy: throttles, 5xx answers, dropped connections,
//! lost answers, failed conditions, and a server that goes away and comes back. Each failure
//! comes back as the right kind of error, and a caller that pauses with `Backoff` and tries again
//! loses nothing.
//!
//! Run with `scripts/local-stack run -- cargo test --workspace --test integration aws_faults`.

use std::sync::Arc;
use std::time::Duration;

use crate::support::fault_proxy::{Fault, FaultProxy};
use crate::support::{dynamodb_endpoint, kinesis_endpoint, unique_name, within_timeout};
use kinesis_esm::aws::{
    AwsConnection, Backoff, BackoffConfig, DynamoLeaseStore, ReadPacing, RetryKind, Retryable,
    SdkKinesis,
};
use kinesis_esm::lease::{Checkpoint, Lease, LeaseError, LeaseStore};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::{IteratorPosition, Record, ShardSource, SourceError};
use tokio::sync::watch;

const SHARD: &str = "shardId-000000000000";

/// Short pauses, so the tests run fast; the shapes are the default's.
fn quick_backoff() -> Backoff {
    Backoff::new(BackoffConfig {
        initial: Duration::from_millis(5),
        max: Duration::from_millis(50),
        base: 3.0,
        throttle_floor: Duration::from_millis(20),
        deadline: None,
    })
}

/// A connection through the proxy; a short attempt timeout keeps a stuck call from hanging.
fn through(proxy: &FaultProxy) -> AwsConnection {
    AwsConnection::local(proxy.endpoint())
        .with_timeouts(Duration::from_secs(2), Duration::from_secs(5))
}

/// A stream with `count` records on its one shard, created directly (not through the proxy).
async fn stream_with_records(count: usize) -> (String, Vec<SequenceNumber>) {
    crate::support::init_logging();
    let direct = SdkKinesis::new(Some(&kinesis_endpoint()), "us-east-1")
        .await
        .unwrap();
    let name = unique_name("faults");
    direct.create_stream(&name, 1).await.unwrap();
    let mut sequence_numbers = Vec::new();
    for index in 0..count {
        let (_, sequence_number) = direct
            .put_record(&name, &format!("key-{index}"), format!("record {index}"))
            .await
            .unwrap();
        sequence_numbers.push(sequence_number);
    }
    (name, sequence_numbers)
}

#[tokio::test]
async fn kinesis_failures_come_back_by_kind() {
    let (stream, sequence_numbers) = stream_with_records(2).await;
    let proxy = FaultProxy::start(&kinesis_endpoint()).await;
    let source = SdkKinesis::connect(&through(&proxy))
        .await
        .unwrap()
        .with_read_pacing(ReadPacing::UNLIMITED);
    let iterator = source
        .shard_iterator(&stream, SHARD, &IteratorPosition::TrimHorizon)
        .await
        .unwrap();

    #[track_caller]
    fn check(
        result: Result<impl std::fmt::Debug, SourceError>,
        expected_kind: Option<RetryKind>,
        expected_text: &str,
    ) {
        let error = result.expect_err("the call should fail");
        assert_eq!(error.retry_kind(), expected_kind, "{error:?}");
        let text = error.to_string();
        assert!(
            text.contains(expected_text),
            "`{text}` should say `{expected_text}`"
        );
    }

    proxy.inject("GetRecords", Fault::throttled());
    check(
        source.get_records(&iterator, 10).await,
        Some(RetryKind::Throttled),
        &format!("GetRecords on shard {SHARD} of stream {stream}"),
    );
    proxy.inject("GetRecords", Fault::server_error());
    check(
        source.get_records(&iterator, 10).await,
        Some(RetryKind::Error),
        "HTTP 500",
    );
    proxy.inject("GetRecords", Fault::DropConnection);
    check(
        source.get_records(&iterator, 10).await,
        Some(RetryKind::Error),
        "GetRecords",
    );
    proxy.inject("ListShards", Fault::server_error());
    check(
        source.list_shards(&stream).await,
        Some(RetryKind::Error),
        "ListShards",
    );
    proxy.inject("GetRecords", Fault::expired_iterator());
    assert_eq!(
        source.get_records(&iterator, 10).await,
        Err(SourceError::ExpiredIterator)
    );

    // None of that used the iterator up.
    let output = source.get_records(&iterator, 10).await.unwrap();
    let read: Vec<_> = output
        .records
        .iter()
        .map(|record| record.sequence_number.clone())
        .collect();
    assert_eq!(read, sequence_numbers);

    // A server that is gone is a passing error too.
    proxy.go_away();
    check(
        source.list_shards(&stream).await,
        Some(RetryKind::Error),
        "nothing answers at",
    );
}

/// Reads a shard to `count` records the way a shard reader does: pauses on passing failures, and
/// gets a new iterator after the last record read when the iterator expires. Reports each
/// failure on `failures`.
async fn read_with_retries(
    source: &SdkKinesis,
    stream: &str,
    count: usize,
    failures: &watch::Sender<Vec<SourceError>>,
) -> Vec<Record> {
    let mut backoff = quick_backoff();
    let mut records: Vec<Record> = Vec::new();
    let mut iterator: Option<String> = None;
    while records.len() < count {
        let result = match &iterator {
            None => {
                let position = match records.last() {
                    Some(last) => {
                        IteratorPosition::AfterSequenceNumber(last.sequence_number.clone())
                    }
                    None => IteratorPosition::TrimHorizon,
                };
                source
                    .shard_iterator(stream, SHARD, &position)
                    .await
                    .map(|fresh| iterator = Some(fresh))
            }
            Some(current) => source.get_records(current, 3).await.map(|output| {
                records.extend(output.records);
                iterator = output.next_shard_iterator;
            }),
        };
        let Err(error) = result else {
            backoff.reset();
            continue;
        };
        failures.send_modify(|seen| seen.push(error.clone()));
        match error.retry_kind() {
            Some(kind) => tokio::time::sleep(backoff.next_pause(kind)).await,
            None if error == SourceError::ExpiredIterator => iterator = None,
            None => panic!("a permanent failure: {error}"),
        }
    }
    records
}

#[tokio::test]
async fn a_shard_reader_with_backoff_loses_nothing() {
    let (stream, sequence_numbers) = stream_with_records(12).await;
    let proxy = FaultProxy::start(&kinesis_endpoint()).await;
    let source = Arc::new(
        SdkKinesis::connect(&through(&proxy))
            .await
            .unwrap()
            .with_read_pacing(ReadPacing::UNLIMITED),
    );
    // Faults meet the reader on its way through the shard.
    for fault in [
        Fault::throttled(),
        Fault::server_error(),
        Fault::DropConnection,
        Fault::expired_iterator(),
        Fault::ForwardThenDrop,
        Fault::throttled(),
    ] {
        proxy.inject("GetRecords", fault);
    }
    proxy.inject("GetShardIterator", Fault::server_error());

    let (failures, mut failures_seen) = watch::channel(Vec::new());
    let reader = tokio::spawn({
        let source = source.clone();
        let stream = stream.clone();
        async move { read_with_retries(&source, &stream, 12, &failures).await }
    });

    // Half way, the server goes away; once the reader has failed against it twice, it comes back.
    within_timeout("the injected faults", async {
        while proxy.pending_faults() > 0 {
            failures_seen.changed().await.unwrap();
        }
    })
    .await;
    proxy.go_away();
    let failed_before = failures_seen.borrow().len();
    within_timeout("the reader failing against a server that is gone", async {
        while failures_seen.borrow_and_update().len() < failed_before + 2 {
            failures_seen.changed().await.unwrap();
        }
    })
    .await;
    proxy.come_back().await;

    let records = within_timeout("the reader", reader).await.unwrap();
    let read: Vec<_> = records
        .iter()
        .map(|record| record.sequence_number.clone())
        .collect();
    assert_eq!(read, sequence_numbers, "every record once, in order");

    let failures = failures_seen.borrow().clone();
    let count =
        |wanted: fn(&SourceError) -> bool| failures.iter().filter(|error| wanted(error)).count();
    assert!(
        count(|error| matches!(error, SourceError::Throttled { .. })) >= 2,
        "{failures:#?}"
    );
    assert!(
        count(|error| *error == SourceError::ExpiredIterator) >= 1,
        "{failures:#?}"
    );
    assert!(
        count(|error| matches!(error, SourceError::Service { .. })) >= 5,
        "{failures:#?}"
    );
}

/// A lease store through the proxy, on a table of its own, with one lease held by `worker-a`.
async fn held_lease(proxy: &FaultProxy) -> (DynamoLeaseStore, Lease) {
    crate::support::init_logging();
    let store = DynamoLeaseStore::connect(&through(proxy), unique_name("faults"))
        .await
        .unwrap();
    let lease = Lease::new("k", SHARD, Checkpoint::TrimHorizon);
    store.create_lease_if_absent(&lease).await.unwrap();
    let held = store.take_lease(&lease, "worker-a").await.unwrap();
    (store, held)
}

fn sequence(number: u64) -> Checkpoint {
    Checkpoint::SequenceNumber(number.to_string().parse().unwrap())
}

#[tokio::test]
async fn lease_store_failures_come_back_by_kind() {
    let proxy = FaultProxy::start(&dynamodb_endpoint()).await;
    let (store, held) = held_lease(&proxy).await;

    #[track_caller]
    fn check_unavailable(result: Result<Lease, LeaseError>, expected_text: &str) {
        match result {
            Err(LeaseError::Unavailable { message }) => {
                assert!(
                    message.contains(expected_text),
                    "`{message}` should say `{expected_text}`"
                );
                assert!(message.contains("lease k in table faults-"), "{message}");
            }
            other => panic!("expected the store to be unavailable, got {other:?}"),
        }
    }

    proxy.inject("UpdateItem", Fault::throttled());
    check_unavailable(
        store.update_checkpoint(&held, sequence(1)).await,
        "ProvisionedThroughputExceededException",
    );
    proxy.inject("UpdateItem", Fault::server_error());
    check_unavailable(
        store.update_checkpoint(&held, sequence(1)).await,
        "HTTP 500",
    );
    proxy.inject("UpdateItem", Fault::DropConnection);
    check_unavailable(
        store.update_checkpoint(&held, sequence(1)).await,
        "UpdateItem",
    );
    assert_eq!(
        store.get_lease("k").await.unwrap().as_ref(),
        Some(&held),
        "failed writes changed nothing"
    );

    // A failed condition that is not explained by an earlier attempt of the same write is a
    // lost lease.
    proxy.inject("UpdateItem", Fault::conditional_check_failed());
    assert_eq!(
        store.update_checkpoint(&held, sequence(1)).await,
        Err(LeaseError::LeaseLost {
            lease_key: "k".into(),
            expected_counter: held.lease_counter
        })
    );

    // A write that landed but whose answer was lost: unavailable, then, tried again with the
    // same view of the lease, recognised as done rather than reported lost.
    proxy.inject("UpdateItem", Fault::ForwardThenDrop);
    check_unavailable(
        store.update_checkpoint(&held, sequence(1)).await,
        "UpdateItem",
    );
    let stored = store.get_lease("k").await.unwrap().unwrap();
    assert_eq!(stored.checkpoint, sequence(1));
    assert_eq!(stored.lease_counter, held.lease_counter + 1);
    assert_eq!(
        store.update_checkpoint(&held, sequence(1)).await,
        Ok(stored.clone())
    );
    // But a different write with that stale view is refused.
    assert!(matches!(
        store.update_checkpoint(&held, sequence(2)).await,
        Err(LeaseError::LeaseLost { .. })
    ));

    proxy.go_away();
    check_unavailable(store.renew_lease(&stored).await, "nothing answers at");
    proxy.come_back().await;
    assert!(store.renew_lease(&stored).await.is_ok());
}

#[tokio::test]
async fn checkpointing_with_backoff_loses_nothing() {
    let proxy = FaultProxy::start(&dynamodb_endpoint()).await;
    let (store, mut held) = held_lease(&proxy).await;
    let store = Arc::new(store);
    let first_counter = held.lease_counter;
    for fault in [
        Fault::throttled(),
        Fault::ForwardThenDrop,
        Fault::server_error(),
        Fault::DropConnection,
        Fault::ForwardThenDrop,
        Fault::throttled(),
    ] {
        proxy.inject("UpdateItem", fault);
    }

    let (progress, mut progress_seen) = watch::channel(0_u64);
    let (failures, mut failures_seen) = watch::channel(0_usize);
    let checkpointer = tokio::spawn({
        let store = store.clone();
        async move {
            let mut backoff = quick_backoff();
            for number in 1..=20 {
                held = backoff
                    .retry(|| {
                        let attempt = store.update_checkpoint(&held, sequence(number));
                        let failures = &failures;
                        async move {
                            let result = attempt.await;
                            if result.is_err() {
                                failures.send_modify(|count| *count += 1);
                            }
                            result
                        }
                    })
                    .await
                    .unwrap_or_else(|error| panic!("checkpoint {number}: {error}"));
                progress.send_replace(number);
            }
            held
        }
    });

    // After ten checkpoints the table goes away; once two attempts have failed against it, it
    // comes back.
    within_timeout(
        "ten checkpoints",
        progress_seen.wait_for(|&done| done >= 10),
    )
    .await
    .unwrap();
    proxy.go_away();
    let failed_before = *failures_seen.borrow_and_update();
    within_timeout(
        "two attempts against a table that is gone",
        failures_seen.wait_for(|&failed| failed >= failed_before + 2),
    )
    .await
    .unwrap();
    proxy.come_back().await;

    let last = within_timeout("twenty checkpoints", checkpointer)
        .await
        .unwrap();
    assert_eq!(proxy.faults_hit("UpdateItem"), 6);
    assert_eq!(last.checkpoint, sequence(20));
    assert_eq!(
        last.lease_counter,
        first_counter + 20,
        "each checkpoint moved the counter once, lost answers included"
    );
    assert_eq!(store.get_lease("k").await.unwrap(), Some(last));
}
