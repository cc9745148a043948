//! The handlers an [`Idempotent`](crate::Idempotent) can wrap: every handler shape of
//! `lambda_kinesis::handler`, seen through one call each (a record, or the records not yet
//! completed of a batch).

use std::future::Future;

use lambda_kinesis::handler::{
    BatchHandler, BatchOutcome, HandlerError, IntoBatchOutcome, IntoOutcome, RecordHandler,
    RecordMetaHandler, StatefulBatchHandler, StatefulRecordHandler, StatefulRecordMetaHandler,
    kind,
};
use lambda_kinesis::{HandlerOutcome, RecordMeta};

/// A handler and the state it borrows, inside an [`Idempotent`](crate::Idempotent).
pub struct Stateful<S, H> {
    pub(crate) state: S,
    pub(crate) handler: H,
}

/// A batch handler inside an [`Idempotent`](crate::Idempotent), as
/// [`Idempotency::wrap_batch`](crate::Idempotency::wrap_batch) makes it.
pub struct Batch<H>(pub(crate) H);

mod sealed {
    pub trait Sealed<T, Kind> {}
}

/// A record handler an [`Idempotent`](crate::Idempotent) can wrap: every record handler shape of
/// `lambda_kinesis::handler` (with or without state and metadata). Sealed; `Kind` is inferred.
pub trait Inner<T, Kind>: sealed::Sealed<T, Kind> + Send + Sync + 'static {
    /// Calls the handler.
    #[doc(hidden)]
    fn call_inner<'r>(
        &'r self,
        record: &'r T,
        meta: &'r RecordMeta<'r>,
    ) -> impl Future<Output = Result<HandlerOutcome, HandlerError>> + Send + 'r;
}

/// A batch handler an [`Idempotent`](crate::Idempotent) can wrap: `async fn(&[T])` or
/// `async fn(&S, &[T])`, inside [`Batch`]. Sealed; `Kind` is inferred.
pub trait BatchInner<T, Kind>: sealed::Sealed<T, Kind> + Send + Sync + 'static {
    /// Calls the handler with the records not yet completed.
    #[doc(hidden)]
    fn call_batch<'r>(
        &'r self,
        records: &'r [T],
    ) -> impl Future<Output = Result<BatchOutcome, HandlerError>> + Send + 'r;
}

/// One shape's seal and [`Inner`] or [`BatchInner`] implementation: `$call` makes the
/// handler's future from `$this` (the wrapped handler) and the arguments.
macro_rules! shape {
    (
        Inner<$kind:ty> for $wrapper:ty, <$($param:ident),*> where { $($bounds:tt)* }
        |$this:ident, $record:ident, $meta:ident| $call:expr
    ) => {
        impl<T, $($param),*> sealed::Sealed<T, $kind> for $wrapper where $($bounds)* {}
        impl<T: Sync, $($param),*> Inner<T, $kind> for $wrapper
        where
            $($bounds)*
        {
            fn call_inner<'r>(
                &'r self,
                $record: &'r T,
                $meta: &'r RecordMeta<'r>,
            ) -> impl Future<Output = Result<HandlerOutcome, HandlerError>> + Send + 'r {
                let $this = self;
                let future = $call;
                async move { future.await.into_outcome() }
            }
        }
    };
    (
        BatchInner<$kind:ty> for $wrapper:ty, <$($param:ident),*> where { $($bounds:tt)* }
        |$this:ident, $records:ident| $call:expr
    ) => {
        impl<T, $($param),*> sealed::Sealed<T, $kind> for $wrapper where $($bounds)* {}
        impl<T: Sync, $($param),*> BatchInner<T, $kind> for $wrapper
        where
            $($bounds)*
        {
            fn call_batch<'r>(
                &'r self,
                $records: &'r [T],
            ) -> impl Future<Output = Result<BatchOutcome, HandlerError>> + Send + 'r {
                let $this = self;
                let future = $call;
                async move { future.await.into_batch_outcome() }
            }
        }
    };
}

shape! {
    Inner<kind::Record> for H, <H> where { H: for<'a> RecordHandler<'a, T> + 'static }
    |this, record, _meta| RecordHandler::call(this, record)
}

shape! {
    Inner<kind::RecordWithMeta> for H, <H> where { H: for<'a> RecordMetaHandler<'a, T> + 'static }
    |this, record, meta| RecordMetaHandler::call(this, record, meta)
}

shape! {
    Inner<kind::Stateful<kind::Record>> for Stateful<S, H>, <S, H> where {
        S: Send + Sync + 'static,
        H: for<'a> StatefulRecordHandler<'a, S, T> + 'static,
    }
    |this, record, _meta| StatefulRecordHandler::call(&this.handler, &this.state, record)
}

shape! {
    Inner<kind::Stateful<kind::RecordWithMeta>> for Stateful<S, H>, <S, H> where {
        S: Send + Sync + 'static,
        H: for<'a> StatefulRecordMetaHandler<'a, S, T> + 'static,
    }
    |this, record, meta| StatefulRecordMetaHandler::call(&this.handler, &this.state, record, meta)
}

shape! {
    BatchInner<kind::Batch> for Batch<H>, <H> where { H: for<'a> BatchHandler<'a, T> + 'static }
    |this, records| BatchHandler::call(&this.0, records)
}

shape! {
    BatchInner<kind::Stateful<kind::Batch>> for Batch<Stateful<S, H>>, <S, H> where {
        S: Send + Sync + 'static,
        H: for<'a> StatefulBatchHandler<'a, S, T> + 'static,
    }
    |this, records| StatefulBatchHandler::call(&this.0.handler, &this.0.state, records)
}
