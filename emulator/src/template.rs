//! Reading a SAM template (`template.yaml`) into what the emulator runs: the Kinesis streams to
//! create and the functions to invoke, each with one [`MappingConfig`] per Kinesis event.
//!
//! ```no_run
//! use kinesis_esm::template::Template;
//!
//! let template = Template::load("template.yaml")?;
//! for function in &template.functions {
//!     for mapping in &function.mappings {
//!         println!("{} reads {}", mapping.function_name, mapping.stream_name);
//!     }
//! }
//! # Ok::<(), kinesis_esm::template::TemplateError>(())
//! ```
//!
//! What is read:
//! - `AWS::Kinesis::Stream` resources become [`StreamResource`]s. A stream without `Name` is
//!   named after its logical id: CloudFormation would generate `<stack>-<logical id>-<suffix>`,
//!   which no local run can predict. An `ON_DEMAND` stream gets
//!   [`ON_DEMAND_SHARD_COUNT`] shards, the capacity AWS gives a new on-demand stream.
//! - `AWS::Serverless::Function` resources with `Type: Kinesis` events become
//!   [`FunctionResource`]s, after `Globals.Function` is applied as SAM applies it (maps merge,
//!   lists append, other values are the function's own; `IgnoreGlobals` is honoured).
//!   Functions without a Kinesis event, and events of other types (SQS, Api, Schedule, ...), are
//!   skipped without a word: they are not the emulator's business.
//! - `AWS::DynamoDB::Table` and `AWS::Serverless::SimpleTable` resources become
//!   [`TableResource`]s, named as their `Ref` names them; SQS queues, SNS topics and S3 buckets
//!   become [`DestinationResource`]s, named as an on-failure destination names them: what `run`
//!   makes in a local DynamoDB and at the destinations' endpoint.
//! - `Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::Join` and `Fn::If` (over the template's
//!   `Conditions`), short and long forms, resolve over the
//!   template's parameters (their `Default`, or [`TemplateOptions::parameter_overrides`]), the
//!   pseudo-parameters `AWS::Region`, `AWS::AccountId`, `AWS::Partition`, `AWS::StackName`,
//!   `AWS::URLSuffix` (from [`TemplateOptions`]), and the template's streams (`Ref` gives the
//!   name, `Arn` the ARN).
//!
//! What is refused, with an error naming the file, the resource, the event and the property:
//! anything that would make the local run differ from Lambda without saying so, such as
//! tumbling windows, enhanced fan-out
//! consumers, a stream that is neither defined in the template nor given by ARN, property names
//! kinesis-esm does not know (usually typos), values outside the ranges Lambda accepts, values
//! no local run can know (the attributes of other resources, SSM parameters), and resources
//! that exist only under a `Condition`.
//! Properties that change nothing locally (`Description`, `Tags`, `Policies`, `Role`,
//! `Layers`, `Tracing`, ...) are accepted. A stream given by literal ARN may live outside the
//! template (for runs against a real Kinesis endpoint); the embedded Kinesis only holds the
//! template's streams.
//!
//! [`MappingConfig`]: esm_engine::config::MappingConfig

mod capacity_provider;
mod created_resources;
mod document;
mod error;
mod event;
mod fields;
mod function_resource;
mod intrinsic;
mod options;
mod other_sources;
mod resources;
mod stream;

pub use capacity_provider::{DEFAULT_MAX_CONCURRENCY, ManagedInstances};
pub use created_resources::{
    AttributeDefinition, AttributeType, Billing, DestinationResource, KeyElement, KeyType,
    TableResource,
};
pub use document::Template;
pub use error::{Location, Problem, Section, TemplateError};
pub use function_resource::{Architecture, FunctionResource};
pub use options::{LOCAL_DYNAMODB_VARIABLE, TemplateOptions};
pub use stream::{MAX_SHARD_COUNT, ON_DEMAND_SHARD_COUNT, StreamMode, StreamResource};

#[cfg(test)]
mod test_templates;
#[cfg(test)]
mod tests;
