//! The engine: calling the handler over a batch, record by record (in one lane or one lane per
//! partition key) or all at once, and turning what it returns into each record's outcome.
//!
//! The one rule everything here serves: the response names the first record, in shard order,
//! that is not settled (acked or dropped). Lambda checkpoints in front of it and delivers it and
//! every record behind it again; with nothing named, Lambda checkpoints past the whole batch.
//! The report of what was decided is [`crate::settlement`].

mod call;
mod decode;
mod options;
mod outcomes;
mod records;
mod span;
mod whole_batch;

pub(crate) use call::{CallBatch, CallRecord};
pub(crate) use options::{Deadline, Job, Options};
pub(crate) use records::records;
pub(crate) use whole_batch::whole_batch;
