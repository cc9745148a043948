//! Live progress of `kinesis-esm run` in a terminal: a line per shard, redrawn in place, with the
//! logs scrolling above it.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::watch;

use esm_engine::invoke::Invoker;
use esm_engine::mapping::MappingStatus;

/// The mappings' statuses as they change, each with its function's invoker (`run`'s
/// `Statuses`); the progress lines read only the statuses.
type Mappings = Arc<Mutex<Vec<(watch::Receiver<MappingStatus>, Arc<dyn Invoker>)>>>;

/// How often the lines are redrawn.
const REFRESH: Duration = Duration::from_millis(250);

/// The progress lines, and the log writer that keeps them at the bottom.
#[derive(Clone)]
pub(super) struct Progress {
    lines: MultiProgress,
}

impl Progress {
    /// Progress on standard error, when it is a terminal.
    pub(super) fn for_terminal() -> Option<Self> {
        use std::io::IsTerminal as _;
        std::io::stderr().is_terminal().then(|| Self {
            lines: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
        })
    }

    /// A log writer that writes above the progress lines instead of through them.
    pub(super) fn log_writer(&self) -> LogWriter {
        LogWriter {
            lines: self.lines.clone(),
        }
    }

    /// Redraws a line per shard of `mappings` until `stop` turns true, then removes the lines.
    pub(super) async fn show(self, mappings: Mappings, mut stop: watch::Receiver<bool>) {
        let style = ProgressStyle::with_template("{spinner} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let mut bars: BTreeMap<(usize, String), ProgressBar> = BTreeMap::new();
        loop {
            let statuses: Vec<MappingStatus> = mappings
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|(status, _)| status.borrow().clone())
                .collect();
            for (index, status) in statuses.iter().enumerate() {
                for shard in status.shards.values() {
                    let bar = bars
                        .entry((index, shard.shard_id.clone()))
                        .or_insert_with(|| {
                            let bar = self.lines.add(ProgressBar::new_spinner());
                            bar.set_style(style.clone());
                            bar
                        });
                    bar.set_message(crate::summary::progress_line(
                        &status.function_name,
                        shard,
                        std::time::SystemTime::now(),
                    ));
                    bar.tick();
                }
            }
            tokio::select! {
                () = tokio::time::sleep(REFRESH) => {}
                _ = stop.wait_for(|stop| *stop) => break,
            }
        }
        for bar in bars.into_values() {
            bar.finish_and_clear();
        }
        let _ = self.lines.clear();
    }
}

/// Where logs go while progress lines are shown: each event is written above them.
#[derive(Clone)]
pub(super) struct LogWriter {
    lines: MultiProgress,
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogLine;

    fn make_writer(&'a self) -> LogLine {
        LogLine {
            lines: self.lines.clone(),
            text: Vec::new(),
        }
    }
}

/// One log event, written above the progress lines when it is complete.
pub(super) struct LogLine {
    lines: MultiProgress,
    text: Vec<u8>,
}

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        let text = std::mem::take(&mut self.text);
        self.lines.suspend(|| {
            let _ = std::io::stderr().write_all(&text);
        });
    }
}
