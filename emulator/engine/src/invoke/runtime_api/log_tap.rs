//! The function lines as they are logged, for the live page (`crate::page`): the newest few are
//! kept, and each is handed to whoever listens. A process has one tap, as it has one log.

use std::collections::VecDeque;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use serde::Serialize;
use tokio::sync::broadcast;

use super::function_log::{self, Detail, FunctionLine};

/// How many lines the tap keeps for a page opened later.
const KEPT_LINES: usize = 500;

/// How many lines a slow listener may fall behind before it misses some.
const LISTENER_BACKLOG: usize = 1024;

/// A function line, as the page shows and filters it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TappedLine {
    /// When it was logged, in milliseconds since the Unix epoch.
    pub at_epoch_millis: i64,
    /// The function's name.
    pub function: Arc<str>,
    /// Its level: `TRACE`, `DEBUG`, `INFO`, `WARN` or `ERROR`.
    pub level: &'static str,
    /// The message with its fields, as the compact log line shows it.
    pub text: String,
    /// The shard of the record it was logged for (the adapter's `record` span), if any.
    pub shard_id: Option<String>,
    /// The sequence number of that record, if any.
    pub sequence_number: Option<String>,
}

struct Tap {
    kept: Mutex<VecDeque<TappedLine>>,
    listeners: broadcast::Sender<TappedLine>,
}

static TAP: LazyLock<Tap> = LazyLock::new(|| Tap {
    kept: Mutex::new(VecDeque::with_capacity(KEPT_LINES)),
    listeners: broadcast::channel(LISTENER_BACKLOG).0,
});

/// The lines kept so far, oldest first, and a receiver of every line logged from now on.
pub fn function_lines() -> (Vec<TappedLine>, broadcast::Receiver<TappedLine>) {
    // Subscribing under the lock: no line falls between the two.
    let kept = TAP.kept.lock().unwrap_or_else(PoisonError::into_inner);
    (kept.iter().cloned().collect(), TAP.listeners.subscribe())
}

/// Keeps and hands on one line of `function`.
pub(super) fn tap(function: &Arc<str>, line: &FunctionLine) {
    let span_field = |key: &str| {
        line.spans
            .iter()
            .rev()
            .flat_map(|span| span.fields.iter())
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.trim_matches('"').to_owned())
    };
    let tapped = TappedLine {
        at_epoch_millis: kinesis_source::time::millis_since_epoch(std::time::SystemTime::now()),
        function: Arc::clone(function),
        level: level_name(line.level),
        text: function_log::render(line, Detail::Compact).1,
        shard_id: span_field("shard_id"),
        sequence_number: span_field("sequence_number"),
    };
    let mut kept = TAP.kept.lock().unwrap_or_else(PoisonError::into_inner);
    if kept.len() == KEPT_LINES {
        kept.pop_front();
    }
    kept.push_back(tapped.clone());
    // No listener is no error: the line is kept.
    let _ = TAP.listeners.send(tapped);
}

fn level_name(level: function_log::Level) -> &'static str {
    match level {
        function_log::Level::Trace => "TRACE",
        function_log::Level::Debug => "DEBUG",
        function_log::Level::Info => "INFO",
        function_log::Level::Warn => "WARN",
        function_log::Level::Error => "ERROR",
    }
}
