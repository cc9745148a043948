//! The emulator's own Kinesis source (`SdkKinesis`) and the event source mapping on top of it,
//! reading the embedded Kinesis served over the Kinesis API: what `--kinesis-endpoint` does.
//!
//! Run with `cargo test --workspace --test integration sdk_source`. Each test starts its own
//! endpoint on a free loopback port; nothing else needs to run.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_sdk_kinesis::Client;
use kinesis_esm::aws::{AwsConnection, ReadPacing, SdkKinesis};
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::kinesis::http::{self, ServerHandle};
use kinesis_esm::kinesis::{EmbeddedKinesis, PutRecordsEntry};
use kinesis_esm::mapping::{EventSourceMapping, MappingOptions, ShardPhase};
use kinesis_esm::source::{IteratorPosition, ShardSource};
use serde_json::json;

use crate::support::within_timeout;

/// The first hash key of the upper half of the hash key space.
const UPPER_HALF: u128 = 1 << 127;

/// Serves `kinesis` on a free port, with an SDK client pointed at it.
async fn serve(kinesis: &EmbeddedKinesis) -> (ServerHandle, Client) {
    crate::support::init_logging();
    let server = http::serve(kinesis.clone(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let config = AwsConnection::local(server.endpoint_url())
        .sdk_config()
        .await
        .unwrap();
    (server, Client::new(&config))
}

#[tokio::test]
async fn sdk_kinesis_source_sees_what_the_embedded_kinesis_holds() {
    let kinesis = EmbeddedKinesis::new();
    let (server, _client) = serve(&kinesis).await;
    let source = SdkKinesis::new(Some(&server.endpoint_url()), "us-east-1")
        .await
        .unwrap()
        .with_read_pacing(ReadPacing::UNLIMITED)
        .with_list_shards_page_size(2);
    source.create_stream("source", 3).await.unwrap();
    for index in 0..12 {
        source
            .put_record("source", &format!("key-{index}"), format!("record {index}"))
            .await
            .unwrap();
    }
    kinesis
        .split_shard(
            "source",
            "shardId-000000000001",
            &(UPPER_HALF - 5).to_string(),
        )
        .unwrap();
    kinesis
        .put_records(
            "source",
            (0..6)
                .map(|index| PutRecordsEntry::new(format!("after-{index}"), "after split"))
                .collect(),
        )
        .unwrap();

    // Through the endpoint, over pages of two shards, the source sees the same shards.
    let description = source.describe_stream("source").await.unwrap();
    assert_eq!(description.arn.to_string(), kinesis.stream_arn("source"));
    // The API carries times to the millisecond.
    let created = kinesis.describe_stream_summary("source").unwrap().created;
    let created_millis = created.duration_since(SystemTime::UNIX_EPOCH).unwrap();
    assert_eq!(
        description.created,
        SystemTime::UNIX_EPOCH + Duration::from_millis(created_millis.as_millis() as u64)
    );
    let shards = source.list_shards("source").await.unwrap();
    assert_eq!(shards, kinesis.list_shards("source").unwrap());
    assert_eq!(shards.len(), 5);

    // And reads the same records, to the same end with the same children.
    for shard in &shards {
        let mut through_http = source
            .shard_iterator("source", &shard.shard_id, &IteratorPosition::TrimHorizon)
            .await
            .unwrap();
        let mut direct = kinesis
            .get_shard_iterator("source", &shard.shard_id, &IteratorPosition::TrimHorizon)
            .unwrap();
        loop {
            let from_http = source.get_records(&through_http, 3).await.unwrap();
            let from_memory = kinesis.get_records(&direct, 3).unwrap();
            assert_eq!(from_http.records, from_memory.records, "{}", shard.shard_id);
            assert_eq!(from_http.child_shards, from_memory.child_shards);
            assert_eq!(
                from_http.next_shard_iterator.is_some(),
                from_memory.next_shard_iterator.is_some()
            );
            match (
                from_http.next_shard_iterator,
                from_memory.next_shard_iterator,
            ) {
                (Some(next_http), Some(next_direct)) if !from_memory.records.is_empty() => {
                    through_http = next_http;
                    direct = next_direct;
                }
                _ => break,
            }
        }
    }
}

#[tokio::test]
async fn the_event_source_mapping_reads_the_endpoint_across_a_split() {
    let kinesis = EmbeddedKinesis::new();
    let (server, _client) = serve(&kinesis).await;
    kinesis.create_stream("shipments", 1).unwrap();
    let shipment = |id: u64| {
        PutRecordsEntry::new(
            format!("shipment-{id}"),
            json!({"id": id, "address": "1 Main St", "carrier": "dhl"}).to_string(),
        )
    };
    kinesis
        .put_records("shipments", (0..20).map(shipment).collect())
        .unwrap();
    kinesis
        .split_shard("shipments", "shardId-000000000000", &UPPER_HALF.to_string())
        .unwrap();
    kinesis
        .put_records("shipments", (20..50).map(shipment).collect())
        .unwrap();

    let source = SdkKinesis::new(Some(&server.endpoint_url()), "us-east-1")
        .await
        .unwrap()
        .with_read_pacing(ReadPacing::UNLIMITED);
    let mut config = MappingConfig::new("shipping", "shipments", StartingPosition::TrimHorizon);
    config.batch_size = 7;
    config.report_batch_item_failures = true;
    let mapping = EventSourceMapping::new(
        config,
        Arc::new(source),
        Arc::new(InProcess::service(shipping::function())),
    )
    .options(MappingOptions {
        poll_interval: Duration::from_millis(20),
        shard_sync_interval: Duration::from_millis(100),
        ..MappingOptions::default()
    })
    .start();
    let status = within_timeout(
        "the mapping settling every shipment",
        mapping.wait_for(|status| status.totals().acked == 50 && status.is_idle()),
    )
    .await;
    let phases: Vec<(&str, ShardPhase)> = status
        .shards
        .values()
        .map(|shard| (shard.shard_id.as_str(), shard.phase))
        .collect();
    assert_eq!(
        phases,
        [
            ("shardId-000000000000", ShardPhase::Ended),
            ("shardId-000000000001", ShardPhase::CaughtUp),
            ("shardId-000000000002", ShardPhase::CaughtUp),
        ]
    );
    assert_eq!(status.totals().delivered, 50, "each shipment once");
    mapping.stop().await;
}
