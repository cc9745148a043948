//! Whether a function ever initialised: a function whose every execution environment failed
//! before taking an invocation loses its records to the mapping's rules one retry at a time,
//! and a run should say so in its summary rather than only count discards.

use std::sync::{Mutex, PoisonError};

use crate::invoke::invoker::{InvokeOutcome, NeverInitialised};

/// What the new execution environments of one function came to.
#[derive(Debug, Default)]
pub(super) struct InitRecord {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// One environment took an invocation: the function can initialise.
    initialised: bool,
    failed: u64,
    last_failure: Option<String>,
}

impl InitRecord {
    /// Records a new environment's first invocation: whether its runtime took it, and the
    /// outcome, which says why when it did not.
    pub(super) fn record(&self, took_the_invocation: bool, outcome: &InvokeOutcome) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if took_the_invocation {
            state.initialised = true;
            return;
        }
        state.failed += 1;
        state.last_failure = Some(describe(outcome));
    }

    /// The failures, while no environment has initialised.
    pub(super) fn never_initialised(&self) -> Option<NeverInitialised> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.initialised || state.failed == 0 {
            return None;
        }
        Some(NeverInitialised {
            environments: state.failed,
            last_failure: state.last_failure.clone().unwrap_or_default(),
        })
    }
}

fn describe(outcome: &InvokeOutcome) -> String {
    match outcome {
        InvokeOutcome::FunctionError {
            error_type,
            message,
        } => format!("{error_type}: {message}"),
        InvokeOutcome::Timeout => {
            "Sandbox.Timedout: it did not ask for an invocation in time".to_owned()
        }
        InvokeOutcome::Response(_) => "it answered without initialising".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invoke::error_type::ErrorType;

    fn init_error() -> InvokeOutcome {
        InvokeOutcome::FunctionError {
            error_type: ErrorType::new("Shipping.MissingCarrier"),
            message: "CARRIER_URL is not set".to_owned(),
        }
    }

    #[test]
    fn nothing_started_is_not_a_failure() {
        assert_eq!(InitRecord::default().never_initialised(), None);
    }

    #[test]
    fn environments_that_all_failed_are_counted_with_the_last_failure() {
        let record = InitRecord::default();
        record.record(false, &InvokeOutcome::Timeout);
        record.record(false, &init_error());

        assert_eq!(
            record.never_initialised(),
            Some(NeverInitialised {
                environments: 2,
                last_failure: "Shipping.MissingCarrier: CARRIER_URL is not set".to_owned(),
            })
        );
    }

    #[test]
    fn one_environment_that_initialised_clears_the_function() {
        let record = InitRecord::default();
        record.record(false, &init_error());
        record.record(true, &init_error());
        record.record(false, &InvokeOutcome::Timeout);

        assert_eq!(record.never_initialised(), None);
    }
}
