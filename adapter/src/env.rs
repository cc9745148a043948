//! Options read from the environment, each variable read one documented way: a value is
//! trimmed, and an unset or empty variable means the option is off (a template writes `""` for
//! a stream it does not create). A value that makes no sense is an [`EnvError`] naming the
//! variable and the value, for `main` to return with `?` before the runtime starts.
//!
//! The readers take the variables through a lookup function (`from_env` passes
//! `std::env::var`), so a test gives them values without setting the process' environment:
//!
//! ```
//! use lambda_kinesis::retry::RetryPlan;
//!
//! let plan = RetryPlan::from_lookup(|name| match name {
//!     "RETRY_STREAM" => Some("shipments-retry".to_owned()),
//!     "MAX_RETRIES" => Some("many".to_owned()),
//!     _ => None,
//! });
//! assert_eq!(
//!     plan.unwrap_err().to_string(),
//!     "MAX_RETRIES is \"many\": expected a number of retries (0 to 4294967295)"
//! );
//! ```

/// A variable whose value makes no sense for the option it sets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable} is {value:?}: expected {expected}")]
#[non_exhaustive]
pub struct EnvError {
    /// The variable's name.
    pub variable: String,
    /// Its value, as it was set.
    pub value: String,
    /// What a value of it must be.
    pub expected: String,
}

impl EnvError {
    /// The error of `variable`, set to `value`, which should have been `expected`.
    pub fn new(
        variable: impl Into<String>,
        value: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        Self {
            variable: variable.into(),
            value: value.into(),
            expected: expected.into(),
        }
    }
}

/// The value of `variable` as `lookup` gives it, trimmed; `None` when it is unset or empty.
///
/// ```
/// let lookup = |name: &str| (name == "TABLE").then(|| " idempotency ".to_owned());
/// assert_eq!(lambda_kinesis::env::value(lookup, "TABLE").as_deref(), Some("idempotency"));
/// assert_eq!(lambda_kinesis::env::value(lookup, "OTHER"), None);
/// ```
pub fn value(lookup: impl Fn(&str) -> Option<String>, variable: &str) -> Option<String> {
    lookup(variable)
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// The process' environment as a lookup function: a variable that is unset or not Unicode is
/// `None`.
pub fn process(variable: &str) -> Option<String> {
    std::env::var(variable).ok()
}
