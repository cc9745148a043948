//! What a record's data becomes before the handler sees it: JSON into the handler's type, or
//! the bytes as they are. The engine (`settle.rs`) and the handler shapes (`handler.rs`) both
//! read it, so it lives apart from either.

use serde::de::DeserializeOwned;

/// What a record's data becomes before the handler sees it.
///
/// Implemented for every `T: DeserializeOwned` (the data is read as JSON) and for
/// [`RawData`] (the bytes as they are). Data that does not decode becomes an
/// [`UndecodableRecord`](crate::settlement::UndecodableRecord).
pub trait FromRecordData: Sized {
    /// Decodes one record's data (already base64-decoded); the error says what is wrong.
    fn from_record_data(data: &[u8]) -> Result<Self, String>;
}

impl<T: DeserializeOwned> FromRecordData for T {
    fn from_record_data(data: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(data).map_err(|error| format!("not valid JSON: {error}"))
    }
}

/// A record's data as raw bytes, for handlers of data that is not JSON.
///
/// ```
/// use lambda_kinesis::{HandlerOutcome, RawData};
///
/// async fn count_lines(data: &RawData) -> HandlerOutcome {
///     let lines = data.split(|byte| *byte == b'\n').count();
///     lambda_kinesis::tracing::info!(lines, "a text record");
///     HandlerOutcome::ack()
/// }
/// # let _ = lambda_kinesis::KinesisAdapter::new(count_lines);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawData(pub Vec<u8>);

impl FromRecordData for RawData {
    fn from_record_data(data: &[u8]) -> Result<Self, String> {
        Ok(RawData(data.to_vec()))
    }
}

impl std::ops::Deref for RawData {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}
