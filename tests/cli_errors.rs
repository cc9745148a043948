//! What `kinesis-esm` says when an endpoint or a resource is not what the user thinks: each
//! category of failure triggered for real, and its message checked for what a user needs (the
//! URL, the stream, the shard) and against what must never reach them (SDK `Debug` dumps, OS
//! errors said twice, "the stream does not exist" for an endpoint where nothing answers).

use std::time::Duration;

use end_to_end::run::{KinesisEsm, Run};
use end_to_end::workspace_dir;
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::kinesis::http::serve;
use tokio::net::TcpListener;

/// How long one command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// Fragments no message may hold: the SDK's `Debug` forms and an OS error's number.
const NEVER: &[&str] = &[
    "DispatchFailure",
    "ConnectorError",
    "ResponseError",
    "SdkBody",
    "os error",
];

/// `kinesis-esm put` of one record to stream `s` of the Kinesis at `endpoint`.
fn put_hello(endpoint: &str) -> [&str; 6] {
    ["put", "--endpoint", endpoint, "--stream", "s", "hello"]
}

/// `kinesis-esm run` of `template.yaml` reading the Kinesis at `endpoint`, serving nothing.
fn run_on_kinesis(endpoint: &str) -> [&str; 5] {
    [
        "run",
        "--kinesis-endpoint",
        endpoint,
        "--no-listen",
        "--until-idle",
    ]
}

/// Runs `args`, which must fail with exit 2 and a message holding every one of `fragments` and
/// none of [`NEVER`] nor `absent`.
async fn check_message(args: &[&str], fragments: &[&str], absent: &[&str]) {
    let Run { code, stderr, .. } = KinesisEsm::new(args)
        .log("warn")
        .timeout(COMMAND_TIMEOUT)
        .output()
        .await;
    assert_eq!(code, Some(2), "kinesis-esm {args:?}: {stderr}");
    for fragment in fragments {
        assert!(
            stderr.contains(fragment),
            "kinesis-esm {args:?}: the message should hold {fragment:?}:\n{stderr}"
        );
    }
    for fragment in NEVER.iter().chain(absent) {
        assert!(
            !stderr.contains(fragment),
            "kinesis-esm {args:?}: the message must not hold {fragment:?}:\n{stderr}"
        );
    }
}

/// [`check_message`] for `put` and for `run` against `endpoint`: each with the fragments its
/// message must hold, then those it must not.
async fn check_put_and_run(endpoint: &str, put: [&[&str]; 2], run: [&[&str]; 2]) {
    check_message(&put_hello(endpoint), put[0], put[1]).await;
    check_message(&run_on_kinesis(endpoint), run[0], run[1]).await;
}

/// A loopback address where nothing listens: a port bound, then given up.
async fn closed_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

/// A plain HTTP server that answers every request with an HTML 404, as a web server would.
async fn html_server() -> String {
    end_to_end::run::canned_http_server(
        "404 Not Found",
        &[("Content-Type", "text/html")],
        "<html><body><h1>Not Found</h1></body></html>",
    )
    .await
}

#[tokio::test]
async fn nothing_answering_is_said_with_the_url_and_never_as_a_missing_stream() {
    let endpoint = closed_endpoint().await;
    let nothing_answers = format!("nothing answers at {endpoint} (connection refused)");
    check_put_and_run(
        &endpoint,
        [
            &[&nothing_answers, "DescribeStreamSummary on stream s"],
            &[],
        ],
        [
            &[&nothing_answers, "stream shipments"],
            &["does not exist", "--create-streams"],
        ],
    )
    .await;
    check_message(
        &[
            "run",
            "--lease-table",
            "leases",
            "--dynamodb-endpoint",
            &endpoint,
            "--no-listen",
            "--until-idle",
        ],
        &[&nothing_answers, "lease table leases: DescribeTable"],
        &["lease table leases: lease table"],
    )
    .await;
}

#[tokio::test]
async fn a_server_that_is_not_kinesis_is_said_to_be_one() {
    let endpoint = html_server().await;
    let not_kinesis = format!("something that is not Kinesis answers at {endpoint}: HTTP 404");
    check_put_and_run(
        &endpoint,
        [&[&not_kinesis, "text/html"], &["<html>"]],
        [&[&not_kinesis], &["does not exist"]],
    )
    .await;
}

#[tokio::test]
async fn a_missing_stream_and_a_missing_shard_are_named() {
    let kinesis = EmbeddedKinesis::builder().build();
    kinesis.create_stream("present", 2).unwrap();
    let server = serve(kinesis, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let endpoint = server.endpoint_url();
    check_message(
        &run_on_kinesis(&endpoint),
        &["stream shipments does not exist on that Kinesis (pass --create-streams to create it)"],
        &[],
    )
    .await;
    check_message(
        &[
            "reshard",
            "--endpoint",
            &endpoint,
            "--stream",
            "present",
            "merge",
            "shardId-000000000000",
            "shardId-000000000007",
        ],
        &[
            "stream present has no shard shardId-000000000007; its open shards: \
             shardId-000000000000, shardId-000000000001",
        ],
        &["not found"],
    )
    .await;
    check_message(
        &[
            "reshard",
            "--endpoint",
            &endpoint,
            "--stream",
            "absent",
            "merge",
            "shardId-000000000000",
            "shardId-000000000001",
        ],
        &["kinesis-esm: stream absent not found"],
        &[],
    )
    .await;
    server.stop().await;
}

#[tokio::test]
async fn a_missing_code_uri_folder_is_named_as_written_and_as_resolved() {
    let template = workspace_dir().join("tests/templates/cli/missing-code-uri.yaml");
    let resolved = workspace_dir().join("tests/fixtures/functions/no-such-function");
    check_message(
        &[
            "run",
            "--template",
            template.to_str().unwrap(),
            "--no-listen",
            "--until-idle",
        ],
        &[
            "resource LostFunction",
            "CodeUri ../../fixtures/functions/no-such-function is not a folder",
            &format!("{} does not exist", resolved.display()),
        ],
        &["cargo"],
    )
    .await;
}

#[tokio::test]
async fn parameter_overrides_reach_the_template_in_both_of_sams_spellings() {
    let template = workspace_dir().join("tests/templates/cli/missing-code-uri.yaml");
    let template = template.to_str().unwrap();
    for spelling in [
        "Code=../../fixtures/functions/overridden",
        "ParameterKey=Code,ParameterValue=../../fixtures/functions/overridden",
    ] {
        check_message(
            &[
                "run",
                "--template",
                template,
                "--no-listen",
                "--parameter-overrides",
                "Code=../../fixtures/functions/first",
                spelling,
            ],
            &["CodeUri ../../fixtures/functions/overridden is not a folder"],
            &[],
        )
        .await;
    }
}

#[tokio::test]
async fn an_unknown_function_is_refused_with_the_known_ones() {
    check_message(
        &[
            "run",
            "--function",
            "Shiping",
            "--no-listen",
            "--until-idle",
        ],
        &[
            "--function Shiping: template.yaml has no function of that logical id or name",
            "it has ShippingFunction",
        ],
        &["did you mean"],
    )
    .await;
    check_message(
        &[
            "run",
            "--function",
            "ShipingFunction",
            "--no-listen",
            "--until-idle",
        ],
        &["it has ShippingFunction; did you mean ShippingFunction?"],
        &[],
    )
    .await;
}
