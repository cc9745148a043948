//! What went wrong with an SDK call, said once and in words: the service's error code and
//! message, "nothing answers at URL", "no answer in time", or "something that is not Kinesis
//! answers there". Both backends describe their failures here, so no SDK `Debug` dump (and no
//! OS error repeated by each layer of the SDK's error chain) reaches a user.
//!
//! [`Observed`] is what a failed call showed, read from the SDK's error by [`observe`];
//! [`Observed::describe`] turns it into the sentence, a pure function tested case by case.

use std::error::Error as StdError;

use aws_sdk_kinesis::config::http::HttpResponse;
use aws_sdk_kinesis::error::{ProvideErrorMetadata, SdkError};

/// What a failed call showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// The service answered with an AWS error: a code (such as `ResourceNotFoundException`), or
    /// none when the answer held no error type.
    Answer {
        /// The HTTP status.
        status: u16,
        /// The AWS error code, when the body named one.
        code: Option<String>,
        /// The service's message.
        message: Option<String>,
        /// The answer's `Content-Type`.
        content_type: Option<String>,
    },
    /// An answer the SDK could not read at all (HTML, a body that is not the service's JSON).
    Unreadable {
        /// The HTTP status.
        status: u16,
        /// The answer's `Content-Type`.
        content_type: Option<String>,
    },
    /// No connection could be made, or it broke before an answer: the innermost OS reason.
    Unreachable {
        /// Such as "connection refused".
        reason: String,
    },
    /// No answer came within the attempt's timeout.
    TimedOut,
    /// The request could not even be built, or anything else: the innermost reason.
    Other {
        /// The innermost error's text.
        reason: String,
    },
}

impl Observed {
    /// The sentence for a user: `service` is "Kinesis" or "DynamoDB", `endpoint` the URL called
    /// (or a description such as "the AWS endpoint").
    pub fn describe(&self, service: &str, endpoint: &str) -> String {
        match self {
            Self::Answer {
                status,
                code: Some(code),
                message,
                ..
            } => match message.as_deref().filter(|message| !message.is_empty()) {
                Some(message) => format!("{code} (HTTP {status}): {message}"),
                None => format!("{code} (HTTP {status})"),
            },
            // A 5xx without an error type is a server failing (kinesis-local answers a bad
            // iterator with an empty 500); a 4xx without one is not an AWS API at all.
            Self::Answer {
                status,
                code: None,
                message,
                ..
            } if *status >= 500 => match message.as_deref().filter(|message| !message.is_empty()) {
                Some(message) => format!("HTTP {status} without an error code: {message}"),
                None => format!("HTTP {status} without an error code"),
            },
            Self::Answer {
                status,
                content_type,
                ..
            }
            | Self::Unreadable {
                status,
                content_type,
            } => {
                let content = content_type
                    .as_deref()
                    .map(|content_type| format!(" ({content_type})"))
                    .unwrap_or_default();
                format!(
                    "something that is not {service} answers at {endpoint}: HTTP {status}{content} \
                     without an AWS error; is the endpoint right?"
                )
            }
            Self::Unreachable { reason } => format!("nothing answers at {endpoint} ({reason})"),
            Self::TimedOut => format!("no answer from {endpoint} in time"),
            Self::Other { reason } => reason.clone(),
        }
    }

    /// The AWS error code, when the service gave one.
    pub(crate) fn code(&self) -> Option<&str> {
        match self {
            Self::Answer { code, .. } => code.as_deref(),
            _ => None,
        }
    }

    /// The HTTP status, when there was an answer.
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            Self::Answer { status, .. } | Self::Unreadable { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Reads what `error` shows, without its `Debug` form.
pub fn observe<E>(error: &SdkError<E, HttpResponse>) -> Observed
where
    E: ProvideErrorMetadata + StdError + Send + Sync + 'static,
{
    let content_type = |raw: &HttpResponse| raw.headers().get("content-type").map(str::to_owned);
    match error {
        SdkError::ServiceError(service) => Observed::Answer {
            status: service.raw().status().as_u16(),
            code: service.err().code().map(str::to_owned),
            message: service.err().message().map(str::to_owned),
            content_type: content_type(service.raw()),
        },
        SdkError::ResponseError(response) => Observed::Unreadable {
            status: response.raw().status().as_u16(),
            content_type: content_type(response.raw()),
        },
        SdkError::TimeoutError(_) => Observed::TimedOut,
        SdkError::DispatchFailure(failure) if failure.is_timeout() => Observed::TimedOut,
        SdkError::DispatchFailure(_) => Observed::Unreachable {
            reason: innermost_reason(error),
        },
        _ => Observed::Other {
            reason: innermost_reason(error),
        },
    }
}

/// The innermost error's text: each layer of the SDK's chain repeats or wraps the one below,
/// and the innermost (an OS error, usually) is the one that says what happened. An OS error is
/// said in words ("connection refused"), without its number.
fn innermost_reason(error: &(dyn StdError + 'static)) -> String {
    let mut innermost = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    match innermost.downcast_ref::<std::io::Error>() {
        Some(io) if io.raw_os_error().is_some() => io_reason(io.kind(), &io.to_string()),
        _ => innermost.to_string(),
    }
}

/// An OS error in words: "connection refused" rather than "Connection refused (os error 111)".
fn io_reason(kind: std::io::ErrorKind, text: &str) -> String {
    use std::io::ErrorKind;
    match kind {
        ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        ErrorKind::ConnectionReset => "connection reset".to_owned(),
        ErrorKind::TimedOut => "connection timed out".to_owned(),
        _ => text
            .split(" (os error")
            .next()
            .unwrap_or(text)
            .to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(observed: Observed, expected: &str) {
        assert_eq!(
            observed.describe("Kinesis", "http://127.0.0.1:4566"),
            expected
        );
    }

    fn answer(status: u16, code: Option<&str>, message: Option<&str>) -> Observed {
        Observed::Answer {
            status,
            code: code.map(str::to_owned),
            message: message.map(str::to_owned),
            content_type: Some("application/x-amz-json-1.1".to_owned()),
        }
    }

    #[test]
    fn a_service_error_is_its_code_and_message() {
        check(
            answer(
                400,
                Some("ResourceNotFoundException"),
                Some("Stream s under account 123 not found."),
            ),
            "ResourceNotFoundException (HTTP 400): Stream s under account 123 not found.",
        );
        check(
            answer(400, Some("InvalidArgumentException"), None),
            "InvalidArgumentException (HTTP 400)",
        );
        check(
            answer(400, Some("InvalidArgumentException"), Some("")),
            "InvalidArgumentException (HTTP 400)",
        );
    }

    #[test]
    fn a_server_error_without_a_code_is_a_failing_server() {
        check(answer(500, None, None), "HTTP 500 without an error code");
        check(
            answer(503, None, Some("busy")),
            "HTTP 503 without an error code: busy",
        );
    }

    #[test]
    fn an_answer_without_an_aws_error_is_not_the_service() {
        check(
            Observed::Unreadable {
                status: 501,
                content_type: Some("text/html;charset=utf-8".to_owned()),
            },
            "something that is not Kinesis answers at http://127.0.0.1:4566: HTTP 501 \
             (text/html;charset=utf-8) without an AWS error; is the endpoint right?",
        );
        check(
            Observed::Answer {
                status: 404,
                code: None,
                message: None,
                content_type: None,
            },
            "something that is not Kinesis answers at http://127.0.0.1:4566: HTTP 404 without \
             an AWS error; is the endpoint right?",
        );
    }

    #[test]
    fn no_connection_and_no_answer_name_the_endpoint() {
        check(
            Observed::Unreachable {
                reason: "connection refused".to_owned(),
            },
            "nothing answers at http://127.0.0.1:4566 (connection refused)",
        );
        check(
            Observed::TimedOut,
            "no answer from http://127.0.0.1:4566 in time",
        );
    }

    #[test]
    fn os_errors_are_said_once_in_words() {
        use std::io::ErrorKind;
        let cases = [
            (
                ErrorKind::ConnectionRefused,
                "Connection refused (os error 111)",
                "connection refused",
            ),
            (
                ErrorKind::ConnectionReset,
                "Connection reset by peer (os error 104)",
                "connection reset",
            ),
            (
                ErrorKind::Other,
                "Network is unreachable (os error 101)",
                "network is unreachable",
            ),
        ];
        for (kind, text, expected) in cases {
            assert_eq!(io_reason(kind, text), expected, "{text}");
        }
    }

    #[test]
    fn the_innermost_error_of_a_chain_is_the_reason() {
        #[derive(Debug, thiserror::Error)]
        #[error("dispatch failure: {0}")]
        struct Outer(#[source] std::io::Error);
        let refused = std::io::Error::from_raw_os_error(111);
        assert_eq!(innermost_reason(&Outer(refused)), "connection refused");
    }
}
