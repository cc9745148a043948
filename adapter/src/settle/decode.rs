//! Decoding a record's data, and settling a record that cannot be decoded.

use base64::Engine as _;

use super::options::Options;
use crate::batch::{RecordData, RecordMeta, data_excerpt};
use crate::data::FromRecordData;
use crate::settlement::{DecodeFailure, DropReason, HoldReason, RecordOutcome, UndecodableRecord};

/// Decodes a record's data into `data` (a buffer reused across records), then into `T`.
pub(super) fn decode<T: FromRecordData>(
    record: &RecordMeta<'_>,
    data: &mut Vec<u8>,
) -> Result<T, UndecodableRecord> {
    let bytes = record_bytes(record, data)?;
    T::from_record_data(bytes).map_err(|error| rejection(record, DecodeFailure::InvalidData(error)))
}

/// A record's data as bytes: base64 decoded into `data` (a buffer reused across records), or
/// a user record's own.
pub(super) fn record_bytes<'d>(
    record: &RecordMeta<'d>,
    data: &'d mut Vec<u8>,
) -> Result<&'d [u8], UndecodableRecord> {
    match record.data() {
        RecordData::Base64(text) => {
            data.clear();
            base64::engine::general_purpose::STANDARD
                .decode_vec(text, data)
                .map_err(|error| {
                    rejection(record, DecodeFailure::InvalidBase64(error.to_string()))
                })?;
            Ok(data.as_slice())
        }
        RecordData::Raw(bytes) => Ok(bytes),
        RecordData::CorruptAggregate(error) => {
            Err(rejection(record, DecodeFailure::CorruptAggregate(error)))
        }
    }
}

pub(super) fn rejection(record: &RecordMeta<'_>, failure: DecodeFailure) -> UndecodableRecord {
    UndecodableRecord {
        shard_id: record.shard_id().to_owned(),
        sequence_number: record.sequence_number().to_owned(),
        sub_sequence_number: record.is_aggregated().then(|| record.sub_sequence_number()),
        failure,
    }
}

/// Settles an undecodable record by the adapter's rule, with a warning that names it, its
/// partition key and its data's first bytes: the partition key usually names the producer, and
/// the bytes show the format it wrote.
pub(super) fn undecodable(
    rejection: UndecodableRecord,
    record: &RecordMeta<'_>,
    options: &Options,
) -> RecordOutcome {
    let data = data_excerpt(record.data());
    let settled = if options.hold_undecodable {
        "held"
    } else {
        "dropped"
    };
    tracing::warn!(
        shard_id = %rejection.shard_id,
        sequence_number = %rejection.sequence_number,
        partition_key = record.partition_key(),
        data = %data,
        error = %rejection,
        "undecodable record {settled}"
    );
    if options.hold_undecodable {
        RecordOutcome::Held(HoldReason::Undecodable(rejection))
    } else {
        RecordOutcome::Dropped(DropReason::Undecodable(rejection))
    }
}
