//! Shard operations: `ListShards` with its paging and filters, and resharding.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::codec::Request;
use super::error::{Answer, ApiError, ErrorKind};
use super::wire::{
    Timestamp, WireShard, check_name, count_in, normalized_shard_id, required, stream_names,
    stream_of,
};
use crate::descriptions::{ShardLifetime, StreamSummary};
use crate::embedded::EmbeddedKinesis;
use crate::reshard::ScalingType;
use crate::throughput::ApiCall;
use kinesis_source::Shard;

/// How many shards one `ListShards` page holds at most, and by default.
const LIST_SHARDS_PAGE: usize = 1000;
/// How long a `ListShards` `NextToken` stays valid.
const NEXT_TOKEN_TTL: Duration = Duration::from_secs(300);

/// `ShardFilter`: which shards `ListShards` lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Filter {
    /// `AFTER_SHARD_ID`: the shards after this one.
    AfterShardId(String),
    /// `AT_TRIM_HORIZON`: the shards open at the trim horizon.
    AtTrimHorizon,
    /// `FROM_TRIM_HORIZON` (the default): every shard within the retention period.
    FromTrimHorizon,
    /// `AT_LATEST`: the open shards.
    AtLatest,
    /// `AT_TIMESTAMP`: the shards open at this time (milliseconds since the epoch).
    AtTimestamp(u64),
    /// `FROM_TIMESTAMP`: the shards open at or after this time: the open ones, and the closed
    /// ones that closed at or after it.
    FromTimestamp(u64),
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ShardFilterInput {
    r#type: Option<String>,
    shard_id: Option<String>,
    timestamp: Option<Timestamp>,
}

impl Filter {
    fn read(input: &ShardFilterInput) -> Result<Self, ApiError> {
        let kind = required(input.r#type.clone(), "ShardFilter.Type")?;
        let timestamp = |kind: &str| {
            input
                .timestamp
                .as_ref()
                .map(|Timestamp(time)| millis(*time))
                .ok_or_else(|| {
                    ApiError::invalid_argument(format!(
                        "ShardFilter of type {kind} needs a Timestamp"
                    ))
                })
        };
        Ok(match kind.as_str() {
            "AFTER_SHARD_ID" => {
                let shard_id = input.shard_id.clone().ok_or_else(|| {
                    ApiError::invalid_argument("ShardFilter of type AFTER_SHARD_ID needs a ShardId")
                })?;
                check_name(&shard_id, "ShardFilter.ShardId")?;
                Self::AfterShardId(shard_id)
            }
            "AT_TRIM_HORIZON" => Self::AtTrimHorizon,
            "FROM_TRIM_HORIZON" => Self::FromTrimHorizon,
            "AT_LATEST" => Self::AtLatest,
            "AT_TIMESTAMP" => Self::AtTimestamp(timestamp(&kind)?),
            "FROM_TIMESTAMP" => Self::FromTimestamp(timestamp(&kind)?),
            other => {
                return Err(ApiError::validation(format!(
                    "1 validation error detected: Value '{other}' at 'shardFilter.type' failed \
                     to satisfy constraint: Member must satisfy enum value set: \
                     [AFTER_SHARD_ID, AT_TRIM_HORIZON, FROM_TRIM_HORIZON, AT_LATEST, \
                     AT_TIMESTAMP, FROM_TIMESTAMP]"
                )));
            }
        })
    }

    /// Whether the filter keeps a shard that lived `lifetime`, on a stream whose trim horizon
    /// is `horizon_ms`. Times before the trim horizon count as the trim horizon, as Kinesis
    /// corrects `FROM_TIMESTAMP`: nothing older is kept anyway.
    fn keeps(&self, shard: &Shard, lifetime: &ShardLifetime, horizon_ms: u64) -> bool {
        let opened = millis(lifetime.opened);
        let closed = lifetime.closed.map(millis);
        // A shard is open at instant `at` from its opening until (not including) its closing.
        let open_at = |at: u64| opened <= at && closed.is_none_or(|closed| closed > at);
        match self {
            Self::AfterShardId(start) => shard.shard_id.as_str() > start.as_str(),
            Self::AtTrimHorizon => open_at(horizon_ms),
            Self::FromTrimHorizon => true,
            Self::AtLatest => closed.is_none(),
            Self::AtTimestamp(at) => {
                let at = (*at).max(horizon_ms);
                // Kinesis keeps a shard whose end equals the time as well, so at a reshard's
                // instant both the parents and the children are listed.
                opened <= at && closed.is_none_or(|closed| closed >= at)
            }
            Self::FromTimestamp(from) => {
                let from = (*from).max(horizon_ms);
                closed.is_none_or(|closed| closed >= from)
            }
        }
    }
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// What a `ListShards` `NextToken` carries: where the next page starts, under which filter,
/// on which stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct PageToken {
    /// The stream's name.
    stream: String,
    /// The stream's creation, in milliseconds: a token from an earlier stream of the same name
    /// is refused.
    created_ms: u64,
    /// The last shard listed so far.
    after: String,
    filter: Filter,
    /// When the token was issued, in milliseconds: it expires after 300 seconds.
    issued_ms: u64,
}

impl PageToken {
    fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).expect("tokens always serialize"))
    }

    fn decode(token: &str) -> Result<Self, ApiError> {
        URL_SAFE_NO_PAD
            .decode(token)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| {
                ApiError::invalid_argument(format!(
                    "NextToken `{token}` was not issued by ListShards"
                ))
            })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListShardsInput {
    stream_name: Option<String>,
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    next_token: Option<String>,
    exclusive_start_shard_id: Option<String>,
    max_results: Option<i64>,
    stream_creation_timestamp: Option<Timestamp>,
    shard_filter: Option<ShardFilterInput>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct ListShardsOutput<'a> {
    shards: Vec<WireShard<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_token: Option<String>,
}

/// Where a `ListShards` call lists from: read from its `NextToken`, or from its stream and
/// filter.
struct Listing {
    stream: String,
    /// The creation of the stream the token was issued for (milliseconds); `None` without a
    /// token.
    token_created_ms: Option<u64>,
    /// The last shard listed before this page, if any.
    after: Option<String>,
    filter: Filter,
}

/// `ListShards`: the stream's shards that have not expired, in order of creation (parents
/// before children), at most 1,000 a page, filtered by `ShardFilter`.
///
/// A `NextToken` identifies the stream, the filter and where the page starts: it cannot come
/// with `StreamName`, `StreamARN`, `ExclusiveStartShardId`, `StreamCreationTimestamp` or
/// `ShardFilter` (`InvalidArgumentException`), and it expires after 300 seconds
/// (`ExpiredNextTokenException`).
pub(super) fn list_shards(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: ListShardsInput = request.parse()?;
    let page = match input.max_results {
        Some(max) => count_in(max, 1..=10_000, "MaxResults")?.min(LIST_SHARDS_PAGE),
        None => LIST_SHARDS_PAGE,
    };
    let now_ms = millis(kinesis.current_time());
    let listing = match &input.next_token {
        Some(token) => listing_of_token(&input, token, now_ms)?,
        None => listing_of_request(kinesis, &input)?,
    };

    kinesis.admit_api_call(ApiCall::ListShards, &listing.stream)?;
    let summary = kinesis.describe_stream_summary(&listing.stream)?;
    let created_ms = millis(summary.created);
    check_same_stream(&summary, &listing, input.stream_creation_timestamp)?;
    let horizon_ms = now_ms
        .saturating_sub(summary.retention_period.as_millis() as u64)
        .max(created_ms);

    let shards = kinesis.list_shards_with_lifetimes(&listing.stream)?;
    let mut kept: Vec<&Shard> = shards
        .iter()
        .filter(|(shard, lifetime)| {
            listing
                .after
                .as_deref()
                .is_none_or(|after| shard.shard_id.as_str() > after)
                && listing.filter.keeps(shard, lifetime, horizon_ms)
        })
        .map(|(shard, _)| shard)
        .take(page + 1)
        .collect();
    let more = kept.len() > page;
    kept.truncate(page);
    let next_token = more.then(|| {
        PageToken {
            stream: summary.name.clone(),
            created_ms,
            after: kept
                .last()
                .map(|shard| shard.shard_id.clone())
                .unwrap_or_default(),
            filter: listing.filter,
            issued_ms: now_ms,
        }
        .encode()
    });
    Ok(request.reply(&ListShardsOutput {
        shards: kept.into_iter().map(WireShard::from).collect(),
        next_token,
    }))
}

/// The listing a `NextToken` continues, if the token came alone and has not expired.
fn listing_of_token(
    input: &ListShardsInput,
    token: &str,
    now_ms: u64,
) -> Result<Listing, ApiError> {
    let conflicting = [
        ("StreamName", input.stream_name.is_some()),
        ("StreamARN", input.stream_arn.is_some()),
        (
            "ExclusiveStartShardId",
            input.exclusive_start_shard_id.is_some(),
        ),
        (
            "StreamCreationTimestamp",
            input.stream_creation_timestamp.is_some(),
        ),
        ("ShardFilter", input.shard_filter.is_some()),
    ];
    if let Some((member, _)) = conflicting.iter().find(|(_, given)| *given) {
        return Err(ApiError::invalid_argument(format!(
            "NextToken and {member} cannot be provided together: the token names the \
             stream and where the listing continues"
        )));
    }
    let token = PageToken::decode(token)?;
    if now_ms.saturating_sub(token.issued_ms) > NEXT_TOKEN_TTL.as_millis() as u64 {
        return Err(ApiError::new(
            ErrorKind::ExpiredNextToken,
            format!(
                "NextToken for stream {} expired: tokens are valid for {} seconds",
                token.stream,
                NEXT_TOKEN_TTL.as_secs()
            ),
        ));
    }
    Ok(Listing {
        stream: token.stream,
        token_created_ms: Some(token.created_ms),
        after: Some(token.after),
        filter: token.filter,
    })
}

/// The listing a first `ListShards` call asks for: its stream, `ExclusiveStartShardId` and
/// `ShardFilter`.
fn listing_of_request(
    kinesis: &EmbeddedKinesis,
    input: &ListShardsInput,
) -> Result<Listing, ApiError> {
    let stream = stream_of(kinesis, stream_names!(input))?;
    if let Some(start) = &input.exclusive_start_shard_id {
        check_name(start, "ExclusiveStartShardId")?;
    }
    let filter = match &input.shard_filter {
        Some(filter) => Filter::read(filter)?,
        None => Filter::FromTrimHorizon,
    };
    Ok(Listing {
        stream: stream.to_owned(),
        token_created_ms: None,
        // Read by its number, as `GetShardIterator` reads a shard id.
        after: input
            .exclusive_start_shard_id
            .as_deref()
            .map(|start| normalized_shard_id(start).into_owned()),
        filter,
    })
}

/// Refuses a listing of an earlier stream of the same name: one whose token, or whose
/// `StreamCreationTimestamp`, names another creation time than the stream's.
fn check_same_stream(
    summary: &StreamSummary,
    listing: &Listing,
    creation_timestamp: Option<Timestamp>,
) -> Result<(), ApiError> {
    let created_ms = millis(summary.created);
    let same_stream = match (listing.token_created_ms, creation_timestamp) {
        (Some(token_created_ms), _) => token_created_ms == created_ms,
        // Creation timestamps are compared to the second, as clients may round them.
        (None, Some(Timestamp(given))) => millis(given) / 1000 == created_ms / 1000,
        (None, None) => true,
    };
    if same_stream {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorKind::ResourceNotFound,
        format!(
            "Stream {} under account {} not found: the stream of that name was created at \
             another time.",
            listing.stream,
            account_of(&summary.arn)
        ),
    ))
}

/// The account id in a stream ARN (`arn:aws:kinesis:<region>:<account>:stream/<name>`).
fn account_of(arn: &str) -> &str {
    arn.split(':').nth(4).unwrap_or_default()
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct SplitShardInput {
    stream_name: Option<String>,
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    shard_to_split: Option<String>,
    new_starting_hash_key: Option<String>,
}

/// `SplitShard`: done when the call returns.
pub(super) fn split_shard(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: SplitShardInput = request.parse()?;
    let stream = stream_of(kinesis, stream_names!(input))?;
    let shard = required(input.shard_to_split.as_deref(), "ShardToSplit")?;
    check_name(shard, "ShardToSplit")?;
    let key = required(input.new_starting_hash_key.as_deref(), "NewStartingHashKey")?;
    kinesis.split_shard(stream, &normalized_shard_id(shard), key)?;
    Ok(Vec::new())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct MergeShardsInput {
    stream_name: Option<String>,
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    shard_to_merge: Option<String>,
    adjacent_shard_to_merge: Option<String>,
}

/// `MergeShards`: done when the call returns.
pub(super) fn merge_shards(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: MergeShardsInput = request.parse()?;
    let stream = stream_of(kinesis, stream_names!(input))?;
    let shard = required(input.shard_to_merge.as_deref(), "ShardToMerge")?;
    check_name(shard, "ShardToMerge")?;
    let adjacent = required(
        input.adjacent_shard_to_merge.as_deref(),
        "AdjacentShardToMerge",
    )?;
    check_name(adjacent, "AdjacentShardToMerge")?;
    kinesis.merge_shards(
        stream,
        &normalized_shard_id(shard),
        &normalized_shard_id(adjacent),
    )?;
    Ok(Vec::new())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct UpdateShardCountInput {
    stream_name: Option<String>,
    #[serde(rename = "StreamARN")]
    stream_arn: Option<String>,
    target_shard_count: Option<i64>,
    scaling_type: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct UpdateShardCountOutput {
    stream_name: String,
    current_shard_count: u32,
    target_shard_count: u32,
    #[serde(rename = "StreamARN")]
    stream_arn: String,
}

/// `UpdateShardCount`: done when the call returns.
pub(super) fn update_shard_count(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let input: UpdateShardCountInput = request.parse()?;
    let stream = stream_of(kinesis, stream_names!(input))?;
    let target = required(input.target_shard_count, "TargetShardCount")?;
    let target = count_in(target, 1..=i64::from(u32::MAX), "TargetShardCount")?;
    let scaling_type: ScalingType = required(input.scaling_type, "ScalingType")?.parse()?;
    let output = kinesis.update_shard_count(
        stream,
        u32::try_from(target).expect("checked against u32::MAX"),
        scaling_type,
    )?;
    Ok(request.reply(&UpdateShardCountOutput {
        stream_name: output.stream_name,
        current_shard_count: output.current_shard_count,
        target_shard_count: output.target_shard_count,
        stream_arn: output.stream_arn,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinesis_source::HashKeyRange;
    use kinesis_source::sequence::SequenceNumber;

    fn shard(id: &str) -> Shard {
        Shard {
            shard_id: id.to_owned(),
            parent_shard_id: None,
            adjacent_parent_shard_id: None,
            hash_key_range: HashKeyRange {
                starting_hash_key: 0,
                ending_hash_key: u128::MAX,
            },
            starting_sequence_number: "0".parse::<SequenceNumber>().unwrap(),
            ending_sequence_number: None,
        }
    }

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    }

    /// Which of three shards a filter keeps: `shardId-0` lived from 100 to 200, and
    /// `shardId-1` and `shardId-2` opened at 200 (as children of a split) and are open.
    #[track_caller]
    fn check(filter: Filter, horizon_ms: u64, expected: &[&str]) {
        let shards = [
            (shard("shardId-0"), at(100), Some(at(200))),
            (shard("shardId-1"), at(200), None),
            (shard("shardId-2"), at(200), None),
        ];
        let kept: Vec<&str> = shards
            .iter()
            .filter(|(shard, opened, closed)| {
                let lifetime = ShardLifetime {
                    opened: *opened,
                    closed: *closed,
                };
                filter.keeps(shard, &lifetime, horizon_ms)
            })
            .map(|(shard, _, _)| shard.shard_id.as_str())
            .collect();
        assert_eq!(
            kept, expected,
            "{filter:?} with the trim horizon at {horizon_ms}"
        );
    }

    #[test]
    fn filters_keep_the_shards_kinesis_lists() {
        let everything = ["shardId-0", "shardId-1", "shardId-2"];
        check(Filter::FromTrimHorizon, 100, &everything);
        check(Filter::AtTrimHorizon, 100, &["shardId-0"]);
        check(Filter::AtTrimHorizon, 250, &["shardId-1", "shardId-2"]);
        check(Filter::AtLatest, 100, &["shardId-1", "shardId-2"]);
        check(
            Filter::AfterShardId("shardId-0".to_owned()),
            100,
            &["shardId-1", "shardId-2"],
        );
        check(Filter::AtTimestamp(150), 100, &["shardId-0"]);
        check(Filter::AtTimestamp(200), 100, &everything);
        check(Filter::AtTimestamp(250), 100, &["shardId-1", "shardId-2"]);
        // A time before the trim horizon counts as the trim horizon.
        check(Filter::AtTimestamp(0), 100, &["shardId-0"]);
        check(Filter::FromTimestamp(150), 100, &everything);
        check(Filter::FromTimestamp(201), 100, &["shardId-1", "shardId-2"]);
        check(Filter::FromTimestamp(0), 250, &["shardId-1", "shardId-2"]);
    }

    #[test]
    fn page_tokens_read_back() {
        let token = PageToken {
            stream: "orders".to_owned(),
            created_ms: 5,
            after: "shardId-000000000001".to_owned(),
            filter: Filter::AtTimestamp(42),
            issued_ms: 7,
        };
        assert_eq!(PageToken::decode(&token.encode()), Ok(token));
        assert_eq!(
            PageToken::decode("not a token").map_err(|error| error.kind),
            Err(ErrorKind::InvalidArgument)
        );
    }
}
