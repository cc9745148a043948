//! On-failure destinations against moto's server (SQS, SNS, S3): the shipping template's main
//! run over kinesis-local discards the fedex batch after its 5 retries, and its invocation
//! record lands in the queue, in the topic (read through a subscribed queue) and in the bucket,
//! in the shape Lambda sends (`docs/event-source-mapping.md` §5); `kinesis-esm failures replay`
//! then reads the batch's records from the stream again; the SQS main run of
//! `docs/running-locally.md` (the repository's `template.yaml` as it is, over the embedded
//! Kinesis, `--destination-endpoint` moto) fills the queue `Queue`, which `kinesis-esm failures
//! --queue-url` lists. Needs `scripts/local-stack run`.

use std::path::{Path, PathBuf};

use end_to_end::aws::{LocalAws, kinesis_endpoint, unique_name, within};
use end_to_end::{kinesis_esm_binary, shipping_bootstrap, workspace_dir};
use kinesis_esm::aws::AwsConnection;
use kinesis_esm::source::{IteratorPosition, ShardSource as _};
use serde_json::Value;
use test_support::moto_endpoint;

use end_to_end::run::{Run, kinesis_esm_with};

/// The shipping template, reading `stream` and sending discarded batches to `destination`, with
/// `resources` added (written to a temporary file; the function's code stays the workspace's).
fn shipping_template(stream: &str, destination: &str, resources: &str) -> PathBuf {
    let text = std::fs::read_to_string(workspace_dir().join("template.yaml")).expect("template");
    let replaced = |text: String, from: &str, to: &str| {
        assert!(text.contains(from), "template.yaml no longer has {from:?}");
        text.replacen(from, to, 1)
    };
    let text = replaced(
        text,
        "      Name: shipments\n",
        &format!("      Name: {stream}\n"),
    );
    // The retry and dead-letter streams too, so that runs at once share no stream.
    let text = replaced(
        text,
        "      Name: shipments-retry\n",
        &format!("      Name: {stream}-retry\n"),
    );
    let text = replaced(
        text,
        "      Name: shipments-dlq\n",
        &format!("      Name: {stream}-dlq\n"),
    );
    let text = replaced(
        text,
        "      CodeUri: .\n",
        &format!("      CodeUri: {}\n", workspace_dir().display()),
    );
    let text = replaced(
        text,
        "                Destination: !GetAtt Queue.Arn\n",
        &format!("                Destination: {destination}\n"),
    );
    let text = replaced(text, "Resources:\n", &format!("Resources:\n{resources}"));
    let path = std::env::temp_dir().join(format!("{}.yaml", unique_name("destinations")));
    std::fs::write(&path, text).expect("template written");
    path
}

/// The main run over kinesis-local with the on-failure records sent to moto.
async fn main_run(template: &Path) -> Run {
    shipping_bootstrap().await;
    let endpoint = kinesis_endpoint();
    let moto = moto_endpoint();
    let run = kinesis_esm_with(
        template,
        &workspace_dir().join("functions/shipping/events"),
        &[
            "--kinesis-endpoint",
            &endpoint,
            "--create-streams",
            "--destination-endpoint",
            &moto,
            "--retry-pause",
            "10ms",
            "--max-retry-pause",
            "50ms",
        ],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout
            .contains("6 records in 1 batch discarded and sent to the on-failure destination"),
        "{run:#?}"
    );
    run
}

/// Clients of moto's SQS, SNS and S3.
async fn moto_clients() -> (aws_sdk_sqs::Client, aws_sdk_sns::Client, aws_sdk_s3::Client) {
    let config = AwsConnection::local(moto_endpoint())
        .sdk_config()
        .await
        .expect("a local configuration");
    let s3 = aws_sdk_s3::config::Builder::from(&config)
        .force_path_style(true)
        .build();
    (
        aws_sdk_sqs::Client::new(&config),
        aws_sdk_sns::Client::new(&config),
        aws_sdk_s3::Client::from_conf(s3),
    )
}

/// Runs `kinesis-esm ARGS` to its end: its exit code, and its stdout and stderr together.
async fn kinesis_esm(args: &[&str]) -> (Option<i32>, String) {
    let output = within(
        &format!("kinesis-esm {args:?}"),
        tokio::process::Command::new(kinesis_esm_binary().await)
            .args(args)
            .env("KINESIS_ESM_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("kinesis-esm starts");
    (
        output.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

/// Checks the record has the fields Lambda sends, for the shipping batch discarded from `stream`.
fn check_record(record: &Value, stream: &str) {
    assert_eq!(record["version"], "1.0", "{record}");
    assert_eq!(
        record["requestContext"]["condition"], "RetryAttemptsExhausted",
        "{record}"
    );
    assert!(
        record["requestContext"]["functionArn"]
            .as_str()
            .is_some_and(|arn| arn.starts_with("arn:aws:lambda:us-east-1:")
                && arn.ends_with(":function:ShippingFunction")),
        "{record}"
    );
    assert_eq!(record["responseContext"]["statusCode"], 200, "{record}");
    assert_eq!(
        record["responseContext"]["executedVersion"], "$LATEST",
        "{record}"
    );
    assert!(
        record["responseContext"]["functionError"].is_null(),
        "{record}"
    );
    let info = &record["KinesisBatchInfo"];
    assert_eq!(info["batchSize"], 6, "{record}");
    assert_eq!(info["shardId"], "shardId-000000000000", "{record}");
    assert!(
        info["streamArn"]
            .as_str()
            .is_some_and(|arn| arn.ends_with(&format!(":stream/{stream}"))),
        "{record}"
    );
    for field in [
        "startSequenceNumber",
        "endSequenceNumber",
        "approximateArrivalOfFirstRecord",
        "approximateArrivalOfLastRecord",
    ] {
        assert!(info[field].is_string(), "{field} in {record}");
    }
}

/// Creates an SQS queue at moto; returns its URL.
async fn create_queue(sqs: &aws_sdk_sqs::Client, name: &str) -> String {
    sqs.create_queue()
        .queue_name(name)
        .send()
        .await
        .expect("queue created")
        .queue_url
        .expect("a queue URL")
}

/// The bodies of the messages a queue hands out (at most 10). They are not deleted: the queue
/// hands them out again once its visibility timeout has passed.
async fn receive(sqs: &aws_sdk_sqs::Client, queue_url: &str) -> Vec<String> {
    let page = sqs
        .receive_message()
        .queue_url(queue_url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .send()
        .await
        .expect("messages received");
    page.messages()
        .iter()
        .map(|message| message.body().unwrap_or_default().to_owned())
        .collect()
}

/// `failures replay FILE --to-stream S` over kinesis-local brings the batch's 6 records,
/// the fedex shipment among them, into `S`.
async fn check_replay(record: &Value) {
    let aws = LocalAws::connect().await;
    let target = aws.create_stream("replayed", 1).await;
    let file = std::env::temp_dir().join(format!("{}.json", unique_name("record")));
    std::fs::write(&file, record.to_string()).expect("record written");
    let endpoint = kinesis_endpoint();
    let (code, output) = kinesis_esm(&[
        "failures",
        "replay",
        file.to_str().expect("a UTF-8 path"),
        "--to-stream",
        &target,
        "--endpoint",
        &endpoint,
    ])
    .await;
    assert_eq!(code, Some(0), "{output}");
    assert!(
        output.contains("6 records of shardId-000000000000"),
        "{output}"
    );
    let kinesis = aws.kinesis();
    let shards = kinesis.list_shards(&target).await.expect("shards");
    let iterator = kinesis
        .shard_iterator(&target, &shards[0].shard_id, &IteratorPosition::TrimHorizon)
        .await
        .expect("an iterator");
    let read = within(
        "reading the replayed stream",
        kinesis.get_records(&iterator, 100),
    )
    .await
    .expect("records");
    let data: Vec<String> = read
        .records
        .iter()
        .map(|record| String::from_utf8_lossy(&record.data).into_owned())
        .collect();
    assert_eq!(data.len(), 6, "{data:?}");
    assert!(data.iter().any(|text| text.contains("fedex")), "{data:?}");
    std::fs::remove_file(file).expect("cleaned");
}

#[tokio::test]
async fn aws_a_discarded_batch_lands_in_the_templates_queue_and_replays() {
    let (sqs, _, _) = moto_clients().await;
    let queue = unique_name("failures");
    let queue_url = create_queue(&sqs, &queue).await;
    let stream = unique_name("shipments");
    let template = shipping_template(&stream, "!GetAtt Queue.Arn", "");
    // The template's queue, under a name no other run uses.
    let text = std::fs::read_to_string(&template).expect("template");
    std::fs::write(
        &template,
        text.replacen(
            "      MessageRetentionPeriod: 1209600\n",
            &format!("      MessageRetentionPeriod: 1209600\n      QueueName: {queue}\n"),
            1,
        ),
    )
    .expect("template written");
    main_run(&template).await;
    let bodies = receive(&sqs, &queue_url).await;
    assert_eq!(
        bodies.len(),
        1,
        "one record for the one discarded batch: {bodies:?}"
    );
    let record: Value = serde_json::from_str(&bodies[0]).expect("the body is the record as JSON");
    check_record(&record, &stream);
    assert!(
        record.get("payload").is_none(),
        "SQS records carry no payload: {record}"
    );
    check_replay(&record).await;
}

#[tokio::test]
async fn aws_a_discarded_batch_is_published_to_the_topic() {
    let (sqs, sns, _) = moto_clients().await;
    let topic = unique_name("failures");
    let topic_arn = sns
        .create_topic()
        .name(&topic)
        .send()
        .await
        .expect("topic created")
        .topic_arn
        .expect("a topic ARN");
    let queue_url = create_queue(&sqs, &unique_name("subscriber")).await;
    let queue_arn = sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("queue attributes")
        .attributes
        .and_then(|attributes| {
            attributes
                .get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn)
                .cloned()
        })
        .expect("a queue ARN");
    sns.subscribe()
        .topic_arn(&topic_arn)
        .protocol("sqs")
        .endpoint(queue_arn)
        .send()
        .await
        .expect("subscribed");
    let stream = unique_name("shipments");
    let template = shipping_template(
        &stream,
        "!Ref Topic",
        &format!(
            "  Topic:\n    Type: AWS::SNS::Topic\n    Properties:\n      TopicName: {topic}\n"
        ),
    );
    main_run(&template).await;
    let bodies = receive(&sqs, &queue_url).await;
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let notification: Value = serde_json::from_str(&bodies[0]).expect("an SNS notification");
    assert_eq!(notification["Type"], "Notification", "{notification}");
    assert_eq!(
        notification["TopicArn"],
        topic_arn.as_str(),
        "{notification}"
    );
    let record: Value = serde_json::from_str(notification["Message"].as_str().expect("a message"))
        .expect("the message is the record as JSON");
    check_record(&record, &stream);
    assert!(
        record.get("payload").is_none(),
        "SNS records carry no payload: {record}"
    );
}

#[tokio::test]
async fn aws_a_discarded_batch_is_an_object_in_the_bucket_with_its_payload() {
    let (_, _, s3) = moto_clients().await;
    let bucket = unique_name("failures");
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("bucket created");
    let stream = unique_name("shipments");
    let template = shipping_template(
        &stream,
        "!GetAtt Bucket.Arn",
        &format!(
            "  Bucket:\n    Type: AWS::S3::Bucket\n    Properties:\n      BucketName: {bucket}\n"
        ),
    );
    main_run(&template).await;
    let listed = s3
        .list_objects_v2()
        .bucket(&bucket)
        .send()
        .await
        .expect("objects listed");
    let keys: Vec<&str> = listed
        .contents()
        .iter()
        .filter_map(|object| object.key())
        .collect();
    assert_eq!(
        keys.len(),
        1,
        "one object for the one discarded batch: {keys:?}"
    );
    let object = s3
        .get_object()
        .bucket(&bucket)
        .key(keys[0])
        .send()
        .await
        .expect("the object");
    let body = object.body.collect().await.expect("the body").into_bytes();
    let record: Value = serde_json::from_slice(&body).expect("the object is the record as JSON");
    check_record(&record, &stream);
    // aws/lambda/<mapping UUID>/<shard>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<uuid>, from the timestamp.
    let timestamp = record["timestamp"].as_str().expect("a timestamp");
    let (date, time) = timestamp.split_once('T').expect("an ISO 8601 time");
    let parts: Vec<&str> = keys[0].split('/').collect();
    assert_eq!(parts[..2], ["aws", "lambda"], "{}", keys[0]);
    assert_eq!(parts[2].len(), 36, "a UUID: {}", keys[0]);
    assert_eq!(parts[3], "shardId-000000000000", "{}", keys[0]);
    assert_eq!(parts[4..7].join("-"), date, "{}", keys[0]);
    assert!(
        parts[7].starts_with(&format!("{date}T{}-", time[..8].replace(':', "."))),
        "{}",
        keys[0]
    );
    let payload: Value =
        serde_json::from_str(record["payload"].as_str().expect("a string payload"))
            .expect("the payload is the event as JSON text");
    let records = payload["Records"].as_array().expect("the event's records");
    assert_eq!(records.len(), 6, "{payload}");
    assert_eq!(
        records[0]["kinesis"]["sequenceNumber"], record["KinesisBatchInfo"]["startSequenceNumber"],
        "{payload}"
    );
    check_replay(&record).await;
}

/// The main run with an SQS destination, as `docs/running-locally.md` writes it: the queue
/// `Queue` made at moto, `run --template template.yaml --put functions/shipping/events --until-idle
/// --destination-endpoint $MOTO_ENDPOINT` from the repository's root, the record received from
/// the queue, and `kinesis-esm failures --queue-url` listing it.
#[tokio::test]
async fn aws_the_readmes_main_run_sends_the_fedex_batch_to_the_templates_queue() {
    shipping_bootstrap().await;
    let (sqs, _, _) = moto_clients().await;
    // That page's queue: created again by each run (SQS answers with the same URL), emptied
    // of what an earlier run left.
    let queue_url = create_queue(&sqs, "Queue").await;
    sqs.purge_queue()
        .queue_url(&queue_url)
        .send()
        .await
        .expect("queue purged");
    let moto = moto_endpoint();
    let run = kinesis_esm_with(
        &workspace_dir().join("template.yaml"),
        &workspace_dir().join("functions/shipping/events"),
        &["--destination-endpoint", &moto],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout.contains(
            "6 records in 1 batch discarded and sent to the on-failure destination Queue\n    \
             -> SQS queue Queue message "
        ),
        "{run:#?}"
    );
    assert_eq!(
        queue_url,
        format!("{moto}/123456789012/Queue"),
        "the README's URL"
    );
    let listed = kinesis_esm(&[
        "failures",
        "--queue-url",
        &queue_url,
        "--destination-endpoint",
        &moto,
    ])
    .await;
    assert_eq!(listed.0, Some(0), "{}", listed.1);
    assert!(
        listed.1.contains(" shipments shardId-000000000000  ")
            && listed.1.contains("6 records  RetryAttemptsExhausted"),
        "{}",
        listed.1
    );
    // `failures` leaves a message hidden for a second; a receive that waits sees it again.
    let bodies = {
        let mut bodies = Vec::new();
        for _ in 0..5 {
            bodies = receive(&sqs, &queue_url).await;
            if !bodies.is_empty() {
                break;
            }
        }
        bodies
    };
    assert_eq!(
        bodies.len(),
        1,
        "one record for the fedex batch: {bodies:?}"
    );
    let record: Value = serde_json::from_str(&bodies[0]).expect("the body is the record as JSON");
    check_record(&record, "shipments");
}
