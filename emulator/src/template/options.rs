//! What a local run stands in for: the account, region, stack and parameter values.

use std::collections::BTreeMap;

/// The variable that gives the functions (and the AWS SDK) a local DynamoDB, read by the CLI into
/// [`TemplateOptions::local_dynamodb`].
pub const LOCAL_DYNAMODB_VARIABLE: &str = "AWS_ENDPOINT_URL_DYNAMODB";

/// What a local run stands in for: the account, region and stack the template would be deployed
/// to, and the parameter values `sam deploy --parameter-overrides` would give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateOptions {
    /// `AWS::Region`; it also decides `AWS::Partition` and `AWS::URLSuffix`.
    pub region: String,
    /// `AWS::AccountId`.
    pub account_id: String,
    /// `AWS::StackName`.
    pub stack_name: String,
    /// Values for parameters, taking precedence over their `Default`.
    pub parameter_overrides: BTreeMap<String, String>,
    /// The local DynamoDB the functions are given (the run's `AWS_ENDPOINT_URL_DYNAMODB`): `Ref`
    /// of a template's table names a table there, and the functions get the endpoint. Without
    /// one, `Ref` of a table is empty, so that a function runs without it rather than call AWS.
    pub local_dynamodb: Option<String>,
}

impl Default for TemplateOptions {
    /// The values `sam local` uses: region `us-east-1`, account `123456789012`, stack `local`.
    fn default() -> Self {
        Self {
            region: "us-east-1".to_owned(),
            account_id: "123456789012".to_owned(),
            stack_name: "local".to_owned(),
            parameter_overrides: BTreeMap::new(),
            local_dynamodb: None,
        }
    }
}
