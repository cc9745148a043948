//! The publisher's rules, with no I/O: which records the next `PutRecords` request carries, what
//! an answer does to them, and when a record is given up.
//!
//! Per-key order is kept by sending only the **head** of each partition key's queue: a key's
//! later record is never in flight before its earlier one succeeded, so a failed entry cannot be
//! overtaken by a later entry of its key in the same request (Kinesis handles a request's entries
//! independently: a throttled entry may sit between two that succeed). Keys are independent, so a
//! request carries the heads of as many keys as the limits allow (`docs/put-records-limits.md`).

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// `PutRecords` takes at most this many records in one request.
pub(crate) const MAX_RECORDS_PER_REQUEST: usize = 500;
/// One request holds at most 5 MiB, data and partition keys counted. A stream that takes records
/// over 1 MiB takes requests of 10 MiB; the outbox keeps to 5 MiB, which every stream takes, and
/// sends a record larger than that alone (it then fits the 10 MiB request of the stream that
/// took it).
pub(crate) const MAX_BYTES_PER_REQUEST: usize = 5 * 1024 * 1024;
/// One record (data and partition key) holds at most 1 MiB on a stream whose
/// `MaxRecordSizeInKiB` was never raised: the outbox's limit unless it is given the stream's.
pub(crate) const MAX_BYTES_PER_RECORD: usize = 1024 * 1024;
/// The largest record any stream takes (its `MaxRecordSizeInKiB` at 10240).
pub(crate) const LARGEST_BYTES_PER_RECORD: usize = 10 * 1024 * 1024;
/// A partition key has 1 to 256 Unicode characters.
pub(crate) const MAX_PARTITION_KEY_CHARS: usize = 256;

/// The position of a record in what one `publish` call was given, from 0.
pub(crate) type Index = usize;

/// An accepted record: its index, shard id and sequence number.
pub(crate) type Accepted = (Index, String, String);
/// A given-up record: its index, partition key and why.
pub(crate) type GivenUp = (Index, String, GiveUp);

/// One record waiting to be published.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) partition_key: String,
    pub(crate) data: Vec<u8>,
    attempts: u32,
    /// Why Kinesis could never take it: it is given up once it reaches its queue's head.
    refused: Option<String>,
}

impl Entry {
    fn size(&self) -> usize {
        self.data.len() + self.partition_key.len()
    }
}

/// Why a record was not published, as the report tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GiveUp {
    /// Kinesis would refuse it whatever happens (too large, a bad key, data that cannot be
    /// serialized).
    Refused(String),
    /// Every attempt failed, or the failure cannot pass by retrying; the last error.
    Failed {
        code: Option<String>,
        message: String,
        attempts: u32,
    },
    /// Never sent: a record of its key ahead of it was given up, and sending it would break the
    /// key's order.
    BehindFailed { ahead: Index },
}

/// What one entry of a request met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EntryResult {
    /// Kinesis took it at this shard and sequence number.
    Accepted {
        shard_id: String,
        sequence_number: String,
    },
    /// It was not taken; whether another attempt may take it.
    Rejected {
        code: Option<String>,
        message: String,
        retryable: bool,
    },
}

/// The records of one `publish` call, queued per partition key in the order given.
#[derive(Debug)]
pub(crate) struct Outbox {
    /// The most bytes one record may hold: the stream's `MaxRecordSizeInKiB`, 1 MiB unless the
    /// publisher was told more.
    max_record_bytes: usize,
    entries: Vec<Option<Entry>>,
    /// One queue per key, in the order keys first appeared, holding the indexes not yet settled.
    queues: Vec<VecDeque<Index>>,
    queue_of_key: HashMap<String, usize>,
    accepted: Vec<Accepted>,
    given_up: Vec<GivenUp>,
}

impl Outbox {
    /// An outbox for a stream whose records hold at most `max_record_bytes` (its
    /// `MaxRecordSizeInKiB` × 1024), kept within what any stream can be set to (1 to 10 MiB).
    /// The publisher does not read the stream's limit (one `DescribeStreamSummary` per publish
    /// would double its calls); a caller that raised it passes it here.
    pub(crate) fn with_max_record_bytes(max_record_bytes: usize) -> Self {
        Self {
            max_record_bytes: max_record_bytes
                .clamp(MAX_BYTES_PER_RECORD, LARGEST_BYTES_PER_RECORD),
            entries: Vec::new(),
            queues: Vec::new(),
            queue_of_key: HashMap::new(),
            accepted: Vec::new(),
            given_up: Vec::new(),
        }
    }

    /// Queues the next record, or gives it up at once if Kinesis could never take it.
    pub(crate) fn push(&mut self, partition_key: String, data: Result<Vec<u8>, String>) {
        let index = self.entries.len();
        let queue = match self.queue_of_key.get(&partition_key) {
            Some(&queue) => queue,
            None => {
                self.queues.push(VecDeque::new());
                self.queue_of_key
                    .insert(partition_key.clone(), self.queues.len() - 1);
                self.queues.len() - 1
            }
        };
        let refused = match &data {
            Err(reason) => Some(reason.clone()),
            Ok(data) => refusal(&partition_key, data.len(), self.max_record_bytes),
        };
        self.entries.push(Some(Entry {
            partition_key,
            data: data.unwrap_or_default(),
            attempts: 0,
            refused,
        }));
        self.queues[queue].push_back(index);
        self.refuse_head(queue);
    }

    /// Whether every record is settled: accepted or given up.
    pub(crate) fn is_settled(&self) -> bool {
        self.queues.iter().all(VecDeque::is_empty)
    }

    /// The records the next request carries: the head of each key's queue, in the order keys
    /// first appeared, as many as fit in one request.
    pub(crate) fn next_request(&self) -> Vec<Index> {
        let mut request = Vec::new();
        let mut bytes = 0;
        for head in self.queues.iter().filter_map(|queue| queue.front()) {
            let size = self.entry(*head).size();
            // A first record always goes: one over 5 MiB travels alone.
            let full = request.len() == MAX_RECORDS_PER_REQUEST
                || (!request.is_empty() && bytes + size > MAX_BYTES_PER_REQUEST);
            if full {
                break;
            }
            bytes += size;
            request.push(*head);
        }
        request
    }

    /// The record at `index`, while it waits.
    pub(crate) fn entry(&self, index: Index) -> &Entry {
        self.entries[index]
            .as_ref()
            .expect("only waiting records are asked for")
    }

    /// Applies what one entry of a request met; a record rejected `max_attempts` times, or for
    /// good, is given up with every record of its key behind it.
    pub(crate) fn settle(&mut self, index: Index, result: EntryResult, max_attempts: u32) {
        let queue = self.queue_of_key[&self.entry(index).partition_key];
        debug_assert_eq!(self.queues[queue].front(), Some(&index));
        match result {
            EntryResult::Accepted {
                shard_id,
                sequence_number,
            } => {
                self.queues[queue].pop_front();
                self.entries[index] = None;
                self.accepted.push((index, shard_id, sequence_number));
                self.refuse_head(queue);
            }
            EntryResult::Rejected {
                code,
                message,
                retryable,
            } => {
                let entry = self.entries[index].as_mut().expect("waiting");
                entry.attempts += 1;
                let attempts = entry.attempts;
                if !retryable || attempts >= max_attempts {
                    self.give_up_queue(
                        queue,
                        GiveUp::Failed {
                            code,
                            message,
                            attempts,
                        },
                    );
                }
            }
        }
    }

    /// The accepted records (index, shard id, sequence number) and the given-up ones (index,
    /// partition key, why), each in index order. Call once settled.
    pub(crate) fn into_report(mut self) -> (Vec<Accepted>, Vec<GivenUp>) {
        self.accepted.sort_by_key(|(index, ..)| *index);
        self.given_up.sort_by_key(|(index, ..)| *index);
        (self.accepted, self.given_up)
    }

    /// Gives up the head of `queue` for `why`, and every record behind it.
    fn give_up_queue(&mut self, queue: usize, why: GiveUp) {
        let Some(head) = self.queues[queue].pop_front() else {
            return;
        };
        let key = self.entries[head].take().expect("waiting").partition_key;
        self.given_up.push((head, key, why));
        while let Some(behind) = self.queues[queue].pop_front() {
            let key = self.entries[behind].take().expect("waiting").partition_key;
            self.given_up
                .push((behind, key, GiveUp::BehindFailed { ahead: head }));
        }
    }

    /// A record Kinesis could never take is given up once it reaches its queue's head: the
    /// records of its key ahead of it are published first, as they were given first.
    fn refuse_head(&mut self, queue: usize) {
        let Some(&head) = self.queues[queue].front() else {
            return;
        };
        if let Some(reason) = self.entry(head).refused.clone() {
            self.give_up_queue(queue, GiveUp::Refused(reason));
        }
    }
}

/// Why Kinesis would refuse a record with this key and this much data, on a stream whose records
/// hold at most `max_record_bytes`, if it would.
fn refusal(partition_key: &str, data_len: usize, max_record_bytes: usize) -> Option<String> {
    let chars = partition_key.chars().count();
    if chars == 0 {
        return Some("its partition key is empty (Kinesis takes 1 to 256 characters)".to_owned());
    }
    if chars > MAX_PARTITION_KEY_CHARS {
        return Some(format!(
            "its partition key has {chars} characters (Kinesis takes 1 to 256)"
        ));
    }
    let size = data_len + partition_key.len();
    if size > max_record_bytes {
        let kib = max_record_bytes / 1024;
        return Some(format!(
            "it holds {size} bytes with its partition key (the stream takes at most \
             {max_record_bytes} per record, a MaxRecordSizeInKiB of {kib})"
        ));
    }
    None
}

/// Whether a failure of a whole `PutRecords` call, with this error code (none: nothing usable
/// answered), may pass by trying again. Throttles and server failures pass; a missing stream,
/// a refused request or missing rights do not.
pub(crate) fn call_failure_is_retryable(code: Option<&str>) -> bool {
    match code {
        None => true,
        Some(code) => matches!(
            code,
            "ProvisionedThroughputExceededException"
                | "LimitExceededException"
                | "ThrottlingException"
                | "KMSThrottlingException"
                | "InternalFailure"
                | "InternalFailureException"
                | "ServiceUnavailable"
                | "ServiceUnavailableException"
        ),
    }
}

/// The pause before the request that follows `failed_rounds` requests in a row with a failure:
/// `first`, doubling, at most `max`.
pub(crate) fn backoff(failed_rounds: u32, first: Duration, max: Duration) -> Duration {
    let factor = 2u32.saturating_pow(failed_rounds.saturating_sub(1));
    first.saturating_mul(factor).min(max)
}

#[cfg(test)]
mod tests;
