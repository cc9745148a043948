//! The CPU a stretch of the bench used: by this process, by the function processes it started,
//! and by the rest of the machine, which may be shared.

use std::fmt;
use std::path::Path;
use std::time::Instant;

use super::{cores, load_average};

/// CPU time used so far: by this process, by its live children, and by the whole machine.
#[derive(Clone, Copy)]
pub(crate) struct CpuSample {
    at: Instant,
    own: u64,
    children: u64,
    machine: u64,
}

/// Clock ticks per second in `/proc` (`USER_HZ`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

impl CpuSample {
    pub(crate) fn take() -> Self {
        let own_pid = std::process::id();
        let own = process_ticks("/proc/self/stat").map_or(0, |(_, ticks)| ticks);
        let children = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
            .filter_map(|entry| process_ticks(entry.path().join("stat")))
            .filter(|&(parent, _)| parent == own_pid)
            .map(|(_, ticks)| ticks)
            .sum();
        Self {
            at: Instant::now(),
            own,
            children,
            machine: crate::support::machine_busy_ticks().unwrap_or(0),
        }
    }

    pub(crate) fn until_now(self) -> Load {
        let now = Self::take();
        let seconds = now.at.duration_since(self.at).as_secs_f64();
        let cores = |ticks: u64| ticks as f64 / TICKS_PER_SECOND / seconds;
        let own = now.own.saturating_sub(self.own);
        let children = now.children.saturating_sub(self.children);
        let machine = now.machine.saturating_sub(self.machine);
        Load {
            seconds,
            own: cores(own),
            children: cores(children),
            others: cores(machine.saturating_sub(own + children)),
            load_average: load_average(),
        }
    }
}

/// The cores used on average over a stretch of time.
pub(crate) struct Load {
    seconds: f64,
    own: f64,
    children: f64,
    others: f64,
    load_average: String,
}

impl Load {
    /// The CPU time spent per record by this process and by its children, in nanoseconds: the
    /// figure that other work on a shared machine changes least.
    pub(crate) fn cpu_ns_per(&self, records: usize) -> (f64, f64) {
        let per_record = |cores: f64| cores * self.seconds * 1e9 / records as f64;
        (per_record(self.own), per_record(self.children))
    }
}

impl fmt::Display for Load {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cores used: this process {:.2}, function processes {:.2}, the rest of the machine \
             {:.2} (of {}); load average {}",
            self.own,
            self.children,
            self.others,
            cores(),
            self.load_average
        )
    }
}

/// A process's parent and its CPU ticks (user and system), from its `stat` file.
fn process_ticks(stat: impl AsRef<Path>) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(stat).ok()?;
    // The command name may hold spaces and parentheses: the fields follow its last `)`.
    let fields: Vec<&str> = text
        .get(text.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let parent = fields.get(1)?.parse().ok()?;
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some((parent, user + system))
}
