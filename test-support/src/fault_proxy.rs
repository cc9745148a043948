//! A loopback HTTP/1.1 proxy in front of a local server that injects faults into chosen calls.
//!
//! Calls are told apart by their `X-Amz-Target` header (`Kinesis_20131202.GetRecords`,
//! `DynamoDB_20120810.UpdateItem`). A test queues faults with [`FaultProxy::inject`]; each one
//! hits the next call whose target contains the given text, and every other call goes through.
//! [`FaultProxy::go_away`] closes the listening socket and every open connection (callers see
//! "connection refused"), [`FaultProxy::come_back`] listens again on the same port.
//!
//! It understands just enough HTTP for the AWS SDKs and the local servers: one request at a time
//! per connection, bodies with a `Content-Length` or chunked.
//!
//! It remembers when each call arrived ([`FaultProxy::calls`]), so that a test can tell a reader
//! that backs off from one that does not.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// What happens to a call.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Answers at once, without reaching the server.
    Respond {
        /// The HTTP status.
        status: u16,
        /// The JSON body.
        body: String,
    },
    /// Closes the connection without reaching the server.
    DropConnection,
    /// Reaches the server, then closes the connection without passing its answer on: the call
    /// took effect, but the caller cannot know.
    ForwardThenDrop,
    /// A partial `PutRecords` failure: the request reaches the server without the entries at
    /// these positions (from 0), and the answer holds the server's results for the others and a
    /// `ProvisionedThroughputExceededException` in place of each removed one, as Kinesis answers
    /// when some entries of a request are throttled.
    ThrottleEntries(Vec<usize>),
}

impl Fault {
    fn error(status: u16, error_type: &str, message: &str) -> Self {
        Self::Respond {
            status,
            body: serde_json::json!({ "__type": error_type, "message": message }).to_string(),
        }
    }

    /// Kinesis' or DynamoDB's throttle.
    pub fn throttled() -> Self {
        Self::error(
            400,
            "ProvisionedThroughputExceededException",
            "Rate exceeded (injected)",
        )
    }

    /// An internal failure with HTTP 500.
    pub fn server_error() -> Self {
        Self::error(
            500,
            "InternalFailureException",
            "Internal failure (injected)",
        )
    }

    /// Kinesis' answer to an iterator older than five minutes.
    pub fn expired_iterator() -> Self {
        Self::error(
            400,
            "ExpiredIteratorException",
            "Iterator expired. The iterator was created at time X while right now it is Y which is further in the future than the tolerated delay of 300000 milliseconds. (injected)",
        )
    }

    /// DynamoDB's answer to a write whose condition failed.
    pub fn conditional_check_failed() -> Self {
        Self::error(
            400,
            "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
            "The conditional request failed (injected)",
        )
    }
}

/// A call as the proxy saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenCall {
    /// When the request arrived.
    pub at: Instant,
    /// Its `X-Amz-Target`, such as `Kinesis_20131202.GetRecords`.
    pub target: String,
    /// Whether a fault hit it.
    pub faulted: bool,
}

#[derive(Debug, Default)]
struct Plan {
    /// Faults waiting for a call whose target contains the text.
    faults: VecDeque<(String, Fault)>,
    /// Every call seen, in order.
    seen: Vec<SeenCall>,
}

impl Plan {
    fn next_fault(&mut self, target: &str) -> Option<Fault> {
        let index = self
            .faults
            .iter()
            .position(|(pattern, _)| target.contains(pattern.as_str()));
        let fault = index.and_then(|index| self.faults.remove(index).map(|(_, fault)| fault));
        self.seen.push(SeenCall {
            at: Instant::now(),
            target: target.to_owned(),
            faulted: fault.is_some(),
        });
        fault
    }
}

/// The proxy; it stops when dropped.
pub struct FaultProxy {
    address: SocketAddr,
    upstream: SocketAddr,
    plan: Arc<Mutex<Plan>>,
    serving: Mutex<Option<JoinHandle<()>>>,
}

impl FaultProxy {
    /// Starts a proxy on a free loopback port in front of `upstream` (`http://127.0.0.1:PORT`).
    pub async fn start(upstream: &str) -> Self {
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .unwrap_or_else(|error| panic!("upstream {upstream} is not http://IP:PORT: {error}"));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let proxy = Self {
            address: listener.local_addr().expect("the proxy's address"),
            upstream,
            plan: Arc::default(),
            serving: Mutex::new(None),
        };
        proxy.serve(listener);
        proxy
    }

    /// The proxy's endpoint, to give the SDK.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Makes the next call whose `X-Amz-Target` contains `target` meet `fault`.
    pub fn inject(&self, target: &str, fault: Fault) {
        let mut plan = self.plan.lock().unwrap();
        plan.faults.push_back((target.to_owned(), fault));
    }

    /// How many faults are still waiting for their call.
    pub fn pending_faults(&self) -> usize {
        self.plan.lock().unwrap().faults.len()
    }

    /// How many calls whose target contains `target` a fault hit.
    pub fn faults_hit(&self, target: &str) -> usize {
        let plan = self.plan.lock().unwrap();
        plan.seen
            .iter()
            .filter(|call| call.faulted && call.target.contains(target))
            .count()
    }

    /// Every call seen so far whose target contains `target`, in order of arrival.
    pub fn calls(&self, target: &str) -> Vec<SeenCall> {
        let plan = self.plan.lock().unwrap();
        plan.seen
            .iter()
            .filter(|call| call.target.contains(target))
            .cloned()
            .collect()
    }

    /// Stops listening and drops every open connection, as a server that went away.
    pub fn go_away(&self) {
        if let Some(serving) = self.serving.lock().unwrap().take() {
            // Aborting the accept loop drops the listener and its set of connection tasks,
            // which aborts them all.
            serving.abort();
        }
    }

    /// Listens again on the same port, as a server that came back.
    pub async fn come_back(&self) {
        self.go_away();
        let listener = TcpListener::bind(self.address)
            .await
            .expect("listen again on the proxy's port");
        self.serve(listener);
    }

    fn serve(&self, listener: TcpListener) {
        let plan = self.plan.clone();
        let upstream = self.upstream;
        let serving = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                connections.spawn(relay(client, upstream, plan.clone()));
                // Forget finished connections so the set does not grow.
                while connections.try_join_next().is_some() {}
            }
        });
        *self.serving.lock().unwrap() = Some(serving);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.go_away();
    }
}

/// Relays the calls of one client connection, applying faults.
async fn relay(client: TcpStream, upstream: SocketAddr, plan: Arc<Mutex<Plan>>) {
    let (client_read, mut client_write) = client.into_split();
    let mut client_read = BufReader::new(client_read);
    loop {
        let request = match read_message(&mut client_read).await {
            Ok(Some(request)) => request,
            Ok(None) | Err(_) => return,
        };
        let target = request.header("x-amz-target").unwrap_or_default();
        let fault = plan.lock().unwrap().next_fault(&target);
        let response = match fault {
            Some(Fault::Respond { status, body }) => {
                let content_type = if target.starts_with("DynamoDB") {
                    "application/x-amz-json-1.0"
                } else {
                    "application/x-amz-json-1.1"
                };
                format!(
                    "HTTP/1.1 {status} Injected\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .into_bytes()
            }
            Some(Fault::DropConnection) => return,
            Some(Fault::ForwardThenDrop) => {
                let _ = forward(&request.raw, upstream).await;
                return;
            }
            Some(Fault::ThrottleEntries(throttled)) => {
                match throttle_entries(&request, &throttled, upstream).await {
                    Ok(response) => response,
                    Err(_) => return,
                }
            }
            None => match forward(&request.raw, upstream).await {
                Ok(response) => response,
                Err(_) => return,
            },
        };
        if client_write.write_all(&response).await.is_err() {
            return;
        }
    }
}

/// Sends one request to the server on a fresh connection and returns its whole answer.
async fn forward(request: &[u8], upstream: SocketAddr) -> io::Result<Vec<u8>> {
    let mut server = TcpStream::connect(upstream).await?;
    server.write_all(request).await?;
    let mut reader = BufReader::new(server);
    read_message(&mut reader)
        .await?
        .map(|response| response.raw)
        .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed"))
}

/// Forwards a `PutRecords` request without the entries at the `throttled` positions, and puts a
/// throttle in their places in the server's answer (signatures are not checked by the local
/// servers, so the changed body passes).
async fn throttle_entries(
    request: &Message,
    throttled: &[usize],
    upstream: SocketAddr,
) -> io::Result<Vec<u8>> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
    let mut body: serde_json::Value =
        serde_json::from_slice(&body_of(&request.raw)).map_err(|_| invalid("request body"))?;
    let records = body["Records"]
        .as_array()
        .ok_or_else(|| invalid("a PutRecords request without Records"))?
        .clone();
    let kept: Vec<_> = records
        .iter()
        .enumerate()
        .filter(|(index, _)| !throttled.contains(index))
        .map(|(_, record)| record.clone())
        .collect();
    let answer = if kept.is_empty() {
        // Kinesis refuses a request of no entries: every one was throttled, nothing is sent.
        serde_json::json!({ "FailedRecordCount": 0, "Records": [] })
    } else {
        body["Records"] = serde_json::Value::Array(kept);
        let forwarded = with_body(&request.head, &serde_json::to_vec(&body).expect("JSON"));
        let answer = forward(&forwarded, upstream).await?;
        let (head, _) = split_head(&answer);
        if !head.starts_with("HTTP/1.1 200") {
            return Ok(answer);
        }
        serde_json::from_slice(&body_of(&answer)).map_err(|_| invalid("response body"))?
    };
    let mut results = answer["Records"]
        .as_array()
        .ok_or_else(|| invalid("a PutRecords answer without Records"))?
        .clone()
        .into_iter();
    let mut failed = answer["FailedRecordCount"].as_u64().unwrap_or(0);
    let mut merged = Vec::with_capacity(records.len());
    for index in 0..records.len() {
        if throttled.contains(&index) {
            failed += 1;
            merged.push(serde_json::json!({
                "ErrorCode": "ProvisionedThroughputExceededException",
                "ErrorMessage": "Rate exceeded for shard (injected)",
            }));
        } else {
            merged.push(results.next().ok_or_else(|| invalid("too few results"))?);
        }
    }
    let answer = serde_json::json!({ "FailedRecordCount": failed, "Records": merged });
    let answer = serde_json::to_vec(&answer).expect("JSON");
    Ok(format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: {}\r\n\r\n",
        answer.len()
    )
    .into_bytes()
    .into_iter()
    .chain(answer)
    .collect())
}

/// A message's head (up to its blank line) and the bytes after it.
fn split_head(raw: &[u8]) -> (String, &[u8]) {
    let end = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map_or(raw.len(), |at| at + 4);
    (
        String::from_utf8_lossy(&raw[..end]).into_owned(),
        &raw[end..],
    )
}

/// A message's body, its chunks joined if it was sent chunked.
fn body_of(raw: &[u8]) -> Vec<u8> {
    let (head, mut rest) = split_head(raw);
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return rest.to_vec();
    }
    let mut body = Vec::new();
    while let Some(line_end) = rest.windows(2).position(|window| window == b"\r\n") {
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size = usize::from_str_radix(size_text.trim().split(';').next().unwrap_or(""), 16)
            .unwrap_or(0);
        rest = &rest[line_end + 2..];
        if size == 0 || rest.len() < size {
            break;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[(size + 2).min(rest.len())..];
    }
    body
}

/// The request `head` with `body` in place of its own, sent with a `Content-Length`.
fn with_body(head: &str, body: &[u8]) -> Vec<u8> {
    let mut lines: Vec<&str> = head
        .trim_end()
        .lines()
        .filter(|line| {
            let name = line
                .split(':')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            name != "content-length" && name != "transfer-encoding"
        })
        .collect();
    let length = format!("Content-Length: {}", body.len());
    lines.push(&length);
    let mut raw = lines.join("\r\n").into_bytes();
    raw.extend_from_slice(b"\r\n\r\n");
    raw.extend_from_slice(body);
    raw
}

/// An HTTP message as read: its raw bytes, and its head for looking up headers.
struct Message {
    head: String,
    raw: Vec<u8>,
}

impl Message {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    }
}

/// Reads one message; `None` if the connection closed before one began.
async fn read_message<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> io::Result<Option<Message>> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        head.push_str(&line);
        if line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut message = Message {
        raw: head.clone().into_bytes(),
        head,
    };
    let is_response = message.head.starts_with("HTTP/");
    if let Some(length) = message.header("content-length") {
        let length: usize = length
            .parse()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad Content-Length"))?;
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await?;
        message.raw.extend_from_slice(&body);
    } else if message
        .header("transfer-encoding")
        .is_some_and(|encoding| encoding.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let mut size_line = String::new();
            reader.read_line(&mut size_line).await?;
            message.raw.extend_from_slice(size_line.as_bytes());
            let size = usize::from_str_radix(size_line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
            // The chunk and its CRLF; after the last (empty) chunk, the final CRLF.
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).await?;
            message.raw.extend_from_slice(&chunk);
            if size == 0 {
                break;
            }
        }
    } else if is_response {
        // No length: the body runs to the end of the connection.
        reader.read_to_end(&mut message.raw).await?;
    }
    Ok(Some(message))
}
