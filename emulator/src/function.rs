//! Building a function's binary with cargo, as `cargo lambda build` would for the host.
//!
//! The emulator runs a function's own binary (for Rust, the `bootstrap` that `lambda_runtime`
//! drives) under its Runtime API. [`build_function`] builds that binary from the function's crate
//! and says where cargo put it, whether the crate is a workspace member (such as
//! `functions/shipping`) or a crate of its own.

use std::ffi::OsString;
use std::fmt;
use std::io::{self, BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::Instant;

mod build_progress;

/// How many lines of cargo's diagnostics a failed build reports.
const DIAGNOSTIC_TAIL_LINES: usize = 40;

/// Why a function's binary could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Cargo itself could not be run.
    #[error("could not run `{cargo} build` for binary `{binary}` of the crate in {}: {source}", crate_dir.display())]
    CargoNotRun {
        /// The cargo command that was tried (the `CARGO` variable, or `cargo`).
        cargo: String,
        /// The crate's folder.
        crate_dir: PathBuf,
        /// The binary asked for.
        binary: String,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// Cargo ran and the build failed.
    #[error("building binary `{binary}` of the crate in {} failed ({status}):\n{diagnostics}", crate_dir.display())]
    Failed {
        /// The crate's folder.
        crate_dir: PathBuf,
        /// The binary asked for.
        binary: String,
        /// How cargo exited.
        status: ExitStatus,
        /// The last lines cargo and the compiler printed: the errors are there.
        diagnostics: String,
    },
    /// The build succeeded but cargo reported no executable of that name.
    #[error("cargo built the crate in {} but reported no executable named `{binary}`", crate_dir.display())]
    NoExecutable {
        /// The crate's folder.
        crate_dir: PathBuf,
        /// The binary asked for.
        binary: String,
    },
}

/// Builds the binary `binary` of the crate in `crate_dir` (debug, or release when `release`) and
/// returns the path of the executable cargo made.
///
/// It runs `cargo build --bin <binary> --message-format=json-render-diagnostics` in `crate_dir`,
/// with the cargo named by the `CARGO` environment variable when it is set (as it is inside
/// `cargo test` and `cargo run`), else `cargo` from `PATH`. Cargo finds the workspace itself, so
/// a workspace member builds into the workspace's `target/` and a crate of its own into its own.
/// The call blocks until cargo is done: from async code, call it in `spawn_blocking`.
///
/// # Errors
/// When cargo cannot run, the build fails (the error holds the tail of the diagnostics), or no
/// executable of that name comes out of it.
pub fn build_function(
    crate_dir: &Path,
    binary: &str,
    release: bool,
) -> Result<PathBuf, BuildError> {
    build_function_saying(crate_dir, binary, release, None)
}

/// [`build_function`], saying on stderr what the build is doing while it runs when `function`
/// is given (its name): a line when it starts, a progress line now and then, a line when it is
/// done (`build_progress.rs`). For a stderr that is not a terminal, where nothing else shows the build
/// is alive.
///
/// # Errors
/// As [`build_function`].
pub fn build_function_saying(
    crate_dir: &Path,
    binary: &str,
    release: bool,
    function: Option<&str>,
) -> Result<PathBuf, BuildError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(&cargo);
    command
        .current_dir(crate_dir)
        .arg("build")
        .arg("--manifest-path")
        .arg(crate_dir.join("Cargo.toml"))
        .args(["--bin", binary, "--message-format=json-render-diagnostics"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if release {
        command.arg("--release");
    }
    if let Some(function) = function {
        eprintln!(
            "{}",
            build_progress::start_line(function, crate_dir, binary)
        );
    }
    let output = run_saying(command, function).map_err(|source| BuildError::CargoNotRun {
        cargo: cargo.to_string_lossy().into_owned(),
        crate_dir: crate_dir.to_owned(),
        binary: binary.to_owned(),
        source,
    })?;
    if !output.status.success() {
        return Err(BuildError::Failed {
            crate_dir: crate_dir.to_owned(),
            binary: binary.to_owned(),
            status: output.status,
            diagnostics: tail(
                &String::from_utf8_lossy(&output.stderr),
                DIAGNOSTIC_TAIL_LINES,
            )
            .to_string(),
        });
    }
    executable_in_messages(&output.stdout, binary).ok_or_else(|| BuildError::NoExecutable {
        crate_dir: crate_dir.to_owned(),
        binary: binary.to_owned(),
    })
}

/// Runs cargo to the end, as `Command::output` does, but reads its messages as they come so
/// that the compiled crates can be counted and said (when `function` is given).
fn run_saying(mut command: Command, function: Option<&str>) -> io::Result<Output> {
    let started = Instant::now();
    let mut child = command.spawn()?;
    let mut stderr = child.stderr.take().expect("stderr is piped");
    // Cargo's diagnostics are read apart, or a full stderr pipe would stop cargo.
    let diagnostics = std::thread::spawn(move || {
        let mut text = Vec::new();
        stderr.read_to_end(&mut text).map(|_| text)
    });
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
    let (mut messages, mut compiled, mut last_said) = (Vec::new(), 0, None);
    let mut line = Vec::new();
    while stdout.read_until(b'\n', &mut line)? > 0 {
        // Only units cargo compiled, not those it found fresh, make a build long.
        if line
            .windows(ARTIFACT.len())
            .any(|window| window == ARTIFACT)
        {
            compiled += 1;
        }
        messages.append(&mut line);
        let Some(function) = function else { continue };
        let elapsed = started.elapsed();
        if let Some(said) =
            build_progress::progress_line(function, compiled, None, elapsed, last_said)
        {
            eprintln!("{said}");
            last_said = Some(elapsed);
        }
    }
    let status = child.wait()?;
    let stderr = diagnostics.join().unwrap_or_else(|_| Ok(Vec::new()))?;
    if let (Some(function), true) = (function, status.success()) {
        eprintln!(
            "{}",
            build_progress::finish_line(function, started.elapsed())
        );
    }
    Ok(Output {
        status,
        stdout: messages,
        stderr,
    })
}

/// The mark of a `compiler-artifact` message among cargo's JSON lines.
const ARTIFACT: &[u8] = br#""reason":"compiler-artifact""#;

/// The executable of the binary target `binary` among cargo's JSON messages, one per line (the
/// standard output of a cargo command given `--message-format=json`). Lines that are not such
/// messages are passed over.
pub fn executable_in_messages(messages: &[u8], binary: &str) -> Option<PathBuf> {
    #[derive(serde::Deserialize)]
    struct Message {
        reason: String,
        target: Option<Target>,
        executable: Option<PathBuf>,
    }
    #[derive(serde::Deserialize)]
    struct Target {
        name: String,
        kind: Vec<String>,
    }

    messages
        .split(|&byte| byte == b'\n')
        // Lines that are not cargo's messages (a build script may print anything) are skipped.
        .filter_map(|line| serde_json::from_slice::<Message>(line).ok())
        .filter(|message| message.reason == "compiler-artifact")
        .filter(|message| {
            message.target.as_ref().is_some_and(|target| {
                target.name == binary && target.kind.iter().any(|kind| kind == "bin")
            })
        })
        .find_map(|message| message.executable)
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> Tail<'_> {
    let kept: Vec<&str> = text.lines().collect();
    let skipped = kept.len().saturating_sub(lines);
    Tail {
        skipped,
        lines: kept[skipped..].to_vec(),
    }
}

struct Tail<'a> {
    skipped: usize,
    lines: Vec<&'a str>,
}

impl fmt::Display for Tail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.skipped > 0 {
            writeln!(f, "[... {} earlier lines]", self.skipped)?;
        }
        f.write_str(&self.lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_executable(messages: &str, binary: &str, expected: Option<&str>) {
        assert_eq!(
            executable_in_messages(messages.as_bytes(), binary),
            expected.map(PathBuf::from)
        );
    }

    const LIB_ARTIFACT: &str = r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"shipping"},"executable":null}"#;
    const BIN_ARTIFACT: &str = r#"{"reason":"compiler-artifact","target":{"kind":["bin"],"name":"bootstrap"},"executable":"/t/debug/bootstrap","fresh":true}"#;
    const FINISHED: &str = r#"{"reason":"build-finished","success":true}"#;

    #[test]
    fn the_binary_artifact_gives_the_executable() {
        let messages = [LIB_ARTIFACT, BIN_ARTIFACT, FINISHED].join("\n");
        check_executable(&messages, "bootstrap", Some("/t/debug/bootstrap"));
    }

    #[test]
    fn another_binary_is_not_taken() {
        let messages = [LIB_ARTIFACT, BIN_ARTIFACT, FINISHED].join("\n");
        check_executable(&messages, "other", None);
    }

    #[test]
    fn a_library_of_the_same_name_is_not_an_executable() {
        check_executable(LIB_ARTIFACT, "shipping", None);
    }

    #[test]
    fn lines_that_are_not_messages_are_skipped() {
        let messages = ["warning: printed by a build script", BIN_ARTIFACT, ""].join("\n");
        check_executable(&messages, "bootstrap", Some("/t/debug/bootstrap"));
    }

    #[test]
    fn the_tail_keeps_the_last_lines_and_says_how_many_it_left_out() {
        assert_eq!(
            tail("a\nb\nc\nd", 2).to_string(),
            "[... 2 earlier lines]\nc\nd"
        );
        assert_eq!(tail("a\nb", 5).to_string(), "a\nb");
    }
}
