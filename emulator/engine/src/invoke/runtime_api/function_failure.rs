//! How a function failed, as its runtime reported it or as the emulator saw it.

use crate::invoke::error_type::ErrorType;
use crate::invoke::invoker::InvokeOutcome;

/// How a function failed, as the Runtime API was told or as the emulator saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FunctionFailure {
    pub(super) error_type: String,
    pub(super) message: String,
}

impl FunctionFailure {
    /// The failure a runtime reported in an error post: the body's `errorType` and
    /// `errorMessage` when it is Lambda's error document, else the
    /// `Lambda-Runtime-Function-Error-Type` header (or `default_type`) and the body as text.
    pub(super) fn reported(headers: &hyper::HeaderMap, body: &[u8], default_type: &str) -> Self {
        #[derive(serde::Deserialize)]
        struct ErrorDocument {
            #[serde(rename = "errorType")]
            error_type: Option<String>,
            #[serde(rename = "errorMessage")]
            error_message: Option<String>,
        }
        let document = serde_json::from_slice::<ErrorDocument>(body).ok();
        let (body_type, body_message) = document
            .map(|document| (document.error_type, document.error_message))
            .unwrap_or_default();
        let header_type = headers
            .get("lambda-runtime-function-error-type")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let error_type = [body_type, header_type]
            .into_iter()
            .flatten()
            .find(|error_type| !error_type.is_empty())
            .unwrap_or_else(|| default_type.to_owned());
        let message = body_message.unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
        Self {
            error_type,
            message,
        }
    }

    pub(super) fn into_outcome(self) -> InvokeOutcome {
        InvokeOutcome::FunctionError {
            error_type: ErrorType::new(self.error_type),
            message: self.message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_reported(header: Option<&str>, body: &str, expected: (&str, &str)) {
        let mut headers = hyper::HeaderMap::new();
        if let Some(header) = header {
            headers.insert(
                "lambda-runtime-function-error-type",
                header.parse().expect("a header value"),
            );
        }
        let failure = FunctionFailure::reported(&headers, body.as_bytes(), "Unhandled");
        assert_eq!(
            (failure.error_type.as_str(), failure.message.as_str()),
            expected
        );
    }

    #[test]
    fn reported_errors_take_the_documents_type_then_the_headers() {
        check_reported(
            Some("unhandled"),
            r#"{"errorType":"my::Error","errorMessage":"boom"}"#,
            ("my::Error", "boom"),
        );
        check_reported(
            Some("Runtime.InitError"),
            r#"{"errorMessage":"boom"}"#,
            ("Runtime.InitError", "boom"),
        );
        check_reported(None, "not json", ("Unhandled", "not json"));
        check_reported(
            Some(""),
            r#"{"errorType":"","errorMessage":"m"}"#,
            ("Unhandled", "m"),
        );
    }
}
