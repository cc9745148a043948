//! Reading an answer of the Invoke API: the function's response, its error, or a rejection by
//! whatever serves the API (the table in the parent module's documentation).

use std::fmt::Write as _;

use bytes::Bytes;
use hyper::StatusCode;
use hyper::header::{HeaderMap, HeaderName};

use crate::invoke::error_type::ErrorType;
use crate::invoke::invoker::InvokeOutcome;

/// How much of an answer that is not the expected JSON an error message quotes.
const QUOTED_BODY_CHARS: usize = 300;

/// Lambda's header that marks a function error (`Handled` or `Unhandled`).
pub(super) const FUNCTION_ERROR: HeaderName = HeaderName::from_static("x-amz-function-error");

/// The AWS header that names a service error's type (`ResourceNotFoundException:<namespace>`).
const ERROR_TYPE: HeaderName = HeaderName::from_static("x-amzn-errortype");

/// The error type under which Lambda reports a function stopped at its timeout.
const SANDBOX_TIMEDOUT: &str = "Sandbox.Timedout";

/// Why an answer did not come from the function.
#[derive(Debug)]
pub(super) struct Rejection {
    pub(super) kind: RejectionKind,
    /// The status, the error's type and its message.
    pub(super) summary: String,
}

/// Reads an answer of the Invoke API.
pub(super) fn classify(
    status: StatusCode,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<InvokeOutcome, Rejection> {
    if let Some(reported) = headers.get(FUNCTION_ERROR) {
        let reported = reported.to_str().unwrap_or("Unhandled");
        return Ok(function_error(&body, reported));
    }
    if status.is_success() {
        return Ok(InvokeOutcome::Response(body));
    }
    // `cargo lambda watch` answers a function error with HTTP 500 and the runtime's error as
    // the body. Its own failures, and Lambda's `ServiceException`, are 500s too, but their
    // bodies are problem documents or service errors, and AWS names the latter's type in a
    // header.
    if status == StatusCode::INTERNAL_SERVER_ERROR
        && !headers.contains_key(ERROR_TYPE)
        && is_runtime_error(&body)
    {
        return Ok(function_error(&body, "Unhandled"));
    }
    let kind = if status == StatusCode::TOO_MANY_REQUESTS {
        RejectionKind::Throttled
    } else if status == StatusCode::NOT_FOUND && says_no_such_function(headers, &body) {
        RejectionKind::NoSuchFunction
    } else {
        RejectionKind::Other
    };
    Err(Rejection {
        kind,
        summary: describe_service_error(status, headers, &body),
    })
}

/// What a rejection means for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RejectionKind {
    /// 429: try again later.
    Throttled,
    /// The target has no function by that name: a configuration error.
    NoSuchFunction,
    /// Anything else the target refused or failed at.
    Other,
}

/// Whether a 404's answer says the function does not exist, rather than that the endpoint has
/// no such path: Lambda's `ResourceNotFoundException`, SAM's `ResourceNotFound` (both in
/// `X-Amzn-ErrorType`), `cargo lambda watch`'s problem document titled `Missing function`.
pub(super) fn says_no_such_function(headers: &HeaderMap, body: &[u8]) -> bool {
    let named_type = headers
        .get(ERROR_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.split(':').next().unwrap_or(value));
    if matches!(
        named_type,
        Some("ResourceNotFoundException" | "ResourceNotFound")
    ) {
        return true;
    }
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(body).is_ok_and(|object| {
        object.get("title").and_then(serde_json::Value::as_str) == Some("Missing function")
            || object
                .get("__type")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|kind| kind.rsplit('#').next() == Some("ResourceNotFoundException"))
    })
}

/// Whether `body` is an error as a Lambda runtime reports it: a JSON object with a string
/// `errorType` or `errorMessage`.
pub(super) fn is_runtime_error(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(body).is_ok_and(|object| {
        ["errorType", "errorMessage"]
            .iter()
            .any(|key| object.get(*key).is_some_and(serde_json::Value::is_string))
    })
}

/// The outcome of a function error whose body is the runtime's error document, with `reported`
/// (`Handled`, `Unhandled`) as the type when the body names none.
pub(super) fn function_error(body: &[u8], reported: &str) -> InvokeOutcome {
    let object = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(body).ok();
    let field = |key: &str| {
        object
            .as_ref()
            .and_then(|object| object.get(key))
            .and_then(serde_json::Value::as_str)
            .filter(|text| !text.is_empty())
    };
    let error_type = field("errorType");
    let message = field("errorMessage");
    // Lambda reports a function it stopped at its timeout as `Sandbox.Timedout`; older
    // runtimes' reports carry only the message.
    let timed_out = match (error_type, message) {
        (Some(error_type), _) => error_type == SANDBOX_TIMEDOUT,
        (None, Some(message)) => message.contains("Task timed out after"),
        (None, None) => false,
    };
    if timed_out {
        return InvokeOutcome::Timeout;
    }
    InvokeOutcome::FunctionError {
        error_type: ErrorType::new(error_type.unwrap_or(reported)),
        message: message.map_or_else(|| quote(body), str::to_owned),
    }
}

/// A service error's status, type and message, from whichever of AWS's shapes it takes
/// (`X-Amzn-ErrorType` with `{"Type", "message"}` from Lambda and SAM, `__type` or `code` in
/// other AWS JSON errors, `{"title", "detail"}` from `cargo lambda watch`).
pub(super) fn describe_service_error(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> String {
    let object = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(body).ok();
    let field = |keys: &[&str]| {
        keys.iter().find_map(|key| {
            object
                .as_ref()
                .and_then(|object| object.get(*key))
                .and_then(serde_json::Value::as_str)
                .filter(|text| !text.is_empty())
        })
    };
    let error_type = headers
        .get(ERROR_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.split(':').next().unwrap_or(value))
        .or_else(|| {
            field(&["__type", "code"]).map(|value| value.rsplit('#').next().unwrap_or(value))
        })
        .or_else(|| field(&["title"]));
    let message = field(&["message", "Message", "errorMessage", "detail"]);
    let mut summary = format!("HTTP {status}");
    if let Some(error_type) =
        error_type.filter(|&error_type| Some(error_type) != status.canonical_reason())
    {
        let _ = write!(summary, " [{error_type}]");
    }
    match message {
        Some(message) => {
            let _ = write!(summary, ": {message}");
        }
        None if object.is_none() && !body.is_empty() => {
            let _ = write!(summary, ": {}", quote(body));
        }
        None => {}
    }
    if let Some(reason) = field(&["Reason"]) {
        let _ = write!(summary, " ({reason})");
    }
    if let Some(retry_after) = headers
        .get("retry-after")
        .and_then(|value| value.to_str().ok())
    {
        let _ = write!(summary, "; retry after {retry_after} s");
    }
    summary
}

/// The start of `body` as text, for a message.
pub(super) fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(QUOTED_BODY_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_bodies_are_quoted_in_part() {
        let body = "x".repeat(QUOTED_BODY_CHARS + 50);
        let quoted = quote(body.as_bytes());
        assert_eq!(quoted.chars().count(), QUOTED_BODY_CHARS + 1);
        assert!(quoted.ends_with('…'));
        assert_eq!(quote(b"  short  "), "short");
    }
}
