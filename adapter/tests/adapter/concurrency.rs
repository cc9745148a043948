//! Several invocations in flight at once against one handler and one state, as on Lambda
//! Managed Instances (`AWS_LAMBDA_MAX_CONCURRENCY` above 1). Each test's handler waits on a
//! barrier that opens only once every invocation is inside the handler, so the test fails
//! (by its timeout) if the invocations are served one after another.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lambda_kinesis::lambda_runtime::{Context, LambdaEvent};
use lambda_kinesis::testing::{TestEvent, settle_concurrently_with_state};
use lambda_kinesis::tower::ServiceExt as _;
use lambda_kinesis::wire::KinesisBatch;
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
use tokio::sync::Barrier;

use crate::support::Decision;

/// How many invocations each test keeps in flight at once.
const IN_FLIGHT: usize = 4;

/// Long enough for any machine to get every invocation to the barrier; a run that serves them
/// one by one never gets there.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The state concurrent invocations share: the barrier, and how many records they handled.
struct Shared {
    all_in_flight: Barrier,
    handled: AtomicUsize,
}

impl Shared {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            all_in_flight: Barrier::new(IN_FLIGHT),
            handled: AtomicUsize::new(0),
        })
    }
}

/// The first `IN_FLIGHT` records handled wait at the barrier, then each record does what it
/// says. No invocation gets past its first record before the barrier opens, so those are the
/// invocations' first records, and the barrier opens only with all of them in flight.
async fn meet_then_decide(shared: &Arc<Shared>, decision: &Decision) -> HandlerOutcome {
    if shared.handled.fetch_add(1, Ordering::SeqCst) < IN_FLIGHT {
        shared.all_in_flight.wait().await;
    }
    decision.outcome()
}

fn event(decisions: &[Decision]) -> TestEvent {
    decisions
        .iter()
        .fold(TestEvent::new(), |event, decision| event.json(decision))
}

#[tokio::test]
async fn the_testing_kit_settles_several_events_at_once_against_one_state() {
    let shared = Shared::new();
    let events: Vec<_> = (0..IN_FLIGHT)
        .map(|_| event(&[Decision::Ack, Decision::Drop, Decision::Ack]))
        .collect();
    let settling = settle_concurrently_with_state(Arc::clone(&shared), meet_then_decide, &events);
    let settlements = tokio::time::timeout(TIMEOUT, settling)
        .await
        .expect("every event was in flight at once");
    let summaries: Vec<_> = settlements.iter().map(|s| s.summary()).collect();
    assert_eq!(summaries, vec!["ack drop ack"; IN_FLIGHT]);
    // One state counted across every event.
    assert_eq!(shared.handled.load(Ordering::SeqCst), 3 * IN_FLIGHT);
}

fn invocation(event: &TestEvent, request: usize) -> LambdaEvent<KinesisBatch> {
    let mut context = Context::default();
    context.request_id = format!("request-{request}");
    LambdaEvent::new(KinesisBatch::from(event), context)
}

/// As `lambda_runtime`'s `run_concurrent` serves the adapter: one clone per worker, each worker
/// a task of a multi-threaded runtime, every clone sharing the handler and its state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_serves_invocations_concurrently_with_one_shared_state() {
    let shared = Shared::new();
    let adapter = KinesisAdapter::with_state(Arc::clone(&shared), meet_then_decide);
    let workers: Vec<_> = (0..IN_FLIGHT)
        .map(|request| {
            let worker = adapter.clone();
            let decisions = [Decision::Ack, Decision::Hold, Decision::Ack];
            let invocation = invocation(&event(&decisions), request);
            tokio::spawn(async move { worker.oneshot(invocation).await })
        })
        .collect();
    let responses = tokio::time::timeout(TIMEOUT, futures_util::future::join_all(workers))
        .await
        .expect("every invocation was in flight at once");
    for response in responses {
        let response = response
            .expect("no worker panicked")
            .expect("no adapter error");
        // Each invocation answers for its own batch: its own held record, nothing else.
        let failures = &response.failures().batch_item_failures;
        assert_eq!(failures.len(), 1);
    }
    // Each invocation stopped at its held record: two records handled in each.
    assert_eq!(shared.handled.load(Ordering::SeqCst), 2 * IN_FLIGHT);
}
