//! What the tests share: a compact notation for outcomes, test handlers and log capture.

use std::cell::RefCell;
use std::io;
use std::sync::{Arc, Mutex, Once, PoisonError};

use lambda_kinesis::HandlerOutcome;
use lambda_kinesis::lambda_runtime::tracing::subscriber;
use lambda_kinesis::settlement::{DropReason, HoldReason, RecordOutcome, Settlement, SkipReason};
use serde::{Deserialize, Serialize};
use subscriber::Layer as _;
use subscriber::layer::SubscriberExt as _;
use subscriber::util::SubscriberInitExt as _;

/// What a test record asks its handler to decide; records carry it as their JSON data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Decision {
    Ack,
    Drop,
    Hold,
}

impl Decision {
    /// Reads a decision from its one-word name, for compact test tables.
    #[track_caller]
    pub(crate) fn parse(word: &str) -> Self {
        match word {
            "ack" => Self::Ack,
            "drop" => Self::Drop,
            "hold" => Self::Hold,
            other => panic!("no decision is called {other:?}"),
        }
    }

    pub(crate) fn outcome(self) -> HandlerOutcome {
        match self {
            Self::Ack => HandlerOutcome::ack(),
            Self::Drop => HandlerOutcome::drop(),
            Self::Hold => HandlerOutcome::hold(),
        }
    }
}

/// The plainest handler: does what the record says.
pub(crate) async fn decide(decision: &Decision) -> HandlerOutcome {
    decision.outcome()
}

/// A record of the calls a handler received, shared between the test and the handler.
#[derive(Debug)]
pub(crate) struct Calls<T>(Arc<Mutex<Vec<T>>>);

impl<T> Default for Calls<T> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<T> Clone for Calls<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T: Clone> Calls<T> {
    pub(crate) fn push(&self, call: T) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call);
    }

    pub(crate) fn taken(&self) -> Vec<T> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl<T: Clone + Send + 'static> Calls<T> {
    /// A record handler that notes each record it is handed here, then answers at once with
    /// what `decide` says (a panic in `decide` comes before the handler's future exists).
    pub(crate) fn noting_handler(
        &self,
        decide: impl Fn(&T) -> HandlerOutcome + Send + Sync + 'static,
    ) -> impl Fn(&T) -> std::future::Ready<HandlerOutcome> + Send + Sync + 'static {
        let calls = self.clone();
        move |record: &T| {
            calls.push(record.clone());
            std::future::ready(decide(record))
        }
    }
}

/// One word per record outcome, so a whole settlement reads as a line: `"ack drop hold skip"`.
pub(crate) fn outcome_word(outcome: &RecordOutcome) -> &'static str {
    match outcome {
        RecordOutcome::Acked => "ack",
        RecordOutcome::Dropped(DropReason::Handler) => "drop",
        RecordOutcome::Dropped(DropReason::Undecodable(_)) => "drop:undecodable",
        RecordOutcome::Held(HoldReason::Handler) => "hold",
        RecordOutcome::Held(HoldReason::Error(_)) => "error",
        RecordOutcome::Held(HoldReason::Panicked(_)) => "panic",
        RecordOutcome::Held(HoldReason::Undecodable(_)) => "hold:undecodable",
        RecordOutcome::Held(HoldReason::OutcomeCountMismatch { .. }) => "mismatch",
        RecordOutcome::Skipped(SkipReason::BehindHeldRecord) => "skip",
        RecordOutcome::Skipped(SkipReason::Deadline) => "deadline",
        other => panic!("a test does not know the outcome {other:?}"),
    }
}

/// Every record's outcome, in shard order, as a line of words.
pub(crate) fn outcome_words(settlement: &Settlement) -> String {
    let words: Vec<&str> = settlement.outcomes().iter().map(outcome_word).collect();
    words.join(" ")
}

/// Checks every record's outcome, in shard order, against a line of words.
#[track_caller]
pub(crate) fn check_outcomes(settlement: &Settlement, expected: &str) {
    assert_eq!(
        outcome_words(settlement),
        expected,
        "outcomes, in shard order"
    );
}

/// The response exactly as the runtime sends it to Lambda.
pub(crate) fn response_json(settlement: &Settlement) -> String {
    serde_json::to_string(&settlement.response()).expect("a response serialises")
}

/// Log lines captured as JSON on this thread, from [`LogCapture::start`] until its guard drops.
///
/// One global subscriber serves every test and writes only for the threads that capture (a
/// `current_thread` test runtime runs every future of a test on the test's thread). A subscriber
/// per test (`set_default`) would be simpler, but tracing caches each callsite's interest when it
/// is first hit: a test that hits a callsite while another test's subscriber is being set up can
/// cache "no one listens" for that subscriber, and the other test then misses the line.
#[derive(Clone, Default)]
pub(crate) struct LogCapture {
    written: Arc<Mutex<Vec<u8>>>,
}

thread_local! {
    static CAPTURING: RefCell<Option<LogCapture>> = const { RefCell::new(None) };
}

/// Stops capturing when dropped.
pub(crate) struct CaptureGuard(());

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        CAPTURING.with(|capturing| capturing.borrow_mut().take());
    }
}

impl LogCapture {
    /// Captures every event and span of this thread until the guard is dropped.
    pub(crate) fn start() -> (Self, CaptureGuard) {
        static INSTALLED: Once = Once::new();
        INSTALLED.call_once(|| {
            // A dynamic filter: tracing asks it at every event and span, never caches its answer.
            let capturing = subscriber::filter::dynamic_filter_fn(|_, _| {
                CAPTURING.with(|capturing| capturing.borrow().is_some())
            });
            let json_lines = subscriber::fmt::layer()
                .json()
                .with_current_span(true)
                .with_span_list(true)
                .with_writer(ThreadWriter)
                .with_filter(capturing);
            subscriber::registry()
                .with(json_lines)
                .try_init()
                .expect("no other global subscriber in this test binary");
        });
        // Callsites first hit before the subscriber was installed listen to it from now on.
        lambda_kinesis::tracing::callsite::rebuild_interest_cache();
        let capture = Self::default();
        CAPTURING.with(|capturing| *capturing.borrow_mut() = Some(capture.clone()));
        (capture, CaptureGuard(()))
    }

    /// Every line logged so far, parsed.
    pub(crate) fn lines(&self) -> Vec<serde_json::Value> {
        let written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&written)
            .lines()
            .map(|line| serde_json::from_str(line).expect("each log line is JSON"))
            .collect()
    }

    /// The lines whose message is `message`.
    pub(crate) fn with_message(&self, message: &str) -> Vec<serde_json::Value> {
        self.lines()
            .into_iter()
            .filter(|line| line["fields"]["message"] == message)
            .collect()
    }

    /// The one line whose message is `message`.
    #[track_caller]
    pub(crate) fn one(&self, message: &str) -> serde_json::Value {
        let mut found = self.with_message(message);
        assert_eq!(
            found.len(),
            1,
            "expected one log line {message:?}, got {found:#?}\nall lines: {:#?}",
            self.lines()
        );
        found.remove(0)
    }
}

/// Writes to the capture of the thread that logs, if any.
struct ThreadWriter;

impl io::Write for ThreadWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        CAPTURING.with(|capturing| {
            if let Some(capture) = capturing.borrow().as_ref() {
                capture
                    .written
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend_from_slice(bytes);
            }
        });
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl subscriber::fmt::MakeWriter<'_> for ThreadWriter {
    type Writer = ThreadWriter;

    fn make_writer(&self) -> ThreadWriter {
        ThreadWriter
    }
}
