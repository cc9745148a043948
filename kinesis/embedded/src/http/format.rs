//! How a request's body and its answer are encoded: JSON 1.1 or CBOR 1.1, by the request's
//! `Content-Type`.

use serde::Serialize;

/// The `Content-Type` of CBOR requests and answers.
pub(super) const CBOR_1_1: &str = "application/x-amz-cbor-1.1";
/// The `Content-Type` of JSON requests and answers.
pub(super) const JSON_1_1: &str = "application/x-amz-json-1.1";

/// How a request's body and its answer are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Json,
    Cbor,
}

impl Format {
    /// The encoding a request's `Content-Type` names: CBOR for `application/x-amz-cbor-1.1`
    /// (parameters such as `; charset=...` aside), JSON for anything else, as Kinesis reads a
    /// request without a `Content-Type` as JSON.
    pub(super) fn of_content_type(content_type: &str) -> Self {
        let media_type = content_type.split(';').next().unwrap_or_default().trim();
        if media_type.eq_ignore_ascii_case(CBOR_1_1) {
            Self::Cbor
        } else {
            Self::Json
        }
    }

    /// The `Content-Type` of answers in this encoding.
    pub(super) fn content_type(self) -> &'static str {
        match self {
            Self::Json => JSON_1_1,
            Self::Cbor => CBOR_1_1,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Json => "JSON",
            Self::Cbor => "CBOR",
        }
    }

    /// Writes an answer (or an error body) in this encoding.
    pub(super) fn write<T: Serialize>(self, output: &T) -> Vec<u8> {
        match self {
            Self::Json => serde_json::to_vec(output)
                .expect("answers hold only strings, numbers, lists and maps"),
            Self::Cbor => {
                let mut body = Vec::new();
                ciborium::into_writer(output, &mut body)
                    .expect("answers hold only strings, numbers, lists and maps");
                body
            }
        }
    }
}
