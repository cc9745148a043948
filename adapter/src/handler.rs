//! The shapes of handler the adapter accepts, and what they may return.
//!
//! A function author never names these traits: each is implemented for every fitting async
//! function or closure, so a plain `async fn` is a handler as it stands. They are here to read
//! when the compiler names one in an error.
//!
//! | shape | without state ([`KinesisAdapter::new`]) | with state ([`KinesisAdapter::with_state`]) |
//! |---|---|---|
//! | one record | [`RecordHandler`]: `async fn(&T)` | [`StatefulRecordHandler`]: `async fn(&S, &T)` |
//! | one record and its metadata | [`RecordMetaHandler`]: `async fn(&T, &RecordMeta<'_>)` | [`StatefulRecordMetaHandler`]: `async fn(&S, &T, &RecordMeta<'_>)` |
//! | the whole batch | [`BatchHandler`]: `async fn(&[T])` | [`StatefulBatchHandler`]: `async fn(&S, &[T])` |
//!
//! A record handler returns anything [`IntoOutcome`] (a [`HandlerOutcome`], or a `Result` so it
//! can use `?`); a batch handler anything [`IntoBatchOutcome`].
//!
//! The traits take the record's lifetime as a parameter and are used higher-ranked
//! (`for<'a> RecordHandler<'a, T>`): a plain `F: Fn(&T) -> Fut` bound cannot name a future that
//! borrows its argument.
//!
//! # Sealed
//!
//! Every trait here is sealed: only the blanket implementations above exist. The adapter can
//! then change how it calls handlers (a new argument, another way to settle) without breaking a
//! function crate, since no function crate implements these traits by hand.
//!
//! [`KinesisAdapter::new`]: crate::KinesisAdapter::new
//! [`KinesisAdapter::with_state`]: crate::KinesisAdapter::with_state

use std::any::Any;
use std::fmt;
use std::future::Future;

use crate::batch::RecordMeta;
use crate::outcome::HandlerOutcome;
use crate::settle::{self, CallBatch, CallRecord, Job};
use crate::settlement::RecordOutcome;

pub use crate::data::{FromRecordData, RawData};
pub use crate::outcome::{BatchOutcome, HandlerError, IntoBatchOutcome, IntoOutcome};

mod sealed {
    /// The seal of the shape traits: implemented only by the crate's blanket impls. `Shape`
    /// tells the shapes apart so that one seal serves every shape trait.
    pub trait Shape<Shape> {}
    /// The seal of [`Handler`](super::Handler), for the same reason.
    pub trait Runnable<Args> {}
}

/// Defines a handler trait and its one blanket implementation for async functions of `$args`.
macro_rules! handler_trait {
    (
        $(#[$doc:meta])*
        $name:ident<'a, $($param:ident),+> ($($arg:ident: $ty:ty),+) -> $output:ident,
        shape = $shape:ty
    ) => {
        $(#[$doc])*
        pub trait $name<'a, $($param: 'a),+>: sealed::Shape<$shape> + Send + Sync {
            /// What the handler returns.
            type Output: $output;
            /// The handler's future.
            type Future: Future<Output = Self::Output> + Send + 'a;
            /// Calls the handler.
            fn call(&self, $($arg: $ty),+) -> Self::Future;
        }

        impl<'a, $($param: 'a,)+ F, Fut> sealed::Shape<$shape> for F
        where
            F: Fn($($ty),+) -> Fut + Send + Sync,
            Fut: Future + Send + 'a,
            Fut::Output: $output,
        {
        }

        impl<'a, $($param: 'a,)+ F, Fut> $name<'a, $($param),+> for F
        where
            F: Fn($($ty),+) -> Fut + Send + Sync,
            Fut: Future + Send + 'a,
            Fut::Output: $output,
        {
            type Output = Fut::Output;
            type Future = Fut;
            fn call(&self, $($arg: $ty),+) -> Fut {
                self($($arg),+)
            }
        }
    };
}

handler_trait! {
    /// A handler of one record at a time: `async fn(&T) -> impl IntoOutcome`.
    ///
    /// ```
    /// use lambda_kinesis::HandlerOutcome;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Order { amount_cents: u64 }
    ///
    /// async fn charge(order: &Order) -> HandlerOutcome {
    ///     if order.amount_cents == 0 { HandlerOutcome::drop() } else { HandlerOutcome::ack() }
    /// }
    /// # let _ = lambda_kinesis::KinesisAdapter::new(charge);
    /// ```
    #[diagnostic::on_unimplemented(
        note = "a record handler is an `async fn(&T) -> HandlerOutcome` (or `Result<HandlerOutcome, E>`, or `Result<(), E>`); see the `lambda_kinesis::handler` docs"
    )]
    RecordHandler<'a, T>(record: &'a T) -> IntoOutcome,
    shape = (kind::Record, &'a T)
}

handler_trait! {
    /// A handler of one record at a time that also reads the record's metadata:
    /// `async fn(&T, &RecordMeta<'_>) -> impl IntoOutcome`.
    ///
    /// ```
    /// use lambda_kinesis::{HandlerOutcome, RecordMeta};
    ///
    /// async fn audit(line: &String, meta: &RecordMeta<'_>) -> HandlerOutcome {
    ///     lambda_kinesis::tracing::info!(key = meta.partition_key(), %line, "audited");
    ///     HandlerOutcome::ack()
    /// }
    /// # let _ = lambda_kinesis::KinesisAdapter::new(audit);
    /// ```
    #[diagnostic::on_unimplemented(
        note = "a record handler with metadata is an `async fn(&T, &RecordMeta<'_>) -> HandlerOutcome`; see the `lambda_kinesis::handler` docs"
    )]
    RecordMetaHandler<'a, T>(record: &'a T, meta: &'a RecordMeta<'a>) -> IntoOutcome,
    shape = (kind::RecordWithMeta, &'a T)
}

handler_trait! {
    /// A handler of the whole batch at once: `async fn(&[T]) -> impl IntoBatchOutcome`.
    ///
    /// ```
    /// use lambda_kinesis::HandlerOutcome;
    ///
    /// async fn total(amounts: &[u64]) -> HandlerOutcome {
    ///     lambda_kinesis::tracing::info!(total = amounts.iter().sum::<u64>(), "batch");
    ///     HandlerOutcome::ack()
    /// }
    /// # let _ = lambda_kinesis::KinesisAdapter::new(total);
    /// ```
    #[diagnostic::on_unimplemented(
        note = "a batch handler is an `async fn(&[T]) -> HandlerOutcome` or `-> Vec<HandlerOutcome>`; see the `lambda_kinesis::handler` docs"
    )]
    BatchHandler<'a, T>(records: &'a [T]) -> IntoBatchOutcome,
    shape = (kind::Batch, &'a T)
}

handler_trait! {
    /// A handler of one record at a time that borrows the function's state:
    /// `async fn(&S, &T) -> impl IntoOutcome`.
    ///
    /// ```
    /// use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
    ///
    /// struct Prices { minimum_cents: u64 }
    /// #[derive(serde::Deserialize)]
    /// struct Order { amount_cents: u64 }
    ///
    /// async fn charge(prices: &Prices, order: &Order) -> HandlerOutcome {
    ///     if order.amount_cents < prices.minimum_cents { HandlerOutcome::drop() } else { HandlerOutcome::ack() }
    /// }
    /// # let _ =
    /// KinesisAdapter::with_state(Prices { minimum_cents: 50 }, charge);
    /// ```
    #[diagnostic::on_unimplemented(
        note = "a record handler with state is an `async fn(&S, &T) -> HandlerOutcome`; see the `lambda_kinesis::handler` docs"
    )]
    StatefulRecordHandler<'a, S, T>(state: &'a S, record: &'a T) -> IntoOutcome,
    shape = (kind::Record, &'a S, &'a T)
}

handler_trait! {
    /// A handler of one record at a time that borrows the function's state and reads the
    /// record's metadata: `async fn(&S, &T, &RecordMeta<'_>) -> impl IntoOutcome`.
    ///
    /// ```
    /// use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};
    ///
    /// struct Blocked { keys: Vec<String> }
    ///
    /// async fn audit(blocked: &Blocked, _line: &String, meta: &RecordMeta<'_>) -> HandlerOutcome {
    ///     if blocked.keys.iter().any(|key| key == meta.partition_key()) {
    ///         return HandlerOutcome::drop();
    ///     }
    ///     HandlerOutcome::ack()
    /// }
    /// # let _ =
    /// KinesisAdapter::with_state(Blocked { keys: vec!["spam".into()] }, audit);
    /// ```
    #[diagnostic::on_unimplemented(
        note = "a record handler with state and metadata is an `async fn(&S, &T, &RecordMeta<'_>) -> HandlerOutcome`; see the `lambda_kinesis::handler` docs"
    )]
    StatefulRecordMetaHandler<'a, S, T>(state: &'a S, record: &'a T, meta: &'a RecordMeta<'a>) -> IntoOutcome,
    shape = (kind::RecordWithMeta, &'a S, &'a T)
}

handler_trait! {
    /// A handler of the whole batch at once that borrows the function's state:
    /// `async fn(&S, &[T]) -> impl IntoBatchOutcome`.
    ///
    /// ```
    /// use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
    ///
    /// struct Limit(u64);
    ///
    /// async fn check(limit: &Limit, amounts: &[u64]) -> Vec<HandlerOutcome> {
    ///     amounts
    ///         .iter()
    ///         .map(|amount| if *amount > limit.0 { HandlerOutcome::hold() } else { HandlerOutcome::ack() })
    ///         .collect()
    /// }
    /// # let _ =
    /// KinesisAdapter::with_state(Limit(1_000), check);
    /// ```
    #[diagnostic::on_unimplemented(
        note = "a batch handler with state is an `async fn(&S, &[T]) -> HandlerOutcome` or `-> Vec<HandlerOutcome>`; see the `lambda_kinesis::handler` docs"
    )]
    StatefulBatchHandler<'a, S, T>(state: &'a S, records: &'a [T]) -> IntoBatchOutcome,
    shape = (kind::Batch, &'a S, &'a T)
}

/// Markers that tell the handler shapes apart, so one [`Handler`] trait covers them all. They
/// are inferred; a function author never names them.
pub mod kind {
    /// `async fn(&T) -> impl IntoOutcome`
    #[derive(Debug)]
    pub struct Record;
    /// `async fn(&T, &RecordMeta<'_>) -> impl IntoOutcome`
    #[derive(Debug)]
    pub struct RecordWithMeta;
    /// `async fn(&[T]) -> impl IntoBatchOutcome`
    #[derive(Debug)]
    pub struct Batch;
    /// One of the shapes above, with the function's state borrowed as the first argument.
    #[derive(Debug)]
    pub struct Stateful<Shape>(Shape);
}

/// A handler and the state it borrows on every call, as
/// [`KinesisAdapter::with_state`](crate::KinesisAdapter::with_state) pairs them.
pub struct WithState<S, H> {
    state: S,
    handler: H,
}

impl<S, H> WithState<S, H> {
    pub(crate) fn new(state: S, handler: H) -> Self {
        Self { state, handler }
    }

    /// The state the handler borrows.
    pub fn state(&self) -> &S {
        &self.state
    }
}

impl<S, H> fmt::Debug for WithState<S, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WithState")
            .field("state", &std::any::type_name::<S>())
            .field("handler", &std::any::type_name::<H>())
            .finish()
    }
}

/// State a handler can borrow: one value shared by every invocation of the execution
/// environment, several at once on Lambda Managed Instances (`AWS_LAMBDA_MAX_CONCURRENCY` above
/// 1), so it is `Send + Sync`: use `Mutex`, `RwLock` or atomics rather than `Cell`, `RefCell` or
/// `Rc`. Implemented for every such type; you never implement it.
//
// A bound of its own on `with_state`, so that a state that is not `Sync` is named in an error
// of its own ("`Cell<u64>` cannot be shared between threads safely ... required for `Counter`
// to implement `SharedState`"). `diagnostic::on_unimplemented` would not help: through the
// blanket implementation, the error is the missing `Sync`, not this trait.
pub trait SharedState: Send + Sync + 'static {}

impl<S: Send + Sync + 'static> SharedState for S {}

/// Anything the adapter can run: one of the shapes of this module, with or without state.
/// `Kind` is inferred; you never name it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Kinesis record handler",
    note = "a handler is an `async fn(&T) -> HandlerOutcome`, `async fn(&T, &RecordMeta<'_>) -> HandlerOutcome` or `async fn(&[T]) -> HandlerOutcome` (or `Vec<HandlerOutcome>`), where `T: serde::de::DeserializeOwned + Send + Sync`; with `KinesisAdapter::with_state`, the same with `&S` as the first argument"
)]
pub trait Handler<T, Kind>: sealed::Runnable<(Kind, T)> + Send + Sync + Sized + 'static {
    /// Settles every record of the job's batch, in shard order, by the job's rules.
    #[doc(hidden)]
    fn settle<'a>(
        &'a self,
        job: Job<'a, T>,
    ) -> impl Future<Output = Vec<RecordOutcome>> + Send + 'a;

    /// The state the handler borrows, if it has one.
    #[doc(hidden)]
    fn state(&self) -> Option<&(dyn Any + Send + Sync)> {
        None
    }
}

// One `Handler` implementation per shape. Each turns the handler into the engine's view of it
// (`CallRecord` or `CallBatch`) and hands it to the engine that settles that shape. The headers
// are written out, not generated, because the compiler quotes them when a function is not a
// handler (see tests/ui); `settle_as!` writes the bodies, which are the same but for the view and
// the engine.

/// The body of a [`Handler`] implementation: settle through `settle::$engine` with the handler
/// seen as `$view`; with `stateful`, the state is also lent out through [`Handler::state`].
macro_rules! settle_as {
    ($view:ident, $engine:ident) => {
        fn settle<'a>(
            &'a self,
            job: Job<'a, T>,
        ) -> impl Future<Output = Vec<RecordOutcome>> + Send + 'a {
            settle::$engine($view(self), job)
        }
    };
    (stateful $view:ident, $engine:ident) => {
        settle_as!($view, $engine);

        fn state(&self) -> Option<&(dyn Any + Send + Sync)> {
            Some(&self.state)
        }
    };
}

/// Seals each shape: [`Handler`] is implemented only for the handlers of this module.
macro_rules! seal {
    ($($kind:ty => $shape:ident),+) => {$(
        impl<T, H> sealed::Runnable<($kind, T)> for H where H: for<'a> $shape<'a, T> {}
    )+};
    (stateful $($kind:ty => $shape:ident),+) => {$(
        impl<S, T, H> sealed::Runnable<(kind::Stateful<$kind>, T)> for WithState<S, H> where
            H: for<'a> $shape<'a, S, T>
        {
        }
    )+};
}

seal!(
    kind::Record => RecordHandler,
    kind::RecordWithMeta => RecordMetaHandler,
    kind::Batch => BatchHandler
);
seal!(stateful
    kind::Record => StatefulRecordHandler,
    kind::RecordWithMeta => StatefulRecordMetaHandler,
    kind::Batch => StatefulBatchHandler
);

impl<T, H> Handler<T, kind::Record> for H
where
    H: for<'a> RecordHandler<'a, T> + 'static,
    T: FromRecordData + Send + Sync + 'static,
{
    settle_as!(Plain, records);
}

impl<T, H> Handler<T, kind::RecordWithMeta> for H
where
    H: for<'a> RecordMetaHandler<'a, T> + 'static,
    T: FromRecordData + Send + Sync + 'static,
{
    settle_as!(WithMeta, records);
}

impl<T, H> Handler<T, kind::Batch> for H
where
    H: for<'a> BatchHandler<'a, T> + 'static,
    T: FromRecordData + Send + Sync + 'static,
{
    settle_as!(WholeBatch, whole_batch);
}

impl<S, T, H> Handler<T, kind::Stateful<kind::Record>> for WithState<S, H>
where
    S: Send + Sync + 'static,
    H: for<'a> StatefulRecordHandler<'a, S, T> + 'static,
    T: FromRecordData + Send + Sync + 'static,
{
    settle_as!(stateful StatefulPlain, records);
}

impl<S, T, H> Handler<T, kind::Stateful<kind::RecordWithMeta>> for WithState<S, H>
where
    S: Send + Sync + 'static,
    H: for<'a> StatefulRecordMetaHandler<'a, S, T> + 'static,
    T: FromRecordData + Send + Sync + 'static,
{
    settle_as!(stateful StatefulWithMeta, records);
}

impl<S, T, H> Handler<T, kind::Stateful<kind::Batch>> for WithState<S, H>
where
    S: Send + Sync + 'static,
    H: for<'a> StatefulBatchHandler<'a, S, T> + 'static,
    T: FromRecordData + Send + Sync + 'static,
{
    settle_as!(stateful StatefulWholeBatch, whole_batch);
}

/// Defines the engine's view of one handler shape: `$view` borrows the handler (`H`, or with
/// `<S>` a [`WithState`]) and implements `$engine::$method` by calling it as `$call` (with the
/// borrowed handler named `$this`) and turning what it returns into an outcome with `$into`.
macro_rules! engine_view {
    (
        $(#[$doc:meta])*
        $view:ident<$($state:ident)?>: $shape:ident => $engine:ident::$method:ident(
            $($arg:ident: $ty:ty),+
        ) -> $outcome:ty, |$this:ident| $call:expr, $into:ident
    ) => {
        $(#[$doc])*
        struct $view<'h, $($state,)? H>(&'h engine_view!(@target $($state)?));

        impl<$($state: Sync,)? T: Sync, H> $engine<T> for $view<'_, $($state,)? H>
        where
            H: for<'a> $shape<'a, $($state,)? T>,
        {
            fn $method<'r>(
                &'r self,
                $($arg: $ty),+
            ) -> impl Future<Output = Result<$outcome, HandlerError>> + Send + 'r {
                let $this = self.0;
                let future = $call;
                async move { future.await.$into() }
            }
        }
    };
    (@target) => { H };
    (@target $state:ident) => { WithState<$state, H> };
}

engine_view! {
    /// A [`RecordHandler`] seen as the engine calls record handlers.
    Plain<>: RecordHandler => CallRecord::call_record(record: &'r T, _meta: &'r RecordMeta<'r>)
        -> HandlerOutcome, |handler| handler.call(record), into_outcome
}

engine_view! {
    /// A [`RecordMetaHandler`] seen as the engine calls record handlers.
    WithMeta<>: RecordMetaHandler => CallRecord::call_record(record: &'r T, meta: &'r RecordMeta<'r>)
        -> HandlerOutcome, |handler| handler.call(record, meta), into_outcome
}

engine_view! {
    /// A [`StatefulRecordHandler`] and its state, seen as the engine calls record handlers.
    StatefulPlain<S>: StatefulRecordHandler => CallRecord::call_record(record: &'r T, _meta: &'r RecordMeta<'r>)
        -> HandlerOutcome, |pair| pair.handler.call(&pair.state, record), into_outcome
}

engine_view! {
    /// A [`StatefulRecordMetaHandler`] and its state, seen as the engine calls record handlers.
    StatefulWithMeta<S>: StatefulRecordMetaHandler => CallRecord::call_record(record: &'r T, meta: &'r RecordMeta<'r>)
        -> HandlerOutcome, |pair| pair.handler.call(&pair.state, record, meta), into_outcome
}

engine_view! {
    /// A [`BatchHandler`] seen as the engine calls batch handlers.
    WholeBatch<>: BatchHandler => CallBatch::call_batch(records: &'r [T])
        -> BatchOutcome, |handler| handler.call(records), into_batch_outcome
}

engine_view! {
    /// A [`StatefulBatchHandler`] and its state, seen as the engine calls batch handlers.
    StatefulWholeBatch<S>: StatefulBatchHandler => CallBatch::call_batch(records: &'r [T])
        -> BatchOutcome, |pair| pair.handler.call(&pair.state, records), into_batch_outcome
}
