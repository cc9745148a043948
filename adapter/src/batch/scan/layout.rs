//! Reading records laid out exactly as Lambda writes them, by matching the text around their
//! values rather than reading each key, and, for a record that repeats the one before, by
//! comparing the text the two share.

use super::scanner::{LambdaLayout, Scanner, first_special};
use crate::batch::spans::{Aggregated, Span, Spans};

impl Scanner<'_> {
    /// A record laid out exactly as Lambda writes it (and `write_event` does): every field in
    /// Lambda's order, no whitespace, no escape, the arrival time a number. Such a record is
    /// read by matching the text between its values, which costs a fraction of reading each key;
    /// any other record gives `None`, with nothing read, and is read field by field. Both ways
    /// find the same spans.
    pub(super) fn lambda_record(&mut self) -> Option<Spans> {
        let start = self.at;
        if let Some(layout) = self.layout {
            if let Some(spans) = self.lambda_record_like(&layout) {
                return Some(spans);
            }
            self.at = start;
        }
        let spans = self.lambda_record_fields();
        if spans.is_none() {
            self.at = start;
        }
        spans
    }

    /// A record in Lambda's layout that repeats `layout`, the shared text of the record read
    /// before it; `None` when it does not, with the scanner somewhere inside the record.
    fn lambda_record_like(&mut self, layout: &LambdaLayout) -> Option<Spans> {
        self.repeated(layout.head)?;
        let mut spans = self.lambda_kinesis_values()?;
        let middle_start = self.at;
        self.repeated(layout.middle)?;
        // The rest of `eventID`: with no `:` of its own, the shard id is the one of `middle`.
        let rest = self.at;
        let rest_length = first_special(&self.bytes[rest..])?;
        let tail_start = rest + rest_length;
        if self.bytes[tail_start] != b'"' || self.bytes[rest..tail_start].contains(&b':') {
            return None;
        }
        self.at = tail_start;
        self.repeated(layout.tail)?;
        let moved = |span: Span, from: usize, to: usize| Span {
            start: span.start - from + to,
            end: span.end - from + to,
        };
        spans.shard_id = moved(layout.shard_id, layout.middle.start, middle_start);
        spans.event_source_arn = moved(layout.event_source_arn, layout.tail.start, tail_start);
        Some(spans)
    }

    /// The values Lambda writes from a Kinesis record's partition key (which comes next) to its
    /// arrival time, as the spans of a record whose shard id and event source ARN are left to
    /// the caller.
    #[inline(always)]
    fn lambda_kinesis_values(&mut self) -> Option<Spans> {
        let partition_key = self.plain_string()?;
        self.literal(br#","sequenceNumber":"#)?;
        let sequence_number = self.plain_string()?;
        self.literal(br#","data":"#)?;
        let data_base64 = self.plain_string()?;
        self.literal(br#","approximateArrivalTimestamp":"#)?;
        let arrival_millis = self.arrival_number()?;
        let left_to_the_caller = Span { start: 0, end: 0 };
        Some(Spans {
            shard_id: left_to_the_caller,
            partition_key,
            sequence_number,
            data_base64,
            event_source_arn: left_to_the_caller,
            arrival_millis,
            aggregated: Aggregated::Plain,
        })
    }

    /// Reads the text of `span` if it comes next, exactly.
    #[inline(always)]
    fn repeated(&mut self, span: Span) -> Option<()> {
        let length = span.end - span.start;
        let next = self.bytes.get(self.at..self.at + length)?;
        if *next != self.bytes[span.start..span.end] {
            return None;
        }
        self.at += length;
        Some(())
    }

    /// An arrival time written as a JSON number, as Lambda writes it.
    fn arrival_number(&mut self) -> Option<i64> {
        if !matches!(self.bytes.get(self.at), Some(b'-' | b'0'..=b'9')) {
            return None;
        }
        self.arrival_millis().ok()
    }

    /// A record in Lambda's layout, read field by field in Lambda's order; notes its shared text
    /// as the layout the next record is compared with.
    fn lambda_record_fields(&mut self) -> Option<Spans> {
        let record_start = self.at;
        self.literal(br#"{"kinesis":{"kinesisSchemaVersion":"#)?;
        self.plain_string()?;
        self.literal(br#","partitionKey":"#)?;
        let mut spans = self.lambda_kinesis_values()?;
        let middle_start = self.at;
        self.literal(br#"},"eventSource":"#)?;
        self.plain_string()?;
        self.literal(br#","eventVersion":"#)?;
        self.plain_string()?;
        self.literal(br#","eventID":"#)?;
        let event_id = self.plain_string()?;
        self.literal(br#","eventName":"#)?;
        self.plain_string()?;
        self.literal(br#","invokeIdentityArn":"#)?;
        self.plain_string()?;
        self.literal(br#","awsRegion":"#)?;
        self.plain_string()?;
        self.literal(br#","eventSourceARN":"#)?;
        let event_source_arn = self.plain_string()?;
        self.literal(b"}")?;
        // As in `record`: the shard id is what precedes the last `:` of `eventID`.
        let last_colon = self.text_of(event_id).rfind(':');
        let shard_id = Span {
            start: event_id.start,
            end: event_id.start + last_colon.unwrap_or(0),
        };
        self.layout = Some(LambdaLayout {
            head: Span {
                start: record_start,
                end: spans.partition_key.start - 1,
            },
            middle: Span {
                start: middle_start,
                end: event_id.start + last_colon.map_or(0, |colon| colon + 1),
            },
            shard_id,
            tail: Span {
                start: event_id.end,
                end: self.at,
            },
            event_source_arn,
        });
        spans.shard_id = shard_id;
        spans.event_source_arn = event_source_arn;
        Some(spans)
    }

    /// Reads `text` if it comes next, exactly.
    #[inline(always)]
    fn literal(&mut self, text: &[u8]) -> Option<()> {
        if self.bytes.get(self.at..)?.starts_with(text) {
            self.at += text.len();
            Some(())
        } else {
            None
        }
    }

    /// A string without escapes that comes next (no whitespace before it), as a span.
    fn plain_string(&mut self) -> Option<Span> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        match self.raw_string() {
            Ok((start, end, false)) => Some(Span { start, end }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAMBDA_RECORD: &str = concat!(
        r#"{"kinesis":{"kinesisSchemaVersion":"1.0","partitionKey":"1","#,
        r#""sequenceNumber":"49590338271490256608559692538361571095921575989136588898","#,
        r#""data":"SGVsbG8=","approximateArrivalTimestamp":1545084650.987},"#,
        r#""eventSource":"aws:kinesis","eventVersion":"1.0","#,
        r#""eventID":"shardId-000000000006:49590338271490256608559692538361571095921575989136588898","#,
        r#""eventName":"aws:kinesis:record","#,
        r#""invokeIdentityArn":"arn:aws:iam::123456789012:role/lambda-role","#,
        r#""awsRegion":"us-east-2","#,
        r#""eventSourceARN":"arn:aws:kinesis:us-east-2:123456789012:stream/lambda-stream"}"#
    );

    fn fields(text: &str, spans: Spans) -> [String; 6] {
        let of = |span: Span| text[span.start..span.end].to_owned();
        [
            of(spans.shard_id),
            of(spans.sequence_number),
            of(spans.partition_key),
            of(spans.data_base64),
            of(spans.event_source_arn),
            spans.arrival_millis.to_string(),
        ]
    }

    #[test]
    fn records_as_lambda_writes_them_are_matched_whole_and_read_as_field_by_field() {
        for strict in [false, true] {
            let mut whole = Scanner::new(LAMBDA_RECORD, strict);
            let spans = whole.lambda_record().expect("Lambda's layout is matched");
            assert_eq!(whole.at, LAMBDA_RECORD.len());
            let mut by_fields = Scanner::new(LAMBDA_RECORD, strict);
            let expected = by_fields.record_by_fields().unwrap();
            assert_eq!(
                fields(LAMBDA_RECORD, spans),
                fields(LAMBDA_RECORD, expected)
            );
            assert_eq!(
                fields(LAMBDA_RECORD, spans)[0],
                "shardId-000000000006",
                "strict: {strict}"
            );
        }
    }

    #[test]
    fn a_record_like_the_one_before_is_read_by_comparison_as_field_by_field() {
        let second = LAMBDA_RECORD
            .replace(r#""partitionKey":"1""#, r#""partitionKey":"key-2""#)
            .replace("SGVsbG8=", "SGVsbG8sIHdvcmxk")
            .replace("1545084650.987", "1545084651")
            .replace("88898", "88899");
        let text = format!("{LAMBDA_RECORD},{second}");
        for strict in [false, true] {
            let mut scanner = Scanner::new(&text, strict);
            scanner.lambda_record().expect("Lambda's layout is matched");
            let layout = scanner.layout.expect("the first record's layout is noted");
            assert!(scanner.eat(b','));
            let like = scanner
                .lambda_record_like(&layout)
                .expect("the same layout");
            assert_eq!(scanner.at, text.len());
            let mut by_fields = Scanner::new(&text, strict);
            by_fields.at = LAMBDA_RECORD.len() + 1;
            let expected = by_fields.record_by_fields().unwrap();
            assert_eq!(fields(&text, like), fields(&text, expected));
            assert_eq!(fields(&text, like)[2], "key-2", "strict: {strict}");
        }
    }

    #[test]
    fn other_layouts_are_left_to_the_field_by_field_reading_with_nothing_read() {
        for (from, to) in [
            (r#"{"kinesis""#, r#" {"kinesis""#),
            (r#""partitionKey":"1""#, r#""partitionKey":"\u0031""#),
            (r#":1545084650.987"#, r#":"1545084650.987""#),
            (r#""eventVersion""#, r#""extra":[],"eventVersion""#),
            (r#""awsRegion":"us-east-2""#, r#""awsRegion":null"#),
            (r#"stream/lambda-stream"}"#, r#"stream/lambda-stream" }"#),
        ] {
            let text = LAMBDA_RECORD.replacen(from, to, 1);
            assert_ne!(text, LAMBDA_RECORD, "{from}");
            let mut scanner = Scanner::new(&text, false);
            assert!(scanner.lambda_record().is_none(), "{text}");
            assert_eq!(scanner.at, 0, "{text}");
            let mut scanner = Scanner::new(&text, false);
            assert!(scanner.record().is_ok(), "{text}");
        }
    }
}
