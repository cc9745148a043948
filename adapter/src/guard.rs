//! The extension point around each record: a [`RecordGuard`] the adapter asks before the
//! handler runs for a record, and tells afterwards what the handler came to.
//!
//! A guard is an option of the adapter like any other
//! ([`KinesisAdapter::guard`](crate::KinesisAdapter::guard), or
//! [`optional_guard`](crate::KinesisAdapter::optional_guard) for one read from the environment): setting it changes neither the
//! adapter's type nor the handler's shape, and an adapter without one pays nothing for the
//! extension point. It serves every handler shape: around each record of a record handler, and
//! for a batch handler, entered record by record in shard order before the one call, which is
//! given only the records the guard let through. A batch settles as if the guard were inside
//! the handler's one call: the first record the guard holds is held with every record behind
//! it (which are not entered), and a handler that fails, panics or returns a wrong number of
//! outcomes holds the whole batch, the records the guard settled included (they settle from
//! the guard again when Lambda delivers them).
//!
//! `lambda-kinesis-idempotency` is the guard this project ships: it takes each record's key in
//! DynamoDB before the handler runs, settles a duplicate with its stored outcome, and stores the
//! outcome afterwards. The adapter knows nothing of it.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! use lambda_kinesis::guard::{Entry, RecordGuard};
//! use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};
//!
//! /// Counts the records the handler is called for.
//! #[derive(Default)]
//! struct Counted(AtomicU64);
//!
//! impl<T: Sync + 'static> RecordGuard<T> for Counted {
//!     type Pass = ();
//!     async fn enter(&self, _record: &T, _meta: &RecordMeta<'_>) -> Entry<()> {
//!         self.0.fetch_add(1, Ordering::Relaxed);
//!         Entry::Run(())
//!     }
//!     async fn leave(&self, _pass: (), _outcome: Option<HandlerOutcome>) {}
//! }
//!
//! async fn ship(_: &u64) -> HandlerOutcome { HandlerOutcome::ack() }
//!
//! let adapter = KinesisAdapter::new(ship).guard(Counted::default());
//! # let _ = adapter;
//! ```

use std::any::Any;
use std::future::Future;
use std::pin::Pin;

use crate::batch::RecordMeta;
use crate::outcome::{HandlerError, HandlerOutcome};

/// What a guard decides about a record before the handler runs.
#[derive(Debug)]
#[non_exhaustive]
pub enum Entry<P> {
    /// Run the handler; [`RecordGuard::leave`] is then called with this pass.
    Run(P),
    /// Settle the record with this outcome without running the handler (a duplicate's stored
    /// outcome, or a hold while another invocation runs it). A `hold` also stops a batch
    /// handler's records there: the records behind it are held, not entered.
    Settle(HandlerOutcome),
    /// Hold the record without running the handler; the adapter logs the error with the
    /// record's shard and sequence number, as for a handler's error.
    Refuse(HandlerError),
}

/// Code the adapter runs around each record: [`enter`](Self::enter) before the handler,
/// [`leave`](Self::leave) after it, with what it came to.
///
/// `T` is the handler's record type, so a guard reads the decoded record (a field to key it
/// by) and its metadata (its place in the stream). Under a retry stream it sees the record
/// unwrapped from its envelope, as the handler does.
pub trait RecordGuard<T>: Send + Sync + 'static {
    /// What `enter` hands to `leave` for a record it let through.
    type Pass: Send + 'static;

    /// Decides, before the handler runs, whether it runs for `record`.
    fn enter<'a>(
        &'a self,
        record: &'a T,
        meta: &'a RecordMeta<'a>,
    ) -> impl Future<Output = Entry<Self::Pass>> + Send + 'a;

    /// Hears what the handler came to for a record `enter` let through: `Some` outcome when it
    /// returned one, `None` when it failed or panicked (the record is held either way). For a
    /// batch handler, once per record it was given.
    fn leave(
        &self,
        pass: Self::Pass,
        outcome: Option<HandlerOutcome>,
    ) -> impl Future<Output = ()> + Send + '_;
}

/// A boxed future, as a guard runs behind a trait object.
type BoxFuture<'a, O> = Pin<Box<dyn Future<Output = O> + Send + 'a>>;

/// A [`RecordGuard`] of any `Pass`, behind a trait object: what the adapter keeps, so that a
/// guard changes no type parameter of the adapter. Implemented for every `RecordGuard`.
#[doc(hidden)]
pub trait DynGuard<T>: Send + Sync {
    /// [`RecordGuard::enter`], the pass boxed.
    fn enter_dyn<'a>(
        &'a self,
        record: &'a T,
        meta: &'a RecordMeta<'a>,
    ) -> BoxFuture<'a, Entry<Box<dyn Any + Send>>>;
    /// [`RecordGuard::leave`], given the boxed pass back.
    fn leave_dyn(
        &self,
        pass: Box<dyn Any + Send>,
        outcome: Option<HandlerOutcome>,
    ) -> BoxFuture<'_, ()>;
}

impl<T: Sync, G: RecordGuard<T>> DynGuard<T> for G {
    fn enter_dyn<'a>(
        &'a self,
        record: &'a T,
        meta: &'a RecordMeta<'a>,
    ) -> BoxFuture<'a, Entry<Box<dyn Any + Send>>> {
        Box::pin(async move {
            match self.enter(record, meta).await {
                Entry::Run(pass) => Entry::Run(Box::new(pass) as Box<dyn Any + Send>),
                Entry::Settle(outcome) => Entry::Settle(outcome),
                Entry::Refuse(error) => Entry::Refuse(error),
            }
        })
    }

    fn leave_dyn(
        &self,
        pass: Box<dyn Any + Send>,
        outcome: Option<HandlerOutcome>,
    ) -> BoxFuture<'_, ()> {
        let pass = *pass
            .downcast::<G::Pass>()
            .expect("the adapter gives a guard back the pass it made");
        Box::pin(self.leave(pass, outcome))
    }
}
