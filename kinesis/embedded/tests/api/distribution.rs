//! Streams without partition keys: `RecordDistributionStrategy` `AUTO` on `CreateStream` and
//! `UpdateStreamRecordDistributionStrategy`, keyless records spread over the shards and read
//! back without a key.

use std::collections::BTreeMap;

use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::{
    PutRecordsRequestEntry, RecordDistributionStrategy, ShardIteratorType,
};

use crate::support::{
    Endpoint, MemoryJournal, check_failure, endpoint, expect_errors, on_demand, serve,
};

impl Endpoint {
    async fn create_on_demand(&self, stream: &str, strategy: Option<RecordDistributionStrategy>) {
        self.create_with(stream, |create| {
            create
                .stream_mode_details(on_demand())
                .set_record_distribution_strategy(strategy)
        })
        .await;
    }

    async fn strategy(&self, stream: &str) -> Option<RecordDistributionStrategy> {
        self.summary(stream).await.record_distribution_strategy
    }

    /// Puts `count` records without partition keys in one call.
    async fn put_keyless(&self, stream: &str, count: usize) -> Result<(), (String, String, u16)> {
        let records = (0..count).map(|n| {
            PutRecordsRequestEntry::builder()
                .data(Blob::new(format!("record {n}")))
                .build()
                .unwrap()
        });
        self.put_entries(stream, records).await
    }

    /// Every record of every shard: how many each shard holds, and whether any has a key.
    async fn read_all(&self, stream: &str) -> (BTreeMap<String, usize>, bool) {
        let (mut counts, mut keyed) = (BTreeMap::new(), false);
        let shards = self
            .client
            .list_shards()
            .stream_name(stream)
            .send()
            .await
            .unwrap();
        for shard in shards.shards() {
            let iterator = self
                .client
                .get_shard_iterator()
                .stream_name(stream)
                .shard_id(shard.shard_id())
                .shard_iterator_type(ShardIteratorType::TrimHorizon)
                .send()
                .await
                .unwrap();
            let read = self
                .client
                .get_records()
                .shard_iterator(iterator.shard_iterator().unwrap())
                .send()
                .await
                .unwrap();
            keyed |= read
                .records()
                .iter()
                .any(|record| record.partition_key().is_some());
            counts.insert(shard.shard_id().to_owned(), read.records().len());
        }
        (counts, keyed)
    }
}

#[tokio::test]
async fn an_auto_stream_spreads_keyless_records_over_its_shards() {
    let endpoint = endpoint().await;
    endpoint
        .create_on_demand("spread", Some(RecordDistributionStrategy::Auto))
        .await;
    assert_eq!(
        endpoint.strategy("spread").await,
        Some(RecordDistributionStrategy::Auto)
    );
    endpoint.put_keyless("spread", 400).await.unwrap();
    let (counts, keyed) = endpoint.read_all("spread").await;
    assert_eq!(counts.len(), 4);
    assert!(
        counts.values().all(|&count| (95..=105).contains(&count)),
        "{counts:?}"
    );
    assert!(
        !keyed,
        "a record put without a key is read back without one"
    );
}

#[tokio::test]
async fn a_stream_distributes_by_partition_key_by_default_and_refuses_keyless_records() {
    let endpoint = endpoint().await;
    endpoint.create_on_demand("keyed", None).await;
    assert_eq!(
        endpoint.strategy("keyed").await,
        Some(RecordDistributionStrategy::UserPartitionKey)
    );
    check_failure(
        endpoint.put_keyless("keyed", 1).await.unwrap_err(),
        "InvalidArgumentException",
        &["stream keyed", "partition key of record 0 has 0 characters"],
    );

    // Switched to AUTO, it takes them; switched back, it refuses them again.
    let arn = endpoint.kinesis.stream_arn("keyed");
    for (strategy, takes_keyless) in [
        (RecordDistributionStrategy::Auto, true),
        (RecordDistributionStrategy::UserPartitionKey, false),
    ] {
        endpoint
            .client
            .update_stream_record_distribution_strategy()
            .stream_arn(&arn)
            .record_distribution_strategy(strategy.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(endpoint.strategy("keyed").await, Some(strategy));
        assert_eq!(
            endpoint.put_keyless("keyed", 1).await.is_ok(),
            takes_keyless
        );
    }
}

#[tokio::test]
async fn only_on_demand_streams_take_auto() {
    let endpoint = endpoint().await;
    expect_errors! {
        endpoint.client.create_stream().stream_name("provisioned").shard_count(2)
            .record_distribution_strategy(RecordDistributionStrategy::Auto)
            => "InvalidArgumentException", &["ON_DEMAND", "stream provisioned"];
    }
    endpoint.kinesis.create_stream("provisioned", 2).unwrap();
    expect_errors! {
        endpoint.client.update_stream_record_distribution_strategy()
            .stream_arn(endpoint.kinesis.stream_arn("provisioned"))
            .record_distribution_strategy(RecordDistributionStrategy::Auto)
            => "InvalidArgumentException", &["ON_DEMAND", "stream provisioned"];
        endpoint.client.update_stream_record_distribution_strategy()
            .stream_arn(endpoint.kinesis.stream_arn("provisioned"))
            .record_distribution_strategy(RecordDistributionStrategy::from("RANDOM"))
            => "ValidationException", &["'RANDOM' at 'recordDistributionStrategy'"];
    }
}

#[tokio::test]
async fn the_strategy_is_kept_across_a_restart() {
    let (journal, endpoint) = MemoryJournal::serve().await;
    endpoint
        .create_on_demand("spread", Some(RecordDistributionStrategy::Auto))
        .await;
    endpoint.put_keyless("spread", 8).await.unwrap();
    let restarted = serve(journal.restored()).await;
    assert_eq!(
        restarted.strategy("spread").await,
        Some(RecordDistributionStrategy::Auto)
    );
    let (counts, keyed) = restarted.read_all("spread").await;
    assert_eq!(counts.values().sum::<usize>(), 8);
    assert!(!keyed);
}
