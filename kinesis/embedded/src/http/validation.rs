//! The API model's constraints on request members, checked before anything is looked up, and
//! reported as Kinesis reports them: every violated constraint in one `ValidationException`
//! ("2 validation errors detected: Value 'x y' at 'streamName' failed to satisfy constraint:
//! Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; ..."). The rules and their
//! sources are in `docs/kinesis.md` ("Validation").
//!
//! Each operation lists its members against the shapes below, one line a member, then calls
//! [`Violations::finish`]: the lines are the operation's table of constraints.

use super::error::ApiError;

/// A string shape of the model: its length bounds and, for some, a pattern.
#[derive(Debug, Clone, Copy)]
pub(super) struct Text {
    min: usize,
    max: usize,
    pattern: Option<Pattern>,
}

/// The patterns of the model, each with the text Kinesis quotes in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pattern {
    /// `[a-zA-Z0-9_.-]+`: stream names and shard ids.
    Name,
    /// `arn:aws.*:kinesis:.*:\d{12}:stream/\S+`: stream ARNs.
    StreamArn,
    /// `0|([1-9]\d{0,128})`: sequence numbers.
    SequenceNumber,
    /// `0|([1-9]\d{0,38})`: hash keys.
    HashKey,
    /// `^(arn):aws.*:kinesis:.*:\d{12}:.*stream\/[a-zA-Z0-9_.-]+\/consumer\/[a-zA-Z0-9_.-]+:[0-9]+`:
    /// consumer ARNs.
    ConsumerArn,
}

impl Pattern {
    fn text(self) -> &'static str {
        match self {
            Self::Name => "[a-zA-Z0-9_.-]+",
            Self::StreamArn => "arn:aws.*:kinesis:.*:\\d{12}:stream/\\S+",
            Self::SequenceNumber => "0|([1-9]\\d{0,128})",
            Self::HashKey => "0|([1-9]\\d{0,38})",
            Self::ConsumerArn => {
                "^(arn):aws.*:kinesis:.*:\\d{12}:.*stream\\/[a-zA-Z0-9_.-]+\\/consumer\\/[a-zA-Z0-9_.-]+:[0-9]+"
            }
        }
    }

    fn matches(self, value: &str) -> bool {
        match self {
            Self::Name => {
                !value.is_empty()
                    && value
                        .bytes()
                        .all(|byte| byte.is_ascii_alphanumeric() || b"_.-".contains(&byte))
            }
            Self::StreamArn => arn_matches(value),
            Self::SequenceNumber => decimal_matches(value, 129),
            Self::HashKey => decimal_matches(value, 39),
            Self::ConsumerArn => consumer_arn_matches(value),
        }
    }
}

/// `0`, or a decimal of at most `max_digits` digits without a leading zero.
fn decimal_matches(value: &str, max_digits: usize) -> bool {
    value == "0"
        || (!value.starts_with('0')
            && (1..=max_digits).contains(&value.len())
            && value.bytes().all(|byte| byte.is_ascii_digit()))
}

/// `arn:aws.*:kinesis:.*:\d{12}:stream/\S+`, read as the whole value must match it.
fn arn_matches(value: &str) -> bool {
    let Some(rest) = value.strip_prefix("arn:aws") else {
        return false;
    };
    let Some(kinesis) = rest.find(":kinesis:") else {
        return false;
    };
    let after_service = &rest[kinesis + ":kinesis:".len()..];
    // Some `:<12 digits>:stream/<non-space>` must follow, anywhere after the service.
    after_service.match_indices(":stream/").any(|(at, _)| {
        let before = &after_service[..at];
        let name = &after_service[at + ":stream/".len()..];
        let account = before.rsplit(':').next().unwrap_or("");
        before.contains(':')
            && account.len() == 12
            && account.bytes().all(|byte| byte.is_ascii_digit())
            && !name.is_empty()
            && !name.contains(char::is_whitespace)
    })
}

/// A consumer ARN: a stream ARN, `/consumer/`, a name and `:` with the creation time in
/// epoch seconds (the pattern is anchored at the start only; trailing text is allowed).
fn consumer_arn_matches(value: &str) -> bool {
    let Some((stream_arn, consumer)) = value.rsplit_once("/consumer/") else {
        return false;
    };
    let stream_name = stream_arn.rsplit('/').next().unwrap_or("");
    let Some((name, created)) = consumer.split_once(':') else {
        return false;
    };
    arn_matches(stream_arn)
        && Pattern::Name.matches(stream_name)
        && Pattern::Name.matches(name)
        && created
            .bytes()
            .next()
            .is_some_and(|byte| byte.is_ascii_digit())
}

/// `StreamName` (and `ExclusiveStartStreamName`).
pub(super) const STREAM_NAME: Text = Text::new(1, 128).with(Pattern::Name);
/// `StreamARN`.
pub(super) const STREAM_ARN: Text = Text::new(1, 2048).with(Pattern::StreamArn);
/// `ShardId` and the shard members of the resharding operations.
pub(super) const SHARD_ID: Text = Text::new(1, 128).with(Pattern::Name);
/// `PartitionKey`.
pub(super) const PARTITION_KEY: Text = Text::new(1, 256);
/// `ExplicitHashKey` and `NewStartingHashKey`.
pub(super) const HASH_KEY: Text = Text::new(0, usize::MAX).with(Pattern::HashKey);
/// `SequenceNumberForOrdering`, `StartingSequenceNumber`.
pub(super) const SEQUENCE_NUMBER: Text = Text::new(0, usize::MAX).with(Pattern::SequenceNumber);
/// `ShardIterator`.
pub(super) const SHARD_ITERATOR: Text = Text::new(1, 512);
/// `ConsumerName`.
pub(super) const CONSUMER_NAME: Text = Text::new(1, 128).with(Pattern::Name);
/// `ConsumerARN`.
pub(super) const CONSUMER_ARN: Text = Text::new(1, 2048).with(Pattern::ConsumerArn);
/// `NextToken` of `ListStreamConsumers`.
pub(super) const NEXT_TOKEN: Text = Text::new(1, 1_048_576);
/// `KeyId` of the stream encryption operations.
pub(super) const KEY_ID: Text = Text::new(1, 2048);
/// `ResourceARN` of the resource policy operations.
pub(super) const RESOURCE_ARN: Text = Text::new(1, 2048).with(Pattern::StreamArn);

impl Text {
    const fn new(min: usize, max: usize) -> Self {
        Self {
            min,
            max,
            pattern: None,
        }
    }

    const fn with(self, pattern: Pattern) -> Self {
        Self {
            pattern: Some(pattern),
            ..self
        }
    }
}

/// The constraints a request breaks, gathered member by member.
#[derive(Debug, Default)]
pub(super) struct Violations {
    found: Vec<String>,
}

impl Violations {
    pub(super) fn new() -> Self {
        Self::default()
    }

    fn add(&mut self, value: &str, member: &str, constraint: &str) {
        self.found.push(format!(
            "Value {value} at '{}' failed to satisfy constraint: Member must {constraint}",
            member_path(member)
        ));
    }

    /// A required member: its absence is a violation.
    pub(super) fn required<T>(&mut self, value: Option<T>, member: &str) -> Option<T> {
        if value.is_none() {
            self.add("null", member, "not be null");
        }
        value
    }

    /// A required string member against its shape: its absence is a violation, and so is a
    /// value its shape refuses.
    pub(super) fn required_text<S: AsRef<str>>(
        &mut self,
        value: Option<S>,
        member: &str,
        shape: Text,
    ) -> Option<S> {
        let value = self.required(value, member);
        self.text(member, value.as_ref().map(AsRef::as_ref), shape);
        value
    }

    /// A string member against its shape; an absent one is not checked.
    pub(super) fn text(&mut self, member: &str, value: Option<&str>, shape: Text) {
        let Some(value) = value else { return };
        let quoted = format!("'{value}'");
        // Length counts characters, as the model's lengths do.
        let length = value.chars().count();
        if let Some(pattern) = shape.pattern
            && !pattern.matches(value)
        {
            let constraint = format!("satisfy regular expression pattern: {}", pattern.text());
            self.add(&quoted, member, &constraint);
        }
        if length < shape.min {
            let constraint = format!("have length greater than or equal to {}", shape.min);
            self.add(&quoted, member, &constraint);
        }
        if length > shape.max {
            let constraint = format!("have length less than or equal to {}", shape.max);
            self.add(&quoted, member, &constraint);
        }
    }

    /// A number member that must lie in `min..=max`; an absent one is not checked.
    pub(super) fn number(&mut self, member: &str, value: Option<i64>, min: i64, max: i64) {
        let Some(value) = value else { return };
        let quoted = format!("'{value}'");
        if value < min {
            self.add(
                &quoted,
                member,
                &format!("have value greater than or equal to {min}"),
            );
        }
        if value > max {
            self.add(
                &quoted,
                member,
                &format!("have value less than or equal to {max}"),
            );
        }
    }

    /// An enum member: one of `values`; an absent one is not checked.
    pub(super) fn one_of(&mut self, member: &str, value: Option<&str>, values: &[&str]) {
        let Some(value) = value else { return };
        if !values.contains(&value) {
            let constraint = format!("satisfy enum value set: [{}]", values.join(", "));
            self.add(&format!("'{value}'"), member, &constraint);
        }
    }

    /// A list member whose length must lie in `min..=max`; an absent one is not checked.
    pub(super) fn list_length(
        &mut self,
        member: &str,
        length: Option<usize>,
        min: usize,
        max: usize,
    ) {
        let Some(length) = length else { return };
        if length < min {
            let constraint = format!("have length greater than or equal to {min}");
            self.add(&format!("of {length} entries"), member, &constraint);
        }
        if length > max {
            let constraint = format!("have length less than or equal to {max}");
            self.add(&format!("of {length} entries"), member, &constraint);
        }
    }

    /// Ok when nothing was violated; otherwise the `ValidationException` listing every
    /// violation in the order found.
    pub(super) fn finish(self) -> Result<(), ApiError> {
        match self.found.len() {
            0 => Ok(()),
            1 => Err(ApiError::validation(format!(
                "1 validation error detected: {}",
                self.found[0]
            ))),
            count => Err(ApiError::validation(format!(
                "{count} validation errors detected: {}",
                self.found.join("; ")
            ))),
        }
    }
}

/// A member path as Kinesis writes it: each part starting in lower case, list positions
/// counted from 1 with `member` after them (`Records.0.PartitionKey` ->
/// `records.1.member.partitionKey`).
fn member_path(member: &str) -> String {
    member
        .split('.')
        .map(|part| match part.parse::<usize>() {
            Ok(position) => format!("{}.member", position + 1),
            Err(_) => {
                let mut chars = part.chars();
                match chars.next() {
                    Some(first) => first.to_lowercase().chain(chars).collect(),
                    None => String::new(),
                }
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::error::ErrorKind;

    fn message(violations: Violations) -> Option<String> {
        violations.finish().err().map(|error| {
            assert_eq!(error.kind, ErrorKind::Validation);
            error.message
        })
    }

    #[test]
    fn nothing_violated_is_ok() {
        let mut violations = Violations::new();
        violations.text("StreamName", Some("orders-1.a_b"), STREAM_NAME);
        violations.text("StreamName", None, STREAM_NAME);
        violations.number("Limit", Some(10_000), 1, 10_000);
        assert_eq!(message(violations), None);
    }

    #[test]
    fn every_violation_is_listed_in_one_message() {
        let mut violations = Violations::new();
        violations.text("StreamName", Some("x y"), STREAM_NAME);
        violations.number("Limit", Some(0), 1, 10_000);
        violations.required(None::<&str>, "ShardIterator");
        assert_eq!(
            message(violations).unwrap(),
            "3 validation errors detected: Value 'x y' at 'streamName' failed to satisfy \
             constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; \
             Value '0' at 'limit' failed to satisfy constraint: Member must have value greater \
             than or equal to 1; Value null at 'shardIterator' failed to satisfy constraint: \
             Member must not be null"
        );
    }

    #[test]
    fn one_violation_is_singular() {
        let mut violations = Violations::new();
        violations.text("ShardIterator", Some(&"a".repeat(513)), SHARD_ITERATOR);
        let text = message(violations).unwrap();
        assert!(
            text.starts_with("1 validation error detected: Value 'aaa"),
            "{text}"
        );
        assert!(
            text.ends_with("Member must have length less than or equal to 512"),
            "{text}"
        );
    }

    #[test]
    fn list_positions_count_from_one() {
        assert_eq!(
            member_path("Records.0.PartitionKey"),
            "records.1.member.partitionKey"
        );
        assert_eq!(member_path("ShardFilter.Type"), "shardFilter.type");
    }

    #[test]
    fn patterns_match_the_whole_value() {
        for (pattern, good, bad) in [
            (Pattern::Name, "shardId-000000000001", "a b"),
            (Pattern::SequenceNumber, "0", "01"),
            (
                Pattern::SequenceNumber,
                "49590338271490256608559692538361571095921575989136588898",
                "12a",
            ),
            (
                Pattern::HashKey,
                "340282366920938463463374607431768211455",
                "-1",
            ),
            (
                Pattern::StreamArn,
                "arn:aws:kinesis:us-east-1:000000000000:stream/orders",
                "arn:aws:kinesis:us-east-1:0000:stream/orders",
            ),
        ] {
            assert!(pattern.matches(good), "{pattern:?} {good}");
            assert!(!pattern.matches(bad), "{pattern:?} {bad}");
        }
        assert!(!Pattern::HashKey.matches(&"1".repeat(40)));
        assert!(!Pattern::StreamArn.matches("orders"));
        assert!(!Pattern::StreamArn.matches("arn:aws:kinesis:us-east-1:000000000000:stream/a b"));
    }
}
