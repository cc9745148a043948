//! Idempotent batch handlers: each record of the batch keyed on its own, and the handler given
//! only the records not yet completed (see `docs/idempotency.md`).

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use futures_util::future::join_all;
use lambda_kinesis::handler::{BatchOutcome, FromRecordData, Handler, HandlerError, kind};
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
use serde::Serialize;

use crate::inner::{Batch, BatchInner};
use crate::record::{IdempotencyRecord, StoredOutcome};
use crate::store::Store;
use crate::wrap::{Idempotent, Tried};

/// The records of a batch once their keys were tried, in the batch's order.
struct Taking {
    /// The outcome of each record up to the first held one: `Some` for a duplicate, `None` for
    /// a record whose key was taken (it settles as the handler says).
    settled: Vec<Option<HandlerOutcome>>,
    /// The records whose keys were taken: their place in the batch and their item.
    taken: Vec<(usize, IdempotencyRecord)>,
}

impl<H, T, K, St> Idempotent<Batch<H>, T, K, St>
where
    Batch<H>: BatchInner<T, K>,
    St: Store,
    T: Clone + Serialize + FromRecordData + Send + Sync + 'static,
    K: 'static,
{
    /// Handles a batch: takes each record's key in order, settles the duplicates with their
    /// stored outcomes, and gives the handler the records whose keys it took. The first record
    /// that cannot be run (in progress elsewhere, its key unusable) is held with every record
    /// behind it, whose keys are not tried: Lambda delivers them again, in order.
    pub async fn handle_batch(&self, records: &[T]) -> Result<Vec<HandlerOutcome>, HandlerError> {
        let Taking { mut settled, taken } = self.take_in_order(records).await;
        if !taken.is_empty() {
            let given = self.run_batch(records, &taken).await?;
            for ((index, _), outcome) in taken.iter().zip(given) {
                settled[*index] = Some(outcome);
            }
        }
        let mut outcomes: Vec<HandlerOutcome> = settled
            .into_iter()
            .map(|outcome| outcome.expect("every taken record was given an outcome"))
            .collect();
        outcomes.resize(records.len(), HandlerOutcome::hold());
        Ok(outcomes)
    }

    /// Tries the keys of `records` in order, up to the first record that is held.
    async fn take_in_order(&self, records: &[T]) -> Taking {
        let now = self.now();
        let mut taking = Taking {
            settled: Vec::with_capacity(records.len()),
            taken: Vec::new(),
        };
        for (index, record) in records.iter().enumerate() {
            match self.try_take(record, None, now).await {
                Ok(Tried::Found(HandlerOutcome::Hold)) => break,
                Ok(Tried::Found(outcome)) => taking.settled.push(Some(outcome)),
                Ok(Tried::Taken(item)) => {
                    taking.taken.push((index, item));
                    taking.settled.push(None);
                }
                Err(error) => {
                    // A batch handler's records have no metadata here: the adapter's span names
                    // the shard and the batch's first sequence number, this the record's place.
                    tracing::error!(
                        record = index,
                        "the record is held, with the records behind it: {error}"
                    );
                    break;
                }
            }
        }
        taking
    }

    /// Runs the handler on the records `taken`, then stores each one's outcome or releases the
    /// keys. The outcomes are in `taken`'s order.
    async fn run_batch(
        &self,
        records: &[T],
        taken: &[(usize, IdempotencyRecord)],
    ) -> Result<Vec<HandlerOutcome>, HandlerError> {
        let values: Cow<'_, [T]> = if taken.len() == records.len() {
            Cow::Borrowed(records)
        } else {
            taken
                .iter()
                .map(|(index, _)| records[*index].clone())
                .collect()
        };
        let result = AssertUnwindSafe(self.inner.call_batch(&values))
            .catch_unwind()
            .await;
        let given = match &result {
            Ok(Ok(BatchOutcome::All(outcome))) => Ok(vec![*outcome; taken.len()]),
            Ok(Ok(BatchOutcome::Each(each))) if each.len() == taken.len() => Ok(each.clone()),
            Ok(Ok(BatchOutcome::Each(each))) => Err(HandlerError::new(format!(
                "the batch handler returned {} outcomes for the {} records it was given (those \
                 not yet completed); the batch is held",
                each.len(),
                taken.len()
            ))),
            Ok(Err(error)) => Err(error.clone()),
            Err(_) => Err(HandlerError::new("the batch handler panicked")),
        };
        let settled: Vec<Option<StoredOutcome>> = match &given {
            Ok(outcomes) => outcomes.iter().copied().map(StoredOutcome::of).collect(),
            Err(_) => vec![None; taken.len()],
        };
        join_all(
            taken
                .iter()
                .zip(settled)
                .map(|((_, item), settled)| self.finish(item, settled)),
        )
        .await;
        if let Err(panic) = result {
            // The adapter catches it again, logs it and holds the batch, as for any handler.
            std::panic::resume_unwind(panic);
        }
        given
    }

    /// The adapter that runs this batch handler, with its default rules (for a record handler,
    /// `into_adapter`: one inherent method cannot serve both shapes).
    #[allow(clippy::type_complexity)]
    pub fn into_batch_adapter(
        self,
    ) -> KinesisAdapter<impl Handler<T, kind::Stateful<kind::Batch>>, T, kind::Stateful<kind::Batch>>
    {
        KinesisAdapter::with_state(self, Self::handle_batch)
    }
}
