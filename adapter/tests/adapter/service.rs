//! The adapter as a `tower::Service` over the Lambda event: layers fit around it, and an event
//! it cannot answer for is a function error with a meaningful type.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use lambda_kinesis::KinesisAdapter;
use lambda_kinesis::lambda_runtime::{Context, Diagnostic, LambdaEvent};
use lambda_kinesis::testing::TestEvent;
use lambda_kinesis::tower::{Service, ServiceBuilder, ServiceExt as _};
use lambda_kinesis::wire::{AdapterError, BatchResponse, KinesisBatch};

use crate::support::{Calls, Decision, decide};

fn invocation(event: &TestEvent) -> LambdaEvent<KinesisBatch> {
    let mut context = Context::default();
    context.request_id = "7c2b3a1e-request".to_owned();
    LambdaEvent::new(KinesisBatch::from(event), context)
}

#[tokio::test]
async fn layers_fit_around_the_adapter() {
    let request_ids = Calls::default();
    let invocations = Arc::new(AtomicUsize::new(0));
    let service = ServiceBuilder::new()
        // A layer written by hand, as users write them for metrics.
        .layer_fn(|inner| Counted {
            inner,
            invocations: Arc::clone(&invocations),
        })
        .map_request({
            let request_ids = request_ids.clone();
            move |event: LambdaEvent<KinesisBatch>| {
                request_ids.push(event.context.request_id.clone());
                event
            }
        })
        .map_response(|response: BatchResponse| {
            serde_json::to_string(&response).expect("a response serialises")
        })
        .service(KinesisAdapter::new(decide));

    let event = TestEvent::new().json(&Decision::Ack).json(&Decision::Hold);
    let answer = service.oneshot(invocation(&event)).await.unwrap();
    assert_eq!(
        answer,
        format!(
            r#"{{"batchItemFailures":[{{"itemIdentifier":"{}"}}]}}"#,
            event.sequence_number(1)
        )
    );
    assert_eq!(request_ids.taken(), ["7c2b3a1e-request"]);
    assert_eq!(invocations.load(Ordering::SeqCst), 1);
}

/// Counts the invocations that reach the service it wraps.
#[derive(Clone)]
struct Counted<S> {
    inner: S,
    invocations: Arc<AtomicUsize>,
}

impl<S: Service<R>, R> Service<R> for Counted<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> S::Future {
        self.invocations.fetch_add(1, Ordering::SeqCst);
        self.inner.call(request)
    }
}

#[tokio::test]
async fn an_event_that_mixes_shards_is_a_function_error() {
    let calls = Calls::default();
    let handler = calls.noting_handler(|decision: &Decision| decision.outcome());
    // Two one-shard events spliced into one.
    let json = |event: TestEvent| -> serde_json::Value {
        serde_json::from_slice(&event.to_json()).unwrap()
    };
    let mut mixed = json(
        TestEvent::new()
            .shard("shardId-000000000001")
            .json(&Decision::Ack),
    );
    let other = json(
        TestEvent::new()
            .shard("shardId-000000000002")
            .json(&Decision::Ack),
    );
    mixed["Records"]
        .as_array_mut()
        .unwrap()
        .push(other["Records"][0].clone());
    let batch = KinesisBatch::from_json(mixed.to_string().as_bytes()).unwrap();

    let error = KinesisAdapter::new(handler)
        .oneshot(LambdaEvent::new(batch, Context::default()))
        .await
        .expect_err("Lambda never mixes shards in one event");
    assert!(
        matches!(
            &error,
            AdapterError::MixedShards { first, second }
                if first == "shardId-000000000001" && second == "shardId-000000000002"
        ),
        "{error:?}"
    );
    let diagnostic = Diagnostic::from(error);
    assert_eq!(diagnostic.error_type, "LambdaKinesis.MixedShards");
    assert_eq!(
        diagnostic.error_message,
        "the event mixes records of shards shardId-000000000001 and shardId-000000000002; a Kinesis event comes from one shard"
    );
    assert!(calls.taken().is_empty(), "no record was handled");
}

#[tokio::test]
async fn an_empty_event_is_answered_with_an_empty_response() {
    let response = KinesisAdapter::new(decide)
        .oneshot(invocation(&TestEvent::new()))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_string(&response).unwrap(),
        r#"{"batchItemFailures":[]}"#
    );
}

#[tokio::test]
async fn the_adapter_is_a_cloneable_service_that_shares_its_handler() {
    let calls = Calls::default();
    let handler = calls.noting_handler(|decision: &Decision| decision.outcome());
    let adapter = KinesisAdapter::new(handler);
    let (first, second) = (adapter.clone(), adapter);
    first
        .oneshot(invocation(&TestEvent::new().json(&Decision::Ack)))
        .await
        .unwrap();
    second
        .oneshot(invocation(&TestEvent::new().json(&Decision::Drop)))
        .await
        .unwrap();
    assert_eq!(calls.taken(), [Decision::Ack, Decision::Drop]);
}
