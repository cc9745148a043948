//! One `kinesis-esm run` instance of the chaos run, through its starts, signals and stops;
//! every wait bounded, every failure naming the instance with the end of its log.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::aws::EsmProcess;

/// How long an instance may take to start (its mapping running) or to stop gracefully.
pub(super) const INSTANCE_TIMEOUT: Duration = Duration::from_secs(60);
const STATUS_PATH: &str = "/kinesis-esm/status";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Life {
    Running,
    /// SIGSTOPped; woken (SIGCONT) at this time.
    Paused(Instant),
    Dead,
}

/// One `kinesis-esm run` instance, through its restarts.
pub(super) struct Instance {
    pub(super) worker: String,
    /// Its arguments but `--listen`.
    pub(super) args: Vec<String>,
    /// Where it listens: fixed for the instance serving the embedded Kinesis, fresh each start
    /// for the others (status only).
    pub(super) fixed_listen: Option<SocketAddr>,
    pub(super) log: PathBuf,
    pub(super) process: Option<EsmProcess>,
    pub(super) life: Life,
    pub(super) serves_kinesis: bool,
}

impl Instance {
    /// Starts it and waits until its mapping runs (its status lists it), so that a signal sent
    /// afterwards finds it past building the function.
    pub(super) async fn start(&mut self) -> Result<(), String> {
        let listen = match self.fixed_listen {
            Some(listen) => listen,
            None => free_loopback_address(),
        };
        let listen_text = listen.to_string();
        let mut args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        args.extend(["--listen", &listen_text]);
        let mut process = EsmProcess::start(&args, &self.log).await;
        let started = Instant::now();
        loop {
            if let Some(code) = process.ended() {
                return Err(self.fault(&format!("ended while starting (exit {code:?})")));
            }
            if let Some(body) = http_get(listen, STATUS_PATH).await
                && body.contains('{')
            {
                break;
            }
            if started.elapsed() > INSTANCE_TIMEOUT {
                process.signal("KILL").await;
                return Err(self.fault(&format!(
                    "its mapping did not start within {INSTANCE_TIMEOUT:?} (status at {listen})"
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.process = Some(process);
        self.life = Life::Running;
        Ok(())
    }

    pub(super) fn process(&mut self) -> &mut EsmProcess {
        self.process.as_mut().expect("a started instance")
    }

    pub(super) async fn kill(&mut self) -> Result<(), String> {
        self.process().signal("KILL").await;
        match self.process().ended_within(INSTANCE_TIMEOUT).await {
            Some(_) => {
                self.life = Life::Dead;
                Ok(())
            }
            None => Err(self.fault("did not end within a minute of SIGKILL")),
        }
    }

    /// SIGTERM, and a bounded wait for the graceful stop (batches in flight, final checkpoints,
    /// leases given up).
    pub(super) async fn stop(&mut self) -> Result<(), String> {
        self.process().signal("TERM").await;
        match self.process().ended_within(INSTANCE_TIMEOUT).await {
            Some(Some(0)) => {
                self.life = Life::Dead;
                Ok(())
            }
            Some(code) => Err(self.fault(&format!("a graceful stop exited with {code:?}"))),
            None => {
                self.process().signal("KILL").await;
                Err(self.fault(&format!(
                    "a graceful stop (SIGTERM) did not end within {INSTANCE_TIMEOUT:?}"
                )))
            }
        }
    }

    /// A failure naming the instance, with the end of its log.
    fn fault(&self, what: &str) -> String {
        format!(
            "instance {}: {what}\n--- the end of {} ---\n{}",
            self.worker,
            self.log.display(),
            log_tail(&self.log, 40)
        )
    }
}

/// A line on standard error, so that a long run shows where it is.
pub(super) fn progress(what: &str) {
    eprintln!("chaos: {what}");
}

fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

pub(super) fn count_in_log(path: &Path, needle: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(needle))
        .count()
}

/// A loopback address with a port the system just handed out (and took back).
pub(super) fn free_loopback_address() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
}

/// `GET path` over HTTP/1.0 (no chunked answer): the body, or `None` if nothing answered.
async fn http_get(address: SocketAddr, path: &str) -> Option<String> {
    let exchange = async {
        let mut connection = tokio::net::TcpStream::connect(address).await.ok()?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n");
        connection.write_all(request.as_bytes()).await.ok()?;
        let mut answer = Vec::new();
        connection.read_to_end(&mut answer).await.ok()?;
        let text = String::from_utf8_lossy(&answer);
        text.split_once("\r\n\r\n").map(|(_, body)| body.to_owned())
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .ok()
        .flatten()
}
