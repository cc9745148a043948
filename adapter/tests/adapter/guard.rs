//! A guard around each record: it decides whether the handler runs, and hears what it came to,
//! for every handler shape and with the other options set.

use std::sync::Mutex;

use lambda_kinesis::guard::{Entry, RecordGuard};
use lambda_kinesis::handler::HandlerError;
use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::testing::TestEvent;
use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};

/// Settles records it has seen an outcome for with that outcome (a toy idempotency), refuses
/// the number 13, and notes what it heard.
#[derive(Default)]
struct Remembering {
    done: Mutex<Vec<(u32, HandlerOutcome)>>,
    heard: Mutex<Vec<(u32, Option<HandlerOutcome>)>>,
}

impl RecordGuard<u32> for Remembering {
    type Pass = u32;

    async fn enter(&self, record: &u32, _meta: &RecordMeta<'_>) -> Entry<u32> {
        if *record == 13 {
            return Entry::Refuse(HandlerError::new("13 is refused"));
        }
        let done = self.done.lock().unwrap();
        match done.iter().find(|(number, _)| number == record) {
            Some((_, outcome)) => Entry::Settle(*outcome),
            None => Entry::Run(*record),
        }
    }

    async fn leave(&self, record: u32, outcome: Option<HandlerOutcome>) {
        self.heard.lock().unwrap().push((record, outcome));
        if let Some(outcome @ (HandlerOutcome::Ack | HandlerOutcome::Drop)) = outcome {
            self.done.lock().unwrap().push((record, outcome));
        }
    }
}

static CALLED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

async fn even_acked(n: &u32) -> HandlerOutcome {
    CALLED.lock().unwrap().push(*n);
    if *n == 99 {
        panic!("99 panics");
    }
    if n.is_multiple_of(2) {
        HandlerOutcome::ack()
    } else {
        HandlerOutcome::hold()
    }
}

async fn all_acked(numbers: &[u32]) -> HandlerOutcome {
    CALLED.lock().unwrap().extend_from_slice(numbers);
    HandlerOutcome::ack()
}

fn event(numbers: &[u32]) -> TestEvent {
    numbers.iter().fold(TestEvent::new(), |event, n| {
        event.json_keyed(n.to_string(), n)
    })
}

/// The tests share `CALLED`: each takes the lock of this for its whole run.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn called() -> Vec<u32> {
    std::mem::take(&mut *CALLED.lock().unwrap())
}

#[tokio::test]
async fn a_guard_settles_what_it_knows_and_hears_what_the_handler_said() {
    let _serial = SERIAL.lock().await;
    called();
    let adapter = KinesisAdapter::new(even_acked).guard(Remembering::default());

    let first = adapter
        .settle(&event(&[2, 4, 5]), &Context::default())
        .await;
    assert_eq!(first.summary(), "ack ack hold");
    assert_eq!(called(), [2, 4, 5]);

    let again = adapter
        .settle(&event(&[2, 4, 6]), &Context::default())
        .await;
    assert_eq!(again.summary(), "ack ack ack");
    assert_eq!(called(), [6], "2 and 4 settle without the handler");
}

#[tokio::test]
async fn a_refused_or_panicking_record_is_held_and_the_guard_hears_none() {
    let _serial = SERIAL.lock().await;
    called();
    let guard = Remembering::default();
    let adapter = KinesisAdapter::new(even_acked).guard(guard);
    let refused = adapter
        .settle(&event(&[2, 13, 4]), &Context::default())
        .await;
    assert_eq!(refused.summary(), "ack hold skip");
    let panicked = adapter.settle(&event(&[99, 4]), &Context::default()).await;
    assert_eq!(panicked.summary(), "hold skip");
    assert_eq!(called(), [2, 99]);
}

#[tokio::test]
async fn a_guard_works_with_lanes() {
    let _serial = SERIAL.lock().await;
    called();
    let adapter = KinesisAdapter::new(even_acked)
        .per_key_lanes(4)
        .guard(Remembering::default());
    let settlement = adapter
        .settle(&event(&[2, 3, 4]), &Context::default())
        .await;
    assert_eq!(settlement.summary(), "ack hold ack");
    let again = adapter
        .settle(&event(&[2, 3, 4]), &Context::default())
        .await;
    assert_eq!(again.summary(), "ack hold ack");
    let mut seen = called();
    seen.sort_unstable();
    assert_eq!(seen, [2, 3, 3, 4], "only the held record runs again");
}

#[tokio::test]
async fn a_batch_handler_is_given_only_the_records_the_guard_lets_through() {
    let _serial = SERIAL.lock().await;
    called();
    let adapter = KinesisAdapter::new(all_acked).guard(Remembering::default());
    let first = adapter.settle(&event(&[1, 2]), &Context::default()).await;
    assert_eq!(first.summary(), "ack ack");
    assert_eq!(called(), [1, 2]);

    let again = adapter
        .settle(&event(&[1, 3, 13, 4]), &Context::default())
        .await;
    // 4 is held behind 13 unentered, as a batch handler holding it would hold it.
    assert_eq!(again.summary(), "ack ack hold hold");
    assert_eq!(
        called(),
        [3],
        "1 settles by the guard; 13 is refused, 4 waits behind it"
    );
}

async fn failing(numbers: &[u32]) -> Result<HandlerOutcome, HandlerError> {
    CALLED.lock().unwrap().extend_from_slice(numbers);
    Err(HandlerError::new("the batch failed"))
}

#[tokio::test]
async fn a_batch_handler_that_fails_holds_the_whole_batch_and_the_guard_hears_none() {
    let _serial = SERIAL.lock().await;
    called();
    let guard = Remembering::default();
    guard.done.lock().unwrap().push((1, HandlerOutcome::ack()));
    let adapter = KinesisAdapter::new(failing).guard(guard);
    let settlement = adapter
        .settle(&event(&[1, 2, 3]), &Context::default())
        .await;
    // The whole batch is held, 1 (settled by the guard) with it: it settles again next time.
    assert_eq!(settlement.summary(), "hold skip skip");
    assert_eq!(called(), [2, 3]);
}

#[tokio::test]
async fn with_state_and_without_a_guard_the_adapter_has_the_same_type() {
    async fn with_state(offset: &u32, n: &u32) -> HandlerOutcome {
        even_acked(&(n + offset)).await
    }
    let _serial = SERIAL.lock().await;
    called();
    let guard: Option<Remembering> = None;
    let adapters: [KinesisAdapter<u32>; 3] = [
        KinesisAdapter::new(even_acked),
        KinesisAdapter::with_state(0, with_state).optional_guard(guard),
        KinesisAdapter::new(all_acked).guard(Remembering::default()),
    ];
    for adapter in &adapters {
        let settlement = adapter.settle(&event(&[2]), &Context::default()).await;
        assert_eq!(settlement.summary(), "ack");
    }
}
