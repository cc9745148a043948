//! Enhanced fan-out on the embedded Kinesis' endpoint, through `aws-sdk-kinesis`: the consumer
//! operations with their states and limits, and `SubscribeToShard`'s event stream (records
//! pushed as they arrive, `ContinuationSequenceNumber`, `ChildShards` at a shard's end, the
//! subscription's lifetime and its errors). One test speaks HTTP/2 with prior knowledge (h2c),
//! as clients that insist on HTTP/2 do over `http://`.
//!
//! Run with `cargo test -p embedded-kinesis --test api efo::`.

use std::time::Duration;

use crate::support::{
    create, expect_errors, listen, listen_with_stream, put_record, serve_loopback, summary,
    within_timeout,
};
use aws_sdk_kinesis::Client;
use aws_sdk_kinesis::operation::subscribe_to_shard::SubscribeToShardOutput;
use aws_sdk_kinesis::types::{
    ConsumerDescription, ConsumerStatus, ShardIteratorType, StartingPosition,
    SubscribeToShardEvent, SubscribeToShardEventStream,
};
use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use embedded_kinesis::EmbeddedKinesis;
use embedded_kinesis::http::ServerHandle;
use http_body_util::BodyExt as _;
use serde_json::json;

/// An embedded Kinesis whose streams and consumers show `CREATING`/`DELETING` for `delay`.
fn kinesis_with_delay(delay: Duration) -> EmbeddedKinesis {
    EmbeddedKinesis::builder()
        .stream_status_delay(delay)
        .build()
}

async fn stream_arn(client: &Client, stream: &str) -> String {
    summary(client, stream).await.stream_arn
}

async fn register(client: &Client, stream_arn: &str, name: &str) -> String {
    client
        .register_stream_consumer()
        .stream_arn(stream_arn)
        .consumer_name(name)
        .send()
        .await
        .unwrap()
        .consumer
        .unwrap()
        .consumer_arn
}

async fn put(client: &Client, stream: &str, data: &str) -> String {
    put_record(client, stream, "key", data)
        .await
        .sequence_number
}

/// `DescribeStreamConsumer` of the consumer `consumer_arn`, which must exist.
async fn describe_consumer(client: &Client, consumer_arn: &str) -> ConsumerDescription {
    let request = client.describe_stream_consumer().consumer_arn(consumer_arn);
    request.send().await.unwrap().consumer_description.unwrap()
}

fn position(kind: ShardIteratorType) -> StartingPosition {
    StartingPosition::builder().r#type(kind).build().unwrap()
}

/// A subscription of the consumer `consumer_arn` to `shardId-000000000000` (the first shard
/// of every stream here), from `starting_position`.
async fn subscribe(
    client: &Client,
    consumer_arn: &str,
    starting_position: StartingPosition,
) -> SubscribeToShardOutput {
    client
        .subscribe_to_shard()
        .consumer_arn(consumer_arn)
        .shard_id("shardId-000000000000")
        .starting_position(starting_position)
        .send()
        .await
        .unwrap()
}

/// The next `SubscribeToShardEvent`, or `None` when the subscription ended.
async fn next_event(output: &mut SubscribeToShardOutput) -> Option<SubscribeToShardEvent> {
    let received = within_timeout("the next subscription event", output.event_stream.recv())
        .await
        .expect("the event stream should read");
    match received? {
        SubscribeToShardEventStream::SubscribeToShardEvent(event) => Some(event),
        other => panic!("unexpected event {other:?}"),
    }
}

fn data_of(event: &SubscribeToShardEvent) -> Vec<String> {
    event
        .records
        .iter()
        .map(|record| String::from_utf8(record.data.as_ref().to_vec()).unwrap())
        .collect()
}

#[tokio::test]
async fn sdk_registers_describes_lists_and_deregisters_consumers_through_their_states() {
    let delay = Duration::from_millis(300);
    let kinesis = kinesis_with_delay(delay);
    let (_server, client) = listen(&kinesis).await;
    create(&client, "orders", 1).await;
    kinesis.wait_until_active("orders").await.unwrap();
    let arn = stream_arn(&client, "orders").await;

    let registered = client
        .register_stream_consumer()
        .stream_arn(&arn)
        .consumer_name("fan")
        .send()
        .await
        .unwrap()
        .consumer
        .unwrap();
    assert_eq!(registered.consumer_status, ConsumerStatus::Creating);
    assert_eq!(registered.consumer_name, "fan");
    assert!(
        registered
            .consumer_arn
            .starts_with(&format!("{arn}/consumer/fan:")),
        "{}",
        registered.consumer_arn
    );
    // A consumer still being created cannot be subscribed yet.
    expect_errors! {
        client.subscribe_to_shard().consumer_arn(&registered.consumer_arn)
            .shard_id("shardId-000000000000")
            .starting_position(position(ShardIteratorType::TrimHorizon))
            => "ResourceInUseException", &["is not ACTIVE, instead in state CREATING"];
    }
    tokio::time::sleep(delay).await;
    let described = describe_consumer(&client, &registered.consumer_arn).await;
    assert_eq!(described.consumer_status, ConsumerStatus::Active);
    assert_eq!(described.stream_arn, arn);
    assert_eq!(
        described.consumer_creation_timestamp,
        registered.consumer_creation_timestamp
    );
    // By stream and name as well as by ARN.
    let by_name = client
        .describe_stream_consumer()
        .stream_arn(&arn)
        .consumer_name("fan")
        .send()
        .await
        .unwrap()
        .consumer_description
        .unwrap();
    assert_eq!(by_name.consumer_arn, registered.consumer_arn);

    expect_errors! {
        client.register_stream_consumer().stream_arn(&arn).consumer_name("fan")
            => "ResourceInUseException", &["already exists"];
    }
    for number in 1..20 {
        register(&client, &arn, &format!("fan-{number:02}")).await;
    }
    expect_errors! {
        client.register_stream_consumer().stream_arn(&arn).consumer_name("one-too-many")
            => "LimitExceededException", &["20 registered consumers"];
    }
    // Pages of the 20, in name order.
    let first = client
        .list_stream_consumers()
        .stream_arn(&arn)
        .max_results(15)
        .send()
        .await
        .unwrap();
    assert_eq!(first.consumers().len(), 15);
    let second = client
        .list_stream_consumers()
        .stream_arn(&arn)
        .next_token(first.next_token().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(second.consumers().len(), 5);
    assert_eq!(second.next_token(), None);
    assert_eq!(second.consumers()[4].consumer_name, "fan-19");

    client
        .deregister_stream_consumer()
        .consumer_arn(&registered.consumer_arn)
        .send()
        .await
        .unwrap();
    let deleting = describe_consumer(&client, &registered.consumer_arn).await;
    assert_eq!(deleting.consumer_status, ConsumerStatus::Deleting);
    tokio::time::sleep(delay).await;
    expect_errors! {
        client.describe_stream_consumer().consumer_arn(&registered.consumer_arn)
            => "ResourceNotFoundException", &["not found"];
    }
    let remaining = client
        .list_stream_consumers()
        .stream_arn(&arn)
        .send()
        .await
        .unwrap();
    assert_eq!(remaining.consumers().len(), 19);

    // The model's shapes are checked first, every violation at once.
    expect_errors! {
        client.register_stream_consumer().stream_arn("not-an-arn").consumer_name("has space")
            => "ValidationException", &["2 validation errors detected"];
        client.list_stream_consumers().stream_arn(format!("{arn}-missing"))
            => "ResourceNotFoundException", &["orders-missing"];
    }
}

#[tokio::test]
async fn sdk_subscribe_to_shard_pushes_records_as_they_arrive() {
    let (_kinesis, _server, client) = listen_with_stream("orders", 1).await;
    let arn = stream_arn(&client, "orders").await;
    let consumer = register(&client, &arn, "fan").await;
    let mut sequence_numbers = Vec::new();
    for data in ["a", "b", "c"] {
        sequence_numbers.push(put(&client, "orders", data).await);
    }

    let mut output = subscribe(&client, &consumer, position(ShardIteratorType::TrimHorizon)).await;
    let event = next_event(&mut output).await.unwrap();
    assert_eq!(data_of(&event), ["a", "b", "c"]);
    assert_eq!(event.continuation_sequence_number, sequence_numbers[2]);
    assert_eq!(event.millis_behind_latest, 0);
    assert!(
        event
            .child_shards
            .is_none_or(|children| children.is_empty())
    );

    // A record put now is pushed without being asked for.
    let started = std::time::Instant::now();
    let pushed = put(&client, "orders", "d").await;
    let event = next_event(&mut output).await.unwrap();
    assert_eq!(data_of(&event), ["d"]);
    assert_eq!(event.continuation_sequence_number, pushed);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "a put record took {:?} to be pushed",
        started.elapsed()
    );

    // A second subscription of the same consumer to the same shard within 5 seconds.
    expect_errors! {
        client.subscribe_to_shard().consumer_arn(&consumer).shard_id("shardId-000000000000")
            .starting_position(position(ShardIteratorType::Latest))
            => "ResourceInUseException", &["less than 5 seconds ago"];
    }
    // Another consumer reads the same shard on its own.
    let other = register(&client, &arn, "other").await;
    let mut from_sequence = client
        .subscribe_to_shard()
        .consumer_arn(&other)
        .shard_id("0")
        .starting_position(
            StartingPosition::builder()
                .r#type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(&sequence_numbers[1])
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let event = next_event(&mut from_sequence).await.unwrap();
    assert_eq!(data_of(&event), ["c", "d"]);

    // Errors before the stream starts are ordinary answers.
    expect_errors! {
        client.subscribe_to_shard().consumer_arn(format!("{arn}/consumer/nobody:1700000000"))
            .shard_id("shardId-000000000000").starting_position(position(ShardIteratorType::Latest))
            => "ResourceNotFoundException", &["nobody"];
        client.subscribe_to_shard().consumer_arn(&other).shard_id("shardId-000000000007")
            .starting_position(position(ShardIteratorType::Latest))
            => "ResourceNotFoundException", &["shardId-000000000007"];
    }
}

#[tokio::test]
async fn an_idle_subscription_says_where_it_is_and_ends_after_its_lifetime() {
    let kinesis = EmbeddedKinesis::builder()
        .subscription_lifetime(Duration::from_millis(400))
        .build();
    let (_server, client) = listen(&kinesis).await;
    create(&client, "orders", 1).await;
    let arn = stream_arn(&client, "orders").await;
    let consumer = register(&client, &arn, "fan").await;
    let before = put(&client, "orders", "old").await;
    let mut output = subscribe(&client, &consumer, position(ShardIteratorType::Latest)).await;
    // The first event comes at once, empty, with the position read up to: resuming after it
    // reads what comes next.
    let event = next_event(&mut output).await.unwrap();
    assert!(event.records.is_empty());
    let continuation = event.continuation_sequence_number;
    assert!(continuation >= before, "{continuation} < {before}");
    let started = std::time::Instant::now();
    assert!(
        next_event(&mut output).await.is_none(),
        "the subscription should end"
    );
    assert!(started.elapsed() < Duration::from_secs(3));

    // Resubscribing with the continuation (5 s after the first subscription) reads on.
    tokio::time::sleep(Duration::from_secs(5)).await;
    put(&client, "orders", "new").await;
    let mut resumed = client
        .subscribe_to_shard()
        .consumer_arn(&consumer)
        .shard_id("shardId-000000000000")
        .starting_position(
            StartingPosition::builder()
                .r#type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(continuation)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let event = next_event(&mut resumed).await.unwrap();
    assert_eq!(data_of(&event), ["new"]);
}

#[tokio::test]
async fn a_subscription_to_a_split_shard_ends_with_its_children() {
    let (_kinesis, _server, client) = listen_with_stream("orders", 1).await;
    let arn = stream_arn(&client, "orders").await;
    let consumer = register(&client, &arn, "fan").await;
    put(&client, "orders", "before-split").await;
    client
        .split_shard()
        .stream_name("orders")
        .shard_to_split("shardId-000000000000")
        .new_starting_hash_key((1_u128 << 127).to_string())
        .send()
        .await
        .unwrap();
    let mut output = subscribe(&client, &consumer, position(ShardIteratorType::TrimHorizon)).await;
    let mut data = Vec::new();
    let last = loop {
        let event = next_event(&mut output)
            .await
            .expect("an event at the shard's end");
        data.extend(data_of(&event));
        if event
            .child_shards
            .as_ref()
            .is_some_and(|children| !children.is_empty())
        {
            break event;
        }
    };
    assert_eq!(data, ["before-split"]);
    let mut children: Vec<String> = last
        .child_shards
        .unwrap()
        .into_iter()
        .map(|child| child.shard_id)
        .collect();
    children.sort();
    assert_eq!(children, ["shardId-000000000001", "shardId-000000000002"]);
    assert!(
        next_event(&mut output).await.is_none(),
        "the subscription ends at the shard's end"
    );
}

/// `SubscribeToShard` over HTTP/2 with prior knowledge: the answer is an event stream whose
/// messages read back with the SDK's own decoder.
async fn subscribe_over_h2c(
    server: &ServerHandle,
    consumer_arn: &str,
) -> Vec<(String, serde_json::Value)> {
    let tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    let body = json!({
        "ConsumerARN": consumer_arn,
        "ShardId": "shardId-000000000000",
        "StartingPosition": {"Type": "TRIM_HORIZON"},
    });
    let request = hyper::Request::post(format!("{}/", server.endpoint_url()))
        .header("content-type", "application/x-amz-json-1.1")
        .header("x-amz-target", "Kinesis_20131202.SubscribeToShard")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_string(),
        )))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.version(), hyper::Version::HTTP_2);
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/vnd.amazon.eventstream"
    );
    let mut body = response.into_body();
    let mut decoder = MessageFrameDecoder::new();
    let mut buffer = bytes::BytesMut::new();
    let mut messages = Vec::new();
    // The initial response and the first event.
    while messages.len() < 2 {
        let frame = within_timeout("an HTTP/2 data frame", body.frame())
            .await
            .expect("the stream goes on")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buffer.extend_from_slice(&data);
        }
        while let DecodedFrame::Complete(message) = decoder.decode_frame(&mut buffer).unwrap() {
            let event_type = message
                .headers()
                .iter()
                .find(|header| header.name().as_str() == ":event-type")
                .map(|header| header.value().as_string().unwrap().as_str().to_owned())
                .unwrap_or_default();
            messages.push((
                event_type,
                serde_json::from_slice(message.payload()).unwrap(),
            ));
        }
    }
    messages
}

#[tokio::test]
async fn subscribe_to_shard_speaks_http2_with_prior_knowledge() {
    let kinesis = EmbeddedKinesis::new();
    let (server, client) = listen(&kinesis).await;
    create(&client, "orders", 1).await;
    let arn = stream_arn(&client, "orders").await;
    let consumer = register(&client, &arn, "fan").await;
    put(&client, "orders", "over-h2").await;
    let messages = subscribe_over_h2c(&server, &consumer).await;
    assert_eq!(messages[0], ("initial-response".to_owned(), json!({})));
    let (event_type, event) = &messages[1];
    assert_eq!(event_type, "SubscribeToShardEvent");
    assert_eq!(event["Records"][0]["Data"], "b3Zlci1oMg==");
    assert_eq!(event["MillisBehindLatest"], 0);
    assert!(event["ContinuationSequenceNumber"].is_string());
}

#[tokio::test]
async fn boto3_registers_consumers_and_reads_subscribe_to_shard_events() {
    let server = serve_loopback(EmbeddedKinesis::new()).await;
    crate::clients::check_python_suite(&server.endpoint_url(), "test_boto3_efo.py", &[], 2).await;
}
