//! Unpacking the KPL aggregates of a batch into their user records (see
//! [`aggregate`] for the format and `docs/kpl-aggregation.md` for what Lambda's
//! response can say about them).

use base64::Engine as _;

use super::kinesis_batch::KinesisBatch;
use super::spans::{Aggregated, Span, Spans, UserSpans};
use crate::aggregate::{self, UserRecord};

impl KinesisBatch {
    /// The batch deaggregated, when the scanner saw a record that might be an aggregate; as it
    /// is otherwise, without another pass over its records' text.
    pub(super) fn deaggregated_if(self, might_hold_aggregates: bool) -> Self {
        match might_hold_aggregates {
            true => self.deaggregate(),
            false => self,
        }
    }

    /// Replaces each KPL aggregate with its user records, in order; an aggregate that cannot be
    /// read stays, marked to be rejected (see `docs/kpl-aggregation.md`). A batch without
    /// aggregates costs one look at the first characters of each record's data.
    pub(super) fn deaggregate(mut self) -> Self {
        let might_be_aggregate = |batch: &Self, spans: &Spans| {
            batch
                .slice(spans.data_base64)
                .starts_with(aggregate::MAGIC_BASE64_PREFIX)
        };
        if !self
            .records
            .iter()
            .any(|spans| might_be_aggregate(&self, spans))
        {
            return self;
        }
        let records = std::mem::take(&mut self.records);
        self.records.reserve(records.len());
        // Each aggregate is decoded straight into the buffer the batch keeps, and its user
        // records' data are spans of it, in place: nothing is copied twice.
        let mut user_data = std::mem::take(&mut self.user_data);
        for spans in records {
            let start = user_data.len();
            let is_aggregate = might_be_aggregate(&self, &spans)
                && base64::engine::general_purpose::STANDARD
                    .decode_vec(self.slice(spans.data_base64), &mut user_data)
                    .is_ok()
                && aggregate::is_aggregate(&user_data[start..]);
            if !is_aggregate {
                // Bad base64 is reported when the record is decoded for the handler.
                user_data.truncate(start);
                self.records.push(spans);
                continue;
            }
            match aggregate::decode(&user_data[start..]) {
                Ok(user_records) => {
                    self.records.reserve(user_records.len());
                    let base = user_data.as_ptr() as usize;
                    for (sub_sequence_number, user) in user_records.iter().enumerate() {
                        let data_start = user.data.as_ptr() as usize - base;
                        let data = Span {
                            start: data_start,
                            end: data_start + user.data.len(),
                        };
                        self.push_user_record(spans, sub_sequence_number, user, data);
                    }
                }
                Err(error) => {
                    user_data.truncate(start);
                    self.records.push(Spans {
                        aggregated: Aggregated::Corrupt(error),
                        ..spans
                    });
                }
            }
        }
        self.user_data = user_data;
        self
    }

    fn push_user_record(
        &mut self,
        aggregate: Spans,
        sub_sequence_number: usize,
        user: &UserRecord<'_>,
        data: Span,
    ) {
        let partition_key = self.push_text(user.partition_key);
        let explicit_hash_key = user.explicit_hash_key.map(|key| self.push_text(key));
        let index = u32::try_from(self.user_records.len())
            .expect("a batch holds fewer than 2^32 user records");
        self.user_records.push(UserSpans {
            sub_sequence_number: u32::try_from(sub_sequence_number)
                .expect("an aggregate of at most 1 MiB holds fewer than 2^32 user records"),
            data,
            explicit_hash_key,
        });
        self.records.push(Spans {
            partition_key,
            aggregated: Aggregated::User(index),
            ..aggregate
        });
    }
}
