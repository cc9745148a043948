//! The HTTP envelope itself: raw requests, Kinesis' error bodies, the answers' shapes, and the endpoint's stop.

use super::*;

/// One raw HTTP exchange: status, headers (lowercase names) and body.
pub(crate) async fn exchange(
    server: &ServerHandle,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut stream = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let mut request = format!(
        "{method} / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
        server.local_addr(),
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    within_timeout("reading an answer", stream.read_to_end(&mut answer))
        .await
        .unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|line| line.split_once(": "))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(header, _)| header == name)
        .map(|(_, value)| value.as_str())
}

/// A JSON 1.1 call over raw HTTP: status and parsed body (`null` for an empty one).
async fn call(server: &ServerHandle, operation: &str, body: &Value) -> (u16, Value) {
    let target = format!("Kinesis_20131202.{operation}");
    let (status, headers, body) = exchange(
        server,
        "POST",
        &[
            ("Content-Type", "application/x-amz-json-1.1"),
            ("X-Amz-Target", &target),
        ],
        &body.to_string(),
    )
    .await;
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/x-amz-json-1.1")
    );
    let request_id = header(&headers, "x-amzn-requestid").expect("every answer has a request id");
    assert_eq!(request_id.len(), 36, "{request_id}");
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&body).unwrap()
    };
    (status, body)
}

#[track_caller]
fn check_error_body(answer: (u16, Value), expected_type: &str, expected_message_part: &str) {
    let (status, body) = answer;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["__type"], expected_type, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains(expected_message_part),
        "`{message}` should mention `{expected_message_part}`"
    );
}

#[tokio::test]
async fn the_envelope_answers_with_kinesis_error_bodies() {
    let kinesis = EmbeddedKinesis::new();
    let (server, _client) = listen(&kinesis).await;

    check_error_body(
        call(&server, "CreateChannel", &json!({})).await,
        "UnknownOperationException",
        "CreateChannel",
    );
    check_error_body(
        call(&server, "DescribeStreamSummary", &json!({"StreamName": 5})).await,
        "SerializationException",
        "invalid type",
    );
    check_error_body(
        call(&server, "CreateStream", &json!({"ShardCount": 1})).await,
        "ValidationException",
        "Value null at 'streamName'",
    );
    check_error_body(
        call(
            &server,
            "CreateStream",
            &json!({"StreamName": "s", "ShardCount": 0}),
        )
        .await,
        "ValidationException",
        "Value '0' at 'shardCount' failed to satisfy constraint: Member must have value greater \
         than or equal to 1",
    );
    check_error_body(
        call(
            &server,
            "CreateStream",
            &json!({"StreamName": "s", "StreamModeDetails": {"StreamMode": "ON_DEMAND"}, "ShardCount": 2}),
        )
        .await,
        "InvalidArgumentException",
        "takes no ShardCount",
    );
    assert_eq!(
        call(
            &server,
            "CreateStream",
            &json!({"StreamName": "s", "ShardCount": 1})
        )
        .await,
        (200, Value::Null)
    );
    check_error_body(
        call(
            &server,
            "PutRecord",
            &json!({"StreamName": "s", "PartitionKey": "k", "Data": "not base64!"}),
        )
        .await,
        "SerializationException",
        "base64",
    );
    check_error_body(
        call(
            &server,
            "PutRecords",
            &json!({"StreamName": "s", "Records": []}),
        )
        .await,
        "ValidationException",
        "at 'records' failed to satisfy constraint: Member must have length greater than or \
         equal to 1",
    );

    let (status, _, body) = exchange(&server, "POST", &[], "{}").await;
    check_error_body(
        (status, serde_json::from_str(&body).unwrap()),
        "UnknownOperationException",
        "X-Amz-Target",
    );
    let (status, _, body) = exchange(&server, "GET", &[], "").await;
    check_error_body(
        (status, serde_json::from_str(&body).unwrap()),
        "UnknownOperationException",
        "POST",
    );
}

#[tokio::test]
async fn answers_have_the_shapes_of_the_api_reference() {
    let (kinesis, clock) = kinesis_on_manual_clock();
    let (server, _client) = listen(&kinesis).await;
    kinesis.create_stream("shapes", 1).unwrap();
    clock.advance(Duration::from_millis(123));
    let (status, put) = call(
        &server,
        "PutRecord",
        &json!({"StreamName": "shapes", "PartitionKey": "k", "Data": "aGVsbG8="}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(put["ShardId"], "shardId-000000000000");
    assert_eq!(put["EncryptionType"], "NONE");
    let sequence_number = put["SequenceNumber"].as_str().unwrap().to_owned();
    kinesis
        .split_shard("shapes", "shardId-000000000000", &UPPER_HALF.to_string())
        .unwrap();

    let (_, iterator) = call(
        &server,
        "GetShardIterator",
        &json!({
            "StreamName": "shapes",
            "ShardId": "shardId-000000000000",
            "ShardIteratorType": "TRIM_HORIZON"
        }),
    )
    .await;
    let (status, read) = call(
        &server,
        "GetRecords",
        &json!({"ShardIterator": iterator["ShardIterator"]}),
    )
    .await;
    assert_eq!(status, 200);
    let child = |id: &str, from: u128, to: u128| {
        json!({
            "ShardId": id,
            "ParentShards": ["shardId-000000000000"],
            "HashKeyRange": {"StartingHashKey": from.to_string(), "EndingHashKey": to.to_string()}
        })
    };
    // The record and the shard's end come in one answer: no next iterator, the children.
    assert_eq!(
        read,
        json!({
            "Records": [{
                "SequenceNumber": sequence_number,
                "ApproximateArrivalTimestamp": 1_700_000_000.123,
                "Data": "aGVsbG8=",
                "PartitionKey": "k"
            }],
            "MillisBehindLatest": 0,
            "ChildShards": [
                child("shardId-000000000001", 0, UPPER_HALF - 1),
                child("shardId-000000000002", UPPER_HALF, u128::MAX)
            ]
        })
    );

    let (_, summary) = call(
        &server,
        "DescribeStreamSummary",
        &json!({"StreamName": "shapes"}),
    )
    .await;
    assert_eq!(
        summary,
        json!({"StreamDescriptionSummary": {
            "StreamName": "shapes",
            "StreamARN": "arn:aws:kinesis:us-east-1:000000000000:stream/shapes",
            "StreamStatus": "ACTIVE",
            "StreamModeDetails": {"StreamMode": "PROVISIONED"},
            "RetentionPeriodHours": 24,
            "StreamCreationTimestamp": 1_700_000_000.0,
            "EnhancedMonitoring": [{"ShardLevelMetrics": []}],
            "EncryptionType": "NONE",
            "OpenShardCount": 2,
            "ConsumerCount": 0,
            "MaxRecordSizeInKiB": 1024,
            "RecordDistributionStrategy": "USER_PARTITION_KEY"
        }})
    );
}

#[tokio::test]
async fn stop_closes_the_endpoint() {
    let kinesis = EmbeddedKinesis::new();
    let (server, client) = listen(&kinesis).await;
    let addr = server.local_addr();
    // A kept-alive connection from the SDK must not hold the stop up.
    client.list_streams().send().await.unwrap();
    within_timeout("stopping the endpoint", server.stop()).await;
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn a_list_shards_token_does_not_outlive_its_stream() {
    let (kinesis, clock) = kinesis_on_manual_clock();
    let (_server, client) = listen(&kinesis).await;
    create(&client, "reborn", 3).await;
    let first = client
        .list_shards()
        .stream_name("reborn")
        .max_results(1)
        .send()
        .await
        .unwrap();
    let token = first.next_token().unwrap().to_owned();
    kinesis.delete_stream("reborn").unwrap();
    clock.advance(Duration::from_secs(1));
    kinesis.create_stream("reborn", 3).unwrap();
    expect_errors! {
        client.list_shards().next_token(token)
            => "ResourceNotFoundException", &["created at another time"];
        client.list_shards().stream_name("reborn")
            .stream_creation_timestamp(DateTime::from(start_time()))
            => "ResourceNotFoundException", &["created at another time"];
    }
    let current = client
        .list_shards()
        .stream_name("reborn")
        .stream_creation_timestamp(DateTime::from(start_time() + Duration::from_secs(1)))
        .send()
        .await
        .unwrap();
    assert_eq!(current.shards().len(), 3);
}
