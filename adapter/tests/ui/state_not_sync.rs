//! A handler whose state is not `Sync`: concurrent invocations (Lambda Managed Instances) share
//! the state, so it must be `Send + Sync`.

use std::cell::Cell;

use lambda_kinesis::{HandlerOutcome, KinesisAdapter};

struct Counter {
    seen: Cell<u64>,
}

async fn count(counter: &Counter, _: &u64) -> HandlerOutcome {
    counter.seen.set(counter.seen.get() + 1);
    HandlerOutcome::ack()
}

fn main() {
    let counter = Counter { seen: Cell::new(0) };
    let _adapter = KinesisAdapter::with_state(counter, count);
}
