//! The template's SQS queues, SNS topics and S3 buckets, made at `--destination-endpoint` where
//! missing, under the names its on-failure destinations are sent to.

use std::collections::HashMap;

use aws_sdk_sqs::types::QueueAttributeName;
use esm_engine::aws::failure::{Observed, observe};
use esm_engine::destination::DestinationKind;
use esm_engine::destination::sdk::find_topic_arn;

use super::plan::{Made, code, not_applied_note, start_line};
use crate::cli::connection::connection_to;
use crate::template::{DestinationResource, Template};

/// The SDK clients of the three services at one endpoint.
struct Clients {
    sqs: aws_sdk_sqs::Client,
    sns: aws_sdk_sns::Client,
    s3: aws_sdk_s3::Client,
}

/// Makes each queue, topic and bucket of `template` at `endpoint` unless it exists, and says
/// its line.
pub(super) async fn make(
    template: &Template,
    endpoint: &str,
    region: &str,
    say: &(impl Fn(String) + Sync),
) -> anyhow::Result<()> {
    if template.destinations.is_empty() {
        return Ok(());
    }
    let config = connection_to(endpoint)
        .with_region(region)
        .sdk_config()
        .await?;
    // Local servers answer on one host: buckets by path, not by subdomain.
    let s3 = aws_sdk_s3::config::Builder::from(&config)
        .force_path_style(true)
        .build();
    let clients = Clients {
        sqs: aws_sdk_sqs::Client::new(&config),
        sns: aws_sdk_sns::Client::new(&config),
        s3: aws_sdk_s3::Client::from_conf(s3),
    };
    for resource in &template.destinations {
        let made = match resource.target.kind {
            DestinationKind::Sqs => make_queue(&clients.sqs, resource).await,
            DestinationKind::Sns => make_topic(&clients.sns, resource).await,
            DestinationKind::S3 => make_bucket(&clients.s3, resource, region).await,
        };
        let (what, service) = match resource.target.kind {
            DestinationKind::Sqs => ("queue", "SQS"),
            DestinationKind::Sns => ("topic", "SNS"),
            DestinationKind::S3 => ("bucket", "S3"),
        };
        let made = made.map_err(|(action, observed)| {
            anyhow::anyhow!(
                "{what} {} ({}): {action} it at {endpoint} (--destination-endpoint): {}",
                resource.logical_id,
                resource.target.name,
                observed.describe(service, endpoint)
            )
        })?;
        let notes: Vec<String> = not_applied_note(&resource.not_applied)
            .into_iter()
            .collect();
        say(start_line(
            what,
            &resource.logical_id,
            &resource.target.name,
            endpoint,
            &made,
            &notes,
        ));
    }
    Ok(())
}

/// What failed: the action ("describing", "creating") and what the call showed.
type Failure = (&'static str, Observed);

async fn make_queue(
    sqs: &aws_sdk_sqs::Client,
    resource: &DestinationResource,
) -> Result<Made, Failure> {
    let name = &resource.target.name;
    match sqs.get_queue_url().queue_name(name).send().await {
        Ok(_) => return Ok(Made::Exists),
        Err(error) => {
            let observed = observe(&error);
            if !matches!(
                code(&observed),
                Some("AWS.SimpleQueueService.NonExistentQueue" | "QueueDoesNotExist")
            ) {
                return Err(("describing", observed));
            }
        }
    }
    let attributes: HashMap<QueueAttributeName, String> = resource
        .attributes
        .iter()
        .map(|(name, value)| (QueueAttributeName::from(name.as_str()), value.clone()))
        .collect();
    sqs.create_queue()
        .queue_name(name)
        .set_attributes((!attributes.is_empty()).then_some(attributes))
        .send()
        .await
        .map_err(|error| ("creating", observe(&error)))?;
    Ok(Made::Created)
}

async fn make_topic(
    sns: &aws_sdk_sns::Client,
    resource: &DestinationResource,
) -> Result<Made, Failure> {
    let name = &resource.target.name;
    let existing = find_topic_arn(sns, name)
        .await
        .map_err(|error| ("describing", observe(&error)))?;
    if existing.is_some() {
        return Ok(Made::Exists);
    }
    let attributes: HashMap<String, String> = resource.attributes.clone().into_iter().collect();
    sns.create_topic()
        .name(name)
        .set_attributes((!attributes.is_empty()).then_some(attributes))
        .send()
        .await
        .map_err(|error| ("creating", observe(&error)))?;
    Ok(Made::Created)
}

async fn make_bucket(
    s3: &aws_sdk_s3::Client,
    resource: &DestinationResource,
    region: &str,
) -> Result<Made, Failure> {
    let name = &resource.target.name;
    match s3.head_bucket().bucket(name).send().await {
        Ok(_) => return Ok(Made::Exists),
        Err(error) => {
            let observed = observe(&error);
            let missing = matches!(observed, Observed::Answer { status: 404, .. })
                || matches!(observed, Observed::Unreadable { status: 404, .. });
            if !missing {
                return Err(("describing", observed));
            }
        }
    }
    let mut create = s3.create_bucket().bucket(name);
    // us-east-1 takes no location constraint; every other region needs its own.
    if region != "us-east-1" {
        create = create.create_bucket_configuration(
            aws_sdk_s3::types::CreateBucketConfiguration::builder()
                .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::from(region))
                .build(),
        );
    }
    create
        .send()
        .await
        .map_err(|error| ("creating", observe(&error)))?;
    Ok(Made::Created)
}
