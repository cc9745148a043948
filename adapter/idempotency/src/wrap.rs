//! The guard: it takes a record's key before the handler runs, and settles a duplicate with the
//! stored outcome (see `docs/idempotency.md`); the adapter runs it around each record through
//! its `RecordGuard` extension point. `Idempotent`, the older builder that names the handler
//! too, makes the same adapter.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lambda_kinesis::env::EnvError;
use lambda_kinesis::guard::{Entry, RecordGuard};
use lambda_kinesis::handler::{Handler, HandlerError, WithState};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};
use serde::Serialize;

use crate::dynamodb::DynamoDbStore;
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

/// The variable that names the idempotency table ([`Idempotency::from_env`]): the template's
/// `IdempotencyTable`.
pub const IDEMPOTENCY_TABLE_VARIABLE: &str = "IDEMPOTENCY_TABLE";

/// Idempotency settings shared by the handlers that use one store: make a guard of them with
/// [`key`](Self::key) (or [`key_by_position`](Self::key_by_position)) and give it to the
/// adapter with `KinesisAdapter::guard`.
///
/// ```
/// use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
/// use lambda_kinesis_idempotency::{Idempotency, MemoryStore};
///
/// #[derive(serde::Deserialize, serde::Serialize)]
/// struct Shipment { id: u64 }
///
/// async fn book(shipment: &Shipment) -> HandlerOutcome { HandlerOutcome::ack() }
///
/// let once_per_id = Idempotency::new(MemoryStore::new())
///     .function_name("shipping")
///     .key(|shipment: &Shipment| shipment.id);
/// let adapter = KinesisAdapter::new(book).guard(once_per_id);
/// # let _ = adapter;
/// ```
pub struct Idempotency<St> {
    store: St,
    function_name: Option<String>,
    expires_after: Duration,
}

impl<St: fmt::Debug> fmt::Debug for Idempotency<St> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotency")
            .field("store", &self.store)
            .field("function_name", &self.function_name)
            .field("expires_after", &self.expires_after)
            .finish()
    }
}

impl Idempotency<DynamoDbStore> {
    /// Idempotency in the DynamoDB table that `IDEMPOTENCY_TABLE` names, with a client
    /// configured the usual AWS way; `None` (idempotency off, logged as a warning) when the
    /// variable is unset or empty, as a template writes it for a function without a table. A
    /// name DynamoDB would refuse is an [`EnvError`] naming the variable and the value.
    ///
    /// ```no_run
    /// use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
    /// use lambda_kinesis_idempotency::Idempotency;
    ///
    /// #[derive(serde::Deserialize, serde::Serialize)]
    /// struct Shipment { id: u64 }
    /// async fn book(shipment: &Shipment) -> HandlerOutcome { HandlerOutcome::ack() }
    ///
    /// #[tokio::main]
    /// async fn main() -> Result<(), lambda_kinesis::Error> {
    ///     let idempotency = Idempotency::from_env().await?;
    ///     KinesisAdapter::new(book)
    ///         .optional_guard(idempotency.map(|on| on.key(|shipment: &Shipment| shipment.id)))
    ///         .run()
    ///         .await
    /// }
    /// ```
    pub async fn from_env() -> Result<Option<Self>, EnvError> {
        let Some(table) = table_of(lambda_kinesis::env::process)? else {
            tracing::warn!(
                "{IDEMPOTENCY_TABLE_VARIABLE} is not set: a record delivered twice is handled twice"
            );
            return Ok(None);
        };
        Ok(Some(Self::new(DynamoDbStore::from_env(table).await)))
    }
}

/// The table `IDEMPOTENCY_TABLE` names as `lookup` gives it: `None` when it is unset or empty,
/// an error when DynamoDB would refuse the name (3 to 255 letters, digits, `_`, `-` and `.`).
pub fn table_of(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<String>, EnvError> {
    let Some(table) = lambda_kinesis::env::value(lookup, IDEMPOTENCY_TABLE_VARIABLE) else {
        return Ok(None);
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if (3..=255).contains(&table.len()) && table.chars().all(allowed) {
        Ok(Some(table))
    } else {
        Err(EnvError::new(
            IDEMPOTENCY_TABLE_VARIABLE,
            table,
            "a DynamoDB table name (3 to 255 letters, digits, `_`, `-` and `.`)",
        ))
    }
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

    /// The guard that keys each record by a value of the decoded record, such as an id.
    ///
    /// ```
    /// use lambda_kinesis_idempotency::{Idempotency, MemoryStore};
    ///
    /// #[derive(serde::Deserialize, serde::Serialize)]
    /// struct Shipment { id: u64 }
    ///
    /// let guard = Idempotency::new(MemoryStore::new())
    ///     .function_name("shipping")
    ///     .key(|shipment: &Shipment| shipment.id);
    /// assert_eq!(guard.namespace(), "shipping");
    /// ```
    pub fn key<T, F, D>(self, key: F) -> IdempotencyGuard<T, St>
    where
        F: Fn(&T) -> D + Send + Sync + 'static,
        D: fmt::Display,
    {
        IdempotencyGuard::new(self).key(key)
    }

    /// The guard that keys each record by its place in the stream (shard, sequence number, and
    /// a KPL user record's sub-sequence number): only redeliveries count as duplicates.
    pub fn key_by_position<T>(self) -> IdempotencyGuard<T, St> {
        IdempotencyGuard::new(self).key_by_position()
    }

    /// The guard that keys each record by its whole payload.
    pub fn key_by_payload<T>(self) -> IdempotencyGuard<T, St> {
        IdempotencyGuard::new(self)
    }

    /// Makes `handler` (any shape, `async fn(&T)`, `async fn(&T, &RecordMeta<'_>)` or
    /// `async fn(&[T])`) idempotent, keyed by its whole payload until
    /// [`key`](Idempotent::key) says otherwise. The same as giving the adapter of `handler` the
    /// guard [`key`](Self::key) makes.
    pub fn wrap<H, T, K>(self, handler: H) -> Idempotent<H, T, K, St>
    where
        H: Handler<T, K>,
        T: Serialize + Send + Sync + 'static,
        K: 'static,
    {
        Idempotent::new(
            self,
            Box::new(move |guard| KinesisAdapter::new(handler).guard(guard)),
        )
    }

    /// Makes `handler` (`async fn(&S, &T)`, `async fn(&S, &T, &RecordMeta<'_>)` or
    /// `async fn(&S, &[T])`) idempotent, with the state it borrows.
    pub fn wrap_with_state<S, H, T, K>(
        self,
        state: S,
        handler: H,
    ) -> Idempotent<WithState<S, H>, T, K, St>
    where
        WithState<S, H>: Handler<T, K>,
        S: lambda_kinesis::handler::SharedState,
        T: Serialize + Send + Sync + 'static,
        K: 'static,
    {
        Idempotent::new(
            self,
            Box::new(move |guard| KinesisAdapter::with_state(state, handler).guard(guard)),
        )
    }

    /// Makes the batch handler `handler` (`async fn(&[T])`) idempotent, each record keyed on its
    /// own: the handler is given only the records not yet completed (see `docs/idempotency.md`).
    /// The same as [`wrap`](Self::wrap).
    ///
    /// ```
    /// use lambda_kinesis::HandlerOutcome;
    /// use lambda_kinesis_idempotency::{Idempotency, MemoryStore};
    ///
    /// #[derive(serde::Deserialize, serde::Serialize)]
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
    pub fn wrap_batch<H, T, K>(self, handler: H) -> Idempotent<H, T, K, St>
    where
        H: Handler<T, K>,
        T: Serialize + Send + Sync + 'static,
        K: 'static,
    {
        self.wrap(handler)
    }

    /// Makes the batch handler `handler` (`async fn(&S, &[T])`) idempotent, with the state it
    /// borrows. The same as [`wrap_with_state`](Self::wrap_with_state).
    pub fn wrap_batch_with_state<S, H, T, K>(
        self,
        state: S,
        handler: H,
    ) -> Idempotent<WithState<S, H>, T, K, St>
    where
        WithState<S, H>: Handler<T, K>,
        S: lambda_kinesis::handler::SharedState,
        T: Serialize + Send + Sync + 'static,
        K: 'static,
    {
        self.wrap_with_state(state, handler)
    }
}

/// Idempotency around each record, as the adapter's [`RecordGuard`]: before the handler runs,
/// the record's key is taken in the store; a key already completed settles the record with its
/// stored outcome, one in progress elsewhere holds it, and the handler's outcome is stored
/// afterwards (a hold, an error or a panic releases the key). See `docs/idempotency.md`.
pub struct IdempotencyGuard<T, St> {
    store: St,
    function_name: Option<String>,
    handler_name: Option<String>,
    namespace: String,
    key: KeySource<T>,
    expires_after: Duration,
    clock: Arc<dyn Fn() -> SystemTime + Send + Sync>,
}

impl<T, St> fmt::Debug for IdempotencyGuard<T, St> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdempotencyGuard")
            .field("namespace", &self.namespace)
            .field("key", &self.key)
            .field("expires_after", &self.expires_after)
            .finish_non_exhaustive()
    }
}

impl<T, St> IdempotencyGuard<T, St> {
    fn new(settings: Idempotency<St>) -> Self {
        let mut guard = Self {
            store: settings.store,
            function_name: settings.function_name,
            handler_name: None,
            namespace: String::new(),
            key: KeySource::Data,
            expires_after: settings.expires_after,
            clock: Arc::new(SystemTime::now),
        };
        guard.namespace = guard.make_namespace();
        guard
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

    /// Keys each record by its place in the stream (shard, sequence number, and a KPL user
    /// record's sub-sequence number): only redeliveries count as duplicates.
    pub fn key_by_position(mut self) -> Self {
        self.key = KeySource::Position;
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
enum Tried {
    /// The key is this invocation's: run the handler, then finish the item.
    Taken(IdempotencyRecord),
    /// The key is held: settle the record with this outcome (a duplicate's stored outcome, or a
    /// hold while another invocation runs it), without running the handler.
    Found(HandlerOutcome),
}

impl<T: Serialize + Sync, St: Store> IdempotencyGuard<T, St> {
    /// Tries to take the key of `record` (at `meta`'s position) at `now`. An error holds the
    /// record: its key could not be made or taken, or is used for another payload.
    async fn try_take(
        &self,
        record: &T,
        meta: &RecordMeta<'_>,
        now: SystemTime,
    ) -> Result<Tried, IdempotencyError> {
        let keyed = key::key(&self.namespace, &self.key, record, Some(meta))?;
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
    async fn finish(&self, taken: &IdempotencyRecord, settled: Option<StoredOutcome>) {
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
}

impl<T, St> RecordGuard<T> for IdempotencyGuard<T, St>
where
    T: Serialize + Send + Sync + 'static,
    St: Store,
{
    /// The item of the key taken for the record.
    type Pass = IdempotencyRecord;

    async fn enter(&self, record: &T, meta: &RecordMeta<'_>) -> Entry<IdempotencyRecord> {
        match self.try_take(record, meta, (self.clock)()).await {
            Err(error) => Entry::Refuse(HandlerError::new(error)),
            Ok(Tried::Found(outcome)) => Entry::Settle(outcome),
            Ok(Tried::Taken(taken)) => Entry::Run(taken),
        }
    }

    async fn leave(&self, taken: IdempotencyRecord, outcome: Option<HandlerOutcome>) {
        self.finish(&taken, outcome.and_then(StoredOutcome::of))
            .await;
    }
}

/// A handler made idempotent, the older way: run it with [`into_adapter`](Self::into_adapter),
/// which gives the handler's adapter the [`IdempotencyGuard`] configured here.
pub struct Idempotent<I, T, K, St> {
    make: Box<dyn FnOnce(IdempotencyGuard<T, St>) -> KinesisAdapter<T>>,
    guard: IdempotencyGuard<T, St>,
    kind: PhantomData<fn() -> (I, K)>,
}

impl<I, T, K, St> fmt::Debug for Idempotent<I, T, K, St> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotent")
            .field("guard", &self.guard)
            .finish_non_exhaustive()
    }
}

impl<I, T, K, St> Idempotent<I, T, K, St> {
    fn new(
        settings: Idempotency<St>,
        make: Box<dyn FnOnce(IdempotencyGuard<T, St>) -> KinesisAdapter<T>>,
    ) -> Self {
        Self {
            make,
            guard: IdempotencyGuard::new(settings),
            kind: PhantomData,
        }
    }

    /// See [`IdempotencyGuard::name`].
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.guard = self.guard.name(name);
        self
    }

    /// See [`IdempotencyGuard::key`].
    pub fn key<F, D>(mut self, key: F) -> Self
    where
        F: Fn(&T) -> D + Send + Sync + 'static,
        D: fmt::Display,
    {
        self.guard = self.guard.key(key);
        self
    }

    /// See [`IdempotencyGuard::key_by_position`].
    pub fn key_by_position(mut self) -> Self {
        self.guard = self.guard.key_by_position();
        self
    }

    /// See [`IdempotencyGuard::clock`].
    pub fn clock(mut self, clock: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        self.guard = self.guard.clock(clock);
        self
    }

    /// The namespace of the keys, such as `shipping` or `shipping.book`.
    pub fn namespace(&self) -> &str {
        self.guard.namespace()
    }

    /// The store.
    pub fn store(&self) -> &St {
        self.guard.store()
    }

    /// The adapter that runs the handler with this idempotency, with its default rules.
    pub fn into_adapter(self) -> KinesisAdapter<T> {
        (self.make)(self.guard)
    }

    /// The same as [`into_adapter`](Self::into_adapter), for a batch handler.
    pub fn into_batch_adapter(self) -> KinesisAdapter<T> {
        self.into_adapter()
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
