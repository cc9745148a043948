//! What a build says while it runs when stderr is not a terminal (CI, a pipe, a log file):
//! a line when it starts, a line at most every [`PROGRESS_EVERY`], and a line when it is done,
//! so that a first build (a minute or more) is never silence. Pure: the build's reader counts
//! cargo's `compiler-artifact` messages and asks these functions what, if anything, to print.

use std::path::Path;
use std::time::Duration;

/// The least time between two progress lines: often enough to show the build is alive, rarely
/// enough not to flood a CI log.
pub(crate) const PROGRESS_EVERY: Duration = Duration::from_secs(12);

/// Said once, when the build starts.
pub(crate) fn start_line(function: &str, crate_dir: &Path, binary: &str) -> String {
    format!(
        "kinesis-esm: building {function} (cargo build --bin {binary} in {}), the first \
         build of a crate takes a minute or more",
        crate_dir.display()
    )
}

/// The progress line to print now, if any: none until [`PROGRESS_EVERY`] has passed since the
/// last line said (`last_said`, or the start). `total` is the number of crates to compile when
/// known; without it the line says only how many are done.
pub(crate) fn progress_line(
    function: &str,
    compiled: usize,
    total: Option<usize>,
    elapsed: Duration,
    last_said: Option<Duration>,
) -> Option<String> {
    let since = elapsed.saturating_sub(last_said.unwrap_or(Duration::ZERO));
    if since < PROGRESS_EVERY {
        return None;
    }
    let seconds = elapsed.as_secs();
    Some(match total {
        Some(total) => format!(
            "kinesis-esm: still building {function}: {compiled} of {total} crates compiled, {seconds} s"
        ),
        None => {
            format!(
                "kinesis-esm: still building {function}: {compiled} crates compiled, {seconds} s"
            )
        }
    })
}

/// Said once, when the build succeeded.
pub(crate) fn finish_line(function: &str, elapsed: Duration) -> String {
    format!(
        "kinesis-esm: built {function} in {:.1} s",
        elapsed.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(
        compiled: usize,
        total: Option<usize>,
        at: u64,
        last: Option<u64>,
        expected: Option<&str>,
    ) {
        let line = progress_line(
            "shipping",
            compiled,
            total,
            Duration::from_secs(at),
            last.map(Duration::from_secs),
        );
        assert_eq!(line.as_deref(), expected);
    }

    #[test]
    fn nothing_is_said_before_the_interval_has_passed() {
        check(3, Some(310), 5, None, None);
        check(150, Some(310), 30, Some(24), None);
    }

    #[test]
    fn a_line_says_the_counts_and_the_time_once_the_interval_has_passed() {
        check(
            143,
            Some(310),
            35,
            Some(23),
            Some("kinesis-esm: still building shipping: 143 of 310 crates compiled, 35 s"),
        );
        check(
            12,
            Some(310),
            12,
            None,
            Some("kinesis-esm: still building shipping: 12 of 310 crates compiled, 12 s"),
        );
    }

    #[test]
    fn without_a_total_the_line_says_only_what_is_done() {
        check(
            40,
            None,
            13,
            None,
            Some("kinesis-esm: still building shipping: 40 crates compiled, 13 s"),
        );
    }

    #[test]
    fn the_start_and_the_end_are_said_with_the_function() {
        assert_eq!(
            start_line("shipping", Path::new("functions/shipping"), "bootstrap"),
            "kinesis-esm: building shipping (cargo build --bin bootstrap in functions/shipping), \
             the first build of a crate takes a minute or more"
        );
        assert_eq!(
            finish_line("shipping", Duration::from_millis(67_240)),
            "kinesis-esm: built shipping in 67.2 s"
        );
    }
}
