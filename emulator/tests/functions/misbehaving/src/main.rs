//! A Lambda function that misbehaves on request, to test how the emulator's Runtime API copes.
//!
//! It speaks HTTP/1.1 to the Runtime API by hand, one connection per request, so that it can do
//! what no well-made runtime does. The tests build it with `kinesis_esm::function::build_function`.
//!
//! At start, `MISBEHAVING_INIT` chooses how initialisation goes:
//! - `exit`: exits at once (status 3) without asking for an invocation;
//! - `init-error`: reports an initialisation error, then exits (status 1);
//! - anything else, or unset: asks for invocations.
//!
//! Each event `{"act":"..."}` chooses what the invocation does:
//! - `echo`: answers with what it saw (pid, invocation count, the invocation's headers, its
//!   environment, and the statuses the Runtime API gave its stray posts of earlier invocations);
//! - `garbage`: answers with bytes that are neither JSON nor UTF-8;
//! - `error`: posts an invocation error;
//! - `panic`: panics (exit status 101), `abort`: aborts (SIGABRT), `hang`: never answers;
//! - `oversize`: answers with 7 MB, and remembers the status it got;
//! - `stray`: posts to a request id that is not the invocation's, answers, then answers again;
//! - `garbage-http`: sends bytes that are not HTTP to the Runtime API, then exits (status 2).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

/// Bytes that are neither JSON nor UTF-8.
const GARBAGE: &[u8] = b"\xff\xfe\x00garbage{]\x80";

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map_or("", |(_, value)| value.as_str())
    }
}

fn main() {
    let api = std::env::var("AWS_LAMBDA_RUNTIME_API").expect("AWS_LAMBDA_RUNTIME_API is set");
    match std::env::var("MISBEHAVING_INIT").as_deref() {
        Ok("exit") => {
            eprintln!("misbehaving: exiting at once, as asked");
            std::process::exit(3);
        }
        Ok("init-error") => {
            let reply = call(
                &api,
                "POST",
                "/2018-06-01/runtime/init/error",
                &[("Lambda-Runtime-Function-Error-Type", "Runtime.InitError")],
                br#"{"errorType":"Misbehaving.InitFailed","errorMessage":"could not initialise, as asked"}"#,
            );
            eprintln!("misbehaving: init error posted, status {}", reply.status);
            std::process::exit(1);
        }
        _ => {}
    }

    let mut invocations = 0_u64;
    let mut earlier_statuses: Vec<u16> = Vec::new();
    loop {
        let next = call(&api, "GET", "/2018-06-01/runtime/invocation/next", &[], b"");
        invocations += 1;
        let request_id = next.header("lambda-runtime-aws-request-id").to_owned();
        let response_path = format!("/2018-06-01/runtime/invocation/{request_id}/response");
        let event = String::from_utf8_lossy(&next.body).into_owned();
        match act(&event) {
            "echo" => {
                let body = echo(&next, invocations, &earlier_statuses);
                call(&api, "POST", &response_path, &[], body.as_bytes());
            }
            "garbage" => {
                call(&api, "POST", &response_path, &[], GARBAGE);
            }
            "error" => {
                call(
                    &api,
                    "POST",
                    &format!("/2018-06-01/runtime/invocation/{request_id}/error"),
                    &[("Lambda-Runtime-Function-Error-Type", "Unhandled")],
                    br#"{"errorType":"Misbehaving.Failed","errorMessage":"failed, as asked"}"#,
                );
            }
            "panic" => panic!("misbehaving: panicking mid-invocation, as asked"),
            "abort" => {
                eprintln!("misbehaving: aborting mid-invocation, as asked");
                std::process::abort();
            }
            "hang" => loop {
                std::thread::sleep(Duration::from_secs(60));
            },
            "oversize" => {
                let reply = call(&api, "POST", &response_path, &[], &vec![b'x'; 7 << 20]);
                earlier_statuses.push(reply.status);
            }
            "stray" => {
                let stray_response = call(
                    &api,
                    "POST",
                    "/2018-06-01/runtime/invocation/not-this-one/response",
                    &[],
                    b"{}",
                );
                let stray_error = call(
                    &api,
                    "POST",
                    "/2018-06-01/runtime/invocation/not-this-one/error",
                    &[],
                    b"{}",
                );
                let body = format!(
                    r#"{{"stray_response":{},"stray_error":{}}}"#,
                    stray_response.status, stray_error.status
                );
                call(&api, "POST", &response_path, &[], body.as_bytes());
                let second = call(&api, "POST", &response_path, &[], b"{}");
                earlier_statuses.push(second.status);
            }
            "garbage-http" => {
                let mut stream = TcpStream::connect(&api).expect("the Runtime API accepts");
                stream
                    .write_all(b"\x00\xffTHIS IS NOT HTTP\r\n\r\n")
                    .expect("the Runtime API reads");
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer);
                let first_line = String::from_utf8_lossy(&answer)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_owned();
                eprintln!("misbehaving: the Runtime API answered garbage with: {first_line}");
                std::process::exit(2);
            }
            other => panic!("misbehaving: no such act {other:?} in event {event}"),
        }
    }
}

/// The `act` of an event `{"act":"..."}`.
fn act(event: &str) -> &str {
    let Some(start) = event.find(r#""act":""#) else {
        return "";
    };
    let rest = &event[start + r#""act":""#.len()..];
    rest.split('"').next().unwrap_or("")
}

/// What the function saw, as JSON.
fn echo(next: &Reply, invocations: u64, earlier_statuses: &[u16]) -> String {
    let mut environment: Vec<(String, String)> = std::env::vars().collect();
    environment.sort();
    let environment: Vec<String> = environment
        .iter()
        .map(|(name, value)| format!("{}:{}", quote(name), quote(value)))
        .collect();
    let statuses: Vec<String> = earlier_statuses.iter().map(u16::to_string).collect();
    format!(
        r#"{{"pid":{},"invocations":{},"request_id":{},"deadline_ms":{},"function_arn":{},"trace_id":{},"content_type":{},"earlier_statuses":[{}],"env":{{{}}}}}"#,
        std::process::id(),
        invocations,
        quote(next.header("lambda-runtime-aws-request-id")),
        quote(next.header("lambda-runtime-deadline-ms")),
        quote(next.header("lambda-runtime-invoked-function-arn")),
        quote(next.header("lambda-runtime-trace-id")),
        quote(next.header("content-type")),
        statuses.join(","),
        environment.join(",")
    )
}

/// `text` as a JSON string.
fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if (c as u32) < 0x20 => quoted.push_str(&format!("\\u{:04x}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// One request on a connection of its own; the whole answer is read.
fn call(api: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(api).expect("the Runtime API accepts connections");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {api}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .expect("the Runtime API reads requests");
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .expect("the Runtime API answers");
    parse(&raw)
}

fn parse(raw: &[u8]) -> Reply {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .expect("an HTTP answer has a head");
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("an HTTP answer has a status");
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}
