//! `--throttle`: the embedded Kinesis applies AWS's per-shard throughput limits, answered as
//! AWS answers them, through `aws-sdk-kinesis` (and boto3, in
//! `tests/clients/test_boto3_throttle.py`). The limits and their sources are in
//! docs/kinesis.md, "Throughput limits (`--throttle`)".
//!
//! The endpoint is the one `kinesis-esm serve --throttle` serves (the flag sets
//! `EmbeddedKinesisBuilder::throttle`); most tests stop its clock, so that a budget refills only
//! when a test says so.
//!
//! Run with `cargo test -p embedded-kinesis --test api throttle::`.

use std::time::{Duration, Instant, SystemTime};

use aws_sdk_kinesis::Client;
use aws_sdk_kinesis::config::retry::RetryConfig;
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::{PutRecordsRequestEntry, ShardIteratorType};
use embedded_kinesis::http;
use embedded_kinesis::{EmbeddedKinesis, ManualClock};

use crate::clients::check_python_suite;
use crate::support::{
    create, expect_errors, get_records, sdk_config, serve_loopback, trim_horizon_iterator,
};

/// A throttling endpoint on `clock`, and a client that does not retry, so that each answer
/// reaches the test as the endpoint gave it.
async fn serve_throttled(clock: Option<ManualClock>) -> (http::ServerHandle, Client, Client) {
    let builder = EmbeddedKinesis::builder().throttle(true);
    let kinesis = match clock {
        Some(clock) => builder.clock(clock).build(),
        None => builder.build(),
    };
    let server = serve_loopback(kinesis).await;
    let config = sdk_config(&server.endpoint_url());
    let once = config
        .to_builder()
        .retry_config(RetryConfig::disabled())
        .build();
    let retrying = config
        .to_builder()
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(10)
                .with_initial_backoff(Duration::from_millis(100)),
        )
        .build();
    (server, Client::from_conf(once), Client::from_conf(retrying))
}

fn stopped_clock() -> ManualClock {
    ManualClock::new(SystemTime::now())
}

fn entries(count: usize) -> Vec<PutRecordsRequestEntry> {
    (0..count)
        .map(|position| {
            PutRecordsRequestEntry::builder()
                .partition_key(format!("key-{position}"))
                .data(Blob::new("{}"))
                .build()
                .unwrap()
        })
        .collect()
}

#[tokio::test]
async fn put_records_past_a_shards_limit_fails_those_entries_only() {
    let clock = stopped_clock();
    let (_server, client, _) = serve_throttled(Some(clock.clone())).await;
    create(&client, "orders", 1).await;
    let put_400 = || async {
        let put = client.put_records().stream_name("orders");
        put.set_records(Some(entries(400))).send().await.unwrap()
    };
    for _ in 0..2 {
        assert_eq!(put_400().await.failed_record_count, Some(0));
    }
    let output = put_400().await;
    assert_eq!(output.failed_record_count, Some(200));
    let records = output.records();
    assert!(records[..200].iter().all(|entry| {
        entry.sequence_number.is_some() && entry.shard_id.as_deref() == Some("shardId-000000000000")
    }));
    for entry in &records[200..] {
        assert_eq!(
            entry.error_code.as_deref(),
            Some("ProvisionedThroughputExceededException")
        );
        assert_eq!(
            entry.error_message.as_deref(),
            Some(
                "Rate exceeded for shard shardId-000000000000 in stream orders under account \
                 000000000000."
            )
        );
        assert_eq!((entry.sequence_number(), entry.shard_id()), (None, None));
    }
    // PutRecord past the limit is refused whole.
    expect_errors! {
        client.put_record().stream_name("orders").partition_key("k").data(Blob::new("{}"))
            => "ProvisionedThroughputExceededException",
                &["Rate exceeded for shard shardId-000000000000 in stream orders"];
    }
    // A tenth of a second later, a hundred records more fit.
    clock.advance(Duration::from_millis(100));
    let output = client
        .put_records()
        .stream_name("orders")
        .set_records(Some(entries(150)))
        .send()
        .await
        .unwrap();
    assert_eq!(output.failed_record_count, Some(50));
}

#[tokio::test]
async fn a_get_records_loop_faster_than_five_a_second_is_throttled() {
    let clock = stopped_clock();
    let (_server, client, _) = serve_throttled(Some(clock.clone())).await;
    create(&client, "orders", 1).await;
    let mut iterator = trim_horizon_iterator(&client, "orders").await;
    for _ in 0..5 {
        let output = get_records(&client, &iterator).await;
        iterator = output.next_shard_iterator.unwrap();
    }
    let error = client
        .get_records()
        .shard_iterator(&iterator)
        .send()
        .await
        .expect_err("the sixth read in one second");
    let error = error.into_service_error();
    assert!(
        error.is_provisioned_throughput_exceeded_exception(),
        "{error:?}"
    );
    assert_eq!(
        aws_sdk_kinesis::error::ProvideErrorMetadata::message(&error),
        Some("Rate exceeded for Shard - 000000000000/orders/shardId-000000000000")
    );
    clock.advance(Duration::from_millis(200));
    get_records(&client, &iterator).await;
}

#[tokio::test]
async fn the_sdks_own_retry_takes_the_throttle_for_what_it_is() {
    // On the real clock: the SDK's standard retry waits and tries again, as it does for
    // throttling errors only; without retries the same loop fails.
    let (_server, once, retrying) = serve_throttled(None).await;
    create(&once, "orders", 1).await;
    let iterator = trim_horizon_iterator(&once, "orders").await;
    let started = Instant::now();
    for _ in 0..8 {
        retrying
            .get_records()
            .shard_iterator(&iterator)
            .send()
            .await
            .expect("the SDK retries a throttled GetRecords until it is let through");
    }
    // Eight reads of one shard take more than a second's five.
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    let mut refused = 0;
    for _ in 0..8 {
        if let Err(error) = once.get_records().shard_iterator(&iterator).send().await {
            assert!(
                error
                    .into_service_error()
                    .is_provisioned_throughput_exceeded_exception()
            );
            refused += 1;
        }
    }
    assert!(refused > 0, "eight reads at once must meet the limit");
}

#[tokio::test]
async fn control_calls_past_their_rate_are_limit_exceeded() {
    let (_server, client, _) = serve_throttled(Some(stopped_clock())).await;
    create(&client, "orders", 1).await;
    for _ in 0..10 {
        client
            .describe_stream()
            .stream_name("orders")
            .send()
            .await
            .unwrap();
    }
    expect_errors! {
        client.describe_stream().stream_name("orders")
            => "LimitExceededException",
                &["Rate exceeded for stream orders under account 000000000000."];
    }
    for _ in 0..5 {
        trim_horizon_iterator(&client, "orders").await;
    }
    expect_errors! {
        client.get_shard_iterator().stream_name("orders").shard_id("shardId-000000000000")
            .shard_iterator_type(ShardIteratorType::Latest)
            => "ProvisionedThroughputExceededException",
                &["Rate exceeded for shard shardId-000000000000 in stream orders"];
    }
}

#[tokio::test]
async fn boto3_sees_the_same_throttles() {
    let kinesis = EmbeddedKinesis::builder()
        .throttle(true)
        .clock(stopped_clock())
        .build();
    let server = serve_loopback(kinesis).await;
    check_python_suite(&server.endpoint_url(), "test_boto3_throttle.py", &[], 2).await;
}
