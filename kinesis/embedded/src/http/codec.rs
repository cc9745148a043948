//! The two encodings Kinesis speaks, JSON 1.1 and CBOR 1.1, over the same serde types, so that
//! every operation is written once. A request's `Content-Type` chooses the encoding of its body
//! and of the answer (docs/kinesis.md, "CBOR").
//!
//! The encodings differ only in blobs and timestamps, and the types that hold them ask
//! [`serde::Serializer::is_human_readable`] which one they are written in (serde_json says
//! yes, ciborium no):
//! - a blob (`Data`) is base64 text in JSON and a CBOR byte string in CBOR;
//! - a timestamp is seconds since the epoch with a fraction in JSON, and in CBOR tag 1 around
//!   an integer of *milliseconds* since the epoch, as the AWS SDKs for Java write and read it.

use std::borrow::Cow;
use std::fmt;
use std::time::SystemTime;

use base64::display::Base64Display;
use base64::engine::general_purpose::STANDARD;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::error::{ApiError, ErrorKind};
use super::format::Format;

/// The CBOR tag of an epoch-based date/time (RFC 8949, section 3.4.2).
const EPOCH_TIME_TAG: u64 = 1;

/// A request's body and the encoding it is in; the answer is written in the same encoding.
#[derive(Debug, Clone, Copy)]
pub(super) struct Request<'a> {
    pub(super) format: Format,
    pub(super) body: &'a [u8],
}

impl<'a> Request<'a> {
    /// A JSON request.
    #[cfg(test)]
    pub(super) fn json(body: &'a [u8]) -> Self {
        Self {
            format: Format::Json,
            body,
        }
    }

    /// Reads the body as the operation's input. An empty body counts as an empty map, since an
    /// operation without members may be sent without one.
    pub(super) fn parse<T: Deserialize<'a>>(self) -> Result<T, ApiError> {
        let empty = self.body.iter().all(u8::is_ascii_whitespace);
        let read = match (self.format, empty) {
            (Format::Json, true) => {
                serde_json::from_slice(b"{}").map_err(|error| error.to_string())
            }
            (Format::Json, false) => {
                serde_json::from_slice(self.body).map_err(|error| error.to_string())
            }
            (Format::Cbor, true) => read_cbor_value(ciborium::Value::Map(Vec::new())),
            (Format::Cbor, false) => ciborium::from_reader::<ciborium::Value, _>(self.body)
                .map_err(|error| cbor_error(&error))
                .and_then(read_cbor_value),
        };
        read.map_err(|error| {
            ApiError::new(
                ErrorKind::Serialization,
                format!(
                    "Could not read the request body as this operation's {}: {error}",
                    self.format.name()
                ),
            )
        })
    }

    /// Writes an answer in the request's encoding.
    pub(super) fn reply<T: Serialize>(self, output: &T) -> Vec<u8> {
        self.format.write(output)
    }
}

/// Reads a CBOR value as an operation's input. The body is read into a value first because
/// ciborium reads only into types that own their data, while the inputs borrow from JSON
/// bodies.
fn read_cbor_value<'a, T: Deserialize<'a>>(value: ciborium::Value) -> Result<T, String> {
    value.deserialized().map_err(|error| match error {
        ciborium::value::Error::Custom(message) => message,
    })
}

/// ciborium's error in one sentence (its `Display` is its `Debug`).
fn cbor_error<E: fmt::Debug>(error: &ciborium::de::Error<E>) -> String {
    match error {
        ciborium::de::Error::Io(_) => "the body ends before its CBOR value does".to_owned(),
        ciborium::de::Error::Syntax(offset) => format!("it is not valid CBOR at byte {offset}"),
        ciborium::de::Error::Semantic(Some(offset), message) => {
            format!("{message} (at byte {offset})")
        }
        ciborium::de::Error::Semantic(None, message) => message.clone(),
        ciborium::de::Error::RecursionLimitExceeded => "it is nested too deeply".to_owned(),
    }
}

/// A blob in a request: base64 text (JSON; borrowed from the body when it holds no escapes),
/// or bytes (a CBOR byte string). Base64 text is accepted in CBOR too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum BlobInput<'a> {
    Base64(Cow<'a, str>),
    Bytes(Vec<u8>),
}

impl<'de: 'a, 'a> Deserialize<'de> for BlobInput<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlobVisitor<'a>(std::marker::PhantomData<&'a ()>);

        impl<'de: 'a, 'a> Visitor<'de> for BlobVisitor<'a> {
            type Value = BlobInput<'a>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a blob: base64 text, or a CBOR byte string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(BlobInput::Base64(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(BlobInput::Base64(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(BlobInput::Base64(Cow::Owned(text)))
            }

            fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Self::Value, E> {
                Ok(BlobInput::Bytes(bytes.to_vec()))
            }

            fn visit_byte_buf<E: de::Error>(self, bytes: Vec<u8>) -> Result<Self::Value, E> {
                Ok(BlobInput::Bytes(bytes))
            }
        }

        deserializer.deserialize_any(BlobVisitor(std::marker::PhantomData))
    }
}

/// Writes a blob: base64 text straight into a JSON answer (no intermediate string), a byte
/// string into a CBOR one.
pub(super) fn blob<S: Serializer>(data: &&[u8], serializer: S) -> Result<S::Ok, S::Error> {
    if serializer.is_human_readable() {
        serializer.collect_str(&Base64Display::new(data, &STANDARD))
    } else {
        serializer.serialize_bytes(data)
    }
}

/// A time in an answer: epoch seconds to the millisecond in JSON, tag 1 around epoch
/// milliseconds in CBOR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WireTime(pub(super) SystemTime);

impl WireTime {
    fn millis(self) -> u64 {
        self.0
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| {
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            })
    }
}

impl Serialize for WireTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_f64(self.millis() as f64 / 1000.0)
        } else {
            ciborium::tag::Required::<u64, EPOCH_TIME_TAG>(self.millis()).serialize(serializer)
        }
    }
}

/// Reads a CBOR timestamp as milliseconds since the epoch: an integer or a float, in tag 1 or
/// bare (the AWS SDKs for Java send tag 1 around an integer).
pub(super) fn cbor_millis<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    struct Millis;

    impl Visitor<'_> for Millis {
        type Value = f64;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a number of milliseconds since the Unix epoch")
        }

        fn visit_u64<E: de::Error>(self, millis: u64) -> Result<f64, E> {
            Ok(millis as f64)
        }

        fn visit_i64<E: de::Error>(self, millis: i64) -> Result<f64, E> {
            Ok(millis as f64)
        }

        fn visit_f64<E: de::Error>(self, millis: f64) -> Result<f64, E> {
            Ok(millis)
        }
    }

    struct MillisNumber(f64);

    impl<'de> Deserialize<'de> for MillisNumber {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(Millis).map(MillisNumber)
        }
    }

    let ciborium::tag::Captured(tag, MillisNumber(millis)) =
        Deserialize::deserialize(deserializer)?;
    match tag {
        None | Some(EPOCH_TIME_TAG) => Ok(millis),
        Some(other) => Err(de::Error::custom(format!(
            "a timestamp is CBOR tag 1 around epoch milliseconds, not tag {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_content_type_chooses_the_encoding() {
        assert_eq!(
            Format::of_content_type("application/x-amz-cbor-1.1"),
            Format::Cbor
        );
        assert_eq!(
            Format::of_content_type("application/x-amz-cbor-1.1; charset=utf-8"),
            Format::Cbor
        );
        assert_eq!(
            Format::of_content_type("application/x-amz-json-1.1"),
            Format::Json
        );
        assert_eq!(Format::of_content_type(""), Format::Json);
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Sample<'a> {
        #[serde(borrow)]
        data: BlobInput<'a>,
    }

    #[test]
    fn blobs_are_base64_in_json_and_bytes_in_cbor() {
        let json: Sample<'_> = Request::json(br#"{"data":"AAE="}"#).parse().unwrap();
        assert_eq!(json.data, BlobInput::Base64(Cow::Borrowed("AAE=")));
        // {"data": h'0001'}
        let cbor = [0xa1, 0x64, b'd', b'a', b't', b'a', 0x42, 0x00, 0x01];
        let request = Request {
            format: Format::Cbor,
            body: &cbor,
        };
        let parsed: Sample<'_> = request.parse().unwrap();
        assert_eq!(parsed.data, BlobInput::Bytes(vec![0, 1]));

        #[derive(Serialize)]
        struct Out<'a> {
            #[serde(serialize_with = "blob")]
            data: &'a [u8],
        }
        let out = Out { data: &[0, 1] };
        assert_eq!(Format::Json.write(&out), br#"{"data":"AAE="}"#);
        assert_eq!(Format::Cbor.write(&out), cbor);
    }

    #[test]
    fn times_are_seconds_in_json_and_tagged_millis_in_cbor() {
        let time = WireTime(SystemTime::UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_900));
        assert_eq!(Format::Json.write(&time), b"1700000000.123");
        // Tag 1 (0xc1) around the unsigned 64-bit integer (0x1b) 1,700,000,000,123.
        let mut expected = vec![0xc1, 0x1b];
        expected.extend_from_slice(&1_700_000_000_123_u64.to_be_bytes());
        assert_eq!(Format::Cbor.write(&time), expected);

        #[derive(Deserialize)]
        struct In {
            #[serde(deserialize_with = "cbor_millis")]
            at: f64,
        }
        let mut body = vec![0xa1, 0x62, b'a', b't'];
        body.extend_from_slice(&expected);
        let read: In = Request {
            format: Format::Cbor,
            body: &body,
        }
        .parse()
        .unwrap();
        assert_eq!(read.at, 1_700_000_000_123.0);
    }

    #[test]
    fn an_empty_body_is_an_empty_map() {
        #[derive(Deserialize)]
        struct Nothing {}
        for format in [Format::Json, Format::Cbor] {
            let empty = Request { format, body: b"" };
            assert!(empty.parse::<Nothing>().is_ok(), "{format:?}");
        }
        assert_eq!(
            Request::json(b"[1")
                .parse::<Nothing>()
                .map(drop)
                .map_err(|error| error.kind),
            Err(ErrorKind::Serialization)
        );
    }

    #[test]
    fn a_body_that_is_not_cbor_is_a_serialization_error() {
        let error = Request {
            format: Format::Cbor,
            body: &[0xa1, 0x64, b'd'],
        }
        .parse::<Sample<'_>>()
        .unwrap_err();
        assert_eq!(error.kind, ErrorKind::Serialization);
        assert!(error.message.contains("CBOR"), "{}", error.message);
    }
}
