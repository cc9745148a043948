//! `KinesisAdapter::run` under a Runtime API, as on Lambda Managed Instances: the test serves a
//! small Runtime API on loopback and runs this same test binary again as the function, with
//! `AWS_LAMBDA_MAX_CONCURRENCY` in its environment (a child process, so that no test sets a
//! variable of its own process). The function's handler waits until every invocation is in flight
//! at once, so the test times out if `run` serves them one at a time.

use std::collections::VecDeque;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lambda_kinesis::testing::TestEvent;
use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Barrier, mpsc};

/// Invocations handed out at once, and the function's `AWS_LAMBDA_MAX_CONCURRENCY`.
const IN_FLIGHT: usize = 3;

/// Long enough for a function to start and answer; one serving invocations one at a time never
/// answers the first.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Set in the child's environment: the test runs as the function.
const AS_FUNCTION: &str = "LAMBDA_KINESIS_TEST_RUN_AS_FUNCTION";

const TEST_NAME: &str =
    "runtime_api::run_serves_as_many_invocations_at_once_as_the_environment_allows";

#[test]
fn run_serves_as_many_invocations_at_once_as_the_environment_allows() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if std::env::var_os(AS_FUNCTION).is_some() {
        runtime.block_on(run_as_function());
    } else {
        runtime.block_on(serve_the_function());
    }
}

/// The function: every invocation waits until `IN_FLIGHT` are in the handler.
async fn run_as_function() {
    async fn meet(barrier: &Barrier, _: &serde_json::Value) -> HandlerOutcome {
        barrier.wait().await;
        HandlerOutcome::ack()
    }
    let adapter = KinesisAdapter::with_state(Barrier::new(IN_FLIGHT), meet);
    adapter.run().await.expect("the runtime runs until killed");
}

/// An invocation handed out or answered: its request id and its event or response.
type Invocation = (String, String);

/// The invocations not yet handed out.
type Pending = Arc<Mutex<VecDeque<Invocation>>>;

async fn serve_the_function() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let event = String::from_utf8(TestEvent::new().json(&1).to_json()).unwrap();
    let pending: Pending = Arc::new(Mutex::new(
        (0..IN_FLIGHT)
            .map(|n| (format!("request-{n}"), event.clone()))
            .collect(),
    ));
    let (answers_sent, mut answers) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((connection, _)) = listener.accept().await {
            let (pending, sent) = (Arc::clone(&pending), answers_sent.clone());
            tokio::spawn(serve_connection(connection, pending, sent));
        }
    });
    let _function = start_function(&address.to_string());
    let mut answered = Vec::new();
    let all = async {
        while answered.len() < IN_FLIGHT {
            answered.push(answers.recv().await.unwrap());
        }
    };
    tokio::time::timeout(TIMEOUT, all)
        .await
        .expect("every invocation was answered: all were in flight at once");
    answered.sort();
    for (n, (request, body)) in answered.iter().enumerate() {
        assert_eq!(request, &format!("request-{n}"));
        assert_eq!(body, r#"{"batchItemFailures":[]}"#);
    }
}

/// This test binary again, running only this test, as the function of the Runtime API at
/// `address`.
fn start_function(address: &str) -> Killed {
    let function = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads", "1"])
        .env(AS_FUNCTION, "1")
        .env("AWS_LAMBDA_RUNTIME_API", address)
        .env("AWS_LAMBDA_MAX_CONCURRENCY", IN_FLIGHT.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", "concurrent")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    Killed(function)
}

/// The function's process, killed when the test ends (it runs until then), also by a panic.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Serves one keep-alive connection: `next` hands out an invocation (or never answers once all
/// are out, as a Runtime API with no work waits), a `response` is sent to the test.
async fn serve_connection(
    connection: TcpStream,
    pending: Pending,
    answers: mpsc::UnboundedSender<Invocation>,
) {
    let mut connection = BufReader::new(connection);
    while let Some((path, body)) = read_request(&mut connection).await {
        let reply = if path.ends_with("/invocation/next") {
            let next = pending.lock().unwrap().pop_front();
            let Some((request, event)) = next else {
                return std::future::pending().await;
            };
            invocation_reply(&request, &event)
        } else if let Some(request) = path
            .strip_prefix("/2018-06-01/runtime/invocation/")
            .and_then(|rest| rest.strip_suffix("/response"))
        {
            let _ = answers.send((request.to_owned(), body));
            "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned()
        } else {
            panic!("the function called {path} (an error?): {body}");
        };
        connection
            .get_mut()
            .write_all(reply.as_bytes())
            .await
            .unwrap();
    }
}

fn invocation_reply(request: &str, event: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
         lambda-runtime-aws-request-id: {request}\r\n\
         lambda-runtime-deadline-ms: 4102444800000\r\n\
         lambda-runtime-invoked-function-arn: arn:aws:lambda:us-east-1:123456789012:function:concurrent\r\n\
         content-length: {}\r\n\r\n{event}",
        event.len()
    )
}

/// One HTTP/1.1 request's path and body (by `content-length`; the runtime's client sends one),
/// or `None` once the connection is closed.
async fn read_request(connection: &mut BufReader<TcpStream>) -> Option<(String, String)> {
    let mut line = String::new();
    if connection.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut length = 0;
    loop {
        line.clear();
        connection.read_line(&mut line).await.ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    connection.read_exact(&mut body).await.ok()?;
    Some((path, String::from_utf8(body).ok()?))
}
