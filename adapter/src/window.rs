//! Tumbling windows: a handler that folds a shard's records, window by window, into a state
//! that Lambda carries from one invocation to the next (`TumblingWindowInSeconds`).
//!
//! A window handler is `async fn(Option<S>, &Window, &[T]) -> WindowOutcome<S>` (or a `Result`
//! of it): it receives the state the window's previous invocation returned (`None` on a window's
//! first invocation) and the window's next records, and returns the new state. On the window's
//! final invocation ([`Window::is_final`]) the state is complete: the place to write the result
//! somewhere. Lambda then forgets it, and the next window starts fresh.
//!
//! ```no_run
//! use lambda_kinesis::window::{Window, WindowAdapter, WindowOutcome};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize)]
//! struct Shipment { carrier: String }
//!
//! #[derive(Default, Serialize, Deserialize)]
//! struct Tally { shipments: u64 }
//!
//! async fn tally(state: Option<Tally>, window: &Window, records: &[Shipment]) -> WindowOutcome<Tally> {
//!     let mut tally = state.unwrap_or_default();
//!     tally.shipments += records.len() as u64;
//!     if window.is_final() {
//!         lambda_kinesis::tracing::info!(shipments = tally.shipments, "window closed");
//!     }
//!     WindowOutcome::state(tally)
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), lambda_kinesis::Error> {
//!     WindowAdapter::new(tally).run().await
//! }
//! ```
//!
//! A record the handler cannot take now is held with [`WindowOutcome::hold_from`]: the response
//! names it in `batchItemFailures`, the state returned counts the records before it, and Lambda
//! delivers it and the records behind it again, within the same window. A record whose data does
//! not decode into `T` is logged as a warning and left out of `records`, as the record handlers'
//! default drops it. An `Err` is a function error: Lambda retries the whole batch with the state
//! it had.
//!
//! The event and response types, for tests and the emulator, are in [`event`].

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::SystemTime;

use lambda_runtime::{Diagnostic, LambdaEvent};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::handler::FromRecordData;

pub mod event;

use event::{ItemFailure, WindowEvent, WindowResponse, parse_iso8601};

/// Where an invocation stands in its window: its bounds, its shard, and whether it is the
/// window's last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    start: SystemTime,
    end: SystemTime,
    shard_id: String,
    event_source_arn: String,
    is_final: bool,
    terminated_early: bool,
}

impl Window {
    /// The window's first instant: records that arrived from then on belong to it.
    pub fn start(&self) -> SystemTime {
        self.start
    }

    /// The window's end: the next window's start.
    pub fn end(&self) -> SystemTime {
        self.end
    }

    /// The shard the records come from: each shard has windows and a state of its own.
    pub fn shard_id(&self) -> &str {
        &self.shard_id
    }

    /// The stream's ARN.
    pub fn event_source_arn(&self) -> &str {
        &self.event_source_arn
    }

    /// Whether this is the window's final invocation (`isFinalInvokeForWindow`): the state it
    /// returns is the window's result, and the next invocation starts a new window.
    pub fn is_final(&self) -> bool {
        self.is_final
    }

    /// Whether Lambda ended the window early (`isWindowTerminatedEarly`), because its state grew
    /// past the size limit; the invocation after it continues the same window with a fresh state.
    pub fn terminated_early(&self) -> bool {
        self.terminated_early
    }
}

/// What a window handler returns: the window's new state, and whether a record is held.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "an outcome only counts once it is returned to the adapter"]
pub struct WindowOutcome<S> {
    state: S,
    held_from: Option<usize>,
}

impl<S> WindowOutcome<S> {
    /// Every record was taken into `state`.
    pub fn state(state: S) -> Self {
        Self {
            state,
            held_from: None,
        }
    }

    /// The records from `index` on (an index into the handler's `records`) were not taken:
    /// Lambda delivers them again, after `state`, which counts only the records before `index`.
    pub fn hold_from(mut self, index: usize) -> Self {
        self.held_from = Some(index);
        self
    }

    /// The new state.
    pub fn new_state(&self) -> &S {
        &self.state
    }

    /// The index of the first held record, if any.
    pub fn held_from(&self) -> Option<usize> {
        self.held_from
    }
}

/// Anything a window handler may return: a [`WindowOutcome`], or a `Result` of one whose `Err`
/// (anything printable) becomes a function error.
pub trait IntoWindowOutcome<S>: Send {
    /// The outcome, or the error's text.
    fn into_window_outcome(self) -> Result<WindowOutcome<S>, String>;
}

impl<S: Send> IntoWindowOutcome<S> for WindowOutcome<S> {
    fn into_window_outcome(self) -> Result<WindowOutcome<S>, String> {
        Ok(self)
    }
}

impl<S: Send, E: fmt::Display + Send> IntoWindowOutcome<S> for Result<WindowOutcome<S>, E> {
    fn into_window_outcome(self) -> Result<WindowOutcome<S>, String> {
        self.map_err(|error| error.to_string())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A window handler: `async fn(Option<S>, &Window, &[T]) -> impl IntoWindowOutcome<S>`.
///
/// Sealed, like the record handlers (see [`handler`](crate::handler)): implemented for every
/// fitting async function, never by hand.
pub trait WindowHandler<'a, S, T: 'a>: sealed::Sealed + Send + Sync {
    /// What the handler returns.
    type Output: IntoWindowOutcome<S>;
    /// The handler's future.
    type Future: Future<Output = Self::Output> + Send + 'a;
    /// Calls the handler.
    fn call(&self, state: Option<S>, window: &'a Window, records: &'a [T]) -> Self::Future;
}

impl<F> sealed::Sealed for F {}

impl<'a, S, T: 'a, F, Fut> WindowHandler<'a, S, T> for F
where
    F: Fn(Option<S>, &'a Window, &'a [T]) -> Fut + Send + Sync,
    Fut: Future + Send + 'a,
    Fut::Output: IntoWindowOutcome<S>,
{
    type Output = Fut::Output;
    type Future = Fut;
    fn call(&self, state: Option<S>, window: &'a Window, records: &'a [T]) -> Fut {
        self(state, window, records)
    }
}

/// Why a window invocation answers Lambda with a function error (Lambda retries the batch with
/// the state it had).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WindowError {
    /// The event's `window` bounds are not timestamps.
    #[error("the window event's bounds {start:?} to {end:?} are not ISO-8601 UTC timestamps")]
    Bounds {
        /// `window.start` as sent.
        start: String,
        /// `window.end` as sent.
        end: String,
    },
    /// The state Lambda passed does not decode into the handler's state type.
    #[error(
        "the state of shard {shard_id}'s window does not decode as the handler's state: {reason}"
    )]
    State {
        /// The window's shard.
        shard_id: String,
        /// What is wrong.
        reason: String,
    },
    /// The handler returned an error.
    #[error("the window handler failed on shard {shard_id}: {message}")]
    Handler {
        /// The window's shard.
        shard_id: String,
        /// The handler's error.
        message: String,
    },
    /// The handler held a record past the end of `records`.
    #[error("the window handler held record {index} of a batch of {len} decoded record(s)")]
    HeldOutOfRange {
        /// The index it returned.
        index: usize,
        /// How many records it was given.
        len: usize,
    },
}

impl From<WindowError> for Diagnostic {
    fn from(error: WindowError) -> Self {
        let error_type = match error {
            WindowError::Bounds { .. } => "LambdaKinesis.WindowBounds",
            WindowError::State { .. } => "LambdaKinesis.WindowState",
            WindowError::Handler { .. } => "LambdaKinesis.HandlerError",
            WindowError::HeldOutOfRange { .. } => "LambdaKinesis.HeldOutOfRange",
        };
        Diagnostic {
            error_type: error_type.to_owned(),
            error_message: error.to_string(),
        }
    }
}

/// A window handler, ready to run on Lambda behind an event source mapping with
/// `TumblingWindowInSeconds`.
pub struct WindowAdapter<H, S, T> {
    handler: Arc<H>,
    marker: PhantomData<fn() -> (S, T)>,
}

impl<H, S, T> Clone for WindowAdapter<H, S, T> {
    fn clone(&self) -> Self {
        Self {
            handler: Arc::clone(&self.handler),
            marker: PhantomData,
        }
    }
}

impl<H, S, T> fmt::Debug for WindowAdapter<H, S, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowAdapter")
            .field("handler", &std::any::type_name::<H>())
            .finish()
    }
}

impl<H, S, T> WindowAdapter<H, S, T>
where
    H: for<'a> WindowHandler<'a, S, T> + 'static,
    S: Serialize + DeserializeOwned + Send + 'static,
    T: FromRecordData + Send + Sync + 'static,
{
    /// Wraps a window handler.
    pub fn new(handler: H) -> Self {
        Self {
            handler: Arc::new(handler),
            marker: PhantomData,
        }
    }

    /// Handles one window invocation, as Lambda would have the function do.
    pub async fn handle(&self, event: &WindowEvent) -> Result<WindowResponse, WindowError> {
        let window = window_of(event)?;
        let state = incoming_state::<S>(&event.state).map_err(|reason| WindowError::State {
            shard_id: event.shard_id.clone(),
            reason,
        })?;
        let (records, sequence_numbers) = decode_records::<T>(event);
        let outcome = self
            .handler
            .call(state, &window, &records)
            .await
            .into_window_outcome()
            .map_err(|message| WindowError::Handler {
                shard_id: event.shard_id.clone(),
                message,
            })?;
        let mut failures = Vec::new();
        if let Some(index) = outcome.held_from {
            let Some(sequence_number) = sequence_numbers.get(index) else {
                return Err(WindowError::HeldOutOfRange {
                    index,
                    len: records.len(),
                });
            };
            failures.push(ItemFailure {
                item_identifier: sequence_number.clone(),
            });
        }
        let state = serde_json::to_value(&outcome.state).map_err(|error| WindowError::State {
            shard_id: event.shard_id.clone(),
            reason: format!("the new state does not serialise to JSON: {error}"),
        })?;
        Ok(WindowResponse {
            state,
            batch_item_failures: failures,
        })
    }

    /// Runs the adapter as a Lambda function, through `lambda_runtime`, until the runtime stops.
    pub async fn run(self) -> Result<(), lambda_runtime::Error> {
        lambda_runtime::run(lambda_runtime::service_fn(
            move |event: LambdaEvent<WindowEvent>| {
                let adapter = self.clone();
                async move { adapter.handle(&event.payload).await }
            },
        ))
        .await
    }
}

fn window_of(event: &WindowEvent) -> Result<Window, WindowError> {
    let bounds = &event.window;
    match (parse_iso8601(&bounds.start), parse_iso8601(&bounds.end)) {
        (Some(start), Some(end)) => Ok(Window {
            start,
            end,
            shard_id: event.shard_id.clone(),
            event_source_arn: event.event_source_arn.clone(),
            is_final: event.is_final_invoke_for_window,
            terminated_early: event.is_window_terminated_early,
        }),
        _ => Err(WindowError::Bounds {
            start: bounds.start.clone(),
            end: bounds.end.clone(),
        }),
    }
}

/// The state a handler receives: `None` for a fresh window, which Lambda marks with an empty
/// object (or no state at all).
fn incoming_state<S: DeserializeOwned>(state: &serde_json::Value) -> Result<Option<S>, String> {
    let fresh = match state {
        serde_json::Value::Null => true,
        serde_json::Value::Object(fields) => fields.is_empty(),
        _ => false,
    };
    if fresh {
        return Ok(None);
    }
    S::deserialize(state)
        .map(Some)
        .map_err(|error| error.to_string())
}

/// The records that decode into `T`, with their sequence numbers; the others are logged.
fn decode_records<T: FromRecordData>(event: &WindowEvent) -> (Vec<T>, Vec<String>) {
    let mut records = Vec::with_capacity(event.records.len());
    let mut sequence_numbers = Vec::with_capacity(event.records.len());
    for record in &event.records {
        let kinesis = &record.kinesis;
        match kinesis
            .decoded_data()
            .and_then(|data| T::from_record_data(&data))
        {
            Ok(value) => {
                records.push(value);
                sequence_numbers.push(kinesis.sequence_number.clone());
            }
            Err(reason) => tracing::warn!(
                shard_id = %event.shard_id,
                sequence_number = %kinesis.sequence_number,
                "dropping an undecodable record of a window: {reason}"
            ),
        }
    }
    (records, sequence_numbers)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::testing::{TestEvent, WindowRun};

    const MINUTE: Duration = Duration::from_secs(60);

    #[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Tally {
        records: u64,
        sum: u64,
        invocations: u64,
    }

    /// Counts records and sums them; holds the first record above 99.
    async fn tally(state: Option<Tally>, _: &Window, records: &[u64]) -> WindowOutcome<Tally> {
        let mut tally = state.unwrap_or_default();
        tally.invocations += 1;
        for (index, n) in records.iter().enumerate() {
            if *n > 99 {
                return WindowOutcome::state(tally).hold_from(index);
            }
            tally.records += 1;
            tally.sum += n;
        }
        WindowOutcome::state(tally)
    }

    #[tokio::test]
    async fn the_state_passes_from_invocation_to_invocation_until_the_final_one() {
        let mut run = WindowRun::new(tally, MINUTE);
        assert_eq!(run.state(), None);
        run.invoke(&TestEvent::new().json(&1).json(&2))
            .await
            .unwrap();
        run.invoke(&TestEvent::new().json(&3)).await.unwrap();
        let last = run.final_invoke(&TestEvent::new()).await.unwrap();
        assert_eq!(
            last.state,
            serde_json::json!({"records": 3, "sum": 6, "invocations": 3})
        );
        assert!(last.batch_item_failures.is_empty());
        assert_eq!(run.state(), None, "the next window starts fresh");
        run.invoke(&TestEvent::new().json(&10)).await.unwrap();
        assert_eq!(
            run.state(),
            Some(Tally {
                records: 1,
                sum: 10,
                invocations: 1
            })
        );
    }

    #[tokio::test]
    async fn a_held_record_is_named_and_left_out_of_the_state() {
        let event = TestEvent::new().json(&1).json(&500).json(&2);
        let mut run = WindowRun::new(tally, MINUTE);
        let response = run.invoke(&event).await.unwrap();
        assert_eq!(
            response.batch_item_failures,
            vec![ItemFailure {
                item_identifier: event.sequence_number(1).to_owned()
            }]
        );
        assert_eq!(
            run.state(),
            Some(Tally {
                records: 1,
                sum: 1,
                invocations: 1
            })
        );
    }

    #[tokio::test]
    async fn an_undecodable_record_is_left_out_and_holds_name_the_right_record() {
        let event = TestEvent::new().bytes("not json").json(&7).json(&100);
        let response = WindowRun::new(tally, MINUTE).invoke(&event).await.unwrap();
        assert_eq!(
            response.batch_item_failures[0].item_identifier,
            event.sequence_number(2)
        );
        assert_eq!(response.state["records"], 1);
    }

    #[tokio::test]
    async fn the_handler_sees_the_window_as_lambda_sent_it() {
        async fn check(
            _: Option<u8>,
            window: &Window,
            _: &[u64],
        ) -> Result<WindowOutcome<u8>, String> {
            let start = window
                .start()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            if start.as_secs() != crate::testing::FIRST_WINDOW_START_SECS
                || window.end() != window.start() + MINUTE
                || window.shard_id() != "shardId-000000000000"
                || !window.terminated_early()
                || window.is_final()
            {
                return Err(format!("unexpected window {window:?}"));
            }
            Ok(WindowOutcome::state(1))
        }
        let mut run = WindowRun::new(check, MINUTE);
        run.invoke_terminated_early(&TestEvent::new())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_handler_error_or_a_state_of_another_type_is_a_function_error() {
        async fn fail(_: Option<u8>, _: &Window, _: &[u64]) -> Result<WindowOutcome<u8>, String> {
            Err("the ledger is down".to_owned())
        }
        let error = WindowRun::new(fail, MINUTE)
            .invoke(&TestEvent::new())
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the window handler failed on shard shardId-000000000000: the ledger is down"
        );

        let json = TestEvent::new().to_window_json(&event::WindowFields {
            start: std::time::UNIX_EPOCH,
            end: std::time::UNIX_EPOCH + MINUTE,
            state: r#"{"records":"many"}"#,
            is_final: false,
            terminated_early: false,
        });
        let event: WindowEvent = serde_json::from_slice(&json).unwrap();
        let error = WindowAdapter::new(tally).handle(&event).await.unwrap_err();
        assert!(
            matches!(&error, WindowError::State { shard_id, .. } if shard_id == "shardId-000000000000"),
            "{error}"
        );
        assert_eq!(
            Diagnostic::from(error).error_type,
            "LambdaKinesis.WindowState"
        );
    }

    #[tokio::test]
    async fn holding_past_the_records_is_a_function_error() {
        async fn overreach(_: Option<u8>, _: &Window, _: &[u64]) -> WindowOutcome<u8> {
            WindowOutcome::state(0).hold_from(5)
        }
        let error = WindowRun::new(overreach, MINUTE)
            .invoke(&TestEvent::new().json(&1))
            .await
            .unwrap_err();
        assert_eq!(error, WindowError::HeldOutOfRange { index: 5, len: 1 });
    }
}
