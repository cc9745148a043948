//! How the adapter settles a batch, and when it must be done.

use std::time::{Duration, SystemTime};

use crate::batch::KinesisBatch;
use crate::guard::DynGuard;
use crate::retry::route::RetryRoute;

/// How the adapter settles a batch; set through [`KinesisAdapter`](crate::KinesisAdapter).
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) lanes: Option<usize>,
    pub(crate) hold_undecodable: bool,
    pub(crate) deadline_margin: Duration,
    /// Where held records are published, when the adapter has retry or dead-letter streams.
    pub(crate) retry: Option<RetryRoute>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            lanes: None,
            hold_undecodable: false,
            deadline_margin: Duration::from_millis(500),
            retry: None,
        }
    }
}

/// When the invocation must answer: Lambda's deadline, or none.
///
/// Lambda gives the deadline as wall-clock time; it is turned into an instant of tokio's
/// monotonic clock once, when the invocation starts. A wall clock can jump while records are
/// handled (an NTP step), and tokio's clock is the one a test can pause and advance.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline(Option<tokio::time::Instant>);

impl Deadline {
    /// Reads the deadline of a Lambda context. A deadline of 0 (as in `Context::default()`) means
    /// none: the context was not made by a runtime. So does one too early to be a time (before
    /// September 2001): `cargo lambda watch` sends the constant 600000, which would otherwise
    /// make every invocation past its deadline before it starts.
    pub(crate) fn of(context: &lambda_runtime::Context) -> Self {
        const EARLIEST_REAL_DEADLINE_MILLIS: u64 = 1_000_000_000_000;
        match context.deadline {
            deadline if deadline < EARLIEST_REAL_DEADLINE_MILLIS => Self(None),
            _ => {
                let left = context
                    .deadline()
                    .duration_since(SystemTime::now())
                    .unwrap_or(Duration::ZERO);
                Self(Some(tokio::time::Instant::now() + left))
            }
        }
    }

    pub(super) fn too_close(self, margin: Duration) -> bool {
        match self.0 {
            None => false,
            Some(at) => at
                .checked_duration_since(tokio::time::Instant::now())
                .is_none_or(|left| left < margin),
        }
    }
}

/// One batch to settle, with the rules, the guard and the deadline it is settled by: what every
/// layer between the adapter and the engine hands on as it is.
pub struct Job<'a, T> {
    pub(crate) batch: &'a KinesisBatch,
    pub(crate) options: &'a Options,
    pub(crate) guard: Option<&'a dyn DynGuard<T>>,
    pub(crate) deadline: Deadline,
}

// By hand: a derive would ask `T: Clone`, and a job only borrows its `T`s' guard.
impl<T> Clone for Job<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Job<'_, T> {}
