//! Reading the event from the invocation's bytes, before `lambda_runtime` deserialises it.
//!
//! `lambda_runtime` deserialises every event through serde_json (and `serde_path_to_error`).
//! serde_json can hand a value over as text only as a `RawValue`, which it validates first: for a
//! 10,000-record event that pass alone cost more than the scan that follows it (three fifths of
//! the reading thread's instructions, by callgrind). [`ReadBatchLayer`] sits in front of that
//! deserialisation, as a layer over `lambda_runtime`'s [`LambdaInvocation`], and reads the body
//! with the strict scanner (`scan::plain_event`), which checks what it reads itself. The batch it
//! read is handed to `KinesisBatch`'s `Deserialize` through a slot of the thread, filled only
//! while the inner service's `call` runs: `lambda_runtime` deserialises the payload inside `call`
//! (not in the future it returns), on the same thread, once. Any other body (not UTF-8, or not
//! laid out plainly) leaves the slot empty and is read by serde_json as before, so neither the
//! batch nor an error ever depends on which way it was read.

use std::cell::Cell;
use std::task::{Context, Poll};

use lambda_runtime::LambdaInvocation;

use super::kinesis_batch::KinesisBatch;

thread_local! {
    /// The batch read from the body of the invocation whose `call` is running on this thread.
    static PRE_READ: Cell<Option<KinesisBatch>> = const { Cell::new(None) };
}

/// The batch [`ReadBatch`] read for the deserialisation running now, if any; taken, so that it
/// is used once.
pub(super) fn take() -> Option<KinesisBatch> {
    PRE_READ.take()
}

/// Whether the slot holds a batch, left in it.
#[cfg(test)]
pub(super) fn is_filled() -> bool {
    let batch = PRE_READ.take();
    let filled = batch.is_some();
    PRE_READ.set(batch);
    filled
}

/// Empties the slot when the inner `call` returns or unwinds, so that no batch outlives it.
struct Emptied;

impl Drop for Emptied {
    fn drop(&mut self) {
        PRE_READ.take();
    }
}

/// Runs `call` with `batch` in the slot that `KinesisBatch`'s `Deserialize` takes from.
fn with_pre_read<R>(batch: Option<KinesisBatch>, call: impl FnOnce() -> R) -> R {
    let Some(batch) = batch else {
        return call();
    };
    PRE_READ.set(Some(batch));
    let _emptied = Emptied;
    call()
}

/// A tower layer over `lambda_runtime`'s invocations that reads a Kinesis event laid out as
/// Lambda writes it straight from the invocation's bytes, sparing serde_json's validating pass
/// over its records (see [`KinesisAdapter::run`](crate::KinesisAdapter::run), which runs the
/// adapter with it).
///
/// Put it around the service `lambda_runtime::Runtime` builds for a handler whose payload is a
/// [`KinesisBatch`] (`Runtime::new(adapter).layer(ReadBatchLayer)`); the body is left as it is,
/// and any other payload type reads it as before. The batch is the one serde_json would give.
///
/// ```no_run
/// use lambda_kinesis::lambda_runtime::{Runtime, layers::TracingLayer};
/// use lambda_kinesis::wire::ReadBatchLayer;
/// # use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
/// # async fn ship(_: &serde_json::Value) -> HandlerOutcome { HandlerOutcome::ack() }
///
/// # async fn example() -> Result<(), lambda_kinesis::Error> {
/// let adapter = KinesisAdapter::new(ship);
/// Runtime::new(adapter)
///     .layer(ReadBatchLayer)
///     .layer(TracingLayer::new())
///     .run()
///     .await
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadBatchLayer;

impl<S> tower::Layer<S> for ReadBatchLayer {
    type Service = ReadBatch<S>;

    fn layer(&self, inner: S) -> ReadBatch<S> {
        ReadBatch { inner }
    }
}

/// The service [`ReadBatchLayer`] makes.
#[derive(Clone, Debug)]
pub struct ReadBatch<S> {
    inner: S,
}

impl<S> tower::Service<LambdaInvocation> for ReadBatch<S>
where
    S: tower::Service<LambdaInvocation>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, invocation: LambdaInvocation) -> S::Future {
        let batch = std::str::from_utf8(&invocation.body)
            .ok()
            .and_then(KinesisBatch::from_plain_json);
        with_pre_read(batch, || self.inner.call(invocation))
    }
}
