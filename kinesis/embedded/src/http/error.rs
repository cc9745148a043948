//! Kinesis' error answers: an exception name in `__type`, a message, and an HTTP status.

use hyper::StatusCode;
use serde::Serialize;

use super::format::Format;
use kinesis_source::SourceError;

/// The exceptions this endpoint answers with, named as Kinesis names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ErrorKind {
    /// The stream or shard does not exist.
    ResourceNotFound,
    /// The request breaks one of Kinesis' rules.
    InvalidArgument,
    /// The shard iterator is too old.
    ExpiredIterator,
    /// The `NextToken` is too old.
    ExpiredNextToken,
    /// Too many shards, or a scaling beyond what one call may do.
    LimitExceeded,
    /// The stream exists already, or the shard is closed.
    ResourceInUse,
    /// The request breaks a constraint of the API model: a missing member, a value out of
    /// range, a name of the wrong shape.
    Validation,
    /// The body is not JSON of the expected shape (wrong types, bad base64).
    Serialization,
    /// The `X-Amz-Target` header names no operation this endpoint serves.
    UnknownOperation,
    /// The embedded Kinesis failed; never expected.
    InternalFailure,
    /// A throttle: a shard's throughput limit under `--throttle`, or an SDK error type mapped.
    ProvisionedThroughputExceeded,
}

impl ErrorKind {
    /// The `__type` Kinesis sends.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::ResourceNotFound => "ResourceNotFoundException",
            Self::InvalidArgument => "InvalidArgumentException",
            Self::ExpiredIterator => "ExpiredIteratorException",
            Self::ExpiredNextToken => "ExpiredNextTokenException",
            Self::LimitExceeded => "LimitExceededException",
            Self::ResourceInUse => "ResourceInUseException",
            Self::Validation => "ValidationException",
            Self::Serialization => "SerializationException",
            Self::UnknownOperation => "UnknownOperationException",
            Self::InternalFailure => "InternalFailureException",
            Self::ProvisionedThroughputExceeded => "ProvisionedThroughputExceededException",
        }
    }

    /// Kinesis answers client errors with 400 and its own failures with 500.
    pub(super) fn status(self) -> StatusCode {
        match self {
            Self::InternalFailure => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

/// What an operation answers: its body in the request's encoding (empty for operations that
/// answer with nothing), or the exception the client is to see.
pub(super) type Answer = Result<Vec<u8>, ApiError>;

/// A failed call, as the client will see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ApiError {
    pub(super) kind: ErrorKind,
    pub(super) message: String,
}

impl ApiError {
    pub(super) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub(super) fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    pub(super) fn validation(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Validation, message)
    }

    /// The body, in the request's encoding: `{"__type": "...Exception", "message": "..."}`
    /// (a map of the same two members in CBOR, as Kinesis answers it).
    pub(super) fn body(&self, format: Format) -> Vec<u8> {
        #[derive(Serialize)]
        struct Body<'a> {
            __type: &'a str,
            message: &'a str,
        }
        format.write(&Body {
            __type: self.kind.as_str(),
            message: &self.message,
        })
    }
}

impl From<SourceError> for ApiError {
    fn from(error: SourceError) -> Self {
        match error {
            SourceError::NotFound { what } => {
                Self::new(ErrorKind::ResourceNotFound, format!("{what} not found."))
            }
            SourceError::InvalidArgument { message } => {
                Self::new(ErrorKind::InvalidArgument, message)
            }
            SourceError::ExpiredIterator => Self::new(
                ErrorKind::ExpiredIterator,
                "Iterator expired: shard iterators are valid for 5 minutes (or the embedded \
                 Kinesis' configured time) after they are issued. Get a new one with \
                 GetShardIterator.",
            ),
            SourceError::Throttled { message } => {
                Self::new(ErrorKind::ProvisionedThroughputExceeded, message)
            }
            SourceError::LimitExceeded { message } => Self::new(ErrorKind::LimitExceeded, message),
            SourceError::ResourceInUse { message } => Self::new(ErrorKind::ResourceInUse, message),
            SourceError::Service { message } => Self::new(ErrorKind::InternalFailure, message),
            // `SourceError` may grow; a kind this endpoint does not know yet is its own failure.
            other => Self::new(ErrorKind::InternalFailure, other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(error: SourceError, expected_type: &str, expected_message: &str) {
        let error = ApiError::from(error);
        let body: serde_json::Value = serde_json::from_slice(&error.body(Format::Json)).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"__type": expected_type, "message": expected_message})
        );
    }

    #[test]
    fn source_errors_keep_their_kinesis_names() {
        check(
            SourceError::NotFound {
                what: "Stream orders under account 000000000000".to_owned(),
            },
            "ResourceNotFoundException",
            "Stream orders under account 000000000000 not found.",
        );
        check(
            SourceError::InvalidArgument {
                message: "bad".to_owned(),
            },
            "InvalidArgumentException",
            "bad",
        );
        check(
            SourceError::LimitExceeded {
                message: "too many".to_owned(),
            },
            "LimitExceededException",
            "too many",
        );
        check(
            SourceError::ResourceInUse {
                message: "closed".to_owned(),
            },
            "ResourceInUseException",
            "closed",
        );
        assert_eq!(
            ApiError::from(SourceError::ExpiredIterator).kind.as_str(),
            "ExpiredIteratorException"
        );
    }

    #[test]
    fn only_internal_failures_are_server_errors() {
        assert_eq!(
            ApiError::from(SourceError::Service {
                message: "x".to_owned()
            })
            .kind
            .status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            ErrorKind::ResourceNotFound.status(),
            StatusCode::BAD_REQUEST
        );
    }
}
