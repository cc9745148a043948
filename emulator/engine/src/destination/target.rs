//! Which resource a destination is: an SQS queue, an SNS topic or an S3 bucket, by name.

use std::fmt;

use kinesis_source::arn::{Arn, ArnError, Resource};

/// The kind of resource a destination is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DestinationKind {
    /// An SQS queue: the record is the message body.
    Sqs,
    /// An SNS topic: the record is the notification's message.
    Sns,
    /// An S3 bucket: one object per record, with the event as its `payload`.
    S3,
}

impl DestinationKind {
    /// The service's name as the SDK's endpoint variables spell it (`AWS_ENDPOINT_URL_SQS`).
    pub fn service(self) -> &'static str {
        match self {
            Self::Sqs => "SQS",
            Self::Sns => "SNS",
            Self::S3 => "S3",
        }
    }
}

/// One destination resource: its kind and its name (queue name, topic name, bucket name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// What kind of resource it is.
    pub kind: DestinationKind,
    /// The queue's, topic's or bucket's name.
    pub name: String,
}

impl Target {
    /// The target an ARN names (`arn:aws:sqs:REGION:ACCOUNT:NAME`, `arn:aws:sns:...:NAME`,
    /// `arn:aws:s3:::BUCKET`), or why it names none.
    pub fn from_arn(arn: &str) -> Result<Self, String> {
        let parsed: Arn = arn.parse().map_err(|error: ArnError| error.to_string())?;
        let (kind, name) = match parsed.resource {
            Resource::Queue { name } => (DestinationKind::Sqs, name),
            Resource::Topic { name } => (DestinationKind::Sns, name),
            Resource::Bucket { name } => (DestinationKind::S3, name),
            _ => {
                return Err(format!(
                    "{arn} is not an SQS queue, SNS topic or S3 bucket ARN, the on-failure \
                     destinations kinesis-esm delivers to"
                ));
            }
        };
        Ok(Self { kind, name })
    }

    /// The target a template resource of this CloudFormation type is, named `name`.
    pub fn from_resource_type(resource_type: &str, name: String) -> Option<Self> {
        let kind = match resource_type {
            "AWS::SQS::Queue" => DestinationKind::Sqs,
            "AWS::SNS::Topic" => DestinationKind::Sns,
            "AWS::S3::Bucket" => DestinationKind::S3,
            _ => return None,
        };
        Some(Self { kind, name })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            DestinationKind::Sqs => "SQS queue",
            DestinationKind::Sns => "SNS topic",
            DestinationKind::S3 => "S3 bucket",
        };
        write!(f, "{what} {}", self.name)
    }
}
