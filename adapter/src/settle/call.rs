//! How the engine calls a handler, whatever its shape ([`crate::handler`] makes the views).

use std::future::Future;

use crate::batch::RecordMeta;
use crate::outcome::{BatchOutcome, HandlerError, HandlerOutcome};

/// How the engine calls a record handler, whatever its shape.
pub(crate) trait CallRecord<T>: Send + Sync {
    fn call_record<'r>(
        &'r self,
        record: &'r T,
        meta: &'r RecordMeta<'r>,
    ) -> impl Future<Output = Result<HandlerOutcome, HandlerError>> + Send + 'r;
}

/// How the engine calls a batch handler, whatever its shape.
pub(crate) trait CallBatch<T>: Send + Sync {
    fn call_batch<'r>(
        &'r self,
        records: &'r [T],
    ) -> impl Future<Output = Result<BatchOutcome, HandlerError>> + Send + 'r;
}
