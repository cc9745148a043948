//! The function's process: how it starts, where its output goes, how its end is told.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{oneshot, watch};

use super::abort_on_drop::AbortOnDrop;
use super::function_log::{self, Detail, Level};

/// How many of the last lines of its standard error a process that exited is described with.
const STDERR_TAIL_LINES: usize = 12;

/// The longest line of the tail kept, in characters: a runaway line must not fill the message.
const STDERR_TAIL_LINE_CHARS: usize = 500;

/// How long the end of a process waits for the last of its standard error. A grandchild that
/// inherited the pipe can keep it open for ever; its lines then simply miss the tail.
const STDERR_DRAIN_WAIT: Duration = Duration::from_millis(500);

/// Which environment a process belongs to, and how its lines are logged.
#[derive(Debug, Clone)]
pub(super) struct Label {
    pub(super) function: Arc<str>,
    pub(super) number: u64,
    pub(super) style: LineStyle,
}

/// How a function's lines are written to the emulator's log (`docs/function-logs.md`).
#[derive(Debug, Clone, Copy)]
pub(super) struct LineStyle {
    pub(super) detail: Detail,
    /// Whether the emulator writes JSON: the function's fields then go in fields of their own.
    pub(super) json: bool,
    /// Lines less severe than this are dropped, as Lambda drops them under `LogFormat: JSON`
    /// and an `ApplicationLogLevel`.
    pub(super) application_level: Option<Level>,
}

/// How a function's process ended.
#[derive(Debug)]
pub(super) struct ExitReport {
    /// Its exit status, unless waiting for it failed.
    status: Option<ExitStatus>,
    /// Whether the emulator killed it (after a timeout, or to stop).
    pub(super) killed: bool,
    /// The last lines it wrote to standard error.
    stderr_tail: Vec<String>,
}

impl ExitReport {
    /// The exit status in Lambda's words (`exit status 101`, `signal 6 (SIGABRT)`).
    pub(super) fn status(&self) -> String {
        match self.status {
            None => "an unknown status (waiting for the process failed)".to_owned(),
            Some(status) => describe_status(status),
        }
    }

    /// The last lines of standard error, one per line, or a note that there were none.
    pub(super) fn stderr_tail(&self) -> String {
        if self.stderr_tail.is_empty() {
            "(it wrote nothing to stderr)".to_owned()
        } else {
            self.stderr_tail.join("\n")
        }
    }
}

fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        if let Some(signal) = status.signal() {
            let name = match signal {
                1 => " (SIGHUP)",
                2 => " (SIGINT)",
                4 => " (SIGILL)",
                6 => " (SIGABRT)",
                7 => " (SIGBUS)",
                8 => " (SIGFPE)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                13 => " (SIGPIPE)",
                15 => " (SIGTERM)",
                _ => "",
            };
            let core = if status.core_dumped() {
                ", core dumped"
            } else {
                ""
            };
            return format!("signal {signal}{name}{core}");
        }
    }
    status.to_string()
}

/// A running function process. Dropping it kills the process.
#[derive(Debug)]
pub(super) struct Process {
    /// The process id, while it runs.
    pub(super) pid: Option<u32>,
    /// Becomes `Some` once the process has ended and its output is read.
    pub(super) exited: watch::Receiver<Option<Arc<ExitReport>>>,
    /// Sending on it, or dropping it, tells the supervisor to kill the process.
    kill: std::sync::Mutex<Option<oneshot::Sender<()>>>,
}

impl Process {
    /// Kills the process now, before the last owner drops it: on Managed Instances an
    /// environment is shared by the invocations in flight in it, and one of them (a timeout)
    /// may end it for all.
    pub(super) fn kill(&self) {
        let sender = self
            .kill
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(sender) = sender {
            let _ = sender.send(());
        }
    }
}

/// Starts `binary` in `task_root` with exactly `environment`, its output forwarded to the log.
/// The process is killed when the returned [`Process`] is dropped or `shutdown` turns true (or
/// its sender goes away). `endpoint`, the task serving its Runtime API, is stopped once the
/// process has ended: a runtime must not see its endpoint vanish while it lives, lest it log
/// connection errors that are not its fault.
pub(super) fn start(
    binary: &Path,
    task_root: &Path,
    environment: impl IntoIterator<Item = (String, OsString)>,
    label: Label,
    shutdown: watch::Receiver<bool>,
    endpoint: AbortOnDrop,
) -> io::Result<Process> {
    let mut child = Command::new(binary)
        .current_dir(task_root)
        .env_clear()
        .envs(environment)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Should the emulator stop without running its shutdown (a panic, a dropped runtime),
        // the function must not outlive it.
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id();
    let stderr_tail = Arc::new(Mutex::new(Tail::default()));
    if let Some(stdout) = child.stdout.take() {
        tokio::spawn(forward(stdout, "stdout", label.clone(), None));
    }
    let stderr_done = child.stderr.take().map(|stderr| {
        tokio::spawn(forward(
            stderr,
            "stderr",
            label.clone(),
            Some(Arc::clone(&stderr_tail)),
        ))
    });
    let (kill, killed) = oneshot::channel();
    let (exit_sender, exited) = watch::channel(None);
    tokio::spawn(async move {
        let (status, killed) = wait_or_kill(&mut child, killed, shutdown).await;
        drop(endpoint);
        if let Some(stderr_done) = stderr_done {
            let _ = tokio::time::timeout(STDERR_DRAIN_WAIT, stderr_done).await;
        }
        let stderr_tail = stderr_tail
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .lines();
        let report = ExitReport {
            status,
            killed,
            stderr_tail,
        };
        tracing::debug!(
            function = %label.function,
            environment = label.number,
            status = %report.status(),
            killed,
            "the function's process ended"
        );
        exit_sender.send_replace(Some(Arc::new(report)));
    });
    Ok(Process {
        pid,
        exited,
        kill: std::sync::Mutex::new(Some(kill)),
    })
}

/// Waits for the process to end by itself, or kills it when told to.
async fn wait_or_kill(
    child: &mut Child,
    kill: oneshot::Receiver<()>,
    mut shutdown: watch::Receiver<bool>,
) -> (Option<ExitStatus>, bool) {
    tokio::select! {
        status = child.wait() => return (status.ok(), false),
        // Told (or the sender dropped): either way the environment is done with the process.
        _ = kill => {}
        _ = shutdown.wait_for(|&stop| stop) => {}
    }
    let _ = child.start_kill();
    (child.wait().await.ok(), true)
}

/// Forwards each line `reader` gives to the log; keeps the last ones in `tail` when given one.
async fn forward(
    reader: impl AsyncRead + Unpin,
    stream: &'static str,
    label: Label,
    tail: Option<Arc<Mutex<Tail>>>,
) {
    let mut reader = BufReader::new(reader);
    let mut lines = function_log::LineReader::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        while line
            .last()
            .is_some_and(|&byte| byte == b'\n' || byte == b'\r')
        {
            line.pop();
        }
        if line.is_empty() {
            continue;
        }
        strip_ansi_escapes(&mut line);
        let text = String::from_utf8_lossy(&line);
        log_line(&label, stream, lines.read(&text));
        if let Some(tail) = &tail {
            tail.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&text);
        }
    }
}

/// The target of function lines, so that `--function-log-level` filters them apart.
pub const FUNCTION_LOG_TARGET: &str = "function";

/// Logs one line the function wrote, at its own level.
fn log_line(label: &Label, stream: &'static str, line: function_log::FunctionLine) {
    if label
        .style
        .application_level
        .is_some_and(|least| line.level < least)
    {
        return;
    }
    // The page shows what the log shows, before any level filter of the emulator's own.
    super::log_tap::tap(&label.function, &line);
    let (spans, body) = function_log::render(&line, label.style.detail);
    let function = &*label.function;
    let full = label.style.detail == Detail::Full;
    macro_rules! emit {
        ($level:expr) => {
            match (label.style.json, full) {
                (true, false) => tracing::event!(
                    target: FUNCTION_LOG_TARGET,
                    $level,
                    function,
                    fields = %render_fields(&line),
                    "{}",
                    line.message
                ),
                (true, true) => tracing::event!(
                    target: FUNCTION_LOG_TARGET,
                    $level,
                    function,
                    environment = label.number,
                    stream,
                    spans = %spans,
                    fields = %event_fields(&line),
                    "{}",
                    line.message
                ),
                (false, false) => {
                    tracing::event!(target: FUNCTION_LOG_TARGET, $level, "{function}: {body}")
                }
                (false, true) => tracing::event!(
                    target: FUNCTION_LOG_TARGET,
                    $level,
                    environment = label.number,
                    stream,
                    "{function}: {spans}{}{body}",
                    if spans.is_empty() { "" } else { ": " }
                ),
            }
        };
    }
    match line.level {
        Level::Trace => emit!(tracing::Level::TRACE),
        Level::Debug => emit!(tracing::Level::DEBUG),
        Level::Info => emit!(tracing::Level::INFO),
        Level::Warn => emit!(tracing::Level::WARN),
        Level::Error => emit!(tracing::Level::ERROR),
    }
}

/// The fields of a line for the emulator's JSON log: the event's own after its span's, as in
/// the compact text.
fn render_fields(line: &function_log::FunctionLine) -> String {
    let without_message = function_log::FunctionLine {
        message: String::new(),
        ..line.clone()
    };
    function_log::render(&without_message, Detail::Compact).1
}

/// The event's own fields, without those of its spans (which the full line shows apart).
fn event_fields(line: &function_log::FunctionLine) -> String {
    let event_only = function_log::FunctionLine {
        message: String::new(),
        spans: Vec::new(),
        ..line.clone()
    };
    function_log::render(&event_only, Detail::Compact).1
}

/// Removes terminal colour codes (`ESC [ ... m` and the other CSI sequences) from a line: a
/// function's logger colours its output when it believes it writes to a terminal, and the
/// emulator's own log would show the codes as text.
pub(super) fn strip_ansi_escapes(line: &mut Vec<u8>) {
    let mut kept = 0;
    let mut index = 0;
    while index < line.len() {
        if line[index] == 0x1b && line.get(index + 1) == Some(&b'[') {
            index += 2;
            while index < line.len() && !(0x40..=0x7e).contains(&line[index]) {
                index += 1;
            }
            index += 1;
            continue;
        }
        line[kept] = line[index];
        kept += 1;
        index += 1;
    }
    line.truncate(kept);
}

/// The last lines a process wrote, and the last Rust panic among all of them: a panic's
/// backtrace can push its message out of the last lines, and the message says most.
#[derive(Debug, Default)]
struct Tail {
    last: VecDeque<String>,
    /// The `panicked at` line and the message line after it, when one was seen.
    panic: Vec<String>,
    /// Whether the line before was a `panicked at` line.
    after_panic_line: bool,
    /// How many lines were pushed in all.
    count: usize,
    /// The count when the panic line was seen.
    panic_at: usize,
}

impl Tail {
    fn push(&mut self, line: &str) {
        let line: String = line.chars().take(STDERR_TAIL_LINE_CHARS).collect();
        self.count += 1;
        if self.after_panic_line {
            self.panic.push(line.clone());
            self.after_panic_line = false;
        }
        if line.contains(" panicked at ") {
            self.panic = vec![line.clone()];
            self.after_panic_line = true;
            self.panic_at = self.count;
        }
        if self.last.len() == STDERR_TAIL_LINES {
            self.last.pop_front();
        }
        self.last.push_back(line);
    }

    /// The panic's lines, when they are no longer among the last ones, then the last lines.
    fn lines(&self) -> Vec<String> {
        let first_kept = self.count - self.last.len() + 1;
        let mut lines = Vec::with_capacity(self.panic.len() + 1 + self.last.len());
        if !self.panic.is_empty() && self.panic_at < first_kept {
            lines.extend(self.panic.iter().cloned());
            lines.push("[...]".to_owned());
        }
        lines.extend(self.last.iter().cloned());
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_tail(written: &[&str], expected: &[&str]) {
        let mut tail = Tail::default();
        for line in written {
            tail.push(line);
        }
        assert_eq!(tail.lines(), expected);
    }

    #[test]
    fn the_tail_is_the_last_lines() {
        check_tail(&["a", "b"], &["a", "b"]);
        let many: Vec<String> = (0..20).map(|n| n.to_string()).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        check_tail(&many, &many[20 - STDERR_TAIL_LINES..]);
    }

    #[test]
    fn a_panic_pushed_out_by_its_backtrace_is_kept_before_the_tail() {
        let backtrace: Vec<String> = (0..STDERR_TAIL_LINES)
            .map(|n| format!("  {n}: frame"))
            .collect();
        let mut written = vec![
            "starting",
            "thread 'main' (7) panicked at src/main.rs:1:1:",
            "boom",
        ];
        written.extend(backtrace.iter().map(String::as_str));
        let mut expected = vec![
            "thread 'main' (7) panicked at src/main.rs:1:1:",
            "boom",
            "[...]",
        ];
        expected.extend(backtrace.iter().map(String::as_str));
        check_tail(&written, &expected);
    }

    #[test]
    fn a_panic_still_in_the_tail_is_not_repeated() {
        let written = [
            "thread 'main' panicked at src/main.rs:1:1:",
            "boom",
            "note: ...",
        ];
        check_tail(&written, &written);
    }
}

#[cfg(all(test, unix))]
mod unix_tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt as _;

    #[track_caller]
    fn check_status(raw_wait_status: i32, expected: &str) {
        assert_eq!(
            describe_status(ExitStatus::from_raw(raw_wait_status)),
            expected
        );
    }

    #[test]
    fn exit_codes_and_signals_are_described_as_lambda_does() {
        check_status(101 << 8, "exit status 101");
        check_status(0, "exit status 0");
        check_status(6, "signal 6 (SIGABRT)");
        check_status(9, "signal 9 (SIGKILL)");
        check_status(6 | 0x80, "signal 6 (SIGABRT), core dumped");
        check_status(31, "signal 31");
    }

    #[test]
    fn colour_codes_are_removed() {
        let mut line = b"\x1b[33m WARN\x1b[0m \x1b[1mship\x1b[0m{id=1}: held".to_vec();
        super::strip_ansi_escapes(&mut line);
        assert_eq!(line, b" WARN ship{id=1}: held");
    }
}
