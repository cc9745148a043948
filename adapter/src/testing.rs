//! A kit for unit-testing Kinesis handlers with in-memory batches.
//!
//! Build an event with [`TestEvent`] (records of typed values or raw bytes, with the shard id,
//! sequence numbers, partition keys and arrival timestamps Lambda gives them), settle it with
//! [`settle`] (or [`settle_with_state`], or several events at once with
//! [`settle_concurrently_with_state`]), and read the [`Settlement`]: each record's outcome, its
//! one-line [`summary`](Settlement::summary), the [`cut`](Settlement::cut) the response names
//! and the records Lambda delivers again:
//!
//! ```
//! use lambda_kinesis::HandlerOutcome;
//! use lambda_kinesis::testing::{settle, TestEvent};
//!
//! async fn double_check(n: &u32) -> HandlerOutcome {
//!     if *n == 2 { HandlerOutcome::hold() } else { HandlerOutcome::ack() }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let event = TestEvent::new().json(&1).json(&2).json(&3);
//! let settlement = settle(double_check, &event).await;
//!
//! assert_eq!(settlement.summary(), "ack hold skip");
//! // The response names record 1: Lambda checkpoints after record 0 and delivers 1 and 2 again.
//! assert_eq!(settlement.cut(), Some(event.cut_at(1)));
//! assert_eq!(settlement.redelivered().count(), 2);
//! # }
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lambda_events::kinesis::KinesisEvent;
use lambda_runtime::Context;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::batch::KinesisBatch;
use crate::handler::{FromRecordData, Handler, SharedState, WithState};
use crate::service::KinesisAdapter;
use crate::settlement::{Cut, Settlement};
use crate::window::event::{WindowEvent, WindowFields, WindowResponse, write_window_event};
use crate::window::{WindowAdapter, WindowError, WindowHandler};
use crate::wire::{EventRecord, EventSource, write_event};

/// The partition key of records added without one.
pub const DEFAULT_PARTITION_KEY: &str = "partition-key";

/// A Kinesis event under construction, shaped like the ones Lambda sends: one shard, sequence
/// numbers of 56 digits that increase record by record, arrival timestamps in milliseconds.
#[derive(Debug, Clone)]
pub struct TestEvent {
    shard_id: String,
    stream_name: String,
    region: String,
    account: String,
    next_arrival_millis: i64,
    records: Vec<TestRecord>,
}

#[derive(Debug, Clone)]
struct TestRecord {
    sequence_number: String,
    partition_key: String,
    data: Vec<u8>,
    arrival_millis: i64,
}

impl Default for TestEvent {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEvent {
    /// An empty event from `shardId-000000000000` of the stream `test-stream` in `us-east-1`.
    pub fn new() -> Self {
        Self {
            shard_id: "shardId-000000000000".to_owned(),
            stream_name: "test-stream".to_owned(),
            region: "us-east-1".to_owned(),
            account: "123456789012".to_owned(),
            // 2026-01-01T00:00:00Z: a fixed time keeps tests repeatable.
            next_arrival_millis: 1_767_225_600_000,
            records: Vec::new(),
        }
    }

    /// Sets the shard the records come from.
    pub fn shard(mut self, shard_id: impl Into<String>) -> Self {
        self.shard_id = shard_id.into();
        self
    }

    /// Sets the stream the records come from (its name; the ARN is built from it).
    pub fn stream(mut self, name: impl Into<String>) -> Self {
        self.stream_name = name.into();
        self
    }

    /// Sets when the records added next arrived; each one after it arrives a millisecond later.
    pub fn arrival(mut self, at: SystemTime) -> Self {
        let millis = at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        self.next_arrival_millis = i64::try_from(millis).unwrap_or(i64::MAX);
        self
    }

    /// Adds a record whose data is `value` as JSON, under [`DEFAULT_PARTITION_KEY`].
    pub fn json(self, value: &impl Serialize) -> Self {
        self.json_keyed(DEFAULT_PARTITION_KEY, value)
    }

    /// Adds a record whose data is `value` as JSON, under `partition_key`.
    pub fn json_keyed(self, partition_key: impl Into<String>, value: &impl Serialize) -> Self {
        let data = serde_json::to_vec(value).expect("the test value serialises to JSON");
        self.bytes_keyed(partition_key, data)
    }

    /// Adds a record of raw bytes (which need not be JSON), under [`DEFAULT_PARTITION_KEY`].
    pub fn bytes(self, data: impl Into<Vec<u8>>) -> Self {
        self.bytes_keyed(DEFAULT_PARTITION_KEY, data)
    }

    /// Adds a record of raw bytes under `partition_key`.
    pub fn bytes_keyed(
        mut self,
        partition_key: impl Into<String>,
        data: impl Into<Vec<u8>>,
    ) -> Self {
        let index = self.records.len() as u64;
        self.records.push(TestRecord {
            // Real sequence numbers are 56 digits and far apart; these keep the shape and grow.
            sequence_number: format!(
                "49590338271490256608559692538361571095921575{:012}",
                989_136_588_898 + index * 1_000
            ),
            partition_key: partition_key.into(),
            data: data.into(),
            arrival_millis: self.next_arrival_millis,
        });
        self.next_arrival_millis += 1;
        self
    }

    /// Adds one Kinesis record holding `aggregate`, a KPL aggregate of user records, under the
    /// first user record's partition key, as the KPL puts it. The adapter hands the handler
    /// each user record on its own; they all share this record's sequence number.
    ///
    /// ```
    /// use lambda_kinesis::aggregate::Aggregate;
    /// use lambda_kinesis::testing::TestEvent;
    ///
    /// let mut aggregate = Aggregate::new();
    /// aggregate.add("order-1", None, br#"{"id":1}"#);
    /// aggregate.add("order-2", None, br#"{"id":2}"#);
    /// let event = TestEvent::new().json(&0).aggregate(&aggregate);
    /// assert_eq!(event.len(), 2); // Kinesis records: the plain one, then the aggregate
    /// ```
    pub fn aggregate(self, aggregate: &crate::aggregate::Aggregate) -> Self {
        let partition_key = aggregate
            .partition_key()
            .unwrap_or(DEFAULT_PARTITION_KEY)
            .to_owned();
        self.bytes_keyed(partition_key, aggregate.to_bytes())
    }

    /// The sequence number of the record at `index`.
    ///
    /// # Panics
    /// When the event has no record at `index`; the message names the index and the number of
    /// records, at the caller's line.
    #[track_caller]
    pub fn sequence_number(&self, index: usize) -> &str {
        match self.records.get(index) {
            Some(record) => &record.sequence_number,
            None => panic!(
                "no record at index {index}: the event holds {} record(s)",
                self.records.len()
            ),
        }
    }

    /// The [`Cut`] at the record at `index`: what [`Settlement::cut`] says when that record is
    /// the first one not settled.
    ///
    /// `index` counts the event's records, while a cut counts the batch's, where an aggregate
    /// stands for its user records: once an aggregate with more than one user record stands in
    /// front of `index`, build the [`Cut`] itself.
    ///
    /// # Panics
    /// When the event has no record at `index`, as [`sequence_number`](Self::sequence_number).
    #[track_caller]
    pub fn cut_at(&self, index: usize) -> Cut<'_> {
        Cut {
            index,
            sequence_number: self.sequence_number(index),
        }
    }

    /// How many Kinesis records the event holds (an aggregate counts as one).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the event holds no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The ARN of the stream the records come from.
    pub fn stream_arn(&self) -> String {
        format!(
            "arn:aws:kinesis:{}:{}:stream/{}",
            self.region, self.account, self.stream_name
        )
    }

    /// The event's JSON, exactly as Lambda would send it.
    pub fn to_json(&self) -> Vec<u8> {
        self.json_of(&self.records)
    }

    /// The records as consecutive events of at most `batch_size` records each, as Lambda would
    /// deliver the shard in batches: the sequence numbers keep growing from one event to the next.
    pub fn to_json_batches(&self, batch_size: usize) -> Vec<Vec<u8>> {
        self.records
            .chunks(batch_size.max(1))
            .map(|records| self.json_of(records))
            .collect()
    }

    fn json_of(&self, records: &[TestRecord]) -> Vec<u8> {
        let mut out = Vec::new();
        self.with_source(|source| write_event(&mut out, source, Self::event_records(records)));
        out
    }

    /// The event's JSON as a tumbling window's invocation, with the window's `fields`.
    pub fn to_window_json(&self, fields: &WindowFields<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        self.with_source(|source| {
            write_window_event(&mut out, source, fields, Self::event_records(&self.records));
        });
        out
    }

    fn with_source(&self, write: impl FnOnce(&EventSource<'_>)) {
        let stream_arn = self.stream_arn();
        let role = format!("arn:aws:iam::{}:role/lambda-kinesis-role", self.account);
        write(&EventSource {
            stream_arn: &stream_arn,
            shard_id: &self.shard_id,
            region: &self.region,
            invoke_identity_arn: &role,
        });
    }

    fn event_records(records: &[TestRecord]) -> impl Iterator<Item = EventRecord<'_>> {
        records.iter().map(|record| EventRecord {
            sequence_number: &record.sequence_number,
            partition_key: &record.partition_key,
            data: &record.data,
            approximate_arrival_millis: record.arrival_millis,
        })
    }

    /// The event as `aws_lambda_events` reads it.
    pub fn to_event(&self) -> KinesisEvent {
        serde_json::from_slice(&self.to_json()).expect("aws_lambda_events reads Lambda's events")
    }
}

impl From<TestEvent> for KinesisBatch {
    /// Reads the event's JSON as the adapter reads Lambda's.
    fn from(event: TestEvent) -> Self {
        KinesisBatch::from_json(&event.to_json()).expect("the adapter reads Lambda's events")
    }
}

impl From<&TestEvent> for KinesisBatch {
    fn from(event: &TestEvent) -> Self {
        KinesisBatch::from_json(&event.to_json()).expect("the adapter reads Lambda's events")
    }
}

/// Settles `event` with `handler` under the default rules, as one invocation without deadline.
pub async fn settle<H, T, K>(handler: H, event: impl Into<KinesisBatch>) -> Settlement
where
    H: Handler<T, K>,
    T: 'static,
    K: 'static,
{
    KinesisAdapter::new(handler)
        .settle(event, &Context::default())
        .await
}

/// Settles `event` with a `handler` that borrows `state`, under the default rules, as one
/// invocation without deadline: how a test injects its own clients.
///
/// ```
/// use std::sync::Mutex;
/// use lambda_kinesis::HandlerOutcome;
/// use lambda_kinesis::testing::{TestEvent, settle_with_state};
///
/// #[derive(Default)]
/// struct Ledger(Mutex<Vec<u32>>);
///
/// async fn record(ledger: &Ledger, n: &u32) -> HandlerOutcome {
///     ledger.0.lock().unwrap().push(*n);
///     HandlerOutcome::ack()
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let settlement = settle_with_state(Ledger::default(), record, TestEvent::new().json(&4)).await;
/// assert_eq!(settlement.summary(), "ack");
/// # }
/// ```
pub async fn settle_with_state<S, H, T, K>(
    state: S,
    handler: H,
    event: impl Into<KinesisBatch>,
) -> Settlement
where
    S: SharedState,
    WithState<S, H>: Handler<T, K>,
    T: 'static,
    K: 'static,
{
    KinesisAdapter::with_state(state, handler)
        .settle(event, &Context::default())
        .await
}

/// Settles every event of `events` at once against one `state`, as concurrent invocations of
/// one execution environment on Lambda Managed Instances do, and returns their settlements in
/// the order of `events`. Each event is its own invocation (its own settlement, without
/// deadline); only the handler and its state are shared.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use lambda_kinesis::HandlerOutcome;
/// use lambda_kinesis::testing::{TestEvent, settle_concurrently_with_state};
///
/// #[derive(Default)]
/// struct Seen(AtomicU32);
///
/// async fn count(seen: &Seen, _: &u32) -> HandlerOutcome {
///     seen.0.fetch_add(1, Ordering::Relaxed);
///     HandlerOutcome::ack()
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let events = [TestEvent::new().json(&1), TestEvent::new().json(&2).json(&3)];
/// let settlements = settle_concurrently_with_state(Seen::default(), count, events).await;
/// assert_eq!(settlements.len(), 2);
/// assert_eq!(settlements[1].summary(), "ack ack");
/// # }
/// ```
pub async fn settle_concurrently_with_state<S, H, T, K, E>(
    state: S,
    handler: H,
    events: impl IntoIterator<Item = E>,
) -> Vec<Settlement>
where
    S: SharedState,
    WithState<S, H>: Handler<T, K>,
    T: 'static,
    K: 'static,
    E: Into<KinesisBatch>,
{
    let adapter = KinesisAdapter::with_state(state, handler);
    let context = Context::default();
    let settlements = events
        .into_iter()
        .map(|event| adapter.settle(event, &context));
    futures_util::future::join_all(settlements).await
}

/// A Lambda context whose deadline is `remaining` from now, for testing the deadline margin.
pub fn context_with_deadline(remaining: Duration) -> Context {
    let deadline = SystemTime::now() + remaining;
    let mut context = Context::default();
    context.deadline = deadline
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64);
    context.request_id = "test-request".to_owned();
    context
}

/// The start of the first window of a [`WindowRun`], in epoch seconds: a [`TestEvent`]'s first
/// record arrives then (2026-01-01T00:00:00Z).
pub const FIRST_WINDOW_START_SECS: u64 = 1_767_225_600;

/// Runs a window handler over a sequence of invocations as Lambda does: each invocation of a
/// window receives the state the one before returned; after the final invocation the state is
/// dropped and the next window, `length` later, starts fresh.
///
/// ```
/// use std::time::Duration;
/// use lambda_kinesis::testing::{TestEvent, WindowRun};
/// use lambda_kinesis::window::{Window, WindowOutcome};
///
/// async fn count(state: Option<u64>, _: &Window, records: &[u32]) -> WindowOutcome<u64> {
///     WindowOutcome::state(state.unwrap_or(0) + records.len() as u64)
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let mut run = WindowRun::new(count, Duration::from_secs(60));
/// run.invoke(&TestEvent::new().json(&1).json(&2)).await.unwrap();
/// run.invoke(&TestEvent::new().json(&3)).await.unwrap();
/// assert_eq!(run.state(), Some(3));
/// let last = run.final_invoke(&TestEvent::new()).await.unwrap();
/// assert_eq!(last.state, 3); // the window's result
/// assert_eq!(run.state(), None); // the next window starts fresh
/// # }
/// ```
pub struct WindowRun<H, S, T> {
    adapter: WindowAdapter<H, S, T>,
    start: SystemTime,
    length: Duration,
    state: serde_json::Value,
}

impl<H, S, T> WindowRun<H, S, T>
where
    H: for<'a> WindowHandler<'a, S, T> + 'static,
    S: Serialize + DeserializeOwned + Send + 'static,
    T: FromRecordData + Send + Sync + 'static,
{
    /// A run of `handler` whose first window starts at [`FIRST_WINDOW_START_SECS`] and lasts `length`.
    pub fn new(handler: H, length: Duration) -> Self {
        Self {
            adapter: WindowAdapter::new(handler),
            start: UNIX_EPOCH + Duration::from_secs(FIRST_WINDOW_START_SECS),
            length,
            state: serde_json::json!({}),
        }
    }

    /// Invokes the current window with `event`'s records; on success the state returned is what
    /// the window's next invocation receives.
    pub async fn invoke(&mut self, event: &TestEvent) -> Result<WindowResponse, WindowError> {
        self.call(event, false, false).await
    }

    /// Invokes the current window with `event`'s records, flagged as ended early
    /// (`isWindowTerminatedEarly`), as Lambda does when the state passed its size limit.
    pub async fn invoke_terminated_early(
        &mut self,
        event: &TestEvent,
    ) -> Result<WindowResponse, WindowError> {
        self.call(event, false, true).await
    }

    /// The window's final invocation (`isFinalInvokeForWindow`); on success the state is dropped
    /// and the next window begins.
    pub async fn final_invoke(&mut self, event: &TestEvent) -> Result<WindowResponse, WindowError> {
        let response = self.call(event, true, false).await?;
        self.state = serde_json::json!({});
        self.start += self.length;
        Ok(response)
    }

    /// The state the window's next invocation receives, `None` when it starts fresh.
    ///
    /// # Panics
    /// When the carried state does not decode as `S` (the handler returned it, so it does).
    pub fn state(&self) -> Option<S> {
        match &self.state {
            serde_json::Value::Object(fields) if fields.is_empty() => None,
            state => Some(
                S::deserialize(state).expect("the carried state decodes as the handler's state"),
            ),
        }
    }

    async fn call(
        &mut self,
        event: &TestEvent,
        is_final: bool,
        terminated_early: bool,
    ) -> Result<WindowResponse, WindowError> {
        let state = self.state.to_string();
        let json = event.to_window_json(&WindowFields {
            start: self.start,
            end: self.start + self.length,
            state: &state,
            is_final,
            terminated_early,
        });
        let event: WindowEvent =
            serde_json::from_slice(&json).expect("the window event reads back");
        let response = self.adapter.handle(&event).await?;
        self.state = response.state.clone();
        Ok(response)
    }
}
