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

pub(crate) mod envelope;
mod shards;
