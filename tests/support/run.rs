//! The `kinesis-esm` command run as a child process, as a user runs it: [`KinesisEsm`] says which
//! command with which flags, [`KinesisEsm::output`] runs it to its end as a [`Run`], and
//! [`KinesisEsm::spawn`] starts it in the background as a [`Running`] whose log the test reads
//! line by line (for the address it serves, or a line it waits for) before it stops it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kinesis_esm::mapping::MappingStatus;

use crate::{fixture, kinesis_esm_binary, shipping_bootstrap, workspace_dir};

/// How long one run of the command may take. It builds the function first; the tests build it
/// beforehand, so cargo only has to see that it is fresh.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The summary's row of the README's main command ([`main_command`]): 12 records, 6 settled in
/// the first invocation (5 booked, 1 without an address), the held shipment's batch of 6 retried
/// 5 times, then discarded.
pub const MAIN_COMMAND_SETTLED: &[(&str, &str)] = &[
    ("state", "caught up"),
    ("records", "12"),
    ("deliveries", "48"),
    ("acked", "5"),
    ("dropped", "1"),
    ("discarded", "6"),
    ("held", "0"),
    ("retries", "5"),
];

/// A `kinesis-esm` command line to run from the workspace's root, with its logs at `warn` (or
/// `RUST_LOG`'s filter when that is set) unless the test says otherwise.
#[derive(Debug, Clone)]
pub struct KinesisEsm {
    args: Vec<OsString>,
    env: Vec<(String, Option<String>)>,
    dir: PathBuf,
    limit: Duration,
}

impl KinesisEsm {
    /// `kinesis-esm <args>`.
    pub fn new<S: Into<OsString>>(args: impl IntoIterator<Item = S>) -> Self {
        let log_filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".to_owned());
        Self {
            args: args.into_iter().map(Into::into).collect(),
            env: vec![("KINESIS_ESM_LOG".to_owned(), Some(log_filter))],
            dir: workspace_dir().to_owned(),
            limit: RUN_TIMEOUT,
        }
    }

    /// `kinesis-esm run --template <template>`, serving its Kinesis API on a port of its own, so
    /// that tests running at once do not compete for 4566.
    pub fn run(template: impl Into<OsString>) -> Self {
        Self::new(["run".into(), "--template".into(), template.into()])
            .args(["--listen", "127.0.0.1:0"])
    }

    /// `kinesis-esm run --template <template> --put <records> --until-idle`.
    pub fn run_until_idle(template: &Path, records: &Path) -> Self {
        Self::run(template).args([
            "--put".as_ref(),
            records.as_os_str(),
            "--until-idle".as_ref(),
        ])
    }

    /// More arguments.
    pub fn args<S: AsRef<std::ffi::OsStr>>(mut self, more: impl IntoIterator<Item = S>) -> Self {
        self.args
            .extend(more.into_iter().map(|arg| arg.as_ref().to_owned()));
        self
    }

    /// Sets `key` in its environment.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), Some(value.to_owned())));
        self
    }

    /// Takes `key` out of its environment (as set by the test or inherited).
    pub fn env_remove(mut self, key: &str) -> Self {
        self.env.push((key.to_owned(), None));
        self
    }

    /// Its logs at `filter` (`KINESIS_ESM_LOG`).
    pub fn log(self, filter: &str) -> Self {
        self.env("KINESIS_ESM_LOG", filter)
    }

    /// Its logs as `kinesis-esm` itself chooses them (`KINESIS_ESM_LOG` inherited, if set).
    pub fn default_log(mut self) -> Self {
        self.env.retain(|(key, _)| key != "KINESIS_ESM_LOG");
        self
    }

    /// Runs it from `dir` instead of the workspace's root.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = dir.into();
        self
    }

    /// How long [`KinesisEsm::output`] waits for it to end ([`RUN_TIMEOUT`] unless set).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.limit = limit;
        self
    }

    /// The command, its standard input closed, killed when dropped.
    pub async fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(kinesis_esm_binary().await);
        command
            .args(&self.args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        command
    }

    /// Runs it to its end; fails the test if it takes longer than its timeout. With `RUST_LOG`
    /// set, its output is shown.
    pub async fn output(self) -> Run {
        let output = tokio::time::timeout(self.limit, self.command().await.output())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "kinesis-esm {:?} ran longer than {:?}",
                    self.args, self.limit
                )
            })
            .expect("kinesis-esm starts");
        let run = Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        if std::env::var_os("RUST_LOG").is_some() {
            eprintln!("{}{}", run.stderr, run.stdout);
        }
        run
    }

    /// Starts it with its standard output and error piped, for a test that reads them itself.
    pub async fn spawn_piped(self) -> tokio::process::Child {
        self.command()
            .await
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kinesis-esm starts")
    }

    /// Starts it in the background.
    pub async fn spawn(self) -> Running {
        Running::new(self.spawn_piped().await)
    }

    /// Starts it in the background and waits for the address it says it serves after `marker`
    /// (for example `"Kinesis API at "`) on its standard error, which is then read on and
    /// dropped.
    pub async fn serving(self, marker: &str) -> (tokio::process::Child, String) {
        let limit = self.limit;
        let mut child = self.spawn_piped().await;
        let address = crate::served_address(&mut child, marker, limit).await;
        (child, address)
    }
}

/// Runs `kinesis-esm run --template <template> --put <records> --until-idle` with `more`
/// arguments for `run`.
pub async fn kinesis_esm_with(template: &Path, records: &Path, more: &[&str]) -> Run {
    KinesisEsm::run_until_idle(template, records)
        .args(more)
        .output()
        .await
}

/// The README's main command, with `more` arguments: the repository's `template.yaml` over the
/// sample events in `functions/shipping/events/`, the shipping function built first.
pub async fn main_command(more: &[&str]) -> Run {
    shipping_bootstrap().await;
    kinesis_esm_with(&main_template(), &main_events(), more).await
}

/// The repository's `template.yaml`.
pub fn main_template() -> PathBuf {
    workspace_dir().join("template.yaml")
}

/// The sample events in `functions/shipping/events/`.
pub fn main_events() -> PathBuf {
    workspace_dir().join("functions/shipping/events")
}

/// `tests/fixtures/records/shipments.jsonl`.
pub fn records() -> PathBuf {
    fixture("records/shipments.jsonl")
}

/// A template under `tests/templates/cli/`.
pub fn cli_template(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("templates/cli")
        .join(name)
}

/// A path of this test process's own in the temporary folder, named after `name`.
pub fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("kinesis-esm-{}-{name}", std::process::id()))
}

/// A file of this test's own in the temporary folder, holding `text`.
pub fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = temp_path(name);
    std::fs::write(&path, text).expect("the temporary folder is writable");
    path
}

/// Runs `template.yaml` over `count` shipments of about 104 KiB each
/// ([`crate::write_large_shipments`]), with `more` arguments for `run`; the shipments' file is
/// named after `name` and removed after the run.
pub async fn run_large_shipments(name: &str, count: u64, more: &[&str]) -> Run {
    shipping_bootstrap().await;
    let records = temp_path(&format!("{name}.jsonl"));
    crate::write_large_shipments(&records, count);
    let size = std::fs::metadata(&records)
        .expect("the shipments' file")
        .len();
    let run = kinesis_esm_with(&main_template(), &records, more).await;
    let _ = std::fs::remove_file(&records);
    // Each shipment holds at least its 106,400-byte address: 100 of them make over 10 MiB.
    assert!(
        size >= count * 106_400,
        "{count} shipments of 104 KiB or more: {size} bytes"
    );
    run
}

/// How a run ended.
#[derive(Debug)]
pub struct Run {
    /// Its exit code.
    pub code: Option<i32>,
    /// Its standard output: the summary.
    pub stdout: String,
    /// Its standard error: the log.
    pub stderr: String,
}

impl Run {
    /// Fails unless the run exited with `code`, showing its summary and log; `what` says what
    /// the code means.
    #[track_caller]
    pub fn check_code(&self, code: i32, what: &str) {
        assert_eq!(
            self.code,
            Some(code),
            "{what}:\n{}\n{}",
            self.stdout,
            self.stderr
        );
    }

    /// The summary's row for each shard, by column name.
    pub fn shard_rows(&self) -> Vec<BTreeMap<String, String>> {
        // Cells are separated by at least two spaces; single spaces only occur inside a cell
        // ("caught up").
        fn cells(line: &str) -> Vec<String> {
            line.split("  ")
                .map(str::trim)
                .filter(|cell| !cell.is_empty())
                .map(str::to_owned)
                .collect()
        }
        let mut lines = self.stdout.lines();
        let Some(header) = lines.find(|line| line.trim_start().starts_with("shard ")) else {
            return Vec::new();
        };
        let header = cells(header);
        // The rows end where the notes start ("shardId-...: held at ...").
        lines
            .map(cells)
            .take_while(|row| row.len() == header.len() && !row[0].contains(':'))
            .map(|row| header.iter().cloned().zip(row).collect())
            .collect()
    }

    /// Fails unless the one shard's checkpoint in the summary is a sequence number (`what` says
    /// why it should be).
    #[track_caller]
    pub fn check_checkpoint_written(&self, what: &str) {
        let checkpoint = self.shard_rows()[0]["checkpoint"].clone();
        assert!(
            is_short_sequence_number(&checkpoint),
            "{what}: {checkpoint:?}\n{}",
            self.stdout
        );
    }

    /// The files the summary names for discarded batches (its `-> FILE` lines), relative to
    /// the workspace's root.
    pub fn destination_files(&self) -> Vec<&str> {
        self.stdout
            .lines()
            .filter_map(|line| line.trim_start().strip_prefix("-> "))
            .collect()
    }
}

/// Whether a summary's cell is a sequence number as tables shorten it: digits, `…`, digits.
pub fn is_short_sequence_number(cell: &str) -> bool {
    cell.split_once('…').is_some_and(|(head, tail)| {
        head.len() == 4
            && !tail.is_empty()
            && (head.chars().chain(tail.chars())).all(|c| c.is_ascii_digit())
    })
}

/// Fails unless `text` holds every one of `fragments`, showing the whole text.
#[track_caller]
pub fn assert_says_all(text: &str, fragments: &[&str]) {
    for fragment in fragments {
        assert!(text.contains(fragment), "{fragment:?} is not in:\n{text}");
    }
}

/// Checks the summary's one shard row against `expected` (column, value) pairs.
#[track_caller]
pub fn check_row(run: &Run, expected: &[(&str, &str)]) {
    let rows = run.shard_rows();
    assert_eq!(rows.len(), 1, "one shard in the summary: {run:#?}");
    for (column, value) in expected {
        assert_eq!(
            rows[0].get(*column).map(String::as_str),
            Some(*value),
            "column {column} of the summary:\n{}",
            run.stdout
        );
    }
}

/// Checks that a run ended settled (exit 0) with its one shard's `count` records each delivered
/// once and booked, with no retry.
#[track_caller]
pub fn check_each_booked_once(run: &Run, count: u64) {
    assert_eq!(run.code, Some(0), "{run:#?}");
    let count = count.to_string();
    check_row(
        run,
        &[
            ("state", "caught up"),
            ("records", &count),
            ("deliveries", &count),
            ("acked", &count),
            ("held", "0"),
            ("retries", "0"),
        ],
    );
}

/// A `kinesis-esm` started in the background, its standard error read line by line.
pub struct Running {
    child: tokio::process::Child,
    stderr: tokio::sync::mpsc::UnboundedReceiver<String>,
    seen: Vec<String>,
    stdout: tokio::task::JoinHandle<String>,
}

impl Running {
    /// Starts `kinesis-esm run --template <template> --put <records>` with its logs at `info`,
    /// so that the function's own lines show, and `more` arguments for `run`.
    pub async fn start_with(template: &Path, records: &Path, more: &[&str]) -> Self {
        KinesisEsm::run(template)
            .args(["--put".as_ref(), records.as_os_str()])
            .args(more)
            .log("info")
            .spawn()
            .await
    }

    /// Starts `kinesis-esm` with these arguments, its logs at `info`.
    pub async fn spawn<S: Into<OsString>>(args: impl IntoIterator<Item = S>) -> Self {
        KinesisEsm::new(args).log("info").spawn().await
    }

    fn new(mut child: tokio::process::Child) -> Self {
        use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
        let (lines, stderr) = tokio::sync::mpsc::unbounded_channel();
        let mut reader = tokio::io::BufReader::new(child.stderr.take().expect("piped")).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = reader.next_line().await {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let mut out = child.stdout.take().expect("piped");
        let stdout = tokio::spawn(async move {
            let mut text = String::new();
            let _ = out.read_to_string(&mut text).await;
            text
        });
        Self {
            child,
            stderr,
            seen: Vec::new(),
            stdout,
        }
    }

    /// Waits for a line of standard error that holds `fragment`, and returns it.
    pub async fn wait_for_line(&mut self, fragment: &str) -> String {
        let found = tokio::time::timeout(RUN_TIMEOUT, async {
            while let Some(line) = self.stderr.recv().await {
                self.seen.push(line.clone());
                if line.contains(fragment) {
                    return Some(line);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(line)) => line,
            _ => panic!(
                "kinesis-esm never wrote {fragment:?}; it wrote:\n{}",
                self.seen.join("\n")
            ),
        }
    }

    /// The endpoint `kinesis-esm serve` or `run` says it serves the Kinesis API at.
    pub async fn kinesis_endpoint(&mut self) -> String {
        let line = self.wait_for_line("kinesis-esm: Kinesis API at ").await;
        line.split("Kinesis API at ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_owned()
    }

    /// Sends it SIGTERM.
    pub fn send_sigterm(&self) {
        let pid = self.child.id().expect("kinesis-esm still runs");
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM {pid}: {status}");
    }

    /// Waits for the run to end within `limit`, and returns how it ended.
    pub async fn ended_within(mut self, limit: Duration) -> Run {
        let status = tokio::time::timeout(limit, self.child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "kinesis-esm still ran {limit:?} later; it wrote:\n{}",
                    self.seen.join("\n")
                )
            })
            .expect("kinesis-esm is waited for");
        while let Ok(line) = self.stderr.try_recv() {
            self.seen.push(line);
        }
        // The reader may still hold the last lines: give it a moment to pass them on.
        while let Ok(Some(line)) =
            tokio::time::timeout(Duration::from_millis(200), self.stderr.recv()).await
        {
            self.seen.push(line);
        }
        Run {
            code: status.code(),
            stdout: self.stdout.await.expect("stdout is read"),
            stderr: self.seen.join("\n"),
        }
    }
}

/// `kinesis-esm status --endpoint <endpoint> [--json]`: its standard output, or `None` when it
/// failed (the run is not serving its status yet).
pub async fn status_output(endpoint: &str, json: bool) -> Option<String> {
    let mut args = vec!["status", "--endpoint", endpoint];
    if json {
        args.push("--json");
    }
    let output = tokio::process::Command::new(kinesis_esm_binary().await)
        .args(args)
        .output()
        .await
        .expect("kinesis-esm status starts");
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The mappings' statuses from `kinesis-esm status --json` of the run at `endpoint`; empty while
/// the run does not answer yet or still builds the function.
pub async fn statuses(endpoint: &str) -> Vec<MappingStatus> {
    status_output(endpoint, true)
        .await
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or_default()
}

/// An `aws-sdk-kinesis` client of `endpoint` with the SDK's own defaults, in [`crate::aws::REGION`]
/// with placeholder credentials.
pub fn sdk_client(endpoint: &str) -> aws_sdk_kinesis::Client {
    use aws_sdk_kinesis::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_kinesis::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new(crate::aws::REGION))
        .credentials_provider(Credentials::new("local", "local", None, None, "tests"))
        .build();
    aws_sdk_kinesis::Client::from_conf(config)
}

/// The records of every shard of `stream`, from `TRIM_HORIZON` to the end, through the SDK, in
/// stream order shard by shard.
pub async fn read_every_shard(
    client: &aws_sdk_kinesis::Client,
    stream: &str,
) -> Vec<aws_sdk_kinesis::types::Record> {
    use aws_sdk_kinesis::types::ShardIteratorType;
    let shards = client
        .list_shards()
        .stream_name(stream)
        .send()
        .await
        .expect("ListShards answers");
    let mut records = Vec::new();
    for shard in shards.shards() {
        let iterator = client
            .get_shard_iterator()
            .stream_name(stream)
            .shard_id(shard.shard_id())
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .expect("GetShardIterator answers");
        let mut iterator = iterator.shard_iterator().map(str::to_owned);
        while let Some(current) = iterator {
            let page = client
                .get_records()
                .shard_iterator(current)
                .send()
                .await
                .expect("GetRecords answers");
            records.extend(page.records().iter().cloned());
            // An open shard always has a next iterator: an empty page at the tip is its end.
            let at_tip = matches!(page.millis_behind_latest(), None | Some(0));
            iterator = match page.records().is_empty() && at_tip {
                true => None,
                false => page.next_shard_iterator().map(str::to_owned),
            };
        }
    }
    records
}

/// Interrupts a `kinesis-esm` started by [`KinesisEsm::spawn_piped`] as Ctrl-C does; returns
/// its exit code and standard output (the summary), failing the test if it does not stop within
/// `limit`.
pub async fn interrupt(mut child: tokio::process::Child, limit: Duration) -> (Option<i32>, String) {
    let pid = child.id().expect("kinesis-esm still runs").to_string();
    let killed = tokio::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .await
        .expect("kill runs");
    assert!(killed.success(), "kill -INT {pid}: {killed}");
    let mut summary = String::new();
    let mut stdout = child.stdout.take().expect("kinesis-esm's stdout is piped");
    tokio::time::timeout(
        limit,
        tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut summary),
    )
    .await
    .expect("kinesis-esm stops after Ctrl-C")
    .expect("its standard output is read");
    let status = child.wait().await.expect("kinesis-esm is waited for");
    (status.code(), summary)
}

/// A plain HTTP server on a free loopback port that answers every request with `status` (as
/// `404 Not Found`), `headers` and `body`, then closes the connection; returns its URL.
pub async fn canned_http_server(status: &str, headers: &[(&str, &str)], body: &str) -> String {
    use tokio::io::AsyncWriteExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let address = listener.local_addr().expect("an address");
    let headers: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let answer = format!(
        "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                // The whole request is read before the answer, lest closing with unread bytes
                // reset the connection under the answer.
                if read_request(&mut stream).await {
                    let _ = stream.write_all(answer.as_bytes()).await;
                }
            });
        }
    });
    format!("http://{address}")
}

/// Reads one HTTP request, head and body (by its `content-length`); false if the connection
/// ended first.
async fn read_request(stream: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt as _;
    let mut request = Vec::new();
    let mut chunk = [0_u8; 8192];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(read) => request.extend_from_slice(&chunk[..read]),
        }
        let text = String::from_utf8_lossy(&request);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .filter_map(|line| line.split_once(':'))
                .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, value)| value.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if request.len() >= end + 4 + length {
                return true;
            }
        }
    }
}
