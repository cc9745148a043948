//! What kind of error ended an invocation: one of the errors the Lambda runtime and service
//! report themselves, a closed set, or the function's own `errorType`, which is free text.
//!
//! Sources: the Lambda Developer Guide's runtime API page (`Runtime.*` errors a runtime posts)
//! and the Lambda API reference of `Invoke` (`Function.ResponseSizeTooLarge`,
//! `Sandbox.Timedout`, `RequestTooLargeException`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The type of an invocation's error, as Lambda's `errorType` spells it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ErrorType {
    /// One Lambda reports itself.
    Lambda(LambdaError),
    /// The function's own, as its runtime reported it.
    Function(String),
}

/// The errors Lambda and its runtimes report themselves, rather than the function's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LambdaError {
    /// The process exited (or crashed) during an invocation: `Runtime.ExitError`.
    ExitError,
    /// The runtime failed in a way it could not name: `Runtime.Unknown`.
    Unknown,
    /// The handler could not be found or started: `Runtime.InvalidEntrypoint`.
    InvalidEntrypoint,
    /// The event could not be read into the handler's type: `Runtime.DeserializationError`.
    DeserializationError,
    /// The handler's answer could not be written: `Runtime.SerializationError`.
    SerializationError,
    /// The answer was over the 6 MB response limit: `Function.ResponseSizeTooLarge`.
    ResponseSizeTooLarge,
    /// The function ran past its timeout: `Sandbox.Timedout`.
    Timedout,
    /// The event was over the 6 MB request limit, so the function was never invoked: `Invoke`'s
    /// `RequestTooLargeException`.
    RequestTooLarge,
}

impl LambdaError {
    const ALL: [Self; 8] = [
        Self::ExitError,
        Self::Unknown,
        Self::InvalidEntrypoint,
        Self::DeserializationError,
        Self::SerializationError,
        Self::ResponseSizeTooLarge,
        Self::Timedout,
        Self::RequestTooLarge,
    ];

    /// The name Lambda writes.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ExitError => "Runtime.ExitError",
            Self::Unknown => "Runtime.Unknown",
            Self::InvalidEntrypoint => "Runtime.InvalidEntrypoint",
            Self::DeserializationError => "Runtime.DeserializationError",
            Self::SerializationError => "Runtime.SerializationError",
            Self::ResponseSizeTooLarge => "Function.ResponseSizeTooLarge",
            Self::Timedout => "Sandbox.Timedout",
            Self::RequestTooLarge => "RequestTooLargeException",
        }
    }
}

impl ErrorType {
    /// Reads a reported `errorType`: Lambda's own names become [`ErrorType::Lambda`].
    #[must_use]
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        match LambdaError::ALL
            .into_iter()
            .find(|known| known.as_str() == text)
        {
            Some(known) => Self::Lambda(known),
            None => Self::Function(text),
        }
    }

    /// The name as Lambda writes it.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Lambda(known) => known.as_str(),
            Self::Function(text) => text,
        }
    }
}

impl From<LambdaError> for ErrorType {
    fn from(known: LambdaError) -> Self {
        Self::Lambda(known)
    }
}

impl From<String> for ErrorType {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl From<ErrorType> for String {
    fn from(error_type: ErrorType) -> Self {
        match error_type {
            ErrorType::Lambda(known) => known.as_str().to_owned(),
            ErrorType::Function(text) => text,
        }
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ErrorType {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ErrorType {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambdas_own_names_are_known_and_any_other_is_the_functions() {
        for known in LambdaError::ALL {
            assert_eq!(ErrorType::new(known.as_str()), ErrorType::Lambda(known));
        }
        assert_eq!(
            ErrorType::new("Shipping.MissingCarrier"),
            ErrorType::Function("Shipping.MissingCarrier".to_owned())
        );
        // A near miss is the function's own: only Lambda's exact spelling is Lambda's.
        assert!(matches!(
            ErrorType::new("runtime.exiterror"),
            ErrorType::Function(_)
        ));
    }

    #[test]
    fn it_reads_and_writes_as_the_name_lambda_writes() {
        let error_type = ErrorType::from(LambdaError::ExitError);
        assert_eq!(error_type.to_string(), "Runtime.ExitError");
        let json = serde_json::to_string(&error_type).unwrap();
        assert_eq!(json, "\"Runtime.ExitError\"");
        assert_eq!(
            serde_json::from_str::<ErrorType>(&json).unwrap(),
            error_type
        );
        assert_eq!(ErrorType::new("Panic"), "Panic");
    }
}
