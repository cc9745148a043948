//! The embedded Kinesis answers as Kinesis does where clients read the answer: the API
//! model's validation (every violation listed, before anything is looked up), on-demand
//! streams, resource policies, shard ids read by their number, quoted shard iterators, tag rules, and iterators that are not
//! echoed back whole.
//! Each behaviour through `aws-sdk-kinesis`, and all of them through boto3 in
//! `tests/clients/test_boto3_fidelity.py`. The rules are in docs/kinesis.md.
//!
//! Run with `cargo test -p embedded-kinesis --test api fidelity::`.

use std::time::{Duration, UNIX_EPOCH};

use aws_sdk_kinesis::client::Waiters;
use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::{
    PutRecordsRequestEntry, ShardIteratorType, StreamMode, StreamModeDetails, StreamStatus,
};
use embedded_kinesis::{EmbeddedKinesis, ManualClock};

use crate::clients::check_python_suite;
use crate::support::{
    create, expect_error, expect_errors, failure, get_records, listen, listen_with_stream,
    on_demand, put_record, serve_loopback, summary, trim_horizon_iterator, update_shard_count,
    within_timeout,
};

#[tokio::test]
async fn validation_comes_before_lookup_and_lists_every_violation() {
    let kinesis = EmbeddedKinesis::new();
    let (_server, client) = listen(&kinesis).await;

    // A malformed name of a stream that does not exist: the shape is wrong first.
    expect_errors! {
        client.describe_stream_summary().stream_name("no such stream")
            => "ValidationException",
                &["1 validation error detected: Value 'no such stream' at 'streamName' failed to \
                   satisfy constraint: Member must satisfy regular expression pattern: \
                   [a-zA-Z0-9_.-]+"];
    }
    // Two members wrong at once: both are listed, in one message.
    let (code, message, _) = failure(
        client
            .put_record()
            .stream_name("x y")
            .partition_key("")
            .data(Blob::new("d"))
            .send()
            .await,
    );
    assert_eq!(code, "ValidationException");
    assert_eq!(
        message,
        "2 validation errors detected: Value 'x y' at 'streamName' failed to satisfy \
         constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; Value '' \
         at 'partitionKey' failed to satisfy constraint: Member must have length greater than \
         or equal to 1"
    );
    // SequenceNumberForOrdering has the model's pattern.
    create(&client, "orders", 1).await;
    expect_errors! {
        client.put_record().stream_name("orders").partition_key("k").data(Blob::new("d"))
            .sequence_number_for_ordering("12ab")
            => "ValidationException",
                &["Value '12ab' at 'sequenceNumberForOrdering' failed to satisfy constraint: \
                   Member must satisfy regular expression pattern: 0|([1-9]\\d{0,128})"];
    }
    // PutRecords entries are named by their position, counted from 1.
    expect_errors! {
        client.put_records().stream_name("orders")
            .records(PutRecordsRequestEntry::builder()
                .partition_key("k").data(Blob::new("d")).build().unwrap())
            .records(PutRecordsRequestEntry::builder()
                .partition_key("k").explicit_hash_key("-1").data(Blob::new("d")).build().unwrap())
            => "ValidationException", &["Value '-1' at 'records.2.member.explicitHashKey'"];
    }
    // GetRecords' Limit outside 1..10000 is a validation error, checked with the iterator.
    for (limit, constraint) in [
        (0, "greater than or equal to 1"),
        (10_001, "less than or equal to 10000"),
    ] {
        expect_errors! {
            client.get_records().shard_iterator("AAAA").limit(limit)
                => "ValidationException",
                    &[&format!("Value '{limit}' at 'limit' failed to satisfy constraint: Member \
                                must have value {constraint}")];
        }
    }
    // A well-formed request for a missing stream is still ResourceNotFound.
    expect_errors! {
        client.describe_stream_summary().stream_name("missing")
            => "ResourceNotFoundException", &["missing"];
    }
}

#[tokio::test]
async fn resource_policies_are_kept_replaced_and_deleted() {
    let (kinesis, _server, client) = listen_with_stream("orders", 1).await;
    let arn = kinesis.stream_arn("orders");

    let policy = |client: &aws_sdk_kinesis::Client| {
        let request = client.get_resource_policy().resource_arn(&arn);
        async move { request.send().await.unwrap().policy }
    };
    assert_eq!(policy(&client).await, "{}");
    let first = r#"{"Version":"2012-10-17","Statement":[]}"#;
    let second = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow"}]}"#;
    for document in [first, second] {
        client
            .put_resource_policy()
            .resource_arn(&arn)
            .policy(document)
            .send()
            .await
            .unwrap();
        assert_eq!(policy(&client).await, document);
    }
    client
        .delete_resource_policy()
        .resource_arn(&arn)
        .send()
        .await
        .unwrap();
    assert_eq!(policy(&client).await, "{}");
    expect_errors! {
        client.delete_resource_policy().resource_arn(&arn)
            => "ResourceNotFoundException", &["No resource policy found"];
        client.put_resource_policy().resource_arn(kinesis.stream_arn("missing")).policy(first)
            => "ResourceNotFoundException", &["missing"];
        client.put_resource_policy().resource_arn(&arn).policy("not json")
            => "InvalidArgumentException", &["not a JSON policy document"];
        client.get_resource_policy().resource_arn("orders")
            => "ValidationException", &["at 'resourceARN'"];
    }
}

#[tokio::test]
async fn a_quoted_shard_iterator_reads_and_a_bad_one_is_not_echoed() {
    let (_kinesis, _server, client) = listen_with_stream("orders", 1).await;
    put_record(&client, "orders", "k", "hello").await;
    let iterator = trim_horizon_iterator(&client, "orders").await;
    let read = client
        .get_records()
        .shard_iterator(format!("\"{iterator}\""))
        .send()
        .await
        .unwrap();
    assert_eq!(read.records.len(), 1);
    assert_eq!(read.records[0].data.as_ref(), b"hello");

    let long = "Z".repeat(400);
    let (code, message, _) = failure(client.get_records().shard_iterator(&long).send().await);
    assert_eq!(code, "InvalidArgumentException");
    assert!(!message.contains(&long), "{message}");
    assert!(message.contains("(400 characters)"), "{message}");
}

#[tokio::test]
async fn shard_ids_are_read_by_their_number() {
    let (_kinesis, _server, client) = listen_with_stream("orders", 2).await;
    for given in [
        "shardId-000000000001",
        "shardId-1",
        "shard-0001",
        "x-1",
        "1",
    ] {
        let iterator = client
            .get_shard_iterator()
            .stream_name("orders")
            .shard_id(given)
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .unwrap_or_else(|error| panic!("{given}: {error:?}"))
            .shard_iterator
            .unwrap();
        let read = get_records(&client, iterator).await;
        assert!(read.next_shard_iterator.is_some(), "{given}");
    }
    // A split names its shard the same way; the children are numbered after it.
    client
        .split_shard()
        .stream_name("orders")
        .shard_to_split("shard-0")
        .new_starting_hash_key((1u128 << 125).to_string())
        .send()
        .await
        .unwrap();
    let shards = client
        .list_shards()
        .stream_name("orders")
        .send()
        .await
        .unwrap()
        .shards
        .unwrap();
    assert_eq!(shards.len(), 4);
    assert_eq!(
        shards[2].parent_shard_id.as_deref(),
        Some("shardId-000000000000")
    );
    expect_errors! {
        client.get_shard_iterator().stream_name("orders").shard_id("shardId-7")
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            => "ResourceNotFoundException", &["shardId-000000000007"];
    }
}

#[tokio::test]
async fn tags_hold_only_the_characters_and_counts_kinesis_allows() {
    let (_kinesis, _server, client) = listen_with_stream("orders", 1).await;
    for (key, value) in [
        ("a;b", "v"),
        ("a,b", "v"),
        ("k", "tab\there"),
        ("k", "line\nbreak"),
        ("k", "100%"),
    ] {
        expect_errors! {
            client.add_tags_to_stream().stream_name("orders").tags(key, value)
                => "InvalidArgumentException",
                    &["may hold only letters, digits, spaces and _ . / = + - @"];
        }
    }
    client
        .add_tags_to_stream()
        .stream_name("orders")
        .tags("team name", "Zürich/ops=+-@_.")
        .send()
        .await
        .unwrap();

    let mut eleven = client.add_tags_to_stream().stream_name("orders");
    for n in 0..11 {
        eleven = eleven.tags(format!("k{n}"), "v");
    }
    expect_errors! {
        eleven => "InvalidArgumentException", &["one call adds at most 10"];
    }
    // 1 + 4 calls of 10 = 41 tags, then 10 more would make 51.
    for call in 0..4 {
        let mut ten = client.add_tags_to_stream().stream_name("orders");
        for n in 0..10 {
            ten = ten.tags(format!("c{call}-{n}"), "v");
        }
        ten.send().await.unwrap();
    }
    let mut ten = client.add_tags_to_stream().stream_name("orders");
    for n in 0..10 {
        ten = ten.tags(format!("last-{n}"), "v");
    }
    expect_errors! {
        ten => "LimitExceededException", &["would have 51 tags"];
    }
}

#[tokio::test]
async fn a_stream_without_a_shard_count_is_on_demand_and_can_switch_modes() {
    let kinesis = EmbeddedKinesis::new();
    let (_server, client) = listen(&kinesis).await;
    client
        .create_stream()
        .stream_name("elastic")
        .send()
        .await
        .unwrap();
    create(&client, "fixed", 2).await;
    let mode = |stream: &'static str| {
        let client = client.clone();
        async move {
            let summary = summary(&client, stream).await;
            let described = client
                .describe_stream()
                .stream_name(stream)
                .send()
                .await
                .unwrap()
                .stream_description
                .unwrap();
            assert_eq!(
                described.stream_mode_details, summary.stream_mode_details,
                "{stream}"
            );
            (
                summary.stream_mode_details.unwrap().stream_mode,
                summary.open_shard_count,
            )
        }
    };
    assert_eq!(mode("elastic").await, (StreamMode::OnDemand, 4));
    assert_eq!(mode("fixed").await, (StreamMode::Provisioned, 2));
    let listed = client.list_streams().send().await.unwrap();
    let modes: Vec<_> = listed
        .stream_summaries
        .unwrap()
        .into_iter()
        .map(|summary| {
            (
                summary.stream_name,
                summary.stream_mode_details.unwrap().stream_mode,
            )
        })
        .collect();
    assert_eq!(
        modes,
        [
            ("elastic".to_owned(), StreamMode::OnDemand),
            ("fixed".to_owned(), StreamMode::Provisioned)
        ]
    );

    let details = |mode| {
        StreamModeDetails::builder()
            .stream_mode(mode)
            .build()
            .unwrap()
    };
    for (stream, switched_to) in [
        ("elastic", StreamMode::Provisioned),
        ("fixed", StreamMode::OnDemand),
    ] {
        client
            .update_stream_mode()
            .stream_arn(kinesis.stream_arn(stream))
            .stream_mode_details(details(switched_to))
            .send()
            .await
            .unwrap();
    }
    assert_eq!(mode("elastic").await, (StreamMode::Provisioned, 4));
    assert_eq!(mode("fixed").await, (StreamMode::OnDemand, 2));

    expect_errors! {
        client.create_stream().stream_name("both").shard_count(1)
            .stream_mode_details(details(StreamMode::OnDemand))
            => "InvalidArgumentException", &["takes no ShardCount"];
        client.update_stream_mode().stream_arn(kinesis.stream_arn("missing"))
            .stream_mode_details(details(StreamMode::OnDemand))
            => "ResourceNotFoundException", &["missing"];
    }
}

#[tokio::test]
async fn a_body_declared_over_the_limit_is_answered_413_before_it_is_sent() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let kinesis = EmbeddedKinesis::new();
    let (server, _client) = listen(&kinesis).await;
    let mut connection = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    // Only the head is sent: the answer must come without the 17 MiB the head announces.
    let head = format!(
        "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-amz-json-1.1\r\n\
         X-Amz-Target: Kinesis_20131202.PutRecords\r\nContent-Length: {}\r\n\r\n",
        server.local_addr(),
        17 * 1024 * 1024
    );
    connection.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0; 4096];
    let read = within_timeout("the 413 answer", connection.read(&mut answer))
        .await
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("larger than 16777216 bytes"), "{answer}");

    // Under the limit, the same envelope is served.
    let (status, _, _) = crate::sdk::envelope::exchange(
        &server,
        "POST",
        &[
            ("Content-Type", "application/x-amz-json-1.1"),
            ("X-Amz-Target", "Kinesis_20131202.ListStreams"),
        ],
        "{}",
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn boto3_sees_the_same_answers() {
    let server = serve_loopback(EmbeddedKinesis::new()).await;
    check_python_suite(&server.endpoint_url(), "test_boto3_fidelity.py", &[], 6).await;
}

/// The records TRIM_HORIZON reads from the only shard of `stream`, as text.
async fn from_trim_horizon(client: &aws_sdk_kinesis::Client, stream: &str) -> Vec<String> {
    let iterator = trim_horizon_iterator(client, stream).await;
    let read = get_records(client, iterator).await;
    read.records
        .iter()
        .map(|record| String::from_utf8_lossy(record.data.as_ref()).into_owned())
        .collect()
}

async fn put_text(client: &aws_sdk_kinesis::Client, stream: &str, text: &str) {
    put_record(client, stream, "k", text).await;
}

#[tokio::test]
async fn iterators_expire_after_five_minutes_and_records_after_the_retention_period() {
    // Wed Dec 02 05:38:15 UTC 2026.
    let start = UNIX_EPOCH + Duration::from_secs(1_796_189_895);
    let clock = ManualClock::new(start);
    let kinesis = EmbeddedKinesis::builder().clock(clock.clone()).build();
    let (_server, client) = listen(&kinesis).await;
    create(&client, "orders", 1).await;
    put_text(&client, "orders", "old").await;
    let iterator = trim_horizon_iterator(&client, "orders").await;

    // Kinesis tolerates 300,000 ms and not one more.
    clock.advance(Duration::from_secs(300));
    let read = client.get_records().shard_iterator(&iterator).send().await;
    assert_eq!(read.unwrap().records.len(), 1);
    clock.advance(Duration::from_secs(1));
    expect_errors! {
        client.get_records().shard_iterator(&iterator)
            => "ExpiredIteratorException",
                &["Iterator expired. The iterator was created at time Wed Dec 02 05:38:15 UTC 2026 \
                   while right now it is Wed Dec 02 05:43:16 UTC 2026 which is further in the \
                   future than the tolerated delay of 300000 milliseconds."];
    }

    // A longer retention keeps the old record past a day; shortening it trims at once.
    client
        .increase_stream_retention_period()
        .stream_name("orders")
        .retention_period_hours(48)
        .send()
        .await
        .unwrap();
    clock.advance(Duration::from_secs(30 * 3600));
    put_text(&client, "orders", "new").await;
    assert_eq!(from_trim_horizon(&client, "orders").await, ["old", "new"]);
    client
        .decrease_stream_retention_period()
        .stream_name("orders")
        .retention_period_hours(24)
        .send()
        .await
        .unwrap();
    assert_eq!(from_trim_horizon(&client, "orders").await, ["new"]);

    // And time passing trims what is left.
    clock.advance(Duration::from_secs(25 * 3600));
    assert!(from_trim_horizon(&client, "orders").await.is_empty());
}

async fn status_of(client: &aws_sdk_kinesis::Client, stream: &str) -> StreamStatus {
    summary(client, stream).await.stream_status
}

#[tokio::test]
async fn streams_pass_through_creating_updating_and_deleting_for_the_status_delay() {
    let clock = ManualClock::new(UNIX_EPOCH + Duration::from_secs(1_796_189_895));
    let delay = Duration::from_millis(500);
    let kinesis = EmbeddedKinesis::builder()
        .clock(clock.clone())
        .stream_status_delay(delay)
        .build();
    let (_server, client) = listen(&kinesis).await;
    let put = || {
        client
            .put_record()
            .stream_name("orders")
            .partition_key("k")
            .data(Blob::new("x"))
            .send()
    };
    let split = || {
        client
            .split_shard()
            .stream_name("orders")
            .shard_to_split("shardId-000000000000")
            .new_starting_hash_key("1")
            .send()
    };

    create(&client, "orders", 2).await;
    assert_eq!(status_of(&client, "orders").await, StreamStatus::Creating);
    expect_error(
        put().await,
        "ResourceNotFoundException",
        &["Stream orders under account 000000000000 not found."],
    );
    expect_error(
        split().await,
        "ResourceInUseException",
        &["Stream orders under account 000000000000 not ACTIVE, instead in state CREATING"],
    );
    clock.advance(delay);
    assert_eq!(status_of(&client, "orders").await, StreamStatus::Active);
    client
        .wait_until_stream_exists()
        .stream_name("orders")
        .wait(Duration::from_secs(5))
        .await
        .unwrap();

    // A reshard leaves the stream writable, but no second change is accepted until it is over.
    update_shard_count(&client, "orders", 4).await;
    assert_eq!(status_of(&client, "orders").await, StreamStatus::Updating);
    put().await.unwrap();
    expect_error(
        split().await,
        "ResourceInUseException",
        &["not ACTIVE, instead in state UPDATING"],
    );
    clock.advance(delay);
    let arn = kinesis.stream_arn("orders");
    client
        .update_stream_mode()
        .stream_arn(&arn)
        .stream_mode_details(on_demand())
        .send()
        .await
        .unwrap();
    assert_eq!(status_of(&client, "orders").await, StreamStatus::Updating);
    clock.advance(delay);
    assert_eq!(status_of(&client, "orders").await, StreamStatus::Active);

    // Deleting: still listed and described, no longer writable; then gone.
    client
        .delete_stream()
        .stream_name("orders")
        .send()
        .await
        .unwrap();
    assert_eq!(status_of(&client, "orders").await, StreamStatus::Deleting);
    expect_error(put().await, "ResourceNotFoundException", &["not found"]);
    let listed = client.list_streams().send().await.unwrap();
    assert_eq!(listed.stream_names, ["orders"]);
    clock.advance(delay);
    expect_errors! {
        client.describe_stream_summary().stream_name("orders")
            => "ResourceNotFoundException",
                &["Stream orders under account 000000000000 not found."];
    }
    assert!(
        client
            .list_streams()
            .send()
            .await
            .unwrap()
            .stream_names
            .is_empty()
    );
    // The name can be used again.
    create(&client, "orders", 1).await;
}

#[tokio::test]
async fn the_sdk_stream_exists_waiter_waits_through_creating() {
    // The system clock: the waiter sleeps on it (10 s between polls, the SDK's model).
    let kinesis = EmbeddedKinesis::builder()
        .stream_status_delay(Duration::from_secs(2))
        .build();
    let (_server, client) = listen(&kinesis).await;
    create(&client, "orders", 1).await;
    assert_eq!(status_of(&client, "orders").await, StreamStatus::Creating);
    client
        .wait_until_stream_exists()
        .stream_name("orders")
        .wait(Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(status_of(&client, "orders").await, StreamStatus::Active);
}
