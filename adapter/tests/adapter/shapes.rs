//! Every handler shape the adapter accepts compiles and runs.

use lambda_kinesis::testing::{TestEvent, settle};
use lambda_kinesis::{HandlerOutcome, RawData, RecordMeta};

async fn plain(n: &u32) -> HandlerOutcome {
    if *n > 1 {
        HandlerOutcome::retry()
    } else {
        HandlerOutcome::ack()
    }
}
async fn with_meta(_n: &u32, meta: &RecordMeta<'_>) -> HandlerOutcome {
    assert!(meta.sequence_number().starts_with("4959"));
    HandlerOutcome::ack()
}
async fn fallible(n: &u32) -> Result<(), String> {
    if *n > 1 {
        Err(format!("{n} too big"))
    } else {
        Ok(())
    }
}
async fn batch_all(ns: &[u32]) -> HandlerOutcome {
    assert_eq!(ns.len(), 3);
    HandlerOutcome::ack()
}
async fn batch_each(ns: &[u32]) -> Vec<HandlerOutcome> {
    ns.iter().map(|_| HandlerOutcome::drop()).collect()
}
async fn raw(data: &RawData) -> HandlerOutcome {
    assert_eq!(&data[..], b"1");
    HandlerOutcome::ack()
}

#[tokio::test]
async fn every_shape() {
    let event = TestEvent::new().json(&1).json(&2).json(&3);
    assert_eq!(settle(plain, &event).await.first_unsettled(), Some(1));
    assert_eq!(settle(with_meta, &event).await.first_unsettled(), None);
    assert_eq!(settle(fallible, &event).await.first_unsettled(), Some(1));
    assert_eq!(settle(batch_all, &event).await.first_unsettled(), None);
    assert_eq!(settle(batch_each, &event).await.first_unsettled(), None);
    assert_eq!(
        settle(raw, TestEvent::new().json(&1))
            .await
            .first_unsettled(),
        None
    );
    let closure = |n: &u32| {
        let n = *n;
        async move {
            if n == 3 {
                HandlerOutcome::retry()
            } else {
                HandlerOutcome::ack()
            }
        }
    };
    assert_eq!(settle(closure, &event).await.first_unsettled(), Some(2));
}
