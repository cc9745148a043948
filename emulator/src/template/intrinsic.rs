//! CloudFormation's intrinsic functions, as far as a local run can know their values:
//! `Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::Join` and `Fn::If` (over the template's `Conditions`:
//! `Fn::Equals`, `Fn::Not`, `Fn::And`, `Fn::Or`, `Condition`), in their short (`!Ref`) and long
//! (`Ref:`) forms, over parameters, pseudo-parameters and the template's Kinesis streams.

use std::collections::BTreeMap;

use serde_yaml_ng::{Mapping, Value};

use super::options::{LOCAL_DYNAMODB_VARIABLE, TemplateOptions};
use crate::suggest::did_you_mean_hint;

/// The resource type whose `Ref` and `Arn` kinesis-esm knows.
pub(super) const KINESIS_STREAM: &str = "AWS::Kinesis::Stream";

/// The resource type whose `Ref` (its name) kinesis-esm gives, for a function's environment.
pub(super) const DYNAMODB_TABLE: &str = "AWS::DynamoDB::Table";

/// SAM's table, whose `Ref` is its name too.
pub(super) const SIMPLE_TABLE: &str = "AWS::Serverless::SimpleTable";

/// Lambda Managed Instances' capacity providers, in SAM's type and CloudFormation's.
const CAPACITY_PROVIDERS: [&str; 2] = [
    "AWS::Serverless::CapacityProvider",
    "AWS::Lambda::CapacityProvider",
];

/// The pseudo-parameters a local run can answer, and how.
const PSEUDO_PARAMETERS: &str =
    "AWS::Region, AWS::AccountId, AWS::Partition, AWS::StackName, AWS::URLSuffix";

/// An intrinsic function call found in a value: its long name (`Ref`, `Fn::GetAtt`, ...) and its
/// argument.
pub(super) fn intrinsic(value: &Value) -> Option<(String, &Value)> {
    match value {
        Value::Tagged(tagged) => {
            let tag = tagged.tag.to_string();
            let name = tag.trim_start_matches('!');
            let long = if name == "Ref" || name == "Condition" {
                name.to_owned()
            } else {
                format!("Fn::{name}")
            };
            Some((long, &tagged.value))
        }
        Value::Mapping(mapping) if mapping.len() == 1 => {
            let (key, argument) = mapping.iter().next()?;
            let key = key.as_str()?;
            (key == "Ref" || key.starts_with("Fn::")).then(|| (key.to_owned(), argument))
        }
        _ => None,
    }
}

/// A value as the template wrote it, on one line, for error messages.
pub(super) fn render(value: &Value) -> String {
    let mut text = String::new();
    render_into(value, &mut text);
    const LIMIT: usize = 120;
    if text.chars().count() > LIMIT {
        text = text.chars().take(LIMIT).collect::<String>() + "…";
    }
    text
}

fn render_into(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::String(text) if text.is_empty() => out.push_str("\"\""),
        Value::String(text) => out.push_str(text),
        Value::Sequence(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                render_into(item, out);
            }
            out.push(']');
        }
        Value::Mapping(mapping) => {
            out.push('{');
            for (index, (key, item)) in mapping.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                render_into(key, out);
                out.push_str(": ");
                render_into(item, out);
            }
            out.push('}');
        }
        Value::Tagged(tagged) => {
            out.push_str(&tagged.tag.to_string());
            out.push(' ');
            render_into(&tagged.value, out);
        }
    }
}

/// What `Ref` of a parameter gives.
#[derive(Debug, Clone)]
pub(super) enum ParameterValue {
    /// A single value, from an override or the parameter's `Default`.
    Text(String),
    /// No value a local run can know, and why.
    Unknown(String),
}

/// Resolves intrinsic functions to text.
pub(super) struct Resolver<'t> {
    region: &'t str,
    account_id: &'t str,
    stack_name: &'t str,
    partition: &'static str,
    url_suffix: &'static str,
    parameters: BTreeMap<String, ParameterValue>,
    resources: &'t Mapping,
    /// The template's `Conditions` section (empty without one).
    conditions: &'t Mapping,
    local_dynamodb: Option<&'t str>,
    /// The names of the template's Kinesis streams by logical id, once they are known.
    stream_names: BTreeMap<String, String>,
}

impl<'t> Resolver<'t> {
    /// A resolver that knows the parameters and pseudo-parameters, but no stream names yet.
    pub(super) fn new(
        options: &'t TemplateOptions,
        parameters: BTreeMap<String, ParameterValue>,
        resources: &'t Mapping,
        conditions: &'t Mapping,
    ) -> Self {
        let (partition, url_suffix) = partition_of(&options.region);
        Self {
            region: &options.region,
            account_id: &options.account_id,
            stack_name: &options.stack_name,
            partition,
            url_suffix,
            parameters,
            resources,
            conditions,
            local_dynamodb: options.local_dynamodb.as_deref(),
            stream_names: BTreeMap::new(),
        }
    }

    /// Lets `!Ref` and `!GetAtt X.Arn` of the template's streams resolve from now on.
    pub(super) fn know_stream(&mut self, logical_id: &str, name: &str) {
        self.stream_names
            .insert(logical_id.to_owned(), name.to_owned());
    }

    /// The local DynamoDB endpoint the functions are given, if the run has one.
    pub(super) fn local_dynamodb(&self) -> Option<&'t str> {
        self.local_dynamodb
    }

    /// The `Type` of a resource of the template.
    pub(super) fn resource_type(&self, logical_id: &str) -> Option<&'t str> {
        self.resources
            .get(logical_id)?
            .as_mapping()?
            .get("Type")?
            .as_str()
    }

    /// `; did you mean X?` for a mistyped resource (or, where `Ref` may name one, parameter)
    /// logical id, or nothing when no name of the template is near.
    fn near_name(&self, typed: &str, with_parameters: bool) -> String {
        let resources = self.resources.keys().filter_map(Value::as_str);
        let parameters = self.parameters.keys().map(String::as_str);
        let parameters = parameters.filter(|_| with_parameters);
        did_you_mean_hint(typed, resources.chain(parameters))
    }

    /// A text property of a resource of the template, as written (no intrinsic functions).
    pub(super) fn resource_property(&self, logical_id: &str, name: &str) -> Option<&'t str> {
        self.resources
            .get(logical_id)?
            .as_mapping()?
            .get("Properties")?
            .as_mapping()?
            .get(name)?
            .as_str()
    }

    /// A property of a resource of the template, as written (intrinsic functions and all).
    pub(super) fn resource_property_value(
        &self,
        logical_id: &str,
        name: &str,
    ) -> Option<&'t Value> {
        self.resources
            .get(logical_id)?
            .as_mapping()?
            .get("Properties")?
            .as_mapping()?
            .get(name)
    }

    /// The ARN Kinesis gives a stream of this name in the configured region and account.
    pub(super) fn stream_arn(&self, name: &str) -> String {
        format!(
            "arn:{}:kinesis:{}:{}:stream/{name}",
            self.partition, self.region, self.account_id
        )
    }

    /// A scalar with any intrinsic function replaced by the text it resolves to.
    pub(super) fn scalar(&self, value: &Value) -> Result<Value, String> {
        if intrinsic(value).is_some() {
            self.text(value).map(Value::String)
        } else {
            Ok(value.clone())
        }
    }

    /// The text a value stands for. Numbers and booleans become text as CloudFormation turns
    /// them into strings; lists and maps are not text.
    pub(super) fn text(&self, value: &Value) -> Result<String, String> {
        if let Some((function, argument)) = intrinsic(value) {
            return match function.as_str() {
                "Ref" => match argument {
                    Value::String(name) => self.reference(name),
                    other => Err(format!("Ref takes a name, not {}", render(other))),
                },
                "Fn::GetAtt" => self.get_att_argument(argument),
                "Fn::Sub" => self.sub_argument(argument),
                "Fn::Join" => self.join_argument(argument),
                "Fn::If" => self.if_argument(argument),
                other => Err(format!(
                    "{other} is not evaluated by kinesis-esm (it evaluates Ref, Fn::GetAtt, Fn::Sub, Fn::Join and Fn::If)"
                )),
            };
        }
        match value {
            Value::String(text) => Ok(text.clone()),
            Value::Number(number) => Ok(number.to_string()),
            Value::Bool(flag) => Ok(flag.to_string()),
            Value::Null => Err("it is empty".to_owned()),
            Value::Sequence(_) => Err("it is a list, not a single value".to_owned()),
            Value::Mapping(_) | Value::Tagged(_) => {
                Err("it is a map, not a single value".to_owned())
            }
        }
    }

    /// `Ref name`: a pseudo-parameter, a parameter or a resource.
    fn reference(&self, name: &str) -> Result<String, String> {
        if name.starts_with("AWS::") {
            return match name {
                "AWS::Region" => Ok(self.region.to_owned()),
                "AWS::AccountId" => Ok(self.account_id.to_owned()),
                "AWS::Partition" => Ok(self.partition.to_owned()),
                "AWS::StackName" => Ok(self.stack_name.to_owned()),
                "AWS::URLSuffix" => Ok(self.url_suffix.to_owned()),
                other => Err(format!(
                    "{other} has no local value (kinesis-esm knows {PSEUDO_PARAMETERS})"
                )),
            };
        }
        if let Some(parameter) = self.parameters.get(name) {
            return match parameter {
                ParameterValue::Text(text) => Ok(text.clone()),
                ParameterValue::Unknown(reason) => Err(format!("parameter {name} {reason}")),
            };
        }
        match self.resource_type(name) {
            Some(KINESIS_STREAM) => self.stream_name(name).map(str::to_owned),
            Some(DYNAMODB_TABLE | SIMPLE_TABLE) => self.table_name(name),
            Some(kind) if CAPACITY_PROVIDERS.contains(&kind) => self.capacity_provider_name(name),
            Some(other) => Err(format!(
                "kinesis-esm cannot know what Ref of resource {name} ({other}) would be"
            )),
            None => Err(format!(
                "{name} is neither a parameter nor a resource of the template{}",
                self.near_name(name, true)
            )),
        }
    }

    /// `Ref` of a DynamoDB table: its `TableName`, or `<stack>-<logical id>` as CloudFormation
    /// starts the names it makes up. A local run has a table only where the functions are given a
    /// local DynamoDB ([`TemplateOptions::local_dynamodb`]); without one the name is empty, so
    /// that a function reading it runs without the table rather than calling AWS.
    fn table_name(&self, logical_id: &str) -> Result<String, String> {
        if self.local_dynamodb.is_none() {
            tracing::warn!(
                table = logical_id,
                "no local DynamoDB ({LOCAL_DYNAMODB_VARIABLE} is not set): Ref of the table is \
                 empty, and functions run without it"
            );
            return Ok(String::new());
        }
        self.physical_table_name(logical_id)
    }

    /// The name of the template's table `logical_id` in a local DynamoDB: its `TableName`, or
    /// `<stack>-<logical id>`. `Ref` gives it, and `run` creates the table under it.
    pub(super) fn physical_table_name(&self, logical_id: &str) -> Result<String, String> {
        let name = self
            .resources
            .get(logical_id)
            .and_then(|resource| resource.get("Properties"))
            .and_then(|properties| properties.get("TableName"));
        match name {
            Some(name) => self.text(name),
            None => Ok(format!("{}-{logical_id}", self.stack_name)),
        }
    }

    /// `Ref` of a capacity provider: its `CapacityProviderName`, or `<stack>-<logical id>` as
    /// CloudFormation starts the names it makes up. Nothing is made of it locally.
    fn capacity_provider_name(&self, logical_id: &str) -> Result<String, String> {
        let name = self
            .resources
            .get(logical_id)
            .and_then(|resource| resource.get("Properties"))
            .and_then(|properties| properties.get("CapacityProviderName"));
        match name {
            Some(name) => self.text(name),
            None => Ok(format!("{}-{logical_id}", self.stack_name)),
        }
    }

    fn stream_name(&self, logical_id: &str) -> Result<&str, String> {
        self.stream_names
            .get(logical_id)
            .map(String::as_str)
            .ok_or_else(|| {
                format!("the name of stream {logical_id} is not known where it is referenced")
            })
    }

    /// `Fn::GetAtt` written as `X.Attribute` or `[X, Attribute]`.
    fn get_att_argument(&self, argument: &Value) -> Result<String, String> {
        match argument {
            Value::String(dotted) => match dotted.split_once('.') {
                Some((logical_id, attribute)) => self.attribute(logical_id, attribute),
                None => Err(format!(
                    "Fn::GetAtt takes LogicalId.Attribute, not {dotted}"
                )),
            },
            Value::Sequence(items) => match items.as_slice() {
                [Value::String(logical_id), Value::String(attribute)] => {
                    self.attribute(logical_id, attribute)
                }
                _ => Err(format!(
                    "Fn::GetAtt takes [LogicalId, Attribute], not {}",
                    render(argument)
                )),
            },
            other => Err(format!(
                "Fn::GetAtt takes LogicalId.Attribute, not {}",
                render(other)
            )),
        }
    }

    fn attribute(&self, logical_id: &str, attribute: &str) -> Result<String, String> {
        match self.resource_type(logical_id) {
            Some(KINESIS_STREAM) if attribute == "Arn" => {
                Ok(self.stream_arn(self.stream_name(logical_id)?))
            }
            Some(KINESIS_STREAM) => Err(format!(
                "stream {logical_id} has no attribute {attribute} (AWS::Kinesis::Stream has Arn)"
            )),
            Some(kind) if CAPACITY_PROVIDERS.contains(&kind) && attribute == "Arn" => {
                let name = self.capacity_provider_name(logical_id)?;
                Ok(format!(
                    "arn:{}:lambda:{}:{}:capacity-provider:{name}",
                    self.partition, self.region, self.account_id
                ))
            }
            Some(kind) if CAPACITY_PROVIDERS.contains(&kind) => Err(format!(
                "capacity provider {logical_id} has no attribute {attribute} ({kind} has Arn)"
            )),
            Some(other) => Err(format!(
                "kinesis-esm cannot know attribute {attribute} of resource {logical_id} ({other})"
            )),
            None if self.parameters.contains_key(logical_id) => Err(format!(
                "{logical_id} is a parameter, and parameters have no attributes"
            )),
            None => Err(format!(
                "{logical_id} is not a resource of the template{}",
                self.near_name(logical_id, false)
            )),
        }
    }

    /// `Fn::Sub` written as a string or as `[string, {variables}]`.
    fn sub_argument(&self, argument: &Value) -> Result<String, String> {
        match argument {
            Value::String(text) => self.substitute(text, &Mapping::new()),
            Value::Sequence(items) => match items.as_slice() {
                [Value::String(text), Value::Mapping(variables)] => {
                    self.substitute(text, variables)
                }
                _ => Err(format!(
                    "Fn::Sub takes a string or [string, {{variables}}], not {}",
                    render(argument)
                )),
            },
            other => Err(format!(
                "Fn::Sub takes a string or [string, {{variables}}], not {}",
                render(other)
            )),
        }
    }

    /// Replaces `${Name}`, `${Resource.Attribute}` and the variables in `text`; `${!Literal}`
    /// stays as `${Literal}`.
    fn substitute(&self, text: &str, variables: &Mapping) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                return Err(format!(
                    "Fn::Sub string {text} opens ${{ without closing it"
                ));
            };
            let name = &after[..end];
            if let Some(literal) = name.strip_prefix('!') {
                out.push_str("${");
                out.push_str(literal);
                out.push('}');
            } else {
                let name = name.trim();
                let value = match variables.get(name) {
                    Some(variable) => self.text(variable)?,
                    None => match name.split_once('.') {
                        Some((logical_id, attribute)) => self.attribute(logical_id, attribute)?,
                        None => self.reference(name)?,
                    },
                };
                out.push_str(&value);
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// `Fn::Join` written as `[delimiter, [values]]`.
    fn join_argument(&self, argument: &Value) -> Result<String, String> {
        match argument.as_sequence().map(Vec::as_slice) {
            Some([Value::String(delimiter), Value::Sequence(items)]) => {
                let parts = items
                    .iter()
                    .map(|item| self.text(item))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(parts.join(delimiter))
            }
            _ => Err(format!(
                "Fn::Join takes [delimiter, [values]], not {}",
                render(argument)
            )),
        }
    }
}

/// How deep conditions may name conditions: CloudFormation refuses a cycle, and a chain this
/// long is one.
const CONDITION_DEPTH: usize = 32;

impl Resolver<'_> {
    /// `Fn::If` written as `[condition, value if true, value if false]`.
    fn if_argument(&self, argument: &Value) -> Result<String, String> {
        match argument.as_sequence().map(Vec::as_slice) {
            Some([Value::String(condition), when_true, when_false]) => {
                if self.condition(condition, 0)? {
                    self.text(when_true)
                } else {
                    self.text(when_false)
                }
            }
            _ => Err(format!(
                "Fn::If takes [condition, value if true, value if false], not {}",
                render(argument)
            )),
        }
    }

    /// The value of the template's condition `name`.
    fn condition(&self, name: &str, depth: usize) -> Result<bool, String> {
        if depth > CONDITION_DEPTH {
            return Err(format!(
                "condition {name} names conditions that name it again"
            ));
        }
        let Some(definition) = self.conditions.get(name) else {
            let known = self.conditions.keys().filter_map(Value::as_str);
            return Err(format!(
                "{name} is not a condition of the template's Conditions{}",
                did_you_mean_hint(name, known)
            ));
        };
        self.boolean(definition, depth)
            .map_err(|reason| format!("condition {name}: {reason}"))
    }

    /// A condition function's value: `Fn::Equals`, `Fn::Not`, `Fn::And`, `Fn::Or`, or
    /// `Condition` naming another condition.
    fn boolean(&self, value: &Value, depth: usize) -> Result<bool, String> {
        let named = match value {
            Value::Mapping(mapping) if mapping.len() == 1 => mapping
                .get("Condition")
                .map(|argument| ("Condition".to_owned(), argument)),
            _ => None,
        };
        let Some((function, argument)) = named.or_else(|| intrinsic(value)) else {
            return Err(format!(
                "{} is not a condition function (Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition)",
                render(value)
            ));
        };
        let items = || {
            argument
                .as_sequence()
                .ok_or_else(|| format!("{function} takes a list, not {}", render(argument)))
        };
        match function.as_str() {
            "Fn::Equals" => match items()?.as_slice() {
                [left, right] => Ok(self.text(left)? == self.text(right)?),
                _ => Err(format!(
                    "Fn::Equals takes [value, value], not {}",
                    render(argument)
                )),
            },
            "Fn::Not" => match items()?.as_slice() {
                [inner] => Ok(!self.boolean(inner, depth)?),
                _ => Err(format!(
                    "Fn::Not takes [condition], not {}",
                    render(argument)
                )),
            },
            "Fn::And" => items()?
                .iter()
                .try_fold(true, |all, inner| Ok(self.boolean(inner, depth)? && all)),
            "Fn::Or" => items()?
                .iter()
                .try_fold(false, |any, inner| Ok(self.boolean(inner, depth)? || any)),
            "Condition" => match argument {
                Value::String(name) => self.condition(name, depth + 1),
                other => Err(format!("Condition takes a name, not {}", render(other))),
            },
            other => Err(format!(
                "{other} is not a condition function (Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition)"
            )),
        }
    }
}

/// The partition and URL suffix of a region, as `AWS::Partition` and `AWS::URLSuffix` give them.
fn partition_of(region: &str) -> (&'static str, &'static str) {
    if region.starts_with("cn-") {
        ("aws-cn", "amazonaws.com.cn")
    } else if region.starts_with("us-gov-") {
        ("aws-us-gov", "amazonaws.com")
    } else {
        ("aws", "amazonaws.com")
    }
}
