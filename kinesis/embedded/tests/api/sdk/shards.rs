//! Resharding through the SDK: a split and a merge read to their ends, `UpdateShardCount`, and `ListShards`' pages and filters.

use super::*;

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
