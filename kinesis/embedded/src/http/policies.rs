//! Resource policies: `PutResourcePolicy`, `GetResourcePolicy` and `DeleteResourcePolicy` on
//! streams. The embedded Kinesis keeps a stream's policy and hands it back; it enforces none
//! (requests are not authenticated). The rules are in `docs/kinesis.md` ("Resource policies").

use serde::{Deserialize, Serialize};

use super::codec::Request;
use super::error::{Answer, ApiError, ErrorKind};
use super::validation::{RESOURCE_ARN, Violations};
use crate::embedded::EmbeddedKinesis;

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PolicyInput {
    #[serde(rename = "ResourceARN")]
    resource_arn: Option<String>,
    policy: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct GetResourcePolicyOutput<'a> {
    policy: &'a str,
}

/// What `GetResourcePolicy` answers for a stream without a policy.
const NO_POLICY: &str = "{}";

/// Reads the `ResourceARN` (and, for a put, the `Policy`) of a request, checked against the
/// API's shapes.
fn read(request: Request<'_>, needs_policy: bool) -> Result<(String, Option<String>), ApiError> {
    let input: PolicyInput = request.parse()?;
    let mut violations = Violations::new();
    let arn = violations.required_text(input.resource_arn, "ResourceARN", RESOURCE_ARN);
    let policy = if needs_policy {
        violations.required(input.policy, "Policy")
    } else {
        None
    };
    violations.finish()?;
    Ok((arn.unwrap_or_default(), policy))
}

/// `PutResourcePolicy`: sets or replaces the policy of an existing stream. The policy must be
/// a JSON object; its statements are kept as given.
pub(super) fn put_resource_policy(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let (arn, policy) = read(request, true)?;
    let policy = policy.unwrap_or_default();
    let is_object =
        serde_json::from_str::<serde_json::Value>(&policy).is_ok_and(|value| value.is_object());
    if !is_object {
        return Err(ApiError::invalid_argument(format!(
            "The policy for {arn} is not a JSON policy document (a JSON object)"
        )));
    }
    let key = kinesis.stream_key(&arn)?;
    kinesis.attachments().policies().insert(key, policy);
    Ok(Vec::new())
}

/// `GetResourcePolicy`: the stream's policy, or `{}` when it has none.
pub(super) fn get_resource_policy(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let (arn, _) = read(request, false)?;
    let key = kinesis.stream_key(&arn)?;
    let policies = kinesis.attachments().policies();
    let policy = policies.get(&key).map_or(NO_POLICY, String::as_str);
    Ok(request.reply(&GetResourcePolicyOutput { policy }))
}

/// `DeleteResourcePolicy`: removes the stream's policy; a stream without one is an error.
pub(super) fn delete_resource_policy(kinesis: &EmbeddedKinesis, request: Request<'_>) -> Answer {
    let (arn, _) = read(request, false)?;
    let key = kinesis.stream_key(&arn)?;
    match kinesis.attachments().policies().remove(&key) {
        Some(_) => Ok(Vec::new()),
        None => Err(ApiError::new(
            ErrorKind::ResourceNotFound,
            format!("No resource policy found for resource {arn}."),
        )),
    }
}
