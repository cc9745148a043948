//! Records up to 10 MiB: `MaxRecordSizeInKiB` on `CreateStream`, `UpdateMaxRecordSize`, the
//! limits that follow for `PutRecord` and `PutRecords`, and the setting kept across a restart.

use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_kinesis::types::PutRecordsRequestEntry;

use crate::support::{
    Endpoint, MemoryJournal, check_failure, create, endpoint, expect_errors, failure, get_records,
    serve, trim_horizon_iterator,
};

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

/// A record of `size` bytes, data and partition key `key` together.
fn data_for(key: &str, size: usize) -> Blob {
    Blob::new(vec![7_u8; size - key.len()])
}

impl Endpoint {
    async fn create_sized(&self, stream: &str, max_kib: i32) {
        self.create_with(stream, |create| {
            create.shard_count(1).max_record_size_in_kib(max_kib)
        })
        .await;
    }

    async fn max_record_size_kib(&self, stream: &str) -> Option<i32> {
        self.summary(stream).await.max_record_size_in_kib
    }

    async fn put_sized(&self, stream: &str, size: usize) -> Result<(), (String, String, u16)> {
        let put = self
            .client
            .put_record()
            .stream_name(stream)
            .partition_key("k")
            .data(data_for("k", size))
            .send()
            .await;
        put.map(drop).map_err(|error| failure::<(), _>(Err(error)))
    }

    async fn put_records_sized(
        &self,
        stream: &str,
        sizes: &[usize],
    ) -> Result<(), (String, String, u16)> {
        let records = sizes.iter().enumerate().map(|(position, &size)| {
            let key = format!("k{position}");
            PutRecordsRequestEntry::builder()
                .data(data_for(&key, size))
                .partition_key(key)
                .build()
                .unwrap()
        });
        self.put_entries(stream, records).await
    }
}

#[tokio::test]
async fn a_stream_takes_records_up_to_its_max_record_size() {
    let endpoint = endpoint().await;
    endpoint.create_sized("large", 2048).await;
    assert_eq!(endpoint.max_record_size_kib("large").await, Some(2048));

    endpoint.put_sized("large", 2 * MIB).await.unwrap();
    check_failure(
        endpoint.put_sized("large", 2 * MIB + 1).await.unwrap_err(),
        "InvalidArgumentException",
        &[
            "stream large",
            "2097153 bytes",
            "2097152",
            "MaxRecordSizeInKiB is 2048",
        ],
    );

    // The record reads back whole.
    let client = &endpoint.client;
    let read = get_records(client, trim_horizon_iterator(client, "large").await).await;
    assert_eq!(read.records().len(), 1);
    assert_eq!(read.records()[0].data().as_ref().len(), 2 * MIB - 1);
}

#[tokio::test]
async fn a_new_stream_takes_records_of_1_mib_until_updated() {
    let endpoint = endpoint().await;
    create(&endpoint.client, "plain", 1).await;
    assert_eq!(endpoint.max_record_size_kib("plain").await, Some(1024));
    endpoint.put_sized("plain", MIB).await.unwrap();
    check_failure(
        endpoint.put_sized("plain", MIB + 1).await.unwrap_err(),
        "InvalidArgumentException",
        &["stream plain", "the limit is 1048576"],
    );

    let arn = endpoint.kinesis.stream_arn("plain");
    endpoint
        .client
        .update_max_record_size()
        .stream_arn(&arn)
        .max_record_size_in_kib(10240)
        .send()
        .await
        .unwrap();
    assert_eq!(endpoint.max_record_size_kib("plain").await, Some(10240));
    endpoint.put_sized("plain", 10 * MIB).await.unwrap();
    check_failure(
        endpoint.put_sized("plain", 10 * MIB + 1).await.unwrap_err(),
        "InvalidArgumentException",
        &["the limit is 10485760"],
    );
}

#[tokio::test]
async fn max_record_sizes_out_of_range_are_validation_errors() {
    let endpoint = endpoint().await;
    let client = &endpoint.client;
    for kib in [1023, 10241] {
        expect_errors! {
            client.create_stream().stream_name("s").shard_count(1).max_record_size_in_kib(kib)
                => "ValidationException", &[&format!("Value '{kib}' at 'maxRecordSizeInKiB'")];
        }
    }
    endpoint.create_sized("s", 1024).await;
    let arn = endpoint.kinesis.stream_arn("s");
    expect_errors! {
        client.update_max_record_size().stream_arn(&arn).max_record_size_in_kib(1023)
            => "ValidationException", &["Member must have value greater than or equal to 1024"];
        client.update_max_record_size().stream_arn(&arn).max_record_size_in_kib(10241)
            => "ValidationException", &["Member must have value less than or equal to 10240"];
        client.update_max_record_size().stream_arn(endpoint.kinesis.stream_arn("missing"))
            .max_record_size_in_kib(2048) => "ResourceNotFoundException", &["missing"];
    }
}

#[tokio::test]
async fn put_records_carries_5_mib_or_10_mib_to_a_stream_of_large_records() {
    let endpoint = endpoint().await;
    endpoint.create_sized("plain", 1024).await;
    endpoint.create_sized("large", 4096).await;

    endpoint
        .put_records_sized("plain", &[MIB; 5])
        .await
        .unwrap();
    check_failure(
        endpoint
            .put_records_sized("plain", &[MIB, MIB, MIB, MIB, MIB, KIB])
            .await
            .unwrap_err(),
        "InvalidArgumentException",
        &["stream plain", "the limit is 5242880"],
    );

    endpoint
        .put_records_sized("large", &[4 * MIB, 4 * MIB, 2 * MIB])
        .await
        .unwrap();
    check_failure(
        endpoint
            .put_records_sized("large", &[4 * MIB, 4 * MIB, 2 * MIB, KIB])
            .await
            .unwrap_err(),
        "InvalidArgumentException",
        &["stream large", "the limit is 10485760"],
    );
}

#[tokio::test]
async fn the_max_record_size_is_kept_across_a_restart() {
    let (journal, endpoint) = MemoryJournal::serve().await;
    endpoint.create_sized("born-large", 3072).await;
    endpoint.create_sized("grown", 1024).await;
    endpoint
        .client
        .update_max_record_size()
        .stream_arn(endpoint.kinesis.stream_arn("grown"))
        .max_record_size_in_kib(5120)
        .send()
        .await
        .unwrap();

    let restarted = serve(journal.restored()).await;
    assert_eq!(
        restarted.max_record_size_kib("born-large").await,
        Some(3072)
    );
    assert_eq!(restarted.max_record_size_kib("grown").await, Some(5120));
    restarted.put_sized("grown", 5 * MIB).await.unwrap();
}
