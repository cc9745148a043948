//! The shapes of handler the adapter accepts.
//!
//! Each shape is a trait implemented for every fitting async function or closure, so a plain
//! `async fn` is a handler as it stands. The traits take the record's lifetime as a parameter
//! and are used higher-ranked (`for<'a> RecordHandler<'a, T>`): a plain `F: Fn(&T) -> Fut` bound
//! cannot name a future that borrows its argument.

use std::future::Future;

use serde::de::DeserializeOwned;

use crate::batch::{KinesisBatch, RecordMeta};
use crate::outcome::{HandlerError, HandlerOutcome, IntoBatchOutcome, IntoOutcome, RecordOutcome};
use crate::settle::{self, CallRecord, Deadline, Options};

/// What a record's data becomes before the handler sees it.
///
/// Implemented for every `T: DeserializeOwned` (the data is read as JSON) and for [`RawData`]
/// (the bytes as they are). Data that does not decode becomes a [`Rejection`](crate::Rejection).
pub trait FromRecordData: Sized {
    /// Decodes one record's data (already base64-decoded).
    fn from_record_data(data: &[u8]) -> Result<Self, String>;
}

impl<T: DeserializeOwned> FromRecordData for T {
    fn from_record_data(data: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(data).map_err(|error| error.to_string())
    }
}

/// A record's data as raw bytes, for handlers of data that is not JSON.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawData(pub Vec<u8>);

impl FromRecordData for RawData {
    fn from_record_data(data: &[u8]) -> Result<Self, String> {
        Ok(RawData(data.to_vec()))
    }
}

impl std::ops::Deref for RawData {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// A handler of one record at a time: `async fn(&T) -> impl IntoOutcome`.
#[diagnostic::on_unimplemented(
    note = "a record handler is an `async fn(&T) -> HandlerOutcome` (or `Result<HandlerOutcome, E>`, or `Result<(), E>`); see the `lambda_kinesis` crate docs"
)]
pub trait RecordHandler<'a, T: 'a>: Send + Sync {
    /// What the handler returns.
    type Output: IntoOutcome;
    /// The handler's future.
    type Future: Future<Output = Self::Output> + Send + 'a;
    /// Handles one record.
    fn call(&self, record: &'a T) -> Self::Future;
}

impl<'a, T: 'a, F, Fut> RecordHandler<'a, T> for F
where
    F: Fn(&'a T) -> Fut + Send + Sync,
    Fut: Future + Send + 'a,
    Fut::Output: IntoOutcome,
{
    type Output = Fut::Output;
    type Future = Fut;
    fn call(&self, record: &'a T) -> Fut {
        self(record)
    }
}

/// A handler of one record at a time that also reads the record's metadata:
/// `async fn(&T, &RecordMeta<'_>) -> impl IntoOutcome`.
#[diagnostic::on_unimplemented(
    note = "a record handler with metadata is an `async fn(&T, &RecordMeta<'_>) -> HandlerOutcome`; see the `lambda_kinesis` crate docs"
)]
pub trait RecordMetaHandler<'a, T: 'a>: Send + Sync {
    /// What the handler returns.
    type Output: IntoOutcome;
    /// The handler's future.
    type Future: Future<Output = Self::Output> + Send + 'a;
    /// Handles one record.
    fn call(&self, record: &'a T, meta: &'a RecordMeta<'a>) -> Self::Future;
}

impl<'a, T: 'a, F, Fut> RecordMetaHandler<'a, T> for F
where
    F: Fn(&'a T, &'a RecordMeta<'a>) -> Fut + Send + Sync,
    Fut: Future + Send + 'a,
    Fut::Output: IntoOutcome,
{
    type Output = Fut::Output;
    type Future = Fut;
    fn call(&self, record: &'a T, meta: &'a RecordMeta<'a>) -> Fut {
        self(record, meta)
    }
}

/// A handler of the whole batch at once: `async fn(&[T]) -> impl IntoBatchOutcome`.
#[diagnostic::on_unimplemented(
    note = "a batch handler is an `async fn(&[T]) -> HandlerOutcome` or `-> Vec<HandlerOutcome>`; see the `lambda_kinesis` crate docs"
)]
pub trait BatchHandler<'a, T: 'a>: Send + Sync {
    /// What the handler returns.
    type Output: IntoBatchOutcome;
    /// The handler's future.
    type Future: Future<Output = Self::Output> + Send + 'a;
    /// Handles the decoded records of a batch, in shard order.
    fn call(&self, records: &'a [T]) -> Self::Future;
}

impl<'a, T: 'a, F, Fut> BatchHandler<'a, T> for F
where
    F: Fn(&'a [T]) -> Fut + Send + Sync,
    Fut: Future + Send + 'a,
    Fut::Output: IntoBatchOutcome,
{
    type Output = Fut::Output;
    type Future = Fut;
    fn call(&self, records: &'a [T]) -> Fut {
        self(records)
    }
}

/// Markers that tell the handler shapes apart, so one [`Handler`] trait covers them all.
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
}

/// Anything the adapter can run: a [`RecordHandler`], a [`RecordMetaHandler`] or a
/// [`BatchHandler`]. `Kind` is inferred; you never name it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Kinesis record handler",
    note = "a handler is an `async fn(&T) -> HandlerOutcome`, `async fn(&T, &RecordMeta<'_>) -> HandlerOutcome` or `async fn(&[T]) -> HandlerOutcome` (or `Vec<HandlerOutcome>`), where `T: serde::de::DeserializeOwned + Send + Sync`"
)]
pub trait Handler<T, Kind>: Send + Sync + Sized + 'static {
    /// Settles every record of `batch`, in shard order, by the rules in `options`.
    #[doc(hidden)]
    fn settle<'a>(
        &'a self,
        batch: &'a KinesisBatch,
        options: &'a Options,
        deadline: Deadline,
    ) -> impl Future<Output = Vec<RecordOutcome>> + Send + 'a;
}

impl<T, H> Handler<T, kind::Record> for H
where
    H: for<'a> RecordHandler<'a, T> + 'static,
    T: FromRecordData + Send + Sync + 'static,
{
    fn settle<'a>(
        &'a self,
        batch: &'a KinesisBatch,
        options: &'a Options,
        deadline: Deadline,
    ) -> impl Future<Output = Vec<RecordOutcome>> + Send + 'a {
        settle::records(Plain(self), batch, options, deadline)
    }
}

impl<T, H> Handler<T, kind::RecordWithMeta> for H
where
    H: for<'a> RecordMetaHandler<'a, T> + 'static,
    T: FromRecordData + Send + Sync + 'static,
{
    fn settle<'a>(
        &'a self,
        batch: &'a KinesisBatch,
        options: &'a Options,
        deadline: Deadline,
    ) -> impl Future<Output = Vec<RecordOutcome>> + Send + 'a {
        settle::records(WithMeta(self), batch, options, deadline)
    }
}

impl<T, H> Handler<T, kind::Batch> for H
where
    H: for<'a> BatchHandler<'a, T> + 'static,
    T: FromRecordData + Send + Sync + 'static,
{
    fn settle<'a>(
        &'a self,
        batch: &'a KinesisBatch,
        options: &'a Options,
        deadline: Deadline,
    ) -> impl Future<Output = Vec<RecordOutcome>> + Send + 'a {
        settle::whole_batch(self, batch, options, deadline)
    }
}

/// A [`RecordHandler`] seen as the engine calls record handlers.
struct Plain<'h, H>(&'h H);

impl<T: Sync, H> CallRecord<T> for Plain<'_, H>
where
    H: for<'a> RecordHandler<'a, T>,
{
    fn call_record<'r>(
        &'r self,
        record: &'r T,
        _meta: &'r RecordMeta<'r>,
    ) -> impl Future<Output = Result<HandlerOutcome, HandlerError>> + Send + 'r {
        let future = self.0.call(record);
        async move { future.await.into_outcome() }
    }
}

/// A [`RecordMetaHandler`] seen as the engine calls record handlers.
struct WithMeta<'h, H>(&'h H);

impl<T: Sync, H> CallRecord<T> for WithMeta<'_, H>
where
    H: for<'a> RecordMetaHandler<'a, T>,
{
    fn call_record<'r>(
        &'r self,
        record: &'r T,
        meta: &'r RecordMeta<'r>,
    ) -> impl Future<Output = Result<HandlerOutcome, HandlerError>> + Send + 'r {
        let future = self.0.call(record, meta);
        async move { future.await.into_outcome() }
    }
}
