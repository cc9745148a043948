//! The endpoint `run` listens on (the live page, the control endpoint, the side documents and
//! the embedded Kinesis' API) answers on loopback only requests addressed to a loopback name,
//! so that a web page whose name was made to resolve to 127.0.0.1 (DNS rebinding) cannot drive
//! it (`docs/live-page.md`).
//!
//! Run with `cargo test -p kinesis-esm --test integration endpoint`. Each test starts its own
//! endpoint on a free loopback port; nothing else needs to run.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use aws_sdk_kinesis::Client;
use kinesis_esm::aws::AwsConnection;
use kinesis_esm::control::Control;
use kinesis_esm::endpoint::{SideDocument, serve_with_page};
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::kinesis::http::{LocalFanOut, ServerHandle};
use kinesis_esm::page::{LivePage, PageActions, Reshard};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::support::within_timeout;

/// Page actions that note each put and publish nothing.
#[derive(Default)]
struct NotedPuts(Mutex<Vec<String>>);

#[async_trait]
impl PageActions for NotedPuts {
    async fn put(&self, stream: &str, _: &str, _: Vec<u8>) -> anyhow::Result<String> {
        self.0.lock().unwrap().push(stream.to_owned());
        Ok(format!("put into {stream}"))
    }

    async fn reshard(&self, _: &str, _: Reshard) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The endpoint as `run` composes it, on a free loopback port, with one stream.
async fn serve_on_loopback() -> (ServerHandle, Arc<NotedPuts>) {
    crate::support::init_logging();
    let kinesis = EmbeddedKinesis::new();
    kinesis.create_stream("orders", 1).unwrap();
    let puts = Arc::new(NotedPuts::default());
    let page = LivePage::new(
        Arc::new(kinesis.clone()),
        Arc::clone(&puts) as Arc<dyn PageActions>,
    );
    let routes = page.router().merge(Control::new().router());
    let documents = vec![SideDocument::new("/metrics", "text/plain", || {
        b"metrics\n".to_vec()
    })];
    let server = serve_with_page(
        Some(LocalFanOut::new(kinesis)),
        "127.0.0.1:0".parse().unwrap(),
        documents,
        routes,
    )
    .await
    .expect("the endpoint listens");
    (server, puts)
}

/// One raw HTTP/1.1 exchange with `Host: host`: the status and the body.
async fn exchange(
    server: &ServerHandle,
    host: &str,
    request_line: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let mut request = format!(
        "{request_line} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    within_timeout("reading an answer", stream.read_to_end(&mut answer))
        .await
        .unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

async fn put_from_the_page(server: &ServerHandle, host: &str) -> (u16, String) {
    exchange(
        server,
        host,
        "POST /page/put",
        &[("Content-Type", "application/json")],
        r#"{"stream":"orders","partitionKey":"k","data":"{}"}"#,
    )
    .await
}

async fn list_streams(server: &ServerHandle, host: &str) -> (u16, String) {
    exchange(
        server,
        host,
        "POST /",
        &[
            ("Content-Type", "application/x-amz-json-1.1"),
            ("X-Amz-Target", "Kinesis_20131202.ListStreams"),
        ],
        "{}",
    )
    .await
}

#[tokio::test]
async fn a_request_addressed_to_another_name_is_refused_on_every_route() {
    let (server, puts) = serve_on_loopback().await;
    let attacker = "attacker.example:4566";
    let refusals = [
        ("the page's put", put_from_the_page(&server, attacker).await),
        (
            "the page",
            exchange(&server, attacker, "GET /", &[], "").await,
        ),
        (
            "the page's events",
            exchange(&server, attacker, "GET /page/events", &[], "").await,
        ),
        (
            "the control endpoint",
            exchange(&server, attacker, "GET /healthz", &[], "").await,
        ),
        (
            "a side document",
            exchange(&server, attacker, "GET /metrics", &[], "").await,
        ),
        ("the Kinesis API", list_streams(&server, attacker).await),
    ];
    for (route, (status, body)) in refusals {
        assert_eq!(status, 403, "{route}: {body}");
        assert!(
            body.contains("`attacker.example:4566`") && body.contains("DNS rebinding"),
            "{route}: {body}"
        );
        assert_eq!(body.trim_end().lines().count(), 1, "{route}: {body}");
    }
    assert!(puts.0.lock().unwrap().is_empty(), "nothing was published");
    server.stop().await;
}

#[tokio::test]
async fn loopback_names_are_answered() {
    let (server, puts) = serve_on_loopback().await;
    let port = server.local_addr().port();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("page.localhost:{port}"),
        "[::1]".to_owned(),
    ] {
        let (status, body) = put_from_the_page(&server, &host).await;
        assert_eq!(status, 200, "{host}: {body}");
        let (status, body) = list_streams(&server, &host).await;
        assert_eq!(status, 200, "{host}: {body}");
        assert!(body.contains("orders"), "{host}: {body}");
    }
    assert_eq!(puts.0.lock().unwrap().len(), 4);
    server.stop().await;
}

#[tokio::test]
async fn an_sdk_client_pointed_at_the_endpoint_works() {
    let (server, _) = serve_on_loopback().await;
    let config = AwsConnection::local(server.endpoint_url())
        .sdk_config()
        .await
        .unwrap();
    let streams = Client::new(&config)
        .list_streams()
        .send()
        .await
        .expect("the SDK's call is answered");
    assert_eq!(streams.stream_names(), ["orders"]);
    server.stop().await;
}
