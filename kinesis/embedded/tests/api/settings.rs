//! Settings a stream keeps and shows, with nothing else following: enhanced monitoring,
//! server-side encryption and warm throughput, each shown by `DescribeStream(Summary)` and kept
//! across a restart.

use aws_sdk_kinesis::types::{EncryptionType, MetricsName};

use crate::support::{
    Endpoint, MemoryJournal, create, endpoint, expect_errors, on_demand, put_record, serve,
};

impl Endpoint {
    /// The encryption type and key of `stream`, as `DescribeStreamSummary` shows them.
    async fn encryption(&self, stream: &str) -> (Option<EncryptionType>, Option<String>) {
        let summary = self.summary(stream).await;
        (summary.encryption_type, summary.key_id)
    }

    async fn create(&self, stream: &str) {
        create(&self.client, stream, 1).await;
    }

    async fn enabled_metrics(&self, stream: &str) -> Vec<MetricsName> {
        let summary = self.summary(stream).await;
        summary.enhanced_monitoring()[0]
            .shard_level_metrics()
            .to_vec()
    }
}

#[tokio::test]
async fn enhanced_monitoring_names_metrics_and_shows_them() {
    let endpoint = endpoint().await;
    endpoint.create("watched").await;
    assert!(endpoint.enabled_metrics("watched").await.is_empty());

    let enabled = endpoint
        .client
        .enable_enhanced_monitoring()
        .stream_name("watched")
        .shard_level_metrics(MetricsName::OutgoingBytes)
        .shard_level_metrics(MetricsName::IncomingBytes)
        .send()
        .await
        .unwrap();
    assert_eq!(enabled.stream_name(), Some("watched"));
    assert!(enabled.current_shard_level_metrics().is_empty());
    assert_eq!(
        enabled.desired_shard_level_metrics(),
        [MetricsName::IncomingBytes, MetricsName::OutgoingBytes]
    );
    assert_eq!(
        endpoint.enabled_metrics("watched").await,
        [MetricsName::IncomingBytes, MetricsName::OutgoingBytes]
    );

    let all = endpoint
        .client
        .enable_enhanced_monitoring()
        .stream_arn(endpoint.kinesis.stream_arn("watched"))
        .shard_level_metrics(MetricsName::All)
        .send()
        .await
        .unwrap();
    assert_eq!(all.desired_shard_level_metrics().len(), 7);

    let disabled = endpoint
        .client
        .disable_enhanced_monitoring()
        .stream_name("watched")
        .shard_level_metrics(MetricsName::All)
        .send()
        .await
        .unwrap();
    assert_eq!(disabled.current_shard_level_metrics().len(), 7);
    assert!(disabled.desired_shard_level_metrics().is_empty());
    assert!(endpoint.enabled_metrics("watched").await.is_empty());
}

#[tokio::test]
async fn enhanced_monitoring_refuses_unknown_metrics_and_missing_streams() {
    let endpoint = endpoint().await;
    expect_errors! {
        endpoint.client.enable_enhanced_monitoring().stream_name("any")
            .shard_level_metrics(MetricsName::from("IncomingFrogs"))
            => "ValidationException", &["'IncomingFrogs' at 'shardLevelMetrics.1.member'"];
        endpoint.client.disable_enhanced_monitoring().stream_name("missing")
            .shard_level_metrics(MetricsName::IncomingBytes)
            => "ResourceNotFoundException", &["missing"];
    }
}

#[tokio::test]
async fn encryption_names_its_key_until_stopped() {
    let endpoint = endpoint().await;
    endpoint.create("secret").await;
    assert_eq!(
        endpoint.encryption("secret").await,
        (Some(EncryptionType::None), None)
    );

    endpoint
        .client
        .start_stream_encryption()
        .stream_name("secret")
        .encryption_type(EncryptionType::Kms)
        .key_id("alias/aws/kinesis")
        .send()
        .await
        .unwrap();
    let kms = (
        Some(EncryptionType::Kms),
        Some("alias/aws/kinesis".to_owned()),
    );
    assert_eq!(endpoint.encryption("secret").await, kms);
    // Writes answer the stream's encryption, where AWS says to check it.
    let put = put_record(&endpoint.client, "secret", "k", "d").await;
    assert_eq!(put.encryption_type(), Some(&EncryptionType::Kms));
    let described = endpoint
        .client
        .describe_stream()
        .stream_name("secret")
        .send()
        .await
        .unwrap();
    let description = described.stream_description().unwrap();
    assert_eq!(description.encryption_type(), Some(&EncryptionType::Kms));
    assert_eq!(description.key_id(), Some("alias/aws/kinesis"));

    expect_errors! {
        endpoint.client.stop_stream_encryption().stream_name("secret")
            .encryption_type(EncryptionType::None).key_id("alias/aws/kinesis")
            => "InvalidArgumentException", &["stream secret", "KMS"];
    }
    endpoint
        .client
        .stop_stream_encryption()
        .stream_name("secret")
        .encryption_type(EncryptionType::Kms)
        .key_id("alias/aws/kinesis")
        .send()
        .await
        .unwrap();
    assert_eq!(
        endpoint.encryption("secret").await,
        (Some(EncryptionType::None), None)
    );
}

#[tokio::test]
async fn warm_throughput_is_kept_for_on_demand_streams_only() {
    let endpoint = endpoint().await;
    endpoint
        .create_with("warm", |create| {
            create
                .stream_mode_details(on_demand())
                .warm_throughput_mibps(50)
        })
        .await;
    let warm = endpoint.summary("warm").await.warm_throughput.unwrap();
    assert_eq!(warm.target_mibps(), Some(50));

    let updated = endpoint
        .client
        .update_stream_warm_throughput()
        .stream_name("warm")
        .warm_throughput_mibps(200)
        .send()
        .await
        .unwrap();
    assert_eq!(updated.stream_name(), Some("warm"));
    assert_eq!(updated.warm_throughput().unwrap().target_mibps(), Some(200));
    let warm = endpoint.summary("warm").await.warm_throughput.unwrap();
    assert_eq!(warm.current_mibps(), Some(200));

    endpoint.create("provisioned").await;
    expect_errors! {
        endpoint.client.update_stream_warm_throughput().stream_name("provisioned")
            .warm_throughput_mibps(200)
            => "InvalidArgumentException", &["stream provisioned", "ON_DEMAND"];
    }
}

#[tokio::test]
async fn settings_are_kept_across_a_restart() {
    let (journal, endpoint) = MemoryJournal::serve().await;
    endpoint.create("kept").await;
    endpoint
        .client
        .enable_enhanced_monitoring()
        .stream_name("kept")
        .shard_level_metrics(MetricsName::IteratorAgeMilliseconds)
        .send()
        .await
        .unwrap();
    endpoint
        .client
        .start_stream_encryption()
        .stream_name("kept")
        .encryption_type(EncryptionType::Kms)
        .key_id("alias/orders")
        .send()
        .await
        .unwrap();

    let restarted = serve(journal.restored()).await;
    assert_eq!(
        restarted.enabled_metrics("kept").await,
        [MetricsName::IteratorAgeMilliseconds]
    );
    assert_eq!(
        restarted.summary("kept").await.key_id(),
        Some("alias/orders")
    );
}
