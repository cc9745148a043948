//! The template's resources made by `kinesis-esm run` itself, as `sam deploy` would, with no
//! table or queue made by hand: the shipping template's `IdempotencyTable` in dynalite (the
//! local DynamoDB the function is given through `AWS_ENDPOINT_URL_DYNAMODB`), where a shipment
//! published three times is booked once, and nothing again in a second run over the same table;
//! its `Queue` at moto's SQS (`--destination-endpoint`), which then holds the discarded batch's
//! record. Needs `scripts/local-stack run`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use end_to_end::aws::{LocalAws, Run, ScratchDir, dynamodb_endpoint, esm_run};
use end_to_end::{shipping_bootstrap, within_time, workspace_dir};
use kinesis_esm::aws::AwsConnection;
use test_support::{moto_endpoint, unique_name};

/// The repository's `template.yaml`, written into `scratch` with its function's code where it
/// is and these replacements (each must be found once).
fn shipping_template(scratch: &ScratchDir, replacements: &[(&str, &str)]) -> PathBuf {
    let mut text =
        std::fs::read_to_string(workspace_dir().join("template.yaml")).expect("template.yaml");
    let code_uri = format!("      CodeUri: {}\n", workspace_dir().display());
    for (from, to) in [("      CodeUri: .\n", code_uri.as_str())]
        .iter()
        .chain(replacements)
    {
        assert_eq!(
            text.matches(from).count(),
            1,
            "template.yaml has {from:?} once"
        );
        text = text.replacen(from, to, 1);
    }
    let path = scratch.join("template.yaml");
    std::fs::write(&path, text).expect("template written");
    path
}

/// Runs `kinesis-esm run --until-idle` over the embedded Kinesis with these arguments and
/// environment, to its end.
async fn run(what: &str, args: &[&str], env: &[(&str, String)]) -> Run {
    let mut command = esm_run(args)
        .args(["--no-listen", "--until-idle"])
        // A failing run's discarded batches go to `.kinesis-esm/` here, not into the tree.
        .current_dir(std::env::temp_dir())
        .env("RUST_LOG", "info");
    for (name, value) in env {
        command = command.env(name, value);
    }
    // The function's DynamoDB round trips to dynalite are slow when the whole suite runs at once.
    let limit = Duration::from_secs(300);
    within_time(limit, what, command.timeout(2 * limit).output()).await
}

/// How many "shipment booked" lines a run's log has.
fn booked(log: &str) -> usize {
    log.lines()
        .filter(|line| line.contains("shipment booked"))
        .count()
}

#[tokio::test]
async fn aws_the_run_makes_the_idempotency_table_and_a_shipment_sent_three_times_books_once() {
    shipping_bootstrap().await;
    let scratch = ScratchDir::new("made-table");
    let table = unique_name("idempotency");
    let template = shipping_template(
        &scratch,
        &[(
            "      BillingMode: PAY_PER_REQUEST\n",
            &format!("      BillingMode: PAY_PER_REQUEST\n      TableName: {table}\n"),
        )],
    );
    let records = scratch.join("shipments.jsonl");
    let shipment = r#"{"partitionKey": "shipment-7", "data": {"id": 7, "address": "7 Quay Street, Dublin", "carrier": "dhl"}}"#;
    std::fs::write(&records, format!("{shipment}\n{shipment}\n{shipment}\n")).expect("records");
    let (template, records) = (path(&template), path(&records));
    let args = ["--template", template, "--put", records];
    // The function's DynamoDB client signs its calls: dynalite takes any keys.
    let env = [
        ("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_endpoint()),
        ("AWS_ACCESS_KEY_ID", "local".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "local".to_owned()),
    ];
    let made = format!(
        "kinesis-esm: table IdempotencyTable: {table} at {} (created",
        dynamodb_endpoint()
    );

    let first = run("the first run", &args, &env).await;
    assert_eq!(first.code, Some(0), "{first:#?}");
    assert!(first.stderr.contains(&made), "{}", first.stderr);
    assert_eq!(booked(&first.stderr), 1, "booked once:\n{}", first.stderr);
    assert_eq!(
        first.stderr.matches("duplicate record").count(),
        2,
        "{}",
        first.stderr
    );
    assert!(
        !first.stderr.contains("ResourceNotFoundException"),
        "{}",
        first.stderr
    );

    let second = run("the second run", &args, &env).await;
    assert_eq!(second.code, Some(0), "{second:#?}");
    let exists = format!(
        "kinesis-esm: table IdempotencyTable: {table} at {} (exists)",
        dynamodb_endpoint()
    );
    assert!(second.stderr.contains(&exists), "{}", second.stderr);
    assert_eq!(
        booked(&second.stderr),
        0,
        "booked again:\n{}",
        second.stderr
    );

    // The table is the template's: keyed by `id`, a string.
    let aws = LocalAws::connect().await;
    let described = aws
        .dynamodb()
        .describe_table()
        .table_name(&table)
        .send()
        .await
        .expect("the run made the table");
    let described = described.table().expect("a table");
    let key: Vec<(&str, &str)> = described
        .key_schema()
        .iter()
        .map(|element| (element.attribute_name(), element.key_type().as_str()))
        .collect();
    assert_eq!(key, [("id", "HASH")]);
}

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

#[tokio::test]
async fn aws_the_run_makes_the_templates_queue_at_the_destination_endpoint() {
    shipping_bootstrap().await;
    let scratch = ScratchDir::new("made-queue");
    let queue = unique_name("failures");
    let template = shipping_template(
        &scratch,
        &[(
            "      MessageRetentionPeriod: 1209600\n",
            &format!("      MessageRetentionPeriod: 1209600\n      QueueName: {queue}\n"),
        )],
    );
    let events = workspace_dir().join("functions/shipping/events");
    let moto = moto_endpoint();
    let args = [
        "--template",
        path(&template),
        "--put",
        path(&events),
        "--destination-endpoint",
        &moto,
        // Not the local default (us-east-1): the queue is made, and the batch delivered, in
        // the run's region, and moto keeps queues per region.
        "--region",
        "eu-west-1",
        "--retry-pause",
        "10ms",
        "--max-retry-pause",
        "50ms",
    ];
    let first = run("the run", &args, &[]).await;
    assert_eq!(first.code, Some(0), "{first:#?}");
    let made = format!("kinesis-esm: queue Queue: {queue} at {moto} (created)");
    assert!(first.stderr.contains(&made), "{}", first.stderr);
    assert!(
        first.stdout.contains(&format!(
            "6 records in 1 batch discarded and sent to the on-failure destination Queue\n    \
             -> SQS queue {queue} message "
        )),
        "{first:#?}"
    );

    let config = AwsConnection::local(moto.clone())
        .with_region("eu-west-1")
        .sdk_config()
        .await
        .expect("a local configuration");
    let sqs = aws_sdk_sqs::Client::new(&config);
    let queue_url = sqs
        .get_queue_url()
        .queue_name(&queue)
        .send()
        .await
        .expect("the run made the queue")
        .queue_url
        .expect("a URL");
    let attributes = sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
        .send()
        .await
        .expect("its attributes")
        .attributes
        .unwrap_or_default();
    assert_eq!(
        attributes
            .get(&aws_sdk_sqs::types::QueueAttributeName::MessageRetentionPeriod)
            .map(String::as_str),
        Some("1209600"),
        "the template's MessageRetentionPeriod: {attributes:?}"
    );
    let received = sqs
        .receive_message()
        .queue_url(&queue_url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .send()
        .await
        .expect("messages");
    assert_eq!(received.messages().len(), 1, "the discarded batch's record");

    let again = run("the second run", &args, &[]).await;
    assert_eq!(again.code, Some(0), "{again:#?}");
    let exists = format!("kinesis-esm: queue Queue: {queue} at {moto} (exists)");
    assert!(again.stderr.contains(&exists), "{}", again.stderr);
}

#[tokio::test]
async fn aws_an_unreachable_dynamodb_or_destination_endpoint_stops_the_run_before_any_build() {
    let scratch = ScratchDir::new("unreachable");
    let template = shipping_template(&scratch, &[]);
    // Nothing listens on port 1 of loopback.
    let nowhere = "http://127.0.0.1:1";
    let dynamodb = run(
        "a run with no DynamoDB",
        &["--template", path(&template)],
        &[("AWS_ENDPOINT_URL_DYNAMODB", nowhere.to_owned())],
    )
    .await;
    assert_eq!(dynamodb.code, Some(2), "{dynamodb:#?}");
    assert!(
        dynamodb.stderr.contains(
            "kinesis-esm: table IdempotencyTable (local-IdempotencyTable): describing it in the \
             local DynamoDB at http://127.0.0.1:1 (AWS_ENDPOINT_URL_DYNAMODB): nothing answers at \
             http://127.0.0.1:1 (connection refused)"
        ),
        "{}",
        dynamodb.stderr
    );
    let destinations = run(
        "a run with no destination endpoint",
        &[
            "--template",
            path(&template),
            "--destination-endpoint",
            nowhere,
        ],
        &[],
    )
    .await;
    assert_eq!(destinations.code, Some(2), "{destinations:#?}");
    assert!(
        destinations.stderr.contains(
            "kinesis-esm: queue Queue (Queue): describing it at http://127.0.0.1:1 \
             (--destination-endpoint): nothing answers at http://127.0.0.1:1 (connection refused)"
        ),
        "{}",
        destinations.stderr
    );
    for run in [&dynamodb, &destinations] {
        assert!(!run.stderr.contains("building"), "{}", run.stderr);
    }
}

#[tokio::test]
async fn aws_the_run_makes_the_templates_topic_and_bucket_at_the_destination_endpoint() {
    shipping_bootstrap().await;
    let scratch = ScratchDir::new("made-topic");
    let (topic, bucket, queue) = (
        unique_name("failures"),
        unique_name("failures"),
        unique_name("failures"),
    );
    let resources = format!(
        "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: \
         {topic}\n      Tags: [{{Key: team, Value: shipping}}]\n  Bucket:\n    Type: \
         AWS::S3::Bucket\n    Properties:\n      BucketName: {bucket}\n"
    );
    let queue_name = format!("      MessageRetentionPeriod: 1209600\n      QueueName: {queue}\n");
    let template = shipping_template(
        &scratch,
        &[
            ("Resources:\n", &resources),
            ("      MessageRetentionPeriod: 1209600\n", &queue_name),
        ],
    );
    let moto = moto_endpoint();
    let args = [
        "--template",
        path(&template),
        "--destination-endpoint",
        &moto,
    ];
    let first = run("the run", &args, &[]).await;
    assert_eq!(first.code, Some(0), "{first:#?}");
    for line in [
        format!("kinesis-esm: topic Topic: {topic} at {moto} (created; not applied locally: Tags)"),
        format!("kinesis-esm: bucket Bucket: {bucket} at {moto} (created)"),
    ] {
        assert!(first.stderr.contains(&line), "{line}\n{}", first.stderr);
    }
    let config = AwsConnection::local(moto.clone())
        .sdk_config()
        .await
        .expect("a local configuration");
    let topics = aws_sdk_sns::Client::new(&config)
        .list_topics()
        .send()
        .await
        .expect("topics");
    assert!(
        topics
            .topics()
            .iter()
            .filter_map(|listed| listed.topic_arn())
            .any(|arn| arn.ends_with(&format!(":{topic}"))),
        "the run made the topic"
    );
    let s3 = aws_sdk_s3::config::Builder::from(&config)
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(s3)
        .head_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("the run made the bucket");
    let again = run("the second run", &args, &[]).await;
    assert!(
        again.stderr.contains(&format!(
            "kinesis-esm: bucket Bucket: {bucket} at {moto} (exists)"
        )),
        "{}",
        again.stderr
    );
}
