//! Tags by ARN: `TagResource`, `UntagResource` and `ListTagsForResource` on streams and
//! stream consumers.

use std::collections::BTreeMap;

use crate::support::{Endpoint, endpoint, expect_errors};

impl Endpoint {
    async fn tag(&self, arn: &str, tags: &[(&str, &str)]) {
        let mut call = self.client.tag_resource().resource_arn(arn);
        for (key, value) in tags {
            call = call.tags(*key, *value);
        }
        call.send().await.unwrap();
    }

    async fn tags_of(&self, arn: &str) -> BTreeMap<String, String> {
        let listed = self
            .client
            .list_tags_for_resource()
            .resource_arn(arn)
            .send()
            .await
            .unwrap();
        listed
            .tags()
            .iter()
            .map(|tag| {
                (
                    tag.key().to_owned(),
                    tag.value().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }
}

fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_stream_is_tagged_by_its_arn_as_by_its_name() {
    let endpoint = endpoint().await;
    endpoint.kinesis.create_stream("orders", 1).unwrap();
    let arn = endpoint.kinesis.stream_arn("orders");
    endpoint
        .tag(&arn, &[("team", "payments"), ("cost:centre", "42")])
        .await;
    assert_eq!(
        endpoint.tags_of(&arn).await,
        tags(&[("cost:centre", "42"), ("team", "payments")])
    );
    // The same tags as AddTagsToStream's.
    let by_name = endpoint
        .client
        .list_tags_for_stream()
        .stream_name("orders")
        .send()
        .await
        .unwrap();
    assert_eq!(by_name.tags().len(), 2);

    endpoint
        .client
        .untag_resource()
        .resource_arn(&arn)
        .tag_keys("team")
        .tag_keys("absent")
        .send()
        .await
        .unwrap();
    assert_eq!(endpoint.tags_of(&arn).await, tags(&[("cost:centre", "42")]));
}

#[tokio::test]
async fn a_consumer_is_tagged_by_its_arn_until_deregistered() {
    let endpoint = endpoint().await;
    endpoint.kinesis.create_stream("orders", 1).unwrap();
    let stream_arn = endpoint.kinesis.stream_arn("orders");
    let registered = endpoint
        .client
        .register_stream_consumer()
        .stream_arn(&stream_arn)
        .consumer_name("audit")
        .send()
        .await
        .unwrap();
    let consumer_arn = registered.consumer().unwrap().consumer_arn().to_owned();
    endpoint.tag(&consumer_arn, &[("purpose", "audit")]).await;
    assert_eq!(
        endpoint.tags_of(&consumer_arn).await,
        tags(&[("purpose", "audit")])
    );
    // The stream's tags are its own.
    assert!(endpoint.tags_of(&stream_arn).await.is_empty());

    endpoint
        .client
        .deregister_stream_consumer()
        .consumer_arn(&consumer_arn)
        .send()
        .await
        .unwrap();
    expect_errors! {
        endpoint.client.list_tags_for_resource().resource_arn(&consumer_arn)
            => "ResourceNotFoundException", &["audit"];
    }
}

#[tokio::test]
async fn tagging_refuses_what_aws_refuses() {
    let endpoint = endpoint().await;
    endpoint.kinesis.create_stream("orders", 1).unwrap();
    let arn = endpoint.kinesis.stream_arn("orders");

    expect_errors! {
        endpoint.client.tag_resource().resource_arn(endpoint.kinesis.stream_arn("missing"))
            .tags("k", "v") => "ResourceNotFoundException", &["missing"];
    }

    expect_errors! {
        endpoint.client.list_tags_for_resource().resource_arn("orders")
            => "ValidationException", &["'resourceARN'"];
    }

    let many: Vec<(String, String)> = (0..51).map(|n| (format!("k{n}"), String::new())).collect();
    let mut call = endpoint.client.tag_resource().resource_arn(&arn);
    for (key, value) in &many {
        call = call.tags(key, value);
    }
    expect_errors! {
        call => "LimitExceededException", &["Stream orders would have 51 tags"];
    }

    expect_errors! {
        endpoint.client.tag_resource().resource_arn(&arn).tags("100%", "")
            => "InvalidArgumentException", &["stream orders", "'%'"];
    }
}

#[tokio::test]
async fn a_streams_tags_are_kept_across_a_restart() {
    let journal = std::sync::Arc::new(crate::support::MemoryJournal::default());
    let endpoint = crate::support::serve(journal.kinesis()).await;
    endpoint
        .create_with("kept", |create| {
            create.shard_count(1).tags("born", "with-it")
        })
        .await;
    let arn = endpoint.kinesis.stream_arn("kept");
    endpoint
        .tag(&arn, &[("added", "later"), ("gone", "soon")])
        .await;
    endpoint
        .client
        .remove_tags_from_stream()
        .stream_name("kept")
        .tag_keys("gone")
        .send()
        .await
        .unwrap();
    endpoint.kinesis.create_stream("deleted", 1).unwrap();
    let deleted_arn = endpoint.kinesis.stream_arn("deleted");
    endpoint.tag(&deleted_arn, &[("old", "tag")]).await;
    endpoint
        .client
        .delete_stream()
        .stream_name("deleted")
        .send()
        .await
        .unwrap();

    let restarted = crate::support::serve(journal.restored()).await;
    assert_eq!(
        restarted.tags_of(&arn).await,
        tags(&[("added", "later"), ("born", "with-it")])
    );
    // A stream created again under a deleted one's name starts without its tags.
    restarted.kinesis.create_stream("deleted", 1).unwrap();
    assert!(restarted.tags_of(&deleted_arn).await.is_empty());
}
