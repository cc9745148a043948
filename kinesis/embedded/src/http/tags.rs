//! Tags: the rules every tag meets (docs/kinesis.md, "Tags"), and `TagResource`,
//! `UntagResource` and `ListTagsForResource`, which tag a stream or a stream consumer by its
//! ARN. A stream's tags are the ones `AddTagsToStream` and `ListTagsForStream` see; a
//! consumer's are kept by its ARN and go with it when it is deregistered. A stream's tags are
//! journaled (`--state-dir` keeps them); a consumer's are not, as consumers are not.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::codec::Request;
use super::consumers::find_consumer;
use super::error::{Answer, ApiError, ErrorKind};
use super::validation::{RESOURCE_ARN, Violations};
use super::wire::named_stream;
use crate::embedded::EmbeddedKinesis;

/// The most tags a stream or consumer may carry.
pub(super) const MAX_TAGS_PER_RESOURCE: usize = 50;
/// The symbols a tag of `AddTagsToStream` and `CreateStream` may hold besides letters, digits
/// and spaces, as AWS answers them (it refuses `%`, which the `Tag` shape lists).
pub(super) const STREAM_TAG_SYMBOLS: &str = "_./=+-@";
/// The symbols a tag of `TagResource` may hold: its API reference page adds `:`.
const RESOURCE_TAG_SYMBOLS: &str = "_.:/=+-@";

/// Whether a tag key or value may hold `c`: Unicode letters and digits, spaces (not tabs or
/// line breaks) and `symbols`.
fn tag_character(c: char, symbols: &str) -> bool {
    c.is_alphanumeric() || (c.is_whitespace() && !c.is_control()) || symbols.contains(c)
}

/// Checks tags about to be added to `resource` (`stream <name>` or `consumer <ARN>`), which
/// has `existing` ones.
pub(super) fn check_tags(
    resource: &str,
    symbols: &str,
    existing: &BTreeMap<String, String>,
    added: &BTreeMap<String, String>,
) -> Result<(), ApiError> {
    for (key, value) in added {
        if !(1..=128).contains(&key.chars().count()) || value.chars().count() > 256 {
            return Err(ApiError::invalid_argument(format!(
                "Tag `{key}` of {resource}: keys have 1 to 128 characters, values at most 256"
            )));
        }
        for (what, text) in [("key", key), ("value", value)] {
            if let Some(bad) = text.chars().find(|&c| !tag_character(c, symbols)) {
                let listed: Vec<String> = symbols.chars().map(String::from).collect();
                return Err(ApiError::invalid_argument(format!(
                    "Tag {what} {text:?} of {resource} holds the character {bad:?}: tag keys \
                     and values may hold only letters, digits, spaces and {}",
                    listed.join(" ")
                )));
            }
        }
    }
    let total = existing.len()
        + added
            .keys()
            .filter(|key| !existing.contains_key(*key))
            .count();
    if total > MAX_TAGS_PER_RESOURCE {
        let mut described = resource.to_owned();
        described[..1].make_ascii_uppercase();
        return Err(ApiError::new(
            ErrorKind::LimitExceeded,
            format!(
                "{described} would have {total} tags; a resource has at most \
                 {MAX_TAGS_PER_RESOURCE}"
            ),
        ));
    }
    Ok(())
}

/// A resource tags are kept for: a stream (by its name: its tags are kept with it) or a
/// consumer (by its ARN).
enum Resource {
    Stream(String),
    Consumer(String),
}

impl Resource {
    /// The stream or consumer `arn` names, and how messages name it;
    /// `ResourceNotFoundException` if there is none.
    fn of(kinesis: &EmbeddedKinesis, arn: &str) -> Result<(Self, String), ApiError> {
        if arn.contains("/consumer/") {
            let (_, consumer) = find_consumer(kinesis, Some(arn), None, None)?;
            let described = format!("consumer {}", consumer.arn);
            return Ok((Self::Consumer(consumer.arn), described));
        }
        let stream = named_stream(kinesis, (None, Some(arn)))?;
        let name = kinesis.describe_stream_summary(stream)?.name;
        let described = format!("stream {name}");
        Ok((Self::Stream(name), described))
    }

    /// Runs `change` on the resource's tags: a stream's through the journal, a consumer's in
    /// memory alone, as the consumer itself is.
    fn change_tags(
        &self,
        kinesis: &EmbeddedKinesis,
        operation: &str,
        change: impl FnOnce(&mut BTreeMap<String, String>) -> Result<(), ApiError>,
    ) -> Result<(), ApiError> {
        match self {
            Self::Stream(name) => kinesis.change_stream_tags(name, operation, change),
            Self::Consumer(arn) => {
                let mut all = kinesis.attachments().consumer_tags();
                let tags = all.entry(arn.clone()).or_default();
                change(tags)?;
                if tags.is_empty() {
                    all.remove(arn);
                }
                Ok(())
            }
        }
    }

    /// The resource's tags, in key order.
    fn tags(&self, kinesis: &EmbeddedKinesis) -> Result<BTreeMap<String, String>, ApiError> {
        let attachments = kinesis.attachments();
        Ok(match self {
            Self::Stream(name) => {
                let key = kinesis.stream_key(name)?;
                attachments.tags().get(&key).cloned().unwrap_or_default()
            }
            Self::Consumer(arn) => attachments
                .consumer_tags()
                .get(arn)
                .cloned()
                .unwrap_or_default(),
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TagResourceInput {
    #[serde(rename = "ResourceARN")]
    resource_arn: Option<String>,
    tags: Option<BTreeMap<String, String>>,
}

/// `TagResource`: adds tags to a stream or consumer, replacing the values of keys it has.
pub(super) fn tag_resource(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: TagResourceInput = request.parse()?;
    let mut violations = Violations::new();
    let arn = violations.required_text(input.resource_arn, "ResourceARN", RESOURCE_ARN);
    let added = violations.required(input.tags, "Tags");
    violations.list_length("Tags", added.as_ref().map(BTreeMap::len), 1, 200);
    violations.finish()?;
    let (resource, described) = Resource::of(kinesis, &arn.unwrap_or_default())?;
    let added = added.unwrap_or_default();
    resource.change_tags(kinesis, "TagResource", |existing| {
        check_tags(&described, RESOURCE_TAG_SYMBOLS, existing, &added)?;
        existing.extend(added);
        Ok(())
    })?;
    Ok(Vec::new())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct UntagResourceInput {
    #[serde(rename = "ResourceARN")]
    resource_arn: Option<String>,
    tag_keys: Option<Vec<String>>,
}

/// `UntagResource`: removes tags by key; keys the resource does not have are ignored.
pub(super) fn untag_resource(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: UntagResourceInput = request.parse()?;
    let mut violations = Violations::new();
    let arn = violations.required_text(input.resource_arn, "ResourceARN", RESOURCE_ARN);
    let keys = violations.required(input.tag_keys, "TagKeys");
    violations.list_length("TagKeys", keys.as_ref().map(Vec::len), 1, 50);
    violations.finish()?;
    let (resource, _) = Resource::of(kinesis, &arn.unwrap_or_default())?;
    resource.change_tags(kinesis, "UntagResource", |existing| {
        for key in keys.iter().flatten() {
            existing.remove(key);
        }
        Ok(())
    })?;
    Ok(Vec::new())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListTagsForResourceInput {
    #[serde(rename = "ResourceARN")]
    resource_arn: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct ListTagsForResourceOutput {
    tags: Vec<WireTag>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireTag {
    key: String,
    value: String,
}

/// `ListTagsForResource`: every tag of the stream or consumer, in key order.
pub(super) fn list_tags_for_resource(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: ListTagsForResourceInput = request.parse()?;
    let mut violations = Violations::new();
    let arn = violations.required_text(input.resource_arn, "ResourceARN", RESOURCE_ARN);
    violations.finish()?;
    let (resource, _) = Resource::of(kinesis, &arn.unwrap_or_default())?;
    let tags = resource
        .tags(kinesis)?
        .into_iter()
        .map(|(key, value)| WireTag { key, value })
        .collect();
    Ok(request.reply(&ListTagsForResourceOutput { tags }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[track_caller]
    fn check(symbols: &str, added: &[(&str, &str)], expected: Result<(), &str>) {
        let checked = check_tags("stream s", symbols, &BTreeMap::new(), &tags(added));
        match expected {
            Ok(()) => assert_eq!(checked.map_err(|error| error.message), Ok(())),
            Err(part) => {
                let message = checked.expect_err("refused").message;
                assert!(message.contains(part), "`{message}` should say `{part}`");
            }
        }
    }

    #[test]
    fn tags_hold_letters_digits_spaces_and_the_listed_symbols() {
        check(STREAM_TAG_SYMBOLS, &[("team", "orders @ eu-1")], Ok(()));
        check(
            STREAM_TAG_SYMBOLS,
            &[("a:b", "")],
            Err("holds the character ':'"),
        );
        check(RESOURCE_TAG_SYMBOLS, &[("a:b", "")], Ok(()));
        check(
            RESOURCE_TAG_SYMBOLS,
            &[("a%b", "")],
            Err("of stream s holds"),
        );
        check(
            RESOURCE_TAG_SYMBOLS,
            &[("", "v")],
            Err("keys have 1 to 128"),
        );
    }

    #[test]
    fn a_resource_holds_at_most_fifty_tags() {
        let existing: BTreeMap<String, String> =
            (0..49).map(|n| (format!("k{n}"), String::new())).collect();
        let added = tags(&[("k0", "replaced"), ("new", "")]);
        assert!(check_tags("consumer c", "", &existing, &added).is_ok());
        let more = tags(&[("new", ""), ("newer", "")]);
        let refused = check_tags("consumer c", "", &existing, &more).unwrap_err();
        assert_eq!(refused.kind, ErrorKind::LimitExceeded);
        assert!(
            refused.message.starts_with("Consumer c would have 51 tags"),
            "{}",
            refused.message
        );
    }
}
