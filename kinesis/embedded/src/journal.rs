//! The seam through which the embedded Kinesis is kept on disk: a journal of its changes.
//!
//! Every change (a stream created or deleted, a `PutRecords`, a split, a merge, a scaling, a
//! retention change, a change of its mode, settings or tags, a change of the account's commitment) is written to the [`Journal`] as one [`Change`] while the stream's lock is
//! held, after the change has been checked and before it is applied, so the journal holds the
//! changes of each stream in the order they were applied and never one that failed. Each change
//! carries the time it was made at, so replaying the journal through the same code
//! ([`crate::embedded::EmbeddedKinesis::restore`]) rebuilds the same streams, shards, sequence numbers and
//! arrival times. Reads never touch the journal: they are served from memory.
//!
//! [`NoJournal`], the default, keeps nothing: the embedded Kinesis then lives in memory alone and
//! encodes nothing. The state directory (`crate::state`) is the journal that keeps changes on
//! disk.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use crate::commitment::Commitment;
use crate::entries::PutRecordsEntry;
use crate::settings::{MetricSet, RecordDistribution, StreamSettings};

/// Where the embedded Kinesis writes its changes before applying them.
pub trait Journal: Send + Sync + fmt::Debug {
    /// Whether changes are kept at all; when not, they are not even encoded.
    fn is_enabled(&self) -> bool;

    /// Keeps one encoded change (a stream operation, as the embedded Kinesis encodes it). When
    /// this returns `Ok`, the change must survive a crash of the process (and, as far as the disk
    /// honours `fsync`, of the machine): the caller acknowledges it next.
    fn append(&self, change: &[u8]) -> Result<(), JournalError>;
}

/// A journal that could not keep a change: the change is refused, not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JournalError(pub String);

/// The default journal: keeps nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoJournal;

impl Journal for NoJournal {
    fn is_enabled(&self) -> bool {
        false
    }

    fn append(&self, _change: &[u8]) -> Result<(), JournalError> {
        Ok(())
    }
}

/// One change to the embedded Kinesis, as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    CreateStream {
        name: String,
        created: SystemTime,
        generation: u64,
        shard_count: u32,
        retention: Duration,
        /// Created `ON_DEMAND` (`CreateStream` without a `ShardCount`); journals written before
        /// the mode was kept hold only `PROVISIONED` creations.
        on_demand: bool,
    },
    DeleteStream {
        name: String,
        generation: u64,
    },
    Put {
        stream: String,
        generation: u64,
        now_ms: u64,
        /// Each record with the hash key that routed it.
        records: Vec<(u128, PutRecordsEntry)>,
    },
    Split {
        stream: String,
        generation: u64,
        now_ms: u64,
        shard_id: String,
        new_starting_hash_key: u128,
    },
    Merge {
        stream: String,
        generation: u64,
        now_ms: u64,
        shard_id: String,
        adjacent_shard_id: String,
    },
    Scale {
        stream: String,
        generation: u64,
        now_ms: u64,
        target_shard_count: u32,
    },
    Retention {
        stream: String,
        generation: u64,
        hours: u32,
        increase: bool,
    },
    /// `UpdateStreamMode` (or a template's `StreamModeDetails` on a stream kept from before).
    StreamMode {
        stream: String,
        generation: u64,
        on_demand: bool,
    },
    /// A change of the stream's settings (`UpdateMaxRecordSize`, enhanced monitoring,
    /// encryption, warm throughput): the settings it left, whole.
    Settings {
        stream: String,
        generation: u64,
        settings: StreamSettings,
    },
    /// `UpdateAccountSettings`: the account's commitment it left.
    Account {
        commitment: Commitment,
    },
    /// A change of the stream's tags (`AddTagsToStream`, `TagResource`, their removal, or
    /// `CreateStream`'s): the tags it left, whole.
    Tags {
        stream: String,
        generation: u64,
        tags: BTreeMap<String, String>,
    },
}

const CREATE: u8 = 1;
const DELETE: u8 = 2;
const PUT: u8 = 3;
const SPLIT: u8 = 4;
const MERGE: u8 = 5;
const SCALE: u8 = 6;
const RETENTION: u8 = 7;
/// A `CreateStream` of an `ON_DEMAND` stream: the same fields as `CREATE`, under a kind of its
/// own so that a `PROVISIONED` creation is encoded exactly as before the mode was kept (older
/// journals read as they always did, and a cut record is still refused, never misread).
const CREATE_ON_DEMAND: u8 = 8;
const STREAM_MODE: u8 = 9;
const SETTINGS: u8 = 10;
const ACCOUNT: u8 = 11;
const TAGS: u8 = 12;

/// Encodes a put without copying its records into a [`Change`] first: puts are the hot path.
pub(crate) fn encode_put(
    stream: &str,
    generation: u64,
    now_ms: u64,
    records: &[PutRecordsEntry],
    hash_keys: &[u128],
) -> Vec<u8> {
    let size: usize = records
        .iter()
        .map(|record| 16 + 8 + record.partition_key.len() + record.data.len())
        .sum();
    let mut out = Vec::with_capacity(1 + 4 + stream.len() + 8 + 8 + 4 + size);
    out.push(PUT);
    put_str(&mut out, stream);
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&now_ms.to_le_bytes());
    put_u32(&mut out, records.len());
    for (record, hash_key) in records.iter().zip(hash_keys) {
        out.extend_from_slice(&hash_key.to_le_bytes());
        put_str(&mut out, &record.partition_key);
        put_bytes(&mut out, &record.data);
    }
    out
}

impl Change {
    /// The name of the stream the change is made to, and which of the streams of that name
    /// (its generation); `None` for a change of the account.
    pub(crate) fn stream_and_generation(&self) -> Option<(&str, u64)> {
        match self {
            Self::CreateStream {
                name, generation, ..
            }
            | Self::DeleteStream { name, generation } => Some((name, *generation)),
            Self::Put {
                stream, generation, ..
            }
            | Self::Split {
                stream, generation, ..
            }
            | Self::Merge {
                stream, generation, ..
            }
            | Self::Scale {
                stream, generation, ..
            }
            | Self::Retention {
                stream, generation, ..
            }
            | Self::StreamMode {
                stream, generation, ..
            }
            | Self::Settings {
                stream, generation, ..
            }
            | Self::Tags {
                stream, generation, ..
            } => Some((stream, *generation)),
            Self::Account { .. } => None,
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Self::CreateStream {
                name,
                created,
                generation,
                shard_count,
                retention,
                on_demand,
            } => {
                out.push(if *on_demand { CREATE_ON_DEMAND } else { CREATE });
                put_creation(
                    &mut out,
                    name,
                    *created,
                    *generation,
                    *shard_count,
                    *retention,
                );
            }
            Self::DeleteStream { name, generation } => {
                put_stream(&mut out, DELETE, name, *generation)
            }
            Self::Put {
                stream,
                generation,
                now_ms,
                records,
            } => {
                let (hash_keys, entries): (Vec<u128>, Vec<PutRecordsEntry>) =
                    records.iter().cloned().unzip();
                return encode_put(stream, *generation, *now_ms, &entries, &hash_keys);
            }
            Self::Split {
                stream,
                generation,
                now_ms,
                shard_id,
                new_starting_hash_key,
            } => {
                out.push(SPLIT);
                put_stream_at(&mut out, stream, *generation, *now_ms);
                put_str(&mut out, shard_id);
                out.extend_from_slice(&new_starting_hash_key.to_le_bytes());
            }
            Self::Merge {
                stream,
                generation,
                now_ms,
                shard_id,
                adjacent_shard_id,
            } => {
                out.push(MERGE);
                put_stream_at(&mut out, stream, *generation, *now_ms);
                put_str(&mut out, shard_id);
                put_str(&mut out, adjacent_shard_id);
            }
            Self::Scale {
                stream,
                generation,
                now_ms,
                target_shard_count,
            } => {
                out.push(SCALE);
                put_stream_at(&mut out, stream, *generation, *now_ms);
                out.extend_from_slice(&target_shard_count.to_le_bytes());
            }
            Self::Retention {
                stream,
                generation,
                hours,
                increase,
            } => {
                put_stream(&mut out, RETENTION, stream, *generation);
                out.extend_from_slice(&hours.to_le_bytes());
                out.push(u8::from(*increase));
            }
            Self::StreamMode {
                stream,
                generation,
                on_demand,
            } => put_mode(&mut out, stream, *generation, *on_demand),
            Self::Settings {
                stream,
                generation,
                settings,
            } => put_settings(&mut out, stream, *generation, settings),
            Self::Account { commitment } => put_commitment(&mut out, *commitment),
            Self::Tags {
                stream,
                generation,
                tags,
            } => put_tags(&mut out, stream, *generation, tags),
        }
        out
    }

    /// The change `bytes` encode, or why they do not encode one.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut reader = Reader { bytes, at: 0 };
        let change = match reader.u8()? {
            kind @ (CREATE | CREATE_ON_DEMAND) => Self::CreateStream {
                name: reader.string()?,
                created: SystemTime::UNIX_EPOCH + Duration::new(reader.u64()?, reader.u32_value()?),
                generation: reader.u64()?,
                shard_count: reader.u32_value()?,
                retention: Duration::new(reader.u64()?, reader.u32_value()?),
                on_demand: kind == CREATE_ON_DEMAND,
            },
            DELETE => Self::DeleteStream {
                name: reader.string()?,
                generation: reader.u64()?,
            },
            PUT => reader.put()?,
            SPLIT => {
                let (stream, generation, now_ms) = reader.stream_at()?;
                Self::Split {
                    stream,
                    generation,
                    now_ms,
                    shard_id: reader.string()?,
                    new_starting_hash_key: reader.u128()?,
                }
            }
            MERGE => {
                let (stream, generation, now_ms) = reader.stream_at()?;
                Self::Merge {
                    stream,
                    generation,
                    now_ms,
                    shard_id: reader.string()?,
                    adjacent_shard_id: reader.string()?,
                }
            }
            SCALE => {
                let (stream, generation, now_ms) = reader.stream_at()?;
                Self::Scale {
                    stream,
                    generation,
                    now_ms,
                    target_shard_count: reader.u32_value()?,
                }
            }
            RETENTION => Self::Retention {
                stream: reader.string()?,
                generation: reader.u64()?,
                hours: reader.u32_value()?,
                increase: reader.u8()? != 0,
            },
            STREAM_MODE => Self::StreamMode {
                stream: reader.string()?,
                generation: reader.u64()?,
                on_demand: reader.flag("stream mode")?,
            },
            SETTINGS => Self::Settings {
                stream: reader.string()?,
                generation: reader.u64()?,
                settings: reader.settings()?,
            },
            ACCOUNT => Self::Account {
                commitment: reader.commitment()?,
            },
            TAGS => Self::Tags {
                stream: reader.string()?,
                generation: reader.u64()?,
                tags: reader.tags()?,
            },
            tag => return Err(format!("unknown change kind {tag}")),
        };
        if reader.at != bytes.len() {
            return Err(format!(
                "{} bytes left over after the change",
                bytes.len() - reader.at
            ));
        }
        Ok(change)
    }
}

fn put_u32(out: &mut Vec<u8>, length: usize) {
    let length = u32::try_from(length).expect("journal fields are below 4 GiB");
    out.extend_from_slice(&length.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, bytes.len());
    out.extend_from_slice(bytes);
}

fn put_str(out: &mut Vec<u8>, text: &str) {
    put_bytes(out, text.as_bytes());
}

/// A change's kind, then the stream it is made to: its name and generation.
fn put_stream(out: &mut Vec<u8>, kind: u8, stream: &str, generation: u64) {
    out.push(kind);
    put_str(out, stream);
    out.extend_from_slice(&generation.to_le_bytes());
}

/// The account's commitment: its kind, then when it started and ended (0 where it has no
/// such time).
fn put_commitment(out: &mut Vec<u8>, commitment: Commitment) {
    out.push(ACCOUNT);
    let (kind, started_ms, ended_ms) = match commitment {
        Commitment::Never => (0_u8, 0, 0),
        Commitment::Enabled { started_ms } => (1, started_ms, 0),
        Commitment::EndingAtEarliest { started_ms } => (2, started_ms, 0),
        Commitment::Ended {
            started_ms,
            ended_ms,
        } => (3, started_ms, ended_ms),
    };
    out.push(kind);
    out.extend_from_slice(&started_ms.to_le_bytes());
    out.extend_from_slice(&ended_ms.to_le_bytes());
}

/// The fields of a `CreateStream`, after its kind.
fn put_creation(
    out: &mut Vec<u8>,
    name: &str,
    created: SystemTime,
    generation: u64,
    shard_count: u32,
    retention: Duration,
) {
    put_str(out, name);
    let since = created
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    out.extend_from_slice(&since.as_secs().to_le_bytes());
    out.extend_from_slice(&since.subsec_nanos().to_le_bytes());
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&shard_count.to_le_bytes());
    out.extend_from_slice(&retention.as_secs().to_le_bytes());
    out.extend_from_slice(&retention.subsec_nanos().to_le_bytes());
}

/// A change of a stream's mode: on demand or not.
fn put_mode(out: &mut Vec<u8>, stream: &str, generation: u64, on_demand: bool) {
    put_stream(out, STREAM_MODE, stream, generation);
    out.push(u8::from(on_demand));
}

/// A stream's tags: how many, then each key and value.
fn put_tags(out: &mut Vec<u8>, stream: &str, generation: u64, tags: &BTreeMap<String, String>) {
    put_stream(out, TAGS, stream, generation);
    put_u32(out, tags.len());
    for (key, value) in tags {
        put_str(out, key);
        put_str(out, value);
    }
}

/// A stream's settings: the maximum record size, the metrics' bits, the KMS key (a flag, then
/// the key) and the warm throughput (a flag, then MiB/s).
fn put_settings(out: &mut Vec<u8>, stream: &str, generation: u64, settings: &StreamSettings) {
    put_stream(out, SETTINGS, stream, generation);
    out.extend_from_slice(&settings.max_record_size_kib.to_le_bytes());
    out.push(settings.enhanced_metrics.bits());
    match &settings.encryption_key_id {
        Some(key_id) => {
            out.push(1);
            put_str(out, key_id);
        }
        None => out.push(0),
    }
    match settings.warm_throughput_mibps {
        Some(mibps) => {
            out.push(1);
            out.extend_from_slice(&mibps.to_le_bytes());
        }
        None => out.push(0),
    }
    out.push(u8::from(
        settings.record_distribution == RecordDistribution::Auto,
    ));
}

fn put_stream_at(out: &mut Vec<u8>, stream: &str, generation: u64, now_ms: u64) {
    put_str(out, stream);
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&now_ms.to_le_bytes());
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(count)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| format!("the change ends early, at byte {}", self.bytes.len()))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }

    fn u32_value(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn len(&mut self) -> Result<usize, String> {
        Ok(usize::try_from(self.u32_value()?).expect("u32 fits in usize"))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn u128(&mut self) -> Result<u128, String> {
        Ok(u128::from_le_bytes(self.array()?))
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let length = self.len()?;
        self.take(length)
    }

    fn string(&mut self) -> Result<String, String> {
        let bytes = self.bytes()?;
        String::from_utf8(bytes.to_vec()).map_err(|_| "a name is not UTF-8".to_owned())
    }

    /// A yes or no, `what` named in the error of a byte that is neither.
    fn flag(&mut self, what: &str) -> Result<bool, String> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(format!("{what} {other} is neither 0 nor 1")),
        }
    }

    fn settings(&mut self) -> Result<StreamSettings, String> {
        let max_record_size_kib = self.u32_value()?;
        let bits = self.u8()?;
        let enhanced_metrics = MetricSet::from_bits(bits)
            .ok_or_else(|| format!("metrics {bits:#x} name no metric"))?;
        let encryption_key_id = if self.flag("encryption key flag")? {
            Some(self.string()?)
        } else {
            None
        };
        let warm_throughput_mibps = if self.flag("warm throughput flag")? {
            Some(self.u32_value()?)
        } else {
            None
        };
        let record_distribution = if self.flag("record distribution")? {
            RecordDistribution::Auto
        } else {
            RecordDistribution::UserPartitionKey
        };
        Ok(StreamSettings {
            max_record_size_kib,
            enhanced_metrics,
            encryption_key_id,
            warm_throughput_mibps,
            record_distribution,
        })
    }

    /// A `PutRecords`' records, each with the hash key that routed it.
    fn put(&mut self) -> Result<Change, String> {
        let (stream, generation, now_ms) = self.stream_at()?;
        let count = self.len()?;
        let mut records = Vec::with_capacity(count.min(crate::limits::MAX_PUT_RECORDS_ENTRIES));
        for _ in 0..count {
            let hash_key = self.u128()?;
            let partition_key = self.string()?;
            let data = self.bytes()?;
            let data = bytes::Bytes::copy_from_slice(data);
            records.push((hash_key, PutRecordsEntry::new(partition_key, data)));
        }
        Ok(Change::Put {
            stream,
            generation,
            now_ms,
            records,
        })
    }

    fn tags(&mut self) -> Result<BTreeMap<String, String>, String> {
        let count = self.len()?;
        let mut tags = BTreeMap::new();
        for _ in 0..count {
            let key = self.string()?;
            tags.insert(key, self.string()?);
        }
        Ok(tags)
    }

    fn commitment(&mut self) -> Result<Commitment, String> {
        let kind = self.u8()?;
        let (started_ms, ended_ms) = (self.u64()?, self.u64()?);
        Ok(match kind {
            0 => Commitment::Never,
            1 => Commitment::Enabled { started_ms },
            2 => Commitment::EndingAtEarliest { started_ms },
            3 => Commitment::Ended {
                started_ms,
                ended_ms,
            },
            other => return Err(format!("commitment kind {other} is not 0 to 3")),
        })
    }

    fn stream_at(&mut self) -> Result<(String, u64, u64), String> {
        Ok((self.string()?, self.u64()?, self.u64()?))
    }
}

#[cfg(test)]
mod tests;
