//! The embedded Kinesis served over the Kinesis API, read and written by `aws-sdk-kinesis` as
//! is, and by raw HTTP for the envelope: streams, records, resharding, shard listings, errors.

use std::time::{Duration, SystemTime};

use aws_sdk_kinesis::Client;
use aws_sdk_kinesis::operation::get_records::GetRecordsOutput;
use aws_sdk_kinesis::primitives::{Blob, DateTime};
use aws_sdk_kinesis::types::{
    PutRecordsRequestEntry, ScalingType, ShardFilter, ShardFilterType, ShardIteratorType,
    StreamStatus,
};
use embedded_kinesis::http::ServerHandle;
use embedded_kinesis::{EmbeddedKinesis, ManualClock};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::support::{
    create, expect_errors, get_records, listen, listen_with_stream, put_record, summary,
    update_shard_count, within_timeout,
};

/// The first hash key of the upper half of the hash key space: where a two-shard stream's
/// second shard starts.
const UPPER_HALF: u128 = 1 << 127;
/// A quarter of the hash key space.
const QUARTER: u128 = 1 << 126;
/// When the manual clocks of these tests start: 2023-11-14T22:13:20Z.
const START_MILLIS: u64 = 1_700_000_000_000;

fn start_time() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(START_MILLIS)
}

/// An embedded Kinesis on a clock that only moves when told.
fn kinesis_on_manual_clock() -> (EmbeddedKinesis, ManualClock) {
    let clock = ManualClock::new(start_time());
    let kinesis = EmbeddedKinesis::builder().clock(clock.clone()).build();
    (kinesis, clock)
}

/// Data and partition key of records, in order.
fn contents(output: &GetRecordsOutput) -> Vec<(String, String)> {
    output
        .records()
        .iter()
        .map(|record| {
            (
                String::from_utf8(record.data().as_ref().to_vec()).unwrap(),
                record.partition_key().unwrap_or("(none)").to_owned(),
            )
        })
        .collect()
}

async fn iterator(
    client: &Client,
    stream: &str,
    shard: &str,
    kind: ShardIteratorType,
    sequence_number: Option<&str>,
    timestamp: Option<SystemTime>,
) -> String {
    client
        .get_shard_iterator()
        .stream_name(stream)
        .shard_id(shard)
        .shard_iterator_type(kind)
        .set_starting_sequence_number(sequence_number.map(str::to_owned))
        .set_timestamp(timestamp.map(DateTime::from))
        .send()
        .await
        .unwrap()
        .shard_iterator()
        .unwrap()
        .to_owned()
}

/// Reads a shard from `iterator` until the shard ends or a read comes back empty; returns
/// the records' data and the last output.
async fn read_to_end(client: &Client, iterator: String) -> (Vec<String>, GetRecordsOutput) {
    let mut data = Vec::new();
    let mut next = iterator;
    within_timeout("reading a shard", async {
        loop {
            let output = client
                .get_records()
                .shard_iterator(&next)
                .limit(2)
                .send()
                .await
                .unwrap();
            data.extend(contents(&output).into_iter().map(|(data, _)| data));
            match output.next_shard_iterator() {
                Some(iterator) if !output.records().is_empty() => next = iterator.to_owned(),
                _ => return (data, output),
            }
        }
    })
    .await
}

#[tokio::test]
async fn sdk_creates_describes_lists_and_deletes_streams() {
    let (kinesis, _clock) = kinesis_on_manual_clock();
    let (_server, client) = listen(&kinesis).await;
    create(&client, "orders", 3).await;
    create(&client, "audit", 1).await;

    let summary = summary(&client, "orders").await;
    assert_eq!(summary.stream_name(), "orders");
    assert_eq!(
        summary.stream_arn(),
        "arn:aws:kinesis:us-east-1:000000000000:stream/orders"
    );
    assert_eq!(summary.stream_status(), &StreamStatus::Active);
    assert_eq!(summary.open_shard_count(), 3);
    assert_eq!(summary.retention_period_hours(), 24);
    assert_eq!(
        summary.stream_creation_timestamp(),
        &DateTime::from(start_time())
    );
    assert_eq!(
        summary.encryption_type().map(|kind| kind.as_str()),
        Some("NONE")
    );

    let description = client
        .describe_stream()
        .stream_name("orders")
        .limit(2)
        .send()
        .await
        .unwrap();
    let description = description.stream_description().unwrap();
    let shard_ids: Vec<&str> = description
        .shards()
        .iter()
        .map(|shard| shard.shard_id())
        .collect();
    assert_eq!(shard_ids, ["shardId-000000000000", "shardId-000000000001"]);
    assert!(description.has_more_shards());
    let rest = client
        .describe_stream()
        .stream_name("orders")
        .exclusive_start_shard_id("shardId-000000000001")
        .send()
        .await
        .unwrap();
    let rest = rest.stream_description().unwrap();
    assert_eq!(rest.shards().len(), 1);
    assert!(!rest.has_more_shards());
    // A short form of the shard id names the same shard, as Kinesis reads it.
    for short in ["shardId-1", "x-1", "1"] {
        let rest = client
            .describe_stream()
            .stream_name("orders")
            .exclusive_start_shard_id(short)
            .send()
            .await
            .unwrap();
        let shards = rest.stream_description().unwrap().shards();
        assert_eq!(shards.len(), 1, "{short}");
        assert_eq!(shards[0].shard_id(), "shardId-000000000002", "{short}");
    }

    let listed = client.list_streams().send().await.unwrap();
    assert_eq!(listed.stream_names(), ["audit", "orders"]);
    assert!(!listed.has_more_streams());
    let first_page = client.list_streams().limit(1).send().await.unwrap();
    assert_eq!(first_page.stream_names(), ["audit"]);
    assert!(first_page.has_more_streams());
    let second_page = client
        .list_streams()
        .next_token(first_page.next_token().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(second_page.stream_names(), ["orders"]);
    assert_eq!(
        second_page.stream_summaries()[0].stream_arn(),
        "arn:aws:kinesis:us-east-1:000000000000:stream/orders"
    );

    client
        .delete_stream()
        .stream_name("orders")
        .send()
        .await
        .unwrap();
    expect_errors! {
        client.describe_stream_summary().stream_name("orders")
            => "ResourceNotFoundException", &["Stream orders under account 000000000000 not found"];
    }
    assert_eq!(kinesis.list_streams(), ["audit"]);
}

#[tokio::test]
async fn sdk_puts_and_reads_back_with_every_iterator_type() {
    let (kinesis, clock) = kinesis_on_manual_clock();
    let (_server, client) = listen(&kinesis).await;
    create(&client, "events", 1).await;
    let shard = "shardId-000000000000";

    let first = put_record(&client, "events", "key-0", "zero").await;
    assert_eq!(first.shard_id(), shard);
    clock.advance(Duration::from_millis(10_250));
    let batch_time = clock_now(&kinesis);
    let batch = client
        .put_records()
        .stream_name("events")
        .set_records(Some(
            ["one", "two", "three"]
                .iter()
                .enumerate()
                .map(|(index, data)| {
                    PutRecordsRequestEntry::builder()
                        .partition_key(format!("key-{}", index + 1))
                        .data(Blob::new(*data))
                        .build()
                        .unwrap()
                })
                .collect(),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(batch.failed_record_count(), Some(0));
    let sequence_numbers: Vec<&str> = std::iter::once(first.sequence_number())
        .chain(
            batch
                .records()
                .iter()
                .map(|entry| entry.sequence_number().unwrap()),
        )
        .collect();

    // TRIM_HORIZON: everything, with its keys, sequence numbers and arrival times.
    let trim_horizon = iterator(
        &client,
        "events",
        shard,
        ShardIteratorType::TrimHorizon,
        None,
        None,
    )
    .await;
    let all = get_records(&client, &trim_horizon).await;
    assert_eq!(
        contents(&all),
        [
            ("zero".to_owned(), "key-0".to_owned()),
            ("one".to_owned(), "key-1".to_owned()),
            ("two".to_owned(), "key-2".to_owned()),
            ("three".to_owned(), "key-3".to_owned()),
        ]
    );
    let read_numbers: Vec<&str> = all
        .records()
        .iter()
        .map(|record| record.sequence_number())
        .collect();
    assert_eq!(read_numbers, sequence_numbers);
    let arrivals: Vec<i128> = all
        .records()
        .iter()
        .map(|record| millis(record.approximate_arrival_timestamp().unwrap()))
        .collect();
    let batch_millis = i128::from(START_MILLIS) + 10_250;
    assert_eq!(
        arrivals,
        [
            i128::from(START_MILLIS),
            batch_millis,
            batch_millis,
            batch_millis
        ]
    );
    assert_eq!(all.millis_behind_latest(), Some(0));
    assert!(all.child_shards().is_empty());

    // A partial read is behind by as long as the oldest unread record has waited.
    let partial = client
        .get_records()
        .shard_iterator(&trim_horizon)
        .limit(1)
        .send()
        .await
        .unwrap();
    assert_eq!(contents(&partial).len(), 1);
    assert_eq!(partial.millis_behind_latest(), Some(1));

    let at_second = iterator(
        &client,
        "events",
        shard,
        ShardIteratorType::AtSequenceNumber,
        Some(sequence_numbers[1]),
        None,
    )
    .await;
    let (data, _) = read_to_end(&client, at_second).await;
    assert_eq!(data, ["one", "two", "three"]);

    let after_second = iterator(
        &client,
        "events",
        shard,
        ShardIteratorType::AfterSequenceNumber,
        Some(sequence_numbers[1]),
        None,
    )
    .await;
    let (data, _) = read_to_end(&client, after_second).await;
    assert_eq!(data, ["two", "three"]);

    let at_batch_time = iterator(
        &client,
        "events",
        shard,
        ShardIteratorType::AtTimestamp,
        None,
        Some(batch_time),
    )
    .await;
    let (data, _) = read_to_end(&client, at_batch_time).await;
    assert_eq!(data, ["one", "two", "three"]);

    let latest = iterator(
        &client,
        "events",
        shard,
        ShardIteratorType::Latest,
        None,
        None,
    )
    .await;
    let nothing_yet = get_records(&client, &latest).await;
    assert!(nothing_yet.records().is_empty());
    put_record(&client, "events", "key-4", "four").await;
    let (data, _) = read_to_end(
        &client,
        nothing_yet.next_shard_iterator().unwrap().to_owned(),
    )
    .await;
    assert_eq!(data, ["four"]);
}

/// A time to the nearest millisecond: the SDK reads epoch seconds through an f64, a few
/// nanoseconds off.
fn millis(time: &DateTime) -> i128 {
    (time.as_nanos() + 500_000).div_euclid(1_000_000)
}

fn clock_now(kinesis: &EmbeddedKinesis) -> SystemTime {
    kinesis.current_time()
}

#[tokio::test]
async fn sdk_reads_a_split_and_a_merged_parent_to_its_end() {
    let (_kinesis, _server, client) = listen_with_stream("reshard", 2).await;
    let put = |hash_key: u128, data: &'static str| {
        let client = client.clone();
        async move {
            client
                .put_record()
                .stream_name("reshard")
                .partition_key("any")
                .explicit_hash_key(hash_key.to_string())
                .data(Blob::new(data))
                .send()
                .await
                .unwrap()
                .shard_id()
                .to_owned()
        }
    };
    assert_eq!(put(0, "low before").await, "shardId-000000000000");
    assert_eq!(put(UPPER_HALF, "high before").await, "shardId-000000000001");

    // shardId-0 splits into 2 (the lowest quarter) and 3 (the second quarter); 3 then merges
    // with shardId-1 (the upper half) into 4.
    client
        .split_shard()
        .stream_name("reshard")
        .shard_to_split("shardId-000000000000")
        .new_starting_hash_key(QUARTER.to_string())
        .send()
        .await
        .unwrap();
    client
        .merge_shards()
        .stream_name("reshard")
        .shard_to_merge("shardId-000000000003")
        .adjacent_shard_to_merge("shardId-000000000001")
        .send()
        .await
        .unwrap();
    assert_eq!(put(0, "low after").await, "shardId-000000000002");
    assert_eq!(put(UPPER_HALF, "high after").await, "shardId-000000000004");

    let shards = client
        .list_shards()
        .stream_name("reshard")
        .send()
        .await
        .unwrap();
    let lineage: Vec<(&str, Option<&str>, Option<&str>, bool)> = shards
        .shards()
        .iter()
        .map(|shard| {
            (
                shard.shard_id(),
                shard.parent_shard_id(),
                shard.adjacent_parent_shard_id(),
                shard
                    .sequence_number_range()
                    .unwrap()
                    .ending_sequence_number()
                    .is_some(),
            )
        })
        .collect();
    assert_eq!(
        lineage,
        [
            ("shardId-000000000000", None, None, true),
            ("shardId-000000000001", None, None, true),
            (
                "shardId-000000000002",
                Some("shardId-000000000000"),
                None,
                false
            ),
            (
                "shardId-000000000003",
                Some("shardId-000000000000"),
                None,
                true
            ),
            (
                "shardId-000000000004",
                Some("shardId-000000000003"),
                Some("shardId-000000000001"),
                false
            ),
        ]
    );
    let range = shards.shards()[4].hash_key_range().unwrap();
    assert_eq!(
        (range.starting_hash_key(), range.ending_hash_key()),
        (QUARTER.to_string().as_str(), u128::MAX.to_string().as_str())
    );

    let children = |output: &GetRecordsOutput| -> Vec<(String, Vec<String>)> {
        output
            .child_shards()
            .iter()
            .map(|child| (child.shard_id().to_owned(), child.parent_shards().to_vec()))
            .collect()
    };
    let split_parent = iterator(
        &client,
        "reshard",
        "shardId-000000000000",
        ShardIteratorType::TrimHorizon,
        None,
        None,
    )
    .await;
    let (data, end) = read_to_end(&client, split_parent).await;
    assert_eq!(data, ["low before"]);
    assert_eq!(end.next_shard_iterator(), None);
    assert_eq!(
        children(&end),
        [
            (
                "shardId-000000000002".to_owned(),
                vec!["shardId-000000000000".to_owned()]
            ),
            (
                "shardId-000000000003".to_owned(),
                vec!["shardId-000000000000".to_owned()]
            ),
        ]
    );
    let merged_parent = iterator(
        &client,
        "reshard",
        "shardId-000000000001",
        ShardIteratorType::TrimHorizon,
        None,
        None,
    )
    .await;
    let (data, end) = read_to_end(&client, merged_parent).await;
    assert_eq!(data, ["high before"]);
    assert_eq!(end.next_shard_iterator(), None);
    assert_eq!(
        children(&end),
        [(
            "shardId-000000000004".to_owned(),
            vec![
                "shardId-000000000003".to_owned(),
                "shardId-000000000001".to_owned()
            ]
        )]
    );
    let merged_child = iterator(
        &client,
        "reshard",
        "shardId-000000000004",
        ShardIteratorType::TrimHorizon,
        None,
        None,
    )
    .await;
    let (data, end) = read_to_end(&client, merged_child).await;
    assert_eq!(data, ["high after"]);
    assert!(
        end.next_shard_iterator().is_some(),
        "an open shard never ends"
    );
}

#[tokio::test]
async fn sdk_update_shard_count_scales_and_reports_both_counts() {
    let (_kinesis, _server, client) = listen_with_stream("scaling", 2).await;
    let output = update_shard_count(&client, "scaling", 4).await;
    assert_eq!(
        (
            output.stream_name(),
            output.current_shard_count(),
            output.target_shard_count()
        ),
        (Some("scaling"), Some(2), Some(4))
    );
    let open = client
        .list_shards()
        .stream_name("scaling")
        .shard_filter(
            ShardFilter::builder()
                .r#type(ShardFilterType::AtLatest)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(open.shards().len(), 4);
    expect_errors! {
        client.update_shard_count().stream_name("scaling").target_shard_count(9)
            .scaling_type(ScalingType::UniformScaling)
            => "LimitExceededException", &["more than double"];
    }
}

fn shard_ids(output: &aws_sdk_kinesis::operation::list_shards::ListShardsOutput) -> Vec<String> {
    output
        .shards()
        .iter()
        .map(|shard| shard.shard_id().to_owned())
        .collect()
}

fn ids(numbers: &[u32]) -> Vec<String> {
    numbers
        .iter()
        .map(|number| format!("shardId-{number:012}"))
        .collect()
}

fn filter(kind: ShardFilterType) -> aws_sdk_kinesis::types::builders::ShardFilterBuilder {
    ShardFilter::builder().r#type(kind)
}

#[tokio::test]
async fn sdk_list_shards_pages_filters_and_refuses_a_stream_with_a_token() {
    let (kinesis, clock) = kinesis_on_manual_clock();
    let (_server, client) = listen(&kinesis).await;
    create(&client, "many", 5).await;

    let mut pages = Vec::new();
    let mut page = client
        .list_shards()
        .stream_name("many")
        .max_results(2)
        .send()
        .await
        .unwrap();
    loop {
        pages.push(shard_ids(&page));
        let Some(token) = page.next_token().map(str::to_owned) else {
            break;
        };
        expect_errors! {
            client.list_shards().stream_name("many").next_token(&token)
                => "InvalidArgumentException",
                    &["NextToken and StreamName cannot be provided together"];
        }
        page = client
            .list_shards()
            .next_token(token)
            .max_results(2)
            .send()
            .await
            .unwrap();
    }
    assert_eq!(pages, [ids(&[0, 1]), ids(&[2, 3]), ids(&[4])]);

    let after = client
        .list_shards()
        .stream_name("many")
        .exclusive_start_shard_id("shardId-000000000002")
        .send()
        .await
        .unwrap();
    assert_eq!(shard_ids(&after), ids(&[3, 4]));
    let after_short = client
        .list_shards()
        .stream_name("many")
        .exclusive_start_shard_id("shard-2")
        .send()
        .await
        .unwrap();
    assert_eq!(shard_ids(&after_short), ids(&[3, 4]));

    // Split shard 0 ten seconds in: 0 closes, 5 and 6 open.
    clock.advance(Duration::from_secs(10));
    let split_time = clock_now(&kinesis);
    kinesis
        .split_shard("many", "shardId-000000000000", &(1_u128 << 120).to_string())
        .unwrap();
    clock.advance(Duration::from_secs(10));

    let filtered = |kind: ShardFilterType, time: Option<SystemTime>, shard: Option<&str>| {
        let client = client.clone();
        let shard_filter = filter(kind)
            .set_timestamp(time.map(DateTime::from))
            .set_shard_id(shard.map(str::to_owned))
            .build()
            .unwrap();
        async move {
            shard_ids(
                &client
                    .list_shards()
                    .stream_name("many")
                    .shard_filter(shard_filter)
                    .send()
                    .await
                    .unwrap(),
            )
        }
    };
    let everything = ids(&[0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(
        filtered(ShardFilterType::FromTrimHorizon, None, None).await,
        everything
    );
    assert_eq!(
        filtered(ShardFilterType::AtTrimHorizon, None, None).await,
        ids(&[0, 1, 2, 3, 4])
    );
    assert_eq!(
        filtered(ShardFilterType::AtLatest, None, None).await,
        ids(&[1, 2, 3, 4, 5, 6])
    );
    assert_eq!(
        filtered(
            ShardFilterType::AfterShardId,
            None,
            Some("shardId-000000000004")
        )
        .await,
        ids(&[5, 6])
    );
    let before_split = split_time - Duration::from_secs(5);
    assert_eq!(
        filtered(ShardFilterType::AtTimestamp, Some(before_split), None).await,
        ids(&[0, 1, 2, 3, 4])
    );
    let after_split = split_time + Duration::from_secs(5);
    assert_eq!(
        filtered(ShardFilterType::AtTimestamp, Some(after_split), None).await,
        ids(&[1, 2, 3, 4, 5, 6])
    );
    assert_eq!(
        filtered(ShardFilterType::FromTimestamp, Some(before_split), None).await,
        everything
    );
    assert_eq!(
        filtered(ShardFilterType::FromTimestamp, Some(after_split), None).await,
        ids(&[1, 2, 3, 4, 5, 6])
    );

    // A filter holds over every page.
    let first = client
        .list_shards()
        .stream_name("many")
        .shard_filter(filter(ShardFilterType::AtLatest).build().unwrap())
        .max_results(4)
        .send()
        .await
        .unwrap();
    assert_eq!(shard_ids(&first), ids(&[1, 2, 3, 4]));
    let token = first.next_token().unwrap().to_owned();
    let second = client
        .list_shards()
        .next_token(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(shard_ids(&second), ids(&[5, 6]));
    assert_eq!(second.next_token(), None);

    // Tokens last 300 seconds.
    clock.advance(Duration::from_secs(301));
    expect_errors! {
        client.list_shards().next_token(token) => "ExpiredNextTokenException", &["expired"];
    }

    expect_errors! {
        client.list_shards().stream_name("many")
            .shard_filter(filter(ShardFilterType::AtTimestamp).build().unwrap())
            => "InvalidArgumentException", &["needs a Timestamp"];
    }
}

#[tokio::test]
async fn sdk_errors_carry_kinesis_exception_names() {
    let (kinesis, clock) = kinesis_on_manual_clock();
    let (_server, client) = listen(&kinesis).await;
    create(&client, "present", 1).await;

    expect_errors! {
        client.put_record().stream_name("absent").partition_key("k").data(Blob::new("x"))
            => "ResourceNotFoundException", &["Stream absent under account 000000000000 not found"];
        client.list_shards().stream_name("absent") => "ResourceNotFoundException", &["absent"];
        client.get_shard_iterator().stream_name("present").shard_id("shardId-000000000009")
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            => "ResourceNotFoundException", &["Shard shardId-000000000009"];
        client.create_stream().stream_name("present").shard_count(1)
            => "ResourceInUseException", &["already exists"];
        client.get_shard_iterator().stream_name("present").shard_id("shardId-000000000000")
            .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
            => "InvalidArgumentException", &["needs a StartingSequenceNumber"];
    }
    let iterator = iterator(
        &client,
        "present",
        "shardId-000000000000",
        ShardIteratorType::TrimHorizon,
        None,
        None,
    )
    .await;
    expect_errors! {
        client.get_records().shard_iterator(&iterator).limit(10_001)
            => "ValidationException", &["Member must have value less than or equal to 10000"];
        client.get_records().shard_iterator("bm90IGFuIGl0ZXJhdG9y")
            => "InvalidArgumentException", &["Invalid ShardIterator"];
    }
    clock.advance(Duration::from_secs(301));
    expect_errors! {
        client.get_records().shard_iterator(&iterator)
            => "ExpiredIteratorException", &["Iterator expired"];
    }

    kinesis
        .split_shard("present", "shardId-000000000000", "1")
        .unwrap();
    expect_errors! {
        client.split_shard().stream_name("present").shard_to_split("shardId-000000000000")
            .new_starting_hash_key("5") => "ResourceInUseException", &["closed"];
        client.merge_shards().stream_name("present").shard_to_merge("shardId-000000000001")
            .adjacent_shard_to_merge("shardId-000000000001")
            => "InvalidArgumentException", &["not an adjacent pair"];
        client.create_stream().stream_name("bad name").shard_count(1)
            => "ValidationException", &["Value 'bad name' at 'streamName'"];
    }
}

#[tokio::test]
async fn sdk_stream_arn_works_wherever_a_stream_name_does() {
    let (kinesis, _server, client) = listen_with_stream("by-arn", 2).await;
    let arn = kinesis.stream_arn("by-arn");

    let put = client
        .put_record()
        .stream_arn(&arn)
        .partition_key("k")
        .data(Blob::new("via arn"))
        .send()
        .await
        .unwrap();
    let shards = client.list_shards().stream_arn(&arn).send().await.unwrap();
    assert_eq!(shards.shards().len(), 2);
    let iterator = client
        .get_shard_iterator()
        .stream_arn(&arn)
        .shard_id(put.shard_id())
        .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
        .starting_sequence_number(put.sequence_number())
        .send()
        .await
        .unwrap();
    let read = client
        .get_records()
        .stream_arn(&arn)
        .shard_iterator(iterator.shard_iterator().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(contents(&read), [("via arn".to_owned(), "k".to_owned())]);
    client
        .update_shard_count()
        .stream_arn(&arn)
        .target_shard_count(1)
        .scaling_type(ScalingType::UniformScaling)
        .send()
        .await
        .unwrap();
    let summary = client
        .describe_stream_summary()
        .stream_arn(&arn)
        .send()
        .await
        .unwrap();
    assert_eq!(
        summary
            .stream_description_summary()
            .unwrap()
            .open_shard_count(),
        1
    );
    expect_errors! {
        client.describe_stream_summary().stream_arn(kinesis.stream_arn("missing"))
            => "ResourceNotFoundException", &["missing"];
    }
    client
        .delete_stream()
        .stream_arn(&arn)
        .send()
        .await
        .unwrap();
    assert!(kinesis.list_streams().is_empty());
}

#[tokio::test]
async fn sdk_changes_retention_and_tags() {
    let (_kinesis, _server, client) = listen_with_stream("kept", 1).await;
    client
        .increase_stream_retention_period()
        .stream_name("kept")
        .retention_period_hours(48)
        .send()
        .await
        .unwrap();
    expect_errors! {
        client.increase_stream_retention_period().stream_name("kept").retention_period_hours(30)
            => "InvalidArgumentException", &["can not be shorter"];
    }
    client
        .decrease_stream_retention_period()
        .stream_name("kept")
        .retention_period_hours(36)
        .send()
        .await
        .unwrap();
    assert_eq!(summary(&client, "kept").await.retention_period_hours(), 36);

    client
        .add_tags_to_stream()
        .stream_name("kept")
        .tags("team", "shipping")
        .tags("tier", "gold")
        .tags("env", "dev")
        .send()
        .await
        .unwrap();
    client
        .remove_tags_from_stream()
        .stream_name("kept")
        .tag_keys("tier")
        .send()
        .await
        .unwrap();
    let tags = client
        .list_tags_for_stream()
        .stream_name("kept")
        .limit(1)
        .send()
        .await
        .unwrap();
    let pairs =
        |tags: &aws_sdk_kinesis::operation::list_tags_for_stream::ListTagsForStreamOutput| {
            tags.tags()
                .iter()
                .map(|tag| (tag.key().to_owned(), tag.value().unwrap_or("").to_owned()))
                .collect::<Vec<_>>()
        };
    assert_eq!(pairs(&tags), [("env".to_owned(), "dev".to_owned())]);
    assert!(tags.has_more_tags());
    let rest = client
        .list_tags_for_stream()
        .stream_name("kept")
        .exclusive_start_tag_key("env")
        .send()
        .await
        .unwrap();
    assert_eq!(pairs(&rest), [("team".to_owned(), "shipping".to_owned())]);
    assert!(!rest.has_more_tags());

    // A stream created again under the same name starts without tags.
    client
        .delete_stream()
        .stream_name("kept")
        .send()
        .await
        .unwrap();
    create(&client, "kept", 1).await;
    let fresh = client
        .list_tags_for_stream()
        .stream_name("kept")
        .send()
        .await
        .unwrap();
    assert!(fresh.tags().is_empty());
}

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
