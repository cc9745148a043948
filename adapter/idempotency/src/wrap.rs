//! The wrapper: a record handler that takes its record's key before it runs, and settles a
//! duplicate with the stored outcome (see `docs/idempotency.md`).

use std::fmt;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::FutureExt as _;
use lambda_kinesis::handler::{FromRecordData, Handler, HandlerError, kind};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};
use serde::Serialize;

use crate::inner::{Batch, BatchInner, Inner, Stateful};
use crate::key::{self, KeyError, KeySource};
use crate::record::{Found, IdempotencyRecord, StoredOutcome, judge};
use crate::store::{Store, StoreError, Take};

/// How long a key is kept by default: Powertools' default, one hour.
pub const DEFAULT_EXPIRY: Duration = Duration::from_secs(3600);

/// Why an idempotent handler held a record without running the handler. Each is logged by the
/// adapter as the handler's error, with the record's shard and sequence number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdempotencyError {
    /// The key was taken before for another payload: two different records share a key, which
    /// is a bug of the key (or of the producer), not a duplicate to skip.
    #[error(
        "idempotency key {id} was used before for another payload (stored payload hash {stored}, this record's {given})"
    )]
    PayloadMismatch {
        /// The namespaced key.
        id: String,
        /// The payload hash stored with the key.
        stored: String,
        /// This record's payload hash.
        given: String,
    },
    /// A completed item carries no outcome to settle with.
    #[error("idempotency key {id} is completed but its item stores no outcome")]
    NoOutcome {
        /// The namespaced key.
        id: String,
    },
    /// The record could not be keyed.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The store could not take the key: the handler is never run unguarded.
    #[error("the handler was not run: {0}")]
    Take(StoreError),
}

/// Idempotency settings shared by the handlers that use one store.
///
/// ```
/// use lambda_kinesis::HandlerOutcome;
/// use lambda_kinesis_idempotency::{Idempotency, MemoryStore};
///
/// #[derive(serde::Deserialize, serde::Serialize)]
/// struct Shipment { id: u64 }
///
/// async fn book(shipment: &Shipment) -> HandlerOutcome { HandlerOutcome::ack() }
///
/// let adapter = Idempotency::new(MemoryStore::new())
///     .function_name("shipping")
///     .wrap(book)
///     .key(|shipment: &Shipment| shipment.id)
///     .into_adapter();
/// # let _ = adapter;
/// ```
pub struct Idempotency<St> {
    store: St,
    function_name: Option<String>,
    expires_after: Duration,
}

impl<St: Store> Idempotency<St> {
    /// Idempotency in `store`, namespaced by the function's name (`AWS_LAMBDA_FUNCTION_NAME`),
    /// keys kept for [`DEFAULT_EXPIRY`].
    pub fn new(store: St) -> Self {
        Self {
            store,
            function_name: None,
            expires_after: DEFAULT_EXPIRY,
        }
    }

    /// Namespaces the keys by `name` rather than by `AWS_LAMBDA_FUNCTION_NAME`.
    pub fn function_name(mut self, name: impl Into<String>) -> Self {
        self.function_name = Some(name.into());
        self
    }

    /// Keeps each key for `expiry` after it is taken: a duplicate that comes later runs again.
    pub fn expires_after(mut self, expiry: Duration) -> Self {
        self.expires_after = expiry;
        self
    }

    /// Makes `handler` (`async fn(&T)` or `async fn(&T, &RecordMeta<'_>)`) idempotent, keyed by
    /// its whole payload until [`key`](Idempotent::key) says otherwise.
    pub fn wrap<H, T, K>(self, handler: H) -> Idempotent<H, T, K, St>
    where
        H: Inner<T, K>,
    {
        Idempotent::new(self, handler)
    }

    /// Makes `handler` (`async fn(&S, &T)` or `async fn(&S, &T, &RecordMeta<'_>)`) idempotent,
    /// with the state it borrows.
    pub fn wrap_with_state<S, H, T, K>(
        self,
        state: S,
        handler: H,
    ) -> Idempotent<Stateful<S, H>, T, K, St>
    where
        Stateful<S, H>: Inner<T, K>,
    {
        Idempotent::new(self, Stateful { state, handler })
    }

    /// Makes the batch handler `handler` (`async fn(&[T])`) idempotent, each record keyed on its
    /// own: the handler is given only the records not yet completed (see `docs/idempotency.md`).
    ///
    /// ```
    /// use lambda_kinesis::HandlerOutcome;
    /// use lambda_kinesis_idempotency::{Idempotency, MemoryStore};
    ///
    /// #[derive(Clone, serde::Deserialize, serde::Serialize)]
    /// struct Shipment { id: u64 }
    ///
    /// async fn book_all(shipments: &[Shipment]) -> Vec<HandlerOutcome> {
    ///     shipments.iter().map(|_| HandlerOutcome::ack()).collect()
    /// }
    ///
    /// let adapter = Idempotency::new(MemoryStore::new())
    ///     .function_name("shipping")
    ///     .wrap_batch(book_all)
    ///     .key(|shipment: &Shipment| shipment.id)
    ///     .into_batch_adapter();
    /// # let _ = adapter;
    /// ```
    pub fn wrap_batch<H, T, K>(self, handler: H) -> Idempotent<Batch<H>, T, K, St>
    where
        Batch<H>: BatchInner<T, K>,
    {
        Idempotent::new(self, Batch(handler))
    }

    /// Makes the batch handler `handler` (`async fn(&S, &[T])`) idempotent, with the state it
    /// borrows.
    pub fn wrap_batch_with_state<S, H, T, K>(
        self,
        state: S,
        handler: H,
    ) -> Idempotent<Batch<Stateful<S, H>>, T, K, St>
    where
        Batch<Stateful<S, H>>: BatchInner<T, K>,
    {
        Idempotent::new(self, Batch(Stateful { state, handler }))
    }
}

/// A record handler made idempotent: run it as the adapter's handler with
/// [`into_adapter`](Self::into_adapter).
pub struct Idempotent<I, T, K, St> {
    pub(crate) inner: I,
    store: St,
    function_name: Option<String>,
    handler_name: Option<String>,
    namespace: String,
    key: KeySource<T>,
    expires_after: Duration,
    clock: Arc<dyn Fn() -> SystemTime + Send + Sync>,
    kind: PhantomData<fn() -> K>,
}

impl<I, T, K, St> fmt::Debug for Idempotent<I, T, K, St> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotent")
            .field("namespace", &self.namespace)
            .field("key", &self.key)
            .field("expires_after", &self.expires_after)
            .finish_non_exhaustive()
    }
}

impl<I, T, K, St> Idempotent<I, T, K, St> {
    fn new(settings: Idempotency<St>, inner: I) -> Self {
        let mut idempotent = Self {
            inner,
            store: settings.store,
            function_name: settings.function_name,
            handler_name: None,
            namespace: String::new(),
            key: KeySource::Data,
            expires_after: settings.expires_after,
            clock: Arc::new(SystemTime::now),
            kind: PhantomData,
        };
        idempotent.namespace = idempotent.make_namespace();
        idempotent
    }

    fn make_namespace(&self) -> String {
        let function = self.function_name.clone().unwrap_or_else(|| {
            std::env::var(key::FUNCTION_NAME_VARIABLE).unwrap_or_else(|_| "function".to_owned())
        });
        key::namespace(&function, self.handler_name.as_deref())
    }

    /// Names this handler within the function, so that two handlers sharing a table never share
    /// a key.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.handler_name = Some(name.into());
        self.namespace = self.make_namespace();
        self
    }

    /// Keys each record by a value of the decoded record, such as an id.
    pub fn key<F, D>(mut self, key: F) -> Self
    where
        F: Fn(&T) -> D + Send + Sync + 'static,
        D: fmt::Display,
    {
        self.key = KeySource::Field(Box::new(move |record| key(record).to_string()));
        self
    }

    /// Reads the time from `clock` rather than the system's: for tests of the expiries.
    pub fn clock(mut self, clock: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The namespace of the keys, such as `shipping` or `shipping.book`.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The store.
    pub fn store(&self) -> &St {
        &self.store
    }
}

/// What trying to take a record's key came to.
pub(crate) enum Tried {
    /// The key is this invocation's: run the handler, then finish the item.
    Taken(IdempotencyRecord),
    /// The key is held: settle the record with this outcome (a duplicate's stored outcome, or a
    /// hold while another invocation runs it), without running the handler.
    Found(HandlerOutcome),
}

impl<I: Sync, T: Serialize + Sync, K, St: Store> Idempotent<I, T, K, St> {
    /// Tries to take the key of `record` (at `meta`'s position, for a record handler) at `now`.
    /// An error holds the record: its key could not be made or taken, or is used for another
    /// payload.
    pub(crate) async fn try_take(
        &self,
        record: &T,
        meta: Option<&RecordMeta<'_>>,
        now: SystemTime,
    ) -> Result<Tried, IdempotencyError> {
        let keyed = key::key(&self.namespace, &self.key, record, meta)?;
        let taking = IdempotencyRecord::in_progress(
            keyed.id,
            keyed.payload_hash,
            now,
            self.expires_after,
            lambda_kinesis::invocation::deadline(),
        );
        // The store's futures are boxed: an SDK request's future is large, and a debug build
        // polls it on the stack of whatever runs the adapter.
        match Box::pin(self.store.take(&taking, now)).await {
            Err(error) => Err(IdempotencyError::Take(error)),
            Ok(Take::Held(existing)) => settle_found(&taking, &existing).map(Tried::Found),
            Ok(Take::Taken) => Ok(Tried::Taken(taking)),
        }
    }

    /// Finishes the item `taken` once the handler ran: stores the outcome that `settled` it, or,
    /// when it did not (`None`: a hold, an error, a panic), deletes the item so that the next
    /// delivery runs the handler again.
    pub(crate) async fn finish(&self, taken: &IdempotencyRecord, settled: Option<StoredOutcome>) {
        match settled {
            Some(outcome) => {
                let completed = taken.completed(outcome);
                if let Err(error) = Box::pin(self.store.complete(&completed)).await {
                    // The record settles all the same: its work is done, and holding it would
                    // only run the handler again once the in-progress mark lapses.
                    tracing::error!(
                        key = %taken.id,
                        error = %error,
                        "the outcome could not be stored; the record settles, and a redelivery \
                         after the in-progress mark lapses would run the handler again"
                    );
                }
            }
            None => {
                if let Err(error) = Box::pin(self.store.release(&taken.id)).await {
                    tracing::error!(
                        key = %taken.id,
                        error = %error,
                        "the in-progress mark could not be removed; redeliveries are held until it lapses"
                    );
                }
            }
        }
    }

    /// The time now, by the wrapper's clock.
    pub(crate) fn now(&self) -> SystemTime {
        (self.clock)()
    }
}

impl<I, T, K, St> Idempotent<I, T, K, St>
where
    I: Inner<T, K>,
    St: Store,
    T: Serialize + FromRecordData + Send + Sync + 'static,
    K: 'static,
{
    /// Keys each record by its place in the stream (shard, sequence number, and a KPL user
    /// record's sub-sequence number): only redeliveries count as duplicates. Record handlers
    /// only: a batch handler is not given its records' places.
    pub fn key_by_position(mut self) -> Self {
        self.key = KeySource::Position;
        self
    }

    /// Handles one record: takes its key, runs the handler if the key was free, and stores the
    /// outcome; a duplicate settles with the stored outcome. See `docs/idempotency.md`.
    pub async fn handle(
        &self,
        record: &T,
        meta: &RecordMeta<'_>,
    ) -> Result<HandlerOutcome, HandlerError> {
        match self.try_take(record, Some(meta), self.now()).await {
            Err(error) => Err(HandlerError::new(error)),
            Ok(Tried::Found(outcome)) => Ok(outcome),
            Ok(Tried::Taken(taken)) => self.run(&taken, record, meta).await,
        }
    }

    /// Runs the handler under the key `taken`, then stores its outcome or releases the key.
    async fn run(
        &self,
        taken: &IdempotencyRecord,
        record: &T,
        meta: &RecordMeta<'_>,
    ) -> Result<HandlerOutcome, HandlerError> {
        let result = AssertUnwindSafe(self.inner.call_inner(record, meta))
            .catch_unwind()
            .await;
        let settled = match &result {
            Ok(Ok(outcome)) => StoredOutcome::of(*outcome),
            Ok(Err(_)) | Err(_) => None,
        };
        self.finish(taken, settled).await;
        match result {
            Ok(outcome) => outcome,
            // The adapter catches it again, logs it and holds the record, as for any handler.
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// The adapter that runs this handler, with its default rules.
    #[allow(clippy::type_complexity)]
    pub fn into_adapter(
        self,
    ) -> KinesisAdapter<
        impl Handler<T, kind::Stateful<kind::RecordWithMeta>>,
        T,
        kind::Stateful<kind::RecordWithMeta>,
    > {
        KinesisAdapter::with_state(self, Self::handle)
    }
}

/// What a key held by `existing` means for the record that tried to take it as `taking`.
fn settle_found(
    taking: &IdempotencyRecord,
    existing: &IdempotencyRecord,
) -> Result<HandlerOutcome, IdempotencyError> {
    let id = &taking.id;
    match judge(existing, &taking.payload_hash) {
        Found::Completed(outcome) => {
            tracing::info!(
                key = %id,
                outcome = StoredOutcome::of(outcome).map_or("hold", StoredOutcome::as_str),
                "duplicate record: handled before, settled with the stored outcome"
            );
            Ok(outcome)
        }
        Found::InProgress => {
            tracing::warn!(
                key = %id,
                "record in progress in another invocation: held until that one completes or its mark lapses"
            );
            Ok(HandlerOutcome::hold())
        }
        Found::PayloadMismatch { stored } => Err(IdempotencyError::PayloadMismatch {
            id: id.clone(),
            stored,
            given: taking.payload_hash.clone(),
        }),
        Found::NoOutcome => Err(IdempotencyError::NoOutcome { id: id.clone() }),
    }
}
