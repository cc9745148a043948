//! How a mapping spends its reads of kinesis-local: records read up to the shard's tip are
//! invoked without another `GetRecords` call first, when there is no batching window. Every
//! call counts against a shard's five reads a second on Kinesis.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use end_to_end::aws::{LocalAws, shipment, within};
use kinesis_esm::aws::ReadPacing;
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::{InProcess, Invocation, InvokeError, InvokeOutcome, Invoker};
use kinesis_esm::mapping::{EventSourceMapping, MappingOptions};
use kinesis_esm::sequence::SequenceNumber;
use kinesis_esm::source::{
    GetRecordsOutput, IteratorPosition, Shard, ShardSource, SourceError, StreamDescription,
};
use shipping::Shipment;

/// A read or an invocation, with how many records it held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Read(usize),
    Invoke(usize),
}

type Steps = Arc<Mutex<Vec<Step>>>;

struct LoggedSource {
    inner: Arc<dyn ShardSource>,
    steps: Steps,
}

#[async_trait]
impl ShardSource for LoggedSource {
    async fn describe_stream(&self, stream: &str) -> Result<StreamDescription, SourceError> {
        self.inner.describe_stream(stream).await
    }

    async fn list_shards(&self, stream: &str) -> Result<Vec<Shard>, SourceError> {
        self.inner.list_shards(stream).await
    }

    async fn shard_iterator(
        &self,
        stream: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<String, SourceError> {
        self.inner.shard_iterator(stream, shard_id, position).await
    }

    async fn get_records(
        &self,
        shard_iterator: &str,
        limit: usize,
    ) -> Result<GetRecordsOutput, SourceError> {
        let output = self.inner.get_records(shard_iterator, limit).await?;
        self.steps
            .lock()
            .unwrap()
            .push(Step::Read(output.records.len()));
        Ok(output)
    }

    async fn wait_for_records(
        &self,
        stream: &str,
        shard_id: &str,
        after: Option<&SequenceNumber>,
        timeout: Duration,
    ) {
        self.inner
            .wait_for_records(stream, shard_id, after, timeout)
            .await;
    }
}

struct LoggedInvoker {
    inner: InProcess,
    steps: Steps,
}

#[async_trait]
impl Invoker for LoggedInvoker {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeOutcome, InvokeError> {
        let event: serde_json::Value = serde_json::from_slice(&invocation.payload).unwrap();
        let records = event["Records"].as_array().map_or(0, Vec::len);
        self.steps.lock().unwrap().push(Step::Invoke(records));
        self.inner.invoke(invocation).await
    }
}

#[tokio::test]
async fn records_read_up_to_the_tip_are_invoked_without_reading_again() {
    let aws = LocalAws::connect().await;
    let stream = aws.create_stream("reads", 1).await;
    let shipments: Vec<Shipment> = (1..=150).map(shipment).collect();
    aws.publish_shipments(&stream, &shipments).await;
    let steps = Steps::default();
    let mut config = MappingConfig::new("shipping", &stream, StartingPosition::TrimHorizon);
    config.batch_size = 100;
    config.report_batch_item_failures = true;
    let mapping = EventSourceMapping::new(
        config,
        Arc::new(LoggedSource {
            inner: aws.source(ReadPacing::KINESIS_LIMITS).await,
            steps: steps.clone(),
        }),
        Arc::new(LoggedInvoker {
            inner: InProcess::service(shipping::function()),
            steps: steps.clone(),
        }),
    )
    .options(MappingOptions {
        poll_interval: Duration::from_millis(100),
        ..MappingOptions::default()
    })
    .start();
    within(
        "every shipment settled",
        mapping.wait_for(|status| status.totals().acked == 150),
    )
    .await;
    within("stopping the mapping", mapping.stop()).await;
    let steps = steps.lock().unwrap().clone();
    assert_eq!(
        steps[..3],
        [Step::Read(150), Step::Invoke(100), Step::Invoke(50)],
        "{steps:?}"
    );
}
