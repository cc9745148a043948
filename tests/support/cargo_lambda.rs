//! `cargo lambda watch` for the tests that invoke the shipping function through the Invoke API.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

/// How long installing cargo-lambda (the first time) and starting its server may take.
const WATCH_START_TIMEOUT: Duration = Duration::from_secs(600);

/// How long the first invocation may take: `cargo lambda watch` builds the function first.
pub const FIRST_INVOCATION_TIMEOUT: Duration = Duration::from_secs(900);

/// How long `cargo lambda watch` may take to stop once asked.
const WATCH_STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// How many of the server's last output lines a failure shows.
const LOG_TAIL_LINES: usize = 60;

/// `cargo lambda watch`, started by `scripts/cargo-lambda-watch`, with its output kept for
/// failure messages. It stops when the script's standard input closes: when [`Watch::stop`]
/// closes it, or when the test process ends, whatever happens in between.
pub struct Watch {
    child: Child,
    /// The Invoke API's base URL, such as `http://127.0.0.1:9000`.
    pub endpoint: String,
    log: Arc<Mutex<VecDeque<String>>>,
    /// The tasks that read the script's output: they end when it is closed.
    readers: Vec<JoinHandle<()>>,
}

impl Watch {
    /// Starts `cargo lambda watch` on a free port and waits until it answers.
    pub async fn start() -> Self {
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            listener.local_addr().unwrap().port()
        };
        let script = crate::workspace_dir().join("scripts/cargo-lambda-watch");
        let target = crate::workspace_dir().join("target");
        let mut child = Command::new(&script)
            .arg(port.to_string())
            .env("XDG_CACHE_HOME", target.join(".cache"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("could not run {}: {error}", script.display()));
        let log = Arc::new(Mutex::new(VecDeque::new()));
        let echo = std::env::var_os("RUST_LOG").is_some();
        let mut readers = Vec::new();
        for output in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn tokio::io::AsyncRead + Send + Unpin>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let log = Arc::clone(&log);
            readers.push(tokio::spawn(async move {
                let mut lines = BufReader::new(output).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if echo {
                        eprintln!("[cargo lambda watch] {line}");
                    }
                    let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
                    if log.len() == LOG_TAIL_LINES {
                        log.pop_front();
                    }
                    log.push_back(line);
                }
            }));
        }
        let mut watch = Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            log,
            readers,
        };
        watch.wait_until_it_answers(port).await;
        watch
    }

    /// The server's last output lines, for failure messages.
    pub fn log(&self) -> String {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        Vec::from(log.clone()).join("\n")
    }

    /// Waits until the server answers HTTP on `port`: a process's readiness has no signal to
    /// await, so the port is polled, and the process watched in case it gives up.
    async fn wait_until_it_answers(&mut self, port: u16) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The output's last lines say why. (A process the script left behind may hold
                // the output open: do not wait for it forever.)
                for reader in self.readers.drain(..) {
                    let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
                }
                panic!(
                    "scripts/cargo-lambda-watch stopped before its server answered ({status}). \
                     If cargo-lambda is missing, install it with \
                     `python3 -m venv .local/venv && .local/venv/bin/pip install cargo-lambda==1.9.2`.\n{}",
                    self.log()
                );
            }
            if answers_http(SocketAddr::from(([127, 0, 0, 1], port))).await {
                return;
            }
            assert!(
                started.elapsed() < WATCH_START_TIMEOUT,
                "cargo lambda watch did not answer on port {port} within {WATCH_START_TIMEOUT:?}:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Closes the script's input, which stops the server, and checks that it stopped.
    pub async fn stop(mut self) {
        drop(self.child.stdin.take());
        match tokio::time::timeout(WATCH_STOP_TIMEOUT, self.child.wait()).await {
            Ok(Ok(status)) => assert!(
                status.success(),
                "cargo lambda watch stopped with {status}:\n{}",
                self.log()
            ),
            Ok(Err(error)) => panic!("could not wait for cargo lambda watch: {error}"),
            Err(_elapsed) => panic!(
                "cargo lambda watch did not stop within {WATCH_STOP_TIMEOUT:?}:\n{}",
                self.log()
            ),
        }
    }
}

/// Whether an HTTP server answers at `address`: it answers an invocation of a function that
/// does not exist with a status line.
async fn answers_http(address: SocketAddr) -> bool {
    let Ok(mut connection) = TcpStream::connect(address).await else {
        return false;
    };
    let request = "POST /2015-03-31/functions/readiness-probe/invocations HTTP/1.1\r\n\
                   Host: 127.0.0.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
    if connection.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut status_line = String::new();
    let mut reader = BufReader::new(connection);
    matches!(reader.read_line(&mut status_line).await, Ok(read) if read > 0)
        && status_line.starts_with("HTTP/1.1 ")
}
