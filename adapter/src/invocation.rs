//! What a handler may know about the invocation it runs in: its deadline.
//!
//! A handler is called with its record (and state, and metadata), not with Lambda's context. The
//! one thing of the context a handler may need is when the invocation must answer: a crate that
//! marks a record "in progress" (idempotency) lets the mark lapse at that time, so a function that
//! died mid-record does not block the record for long, and one still running is not run twice.

use std::future::Future;
use std::time::SystemTime;

use lambda_runtime::Context;

tokio::task_local! {
    /// The deadline of the invocation being settled on this task.
    static DEADLINE: Option<SystemTime>;
}

/// When the invocation that is calling the handler must answer, as Lambda's context says.
///
/// `None` outside a settle of the adapter, and when the context carries no real deadline (a
/// `Context::default()`, as the testing kit uses, or `cargo lambda watch`'s constant).
pub fn deadline() -> Option<SystemTime> {
    DEADLINE.try_with(|deadline| *deadline).ok().flatten()
}

/// Runs `settle` with the deadline of `context` readable through [`deadline`].
pub(crate) async fn scope<F: Future>(context: &Context, settle: F) -> F::Output {
    // The same rule as the engine's `Deadline::of`: a deadline before September 2001 is not a time.
    const EARLIEST_REAL_DEADLINE_MILLIS: u64 = 1_000_000_000_000;
    let deadline = (context.deadline >= EARLIEST_REAL_DEADLINE_MILLIS).then(|| context.deadline());
    DEADLINE.scope(deadline, settle).await
}
