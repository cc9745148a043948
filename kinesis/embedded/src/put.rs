//! The write path: `PutRecord` and `PutRecords`, each record routed to its shard, admitted by
//! its shard's write limit under `--throttle` ([`super::throughput`]), and counted toward
//! splitting a hot shard of an `ON_DEMAND` stream.

use std::sync::atomic::Ordering;

use super::stream::{Stream, shard_id};
use super::throughput::{PutRecordsResult, ThroughputExceeded, key_of};
use crate::embedded::EmbeddedKinesis;
use crate::entries::{PutRecordOutput, PutRecordsEntry};
use crate::hash_key;
use crate::limits::MAX_PARTITION_KEY_CHARS;
use crate::limits::MAX_PUT_RECORDS_ENTRIES;
use crate::settings::{RecordDistribution, spread_hash_key};
use crate::status::Needs;
use kinesis_source::SourceError;

/// A record's size as the write limit counts it: its data and partition key.
fn size_of(record: &PutRecordsEntry) -> u64 {
    (record.data.len() + record.partition_key.len()) as u64
}

impl EmbeddedKinesis {
    /// `PutRecord`: one record, routed to the open shard whose hash key range holds the MD5
    /// hash of its partition key (or its explicit hash key). Under `--throttle`, a record past
    /// its shard's write limit is refused (`Throttled`).
    pub fn put_record(
        &self,
        stream: &str,
        record: PutRecordsEntry,
    ) -> Result<PutRecordOutput, SourceError> {
        let mut results = self.put(stream, vec![record], "PutRecord", true)?;
        Ok(results
            .pop()
            .expect("one result per record")
            .expect("admitted"))
    }

    /// `PutRecords`: up to 500 records (5 MiB in all, 10 MiB to a stream whose
    /// `MaxRecordSizeInKiB` is above 1024), each routed as by
    /// [`put_record`](Self::put_record). The results follow the order of the records. A record
    /// that breaks a limit fails the whole call (`InvalidArgument`) and nothing is written;
    /// under `--throttle`, so does one past its shard's write limit (`Throttled`): use
    /// [`put_records_each`](Self::put_records_each) for AWS's record-by-record answer.
    pub fn put_records(
        &self,
        stream: &str,
        records: Vec<PutRecordsEntry>,
    ) -> Result<Vec<PutRecordOutput>, SourceError> {
        self.check_put_records(stream, &records)?;
        let results = self.put(stream, records, "PutRecords", true)?;
        Ok(results
            .into_iter()
            .map(|put| put.expect("admitted"))
            .collect())
    }

    /// The count limit of one `PutRecords` call: 1 to 500 records. Its size limit depends on
    /// the stream (`check_put_records_size`).
    fn check_put_records(
        &self,
        stream: &str,
        records: &[PutRecordsEntry],
    ) -> Result<(), SourceError> {
        if records.is_empty() || records.len() > MAX_PUT_RECORDS_ENTRIES {
            return Err(SourceError::InvalidArgument {
                message: format!(
                    "PutRecords on stream {stream} carries {} records; it must carry 1 to \
                     {MAX_PUT_RECORDS_ENTRIES}",
                    records.len()
                ),
            });
        }
        Ok(())
    }

    /// `PutRecords` as AWS answers it: under `--throttle`, each record past its shard's write
    /// limit (1 MiB or 1,000 records a second) fails on its own with
    /// `ProvisionedThroughputExceededException` and the others are written; without it, every
    /// record is written. Breaking another rule fails the whole call, as in
    /// [`put_records`](Self::put_records).
    pub fn put_records_each(
        &self,
        stream: &str,
        records: Vec<PutRecordsEntry>,
    ) -> Result<Vec<PutRecordsResult>, SourceError> {
        self.check_put_records(stream, &records)?;
        self.put(stream, records, "PutRecords", false)
    }

    /// Writes records: each routed to its shard, each admitted by its shard's write limit
    /// under `--throttle` (all or none with `all_or_nothing`), then counted toward splitting
    /// the shards of an `ON_DEMAND` stream.
    fn put(
        &self,
        stream: &str,
        records: Vec<PutRecordsEntry>,
        operation: &str,
        all_or_nothing: bool,
    ) -> Result<Vec<PutRecordsResult>, SourceError> {
        let stream = self.stream_for(stream, Needs::Writable)?;
        let (max_record_bytes, distribution) = check_request_size(&stream, &records, operation)?;
        let auto = distribution == RecordDistribution::Auto;
        // Hashing happens before the stream's lock is taken, to keep the lock short.
        let hash_keys = records
            .iter()
            .enumerate()
            .map(|(position, record)| {
                let limits = (max_record_bytes, !auto);
                check_record(record, position, operation, &stream.name, limits)?;
                if auto {
                    Ok(spread_hash_key(
                        stream.spread.fetch_add(1, Ordering::Relaxed),
                    ))
                } else {
                    hash_key_of(record)
                }
            })
            .collect::<Result<Vec<u128>, SourceError>>()?;
        let (_, now_ms) = self.now();
        let journal = &*self.inner.journal;
        let throughput = &self.inner.throughput;
        let key = key_of(&stream);
        if !throughput.throttle && !throughput.is_on_demand(&key) {
            let written = stream.append(records, &hash_keys, now_ms, journal)?;
            return Ok(written.into_iter().map(Ok).collect());
        }
        let shards = stream.route(&hash_keys);
        let sizes: Vec<u64> = records.iter().map(size_of).collect();
        let admitted = if throughput.throttle {
            throughput.admit_writes(&key, &shards, &sizes, now_ms, all_or_nothing)
        } else {
            vec![true; records.len()]
        };
        if all_or_nothing && let Some(refused) = admitted.iter().position(|&admitted| !admitted) {
            return Err(SourceError::Throttled {
                message: throughput.shard_rate_message(&stream.name, shards[refused]),
            });
        }
        let (mut kept, mut kept_keys, mut kept_shards, mut kept_sizes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (position, record) in records.into_iter().enumerate() {
            if admitted[position] {
                kept.push(record);
                kept_keys.push(hash_keys[position]);
                kept_shards.push(shards[position]);
                kept_sizes.push(sizes[position]);
            }
        }
        let mut written = if kept.is_empty() {
            Vec::new()
        } else {
            stream.append(kept, &kept_keys, now_ms, journal)?
        }
        .into_iter();
        let results = admitted
            .iter()
            .zip(&shards)
            .map(|(&admitted, &shard)| match admitted {
                true => Ok(written.next().expect("one result per written record")),
                false => Err(ThroughputExceeded {
                    shard_id: shard_id(shard),
                    message: throughput.shard_rate_message(&stream.name, shard),
                }),
            })
            .collect();
        for shard in throughput.note_writes(&key, &kept_shards, &kept_sizes, now_ms) {
            self.split_hot_shard(&stream, shard);
        }
        Ok(results)
    }
}

/// Checks the size limit of one `PutRecords` call: 5 MiB, or 10 MiB to a stream that takes
/// records over 1 MiB, data and partition keys together. Returns the stream's limit on one
/// record and how it places records.
fn check_request_size(
    stream: &Stream,
    records: &[PutRecordsEntry],
    operation: &str,
) -> Result<(usize, RecordDistribution), SourceError> {
    let (max_record_bytes, max_request_bytes, distribution) = {
        let settings = stream.settings();
        let bytes = (
            settings.max_record_bytes(),
            settings.max_put_records_bytes(),
        );
        (bytes.0, bytes.1, settings.record_distribution)
    };
    if operation != "PutRecords" {
        return Ok((max_record_bytes, distribution));
    }
    let total: usize = records
        .iter()
        .map(|record| record.data.len() + record.partition_key.len())
        .sum();
    if total > max_request_bytes {
        return Err(SourceError::InvalidArgument {
            message: format!(
                "PutRecords on stream {} carries {total} bytes of data and partition keys; the \
                 limit is {max_request_bytes}",
                stream.name
            ),
        });
    }
    Ok((max_record_bytes, distribution))
}

/// Checks a record's partition key and its size against the stream's maximum record size
/// (`max_bytes`, data and partition key together). A record needs a partition key where
/// `keyed` (`USER_PARTITION_KEY`); an `AUTO` stream takes one without (an empty key).
fn check_record(
    record: &PutRecordsEntry,
    position: usize,
    operation: &str,
    stream: &str,
    (max_bytes, keyed): (usize, bool),
) -> Result<(), SourceError> {
    let key_chars = record.partition_key.chars().count();
    let fewest = usize::from(keyed);
    if !(fewest..=MAX_PARTITION_KEY_CHARS).contains(&key_chars) {
        return Err(SourceError::InvalidArgument {
            message: format!(
                "{operation} on stream {stream}: the partition key of record {position} has \
                 {key_chars} characters; it must have 1 to {MAX_PARTITION_KEY_CHARS}"
            ),
        });
    }
    let size = record.data.len() + record.partition_key.len();
    if size > max_bytes {
        return Err(SourceError::InvalidArgument {
            message: format!(
                "{operation} on stream {stream}: record {position} (partition key `{}`) holds \
                 {size} bytes of data and partition key; the limit is {max_bytes} (the \
                 stream's MaxRecordSizeInKiB is {})",
                record.partition_key,
                max_bytes / 1024
            ),
        });
    }
    Ok(())
}

/// The hash key that routes `record`: its explicit hash key, or its partition key's MD5.
fn hash_key_of(record: &PutRecordsEntry) -> Result<u128, SourceError> {
    match &record.explicit_hash_key {
        Some(explicit) => hash_key::parse(explicit, "ExplicitHashKey"),
        None => Ok(hash_key::of_partition_key(&record.partition_key)),
    }
}
