//! What the scale bench reads from `/proc` and the mapping's status.

use std::time::{Duration, Instant};

use kinesis_esm::mapping::{MappingStatus, RunningMapping, ShardPhase};

/// This process's resident memory, in KiB (`VmRSS` in `/proc/self/status`).
pub(crate) fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line in /proc/self/status")
}

/// The CPU time this process's threads have run, in nanoseconds: the sum of the first field of
/// each `/proc/self/task/*/schedstat` (nanosecond-exact, where `/proc/self/stat` counts ticks of
/// 10 ms, too coarse for an idle interval of a hundred shards). A thread that exited is no
/// longer counted, so an interval is measured only while the runtime's threads live.
pub(crate) fn cpu_ns() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|text| text.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// The machine's busy CPU ticks (10 ms), all cores together; 0 where `/proc/stat` cannot be read.
pub(crate) fn machine_busy_ticks() -> u64 {
    crate::support::machine_busy_ticks().unwrap_or(0)
}

/// How busy the machine and this process were over an interval.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Interval {
    started: Instant,
    own_ns: u64,
    machine_ticks: u64,
}

/// What an [`Interval`] measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spent {
    pub(crate) seconds: f64,
    /// This process's CPU time, in nanoseconds.
    pub(crate) own_ns: u64,
    /// The cores everything else on the machine used meanwhile.
    pub(crate) other_cores: f64,
}

impl Interval {
    pub(crate) fn start() -> Self {
        Self {
            started: Instant::now(),
            own_ns: cpu_ns(),
            machine_ticks: machine_busy_ticks(),
        }
    }

    pub(crate) fn end(self) -> Spent {
        let seconds = self.started.elapsed().as_secs_f64();
        let own_ns = cpu_ns().saturating_sub(self.own_ns);
        let machine_ns = machine_busy_ticks().saturating_sub(self.machine_ticks) * 10_000_000;
        Spent {
            seconds,
            own_ns,
            other_cores: machine_ns.saturating_sub(own_ns) as f64 / 1e9 / seconds,
        }
    }
}

/// Polls the mapping's status (every 10 ms, reading it in place: a watcher woken by every
/// change would add work per change over every shard to what is measured) until `condition`
/// holds or `limit` passes. Returns how long it took, or `None` at the limit.
pub(crate) async fn poll_until(
    mapping: &RunningMapping,
    limit: Duration,
    condition: impl Fn(&MappingStatus) -> bool,
) -> Option<Duration> {
    let status = mapping.status_receiver();
    let started = Instant::now();
    loop {
        if condition(&status.borrow()) {
            return Some(started.elapsed());
        }
        if started.elapsed() > limit {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether `shards` shards have been read to their tip at least once.
pub(crate) fn every_shard_caught_up(status: &MappingStatus, shards: usize) -> bool {
    status.shards.len() >= shards
        && status
            .shards
            .values()
            .all(|shard| shard.phase == ShardPhase::CaughtUp)
}

/// Records acked over every shard.
pub(crate) fn acked(status: &MappingStatus) -> u64 {
    status.shards.values().map(|shard| shard.acked).sum()
}

/// `part / whole`, or 0 when `whole` is 0.
pub(crate) fn per(part: f64, whole: f64) -> f64 {
    if whole == 0.0 { 0.0 } else { part / whole }
}
