//! How a mapping spends its reads of kinesis-local: records read up to the shard's tip are
//! invoked without another `GetRecords` call first, when there is no batching window. Every
//! call counts against a shard's five reads a second on Kinesis.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use end_to_end::aws::{LocalAws, shipment, within};
use kinesis_esm::aws::ReadPacing;
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::{InProcess, Invocation};
use kinesis_esm::mapping::{EventSourceMapping, MappingOptions};
use kinesis_esm::source::{GetRecordsOutput, SourceError};
use shipping::Shipment;
use test_support::intercept::{Intercepted, InvokerHooks, SourceHooks};

/// A read or an invocation, with how many records it held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Read(usize),
    Invoke(usize),
}

type Steps = Arc<Mutex<Vec<Step>>>;

/// Notes each `GetRecords` answer and each invocation, in one list.
struct LogSteps(Steps);

impl SourceHooks for LogSteps {
    fn after_get_records(&self, output: &Result<GetRecordsOutput, SourceError>) {
        if let Ok(output) = output {
            self.0
                .lock()
                .unwrap()
                .push(Step::Read(output.records.len()));
        }
    }
}

impl InvokerHooks for LogSteps {
    type Note = ();

    fn before_invoke(&self, invocation: &Invocation) {
        let event: serde_json::Value = serde_json::from_slice(&invocation.payload).unwrap();
        let records = event["Records"].as_array().map_or(0, Vec::len);
        self.0.lock().unwrap().push(Step::Invoke(records));
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
        Arc::new(Intercepted::new(
            aws.source(ReadPacing::KINESIS_LIMITS).await,
            LogSteps(steps.clone()),
        )),
        Arc::new(Intercepted::new(
            Arc::new(InProcess::service(shipping::function())),
            LogSteps(steps.clone()),
        )),
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
