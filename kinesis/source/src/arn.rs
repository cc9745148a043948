//! Amazon Resource Names, read once where they enter (a template, an event, an API answer), so
//! that no caller splits one on `:` by hand. `arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE`,
//! with the resource read by the service's own grammar for the resources the emulator meets:
//! Kinesis streams and consumers, Lambda functions, and the on-failure destinations (SQS queues,
//! SNS topics, S3 buckets). Any other well-formed ARN keeps its resource as text.

use std::fmt;
use std::str::FromStr;

/// The six parts every ARN has, in order.
const FORM: &str = "arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE";

/// An ARN, split into its parts and its resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Arn {
    /// `aws`, `aws-cn`, `aws-us-gov`, ...
    pub partition: String,
    /// `kinesis`, `lambda`, `sqs`, ...
    pub service: String,
    /// Empty for global resources (S3 buckets).
    pub region: String,
    /// Empty for S3 buckets.
    pub account: String,
    /// What the ARN names.
    pub resource: Resource,
}

/// The resource an [`Arn`] names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Resource {
    /// A Kinesis stream: `stream/NAME`.
    Stream {
        /// The stream's name.
        name: String,
    },
    /// A Kinesis stream's enhanced fan-out consumer: `stream/STREAM/consumer/NAME:CREATED`.
    Consumer {
        /// The stream it reads.
        stream: String,
        /// The consumer's name.
        name: String,
        /// Its creation time in epoch seconds, as Kinesis appends it (absent in a bare form).
        created: Option<String>,
    },
    /// A Lambda function: `function:NAME` or `function:NAME:QUALIFIER`.
    Function {
        /// The function's name.
        name: String,
        /// A version or alias.
        qualifier: Option<String>,
    },
    /// An SQS queue: its name.
    Queue {
        /// The queue's name.
        name: String,
    },
    /// An SNS topic: its name.
    Topic {
        /// The topic's name.
        name: String,
    },
    /// An S3 bucket: its name (`arn:aws:s3:::NAME`).
    Bucket {
        /// The bucket's name.
        name: String,
    },
    /// Any other service's resource, as written.
    Other(String),
}

/// Why a text is not the ARN it should be; says the text and the form expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{arn}` is not {expected}")]
pub struct ArnError {
    /// The text as given.
    pub arn: String,
    /// What it should have been, with its form.
    pub expected: String,
}

impl ArnError {
    fn new(arn: &str, expected: impl Into<String>) -> Self {
        Self {
            arn: arn.to_owned(),
            expected: expected.into(),
        }
    }
}

impl Arn {
    /// A Kinesis stream's ARN.
    #[must_use]
    pub fn stream(region: &str, account: &str, name: &str) -> Self {
        Self::aws(
            "kinesis",
            region,
            account,
            Resource::Stream {
                name: name.to_owned(),
            },
        )
    }

    /// A Lambda function's ARN, unqualified.
    #[must_use]
    pub fn function(region: &str, account: &str, name: &str) -> Self {
        let resource = Resource::Function {
            name: name.to_owned(),
            qualifier: None,
        };
        Self::aws("lambda", region, account, resource)
    }

    fn aws(service: &str, region: &str, account: &str, resource: Resource) -> Self {
        Self {
            partition: "aws".to_owned(),
            service: service.to_owned(),
            region: region.to_owned(),
            account: account.to_owned(),
            resource,
        }
    }

    /// Reads a Kinesis stream's ARN; a consumer's ARN or any other is an error.
    ///
    /// # Errors
    /// When `text` is not `arn:PARTITION:kinesis:REGION:ACCOUNT:stream/NAME`.
    pub fn parse_stream(text: &str) -> Result<Self, ArnError> {
        let arn: Self = text.parse()?;
        match arn.resource {
            Resource::Stream { .. } => Ok(arn),
            _ => Err(ArnError::new(
                text,
                "a Kinesis stream ARN (arn:aws:kinesis:REGION:ACCOUNT:stream/NAME)",
            )),
        }
    }

    /// The stream a stream's or a consumer's ARN belongs to.
    #[must_use]
    pub fn stream_name(&self) -> Option<&str> {
        match &self.resource {
            Resource::Stream { name } | Resource::Consumer { stream: name, .. } => Some(name),
            _ => None,
        }
    }
}

impl FromStr for Arn {
    type Err = ArnError;

    fn from_str(text: &str) -> Result<Self, ArnError> {
        let parts: Vec<&str> = text.splitn(6, ':').collect();
        let [prefix, partition, service, region, account, resource] = parts[..] else {
            return Err(ArnError::new(text, format!("an ARN ({FORM})")));
        };
        if prefix != "arn" || partition.is_empty() || service.is_empty() || resource.is_empty() {
            return Err(ArnError::new(text, format!("an ARN ({FORM})")));
        }
        Ok(Self {
            partition: partition.to_owned(),
            service: service.to_owned(),
            region: region.to_owned(),
            account: account.to_owned(),
            resource: Resource::read(service, resource).map_err(|form| {
                ArnError::new(text, format!("a {service} ARN (its resource is {form})"))
            })?,
        })
    }
}

impl Resource {
    /// Reads `resource` by `service`'s grammar; on error, the form it should have.
    fn read(service: &str, resource: &str) -> Result<Self, &'static str> {
        let name = |form| {
            let plain = !resource.contains(['/', ':']);
            plain.then(|| resource.to_owned()).ok_or(form)
        };
        match service {
            "kinesis" => Self::read_kinesis(resource),
            "lambda" => Self::read_function(resource),
            "sqs" => name("the queue's name").map(|name| Self::Queue { name }),
            "sns" => name("the topic's name").map(|name| Self::Topic { name }),
            "s3" => name("the bucket's name").map(|name| Self::Bucket { name }),
            _ => Ok(Self::Other(resource.to_owned())),
        }
    }

    fn read_kinesis(resource: &str) -> Result<Self, &'static str> {
        const FORM: &str = "stream/NAME or stream/NAME/consumer/NAME:CREATED";
        let path = resource.strip_prefix("stream/").ok_or(FORM)?;
        let Some((stream, consumer)) = path.split_once("/consumer/") else {
            return match path.is_empty() || path.contains(['/', ':']) {
                true => Err(FORM),
                false => Ok(Self::Stream {
                    name: path.to_owned(),
                }),
            };
        };
        let (name, created) = match consumer.split_once(':') {
            Some((name, created)) => (name, Some(created.to_owned())),
            None => (consumer, None),
        };
        if stream.is_empty() || stream.contains(['/', ':']) || name.is_empty() || name.contains('/')
        {
            return Err(FORM);
        }
        Ok(Self::Consumer {
            stream: stream.to_owned(),
            name: name.to_owned(),
            created,
        })
    }

    fn read_function(resource: &str) -> Result<Self, &'static str> {
        const FORM: &str = "function:NAME or function:NAME:QUALIFIER";
        let rest = resource.strip_prefix("function:").ok_or(FORM)?;
        let (name, qualifier) = match rest.split_once(':') {
            Some((name, qualifier)) => (name, Some(qualifier)),
            None => (rest, None),
        };
        if name.is_empty() || qualifier.is_some_and(|q| q.is_empty() || q.contains(':')) {
            return Err(FORM);
        }
        Ok(Self::Function {
            name: name.to_owned(),
            qualifier: qualifier.map(str::to_owned),
        })
    }
}

impl fmt::Display for Arn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            partition,
            service,
            region,
            account,
            resource,
        } = self;
        write!(f, "arn:{partition}:{service}:{region}:{account}:{resource}")
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stream { name } => write!(f, "stream/{name}"),
            Self::Consumer {
                stream,
                name,
                created: Some(created),
            } => write!(f, "stream/{stream}/consumer/{name}:{created}"),
            Self::Consumer { stream, name, .. } => write!(f, "stream/{stream}/consumer/{name}"),
            Self::Function {
                name,
                qualifier: Some(qualifier),
            } => write!(f, "function:{name}:{qualifier}"),
            Self::Function { name, .. } => write!(f, "function:{name}"),
            Self::Queue { name } | Self::Topic { name } | Self::Bucket { name } => {
                f.write_str(name)
            }
            Self::Other(text) => f.write_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Arn {
        text.parse().unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn each_resource_the_emulator_meets_is_read_and_written_back_as_given() {
        let cases = [
            (
                "arn:aws:kinesis:us-east-1:123456789012:stream/shipments",
                Resource::Stream {
                    name: "shipments".into(),
                },
            ),
            (
                "arn:aws:kinesis:us-east-1:123456789012:stream/s/consumer/c:1700000000",
                Resource::Consumer {
                    stream: "s".into(),
                    name: "c".into(),
                    created: Some("1700000000".into()),
                },
            ),
            (
                "arn:aws:lambda:eu-west-1:123456789012:function:shipping:live",
                Resource::Function {
                    name: "shipping".into(),
                    qualifier: Some("live".into()),
                },
            ),
            (
                "arn:aws:sqs:us-east-1:1:failures",
                Resource::Queue {
                    name: "failures".into(),
                },
            ),
            (
                "arn:aws:sns:us-east-1:1:alerts",
                Resource::Topic {
                    name: "alerts".into(),
                },
            ),
            (
                "arn:aws:s3:::kept-batches",
                Resource::Bucket {
                    name: "kept-batches".into(),
                },
            ),
            (
                "arn:aws:iam::1:role/kinesis-esm",
                Resource::Other("role/kinesis-esm".into()),
            ),
        ];
        for (text, resource) in cases {
            let arn = parse(text);
            assert_eq!(arn.resource, resource, "{text}");
            assert_eq!(arn.to_string(), text);
        }
    }

    #[test]
    fn the_parts_are_named() {
        let arn = parse("arn:aws-cn:kinesis:cn-north-1:123456789012:stream/a/consumer/b:9");
        assert_eq!(
            (
                arn.partition.as_str(),
                arn.region.as_str(),
                arn.account.as_str()
            ),
            ("aws-cn", "cn-north-1", "123456789012")
        );
        assert_eq!(arn.stream_name(), Some("a"));
        assert_eq!(parse("arn:aws:sqs:r:1:q").stream_name(), None);
    }

    #[test]
    fn built_arns_read_back() {
        let stream = Arn::stream("us-east-1", "000000000000", "orders");
        assert_eq!(
            stream.to_string(),
            "arn:aws:kinesis:us-east-1:000000000000:stream/orders"
        );
        assert_eq!(parse(&stream.to_string()), stream);
        let function = Arn::function("us-east-1", "000000000000", "ship");
        assert_eq!(
            function.to_string(),
            "arn:aws:lambda:us-east-1:000000000000:function:ship"
        );
    }

    #[test]
    fn a_bad_arn_is_refused_with_its_text_and_the_form_expected() {
        let refused = [
            ("stream/orders", "is not an ARN (arn:PARTITION"),
            ("arn:aws:kinesis:us-east-1:1", "is not an ARN"),
            ("arx:aws:sqs:r:1:q", "is not an ARN"),
            (
                "arn:aws:kinesis:r:1:table/orders",
                "its resource is stream/NAME or",
            ),
            ("arn:aws:kinesis:r:1:stream/", "its resource is stream/NAME"),
            (
                "arn:aws:kinesis:r:1:stream/a/b",
                "its resource is stream/NAME",
            ),
            (
                "arn:aws:lambda:r:1:function:",
                "function:NAME or function:NAME:QUALIFIER",
            ),
            ("arn:aws:lambda:r:1:layer:x", "function:NAME"),
            (
                "arn:aws:sqs:r:1:queue/name",
                "a sqs ARN (its resource is the queue's name)",
            ),
        ];
        for (text, expected) in refused {
            let error = text.parse::<Arn>().unwrap_err().to_string();
            assert!(error.starts_with(&format!("`{text}` is not ")), "{error}");
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn a_stream_arn_is_a_stream_and_not_a_consumer() {
        assert!(Arn::parse_stream("arn:aws:kinesis:r:1:stream/s").is_ok());
        let error = Arn::parse_stream("arn:aws:kinesis:r:1:stream/s/consumer/c:1").unwrap_err();
        assert!(
            error.to_string().contains("a Kinesis stream ARN"),
            "{error}"
        );
    }
}
