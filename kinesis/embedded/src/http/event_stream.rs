//! The `application/vnd.amazon.eventstream` framing of `SubscribeToShard`'s answer: each
//! message is a prelude (lengths and their CRC), headers, the payload and a CRC of it all,
//! written by `aws-smithy-eventstream` (the crate the AWS SDK for Rust reads them with).
//!
//! Kinesis sends an `initial-response` event first, then `SubscribeToShardEvent` events, and an
//! `exception` message when the subscription fails after it began; the payloads are in the
//! request's encoding (JSON or CBOR).

use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bytes::Bytes;

use super::error::ApiError;
use super::format::Format;

/// The `Content-Type` of an event stream answer.
pub(super) const CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// The content type inside each message: what its payload is encoded in.
fn payload_type(format: Format) -> &'static str {
    match format {
        Format::Json => "application/json",
        Format::Cbor => super::format::CBOR_1_1,
    }
}

fn frame(headers: Vec<Header>, payload: Vec<u8>) -> Bytes {
    let message = Message::new_from_parts(headers, payload);
    let mut buffer = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut buffer)
        .expect("a message of a few known headers and a payload under 16 MiB can be framed");
    Bytes::from(buffer)
}

fn text(name: &'static str, value: &'static str) -> Header {
    Header::new(name, HeaderValue::String(value.into()))
}

/// An event message: `:message-type` `event`, its `:event-type` and the payload's type.
pub(super) fn event(event_type: &'static str, format: Format, payload: Vec<u8>) -> Bytes {
    frame(
        vec![
            text(":event-type", event_type),
            text(":content-type", payload_type(format)),
            text(":message-type", "event"),
        ],
        payload,
    )
}

/// The first message of every subscription: an empty `initial-response` event.
pub(super) fn initial_response(format: Format) -> Bytes {
    let empty: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    event("initial-response", format, format.write(&empty))
}

/// An exception message ending a subscription that had begun: `:exception-type` names the
/// error, the payload carries its message.
pub(super) fn exception(error: &ApiError, format: Format) -> Bytes {
    frame(
        vec![
            text(":exception-type", error.kind.as_str()),
            text(":content-type", payload_type(format)),
            text(":message-type", "exception"),
        ],
        error.body(format),
    )
}

#[cfg(test)]
mod tests {
    use aws_smithy_eventstream::frame::read_message_from;

    use super::*;
    use crate::http::error::ErrorKind;

    fn header<'a>(message: &'a Message, name: &str) -> &'a str {
        message
            .headers()
            .iter()
            .find(|header| header.name().as_str() == name)
            .and_then(|header| header.value().as_string().ok())
            .map_or("", |value| value.as_str())
    }

    #[test]
    fn events_read_back_with_their_headers_and_payload() {
        let framed = event(
            "SubscribeToShardEvent",
            Format::Json,
            b"{\"Records\":[]}".to_vec(),
        );
        let message = read_message_from(&framed[..]).unwrap();
        assert_eq!(header(&message, ":message-type"), "event");
        assert_eq!(header(&message, ":event-type"), "SubscribeToShardEvent");
        assert_eq!(header(&message, ":content-type"), "application/json");
        assert_eq!(&message.payload()[..], b"{\"Records\":[]}");
        let initial = read_message_from(&initial_response(Format::Json)[..]).unwrap();
        assert_eq!(header(&initial, ":event-type"), "initial-response");
        assert_eq!(&initial.payload()[..], b"{}");
    }

    #[test]
    fn exceptions_name_their_type_and_carry_the_message() {
        let error = ApiError::new(ErrorKind::ResourceNotFound, "Stream orders not found.");
        let message = read_message_from(&exception(&error, Format::Json)[..]).unwrap();
        assert_eq!(header(&message, ":message-type"), "exception");
        assert_eq!(
            header(&message, ":exception-type"),
            "ResourceNotFoundException"
        );
        let body: serde_json::Value = serde_json::from_slice(message.payload()).unwrap();
        assert_eq!(body["message"], "Stream orders not found.");
    }
}
