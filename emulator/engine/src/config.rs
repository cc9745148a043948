//! What an event source mapping is told: the properties of a Kinesis event on a function.

use std::time::{Duration, SystemTime};

use crate::destination::Target;
use crate::filter::FilterCriteria;

/// Where a shard without a checkpoint starts (`StartingPosition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartingPosition {
    /// At the oldest record the shard holds.
    TrimHorizon,
    /// After the newest record: only records put once the mapping runs.
    Latest,
    /// At the first record that arrived at or after this time (`StartingPositionTimestamp`).
    AtTimestamp(SystemTime),
}

/// An event source mapping from a Kinesis stream to a function, with Lambda's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct MappingConfig {
    /// The function's name (`FunctionName`).
    pub function_name: String,
    /// The stream's name.
    pub stream_name: String,
    /// Where a shard with no checkpoint starts.
    pub starting_position: StartingPosition,
    /// The most records in one invocation (`BatchSize`, 1 to 10,000; default 100).
    pub batch_size: usize,
    /// How long to gather records before invoking (`MaximumBatchingWindowInSeconds`, 0 to 300).
    pub maximum_batching_window: Duration,
    /// How many times a failed batch is retried (`MaximumRetryAttempts`): `None` is -1, until
    /// the records expire.
    pub maximum_retry_attempts: Option<u32>,
    /// Records older than this are discarded before invoking (`MaximumRecordAgeInSeconds`):
    /// `None` is -1, no limit.
    pub maximum_record_age: Option<Duration>,
    /// Whether a batch that fails with a function error is split in two (`BisectBatchOnFunctionError`).
    pub bisect_batch_on_function_error: bool,
    /// Whether the function's response is read as a partial batch response
    /// (`FunctionResponseTypes: [ReportBatchItemFailures]`). Without it the body is ignored.
    pub report_batch_item_failures: bool,
    /// Where the record of a discarded batch goes (`DestinationConfig.OnFailure.Destination`).
    pub on_failure_destination: Option<String>,
    /// The queue, topic or bucket `on_failure_destination` names, when it names one.
    pub on_failure_target: Option<Target>,
    /// Whether the mapping polls at all (`Enabled`).
    pub enabled: bool,
    /// The function's `Timeout`: each invocation's deadline is this far from its start.
    pub function_timeout: Duration,
    /// Which records reach the function (`FilterCriteria`); without filters, every record.
    pub filter_criteria: FilterCriteria,
    /// How many batches of one shard are processed at once (`ParallelizationFactor`, 1 to 10):
    /// records go to a batch by partition key, so the records of one key stay in order.
    pub parallelization_factor: usize,
    /// Whether the mapping reports Lambda's event-count metrics (`MetricsConfig: {Metrics:
    /// [EventCount]}`); `IteratorAge` is reported either way, as on Lambda.
    pub event_count_metrics: bool,
    /// The length of each shard's tumbling windows in seconds (`TumblingWindowInSeconds`, 1 to
    /// 900); 0 turns windows off. With windows, the function is invoked with a window event
    /// and answers with the window's state (`docs/event-source-mapping.md` §8).
    pub tumbling_window_seconds: u32,
    /// The stream consumer the mapping reads through (enhanced fan-out), when its `Stream`
    /// names one; `None` reads the stream itself with `GetRecords`.
    pub consumer: Option<FanOutConsumer>,
}

/// A stream consumer a mapping reads through: records pushed by `SubscribeToShard`
/// (`docs/event-source-mapping.md` §10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FanOutConsumer {
    /// Its `ConsumerName`.
    pub name: String,
    /// Whether the template declares it (an `AWS::Kinesis::StreamConsumer`): then the run
    /// registers it where it is missing, as CloudFormation would have.
    pub declared: bool,
}

impl MappingConfig {
    /// A mapping with Lambda's defaults: BatchSize 100, no batching window, retries until the
    /// records expire, no bisection, no partial batch response, a 3-second function timeout, no
    /// filters, one batch of a shard at a time.
    /// records expire, no bisection, no partial batch response, a 3-second function timeout, no filters, no event-count metrics.
    pub fn new(
        function_name: impl Into<String>,
        stream_name: impl Into<String>,
        starting_position: StartingPosition,
    ) -> Self {
        Self {
            function_name: function_name.into(),
            stream_name: stream_name.into(),
            starting_position,
            batch_size: 100,
            maximum_batching_window: Duration::ZERO,
            maximum_retry_attempts: None,
            maximum_record_age: None,
            bisect_batch_on_function_error: false,
            report_batch_item_failures: false,
            on_failure_destination: None,
            on_failure_target: None,
            enabled: true,
            function_timeout: Duration::from_secs(3),
            filter_criteria: FilterCriteria::default(),
            parallelization_factor: 1,
            event_count_metrics: false,
            tumbling_window_seconds: 0,
            consumer: None,
        }
    }
}

/// A function's `LoggingConfig`, as Lambda applies it (`docs/function-logs.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoggingConfig {
    /// `LogFormat: JSON`; plain text (`Text`, the default) otherwise.
    pub json: bool,
    /// `ApplicationLogLevel` (`TRACE` to `FATAL`), upper case; `INFO` by default with JSON.
    /// Lambda filters the function's lines by it, and names it to the function in
    /// `AWS_LAMBDA_LOG_LEVEL`. Only with JSON.
    pub application_log_level: Option<String>,
    /// `SystemLogLevel` (`DEBUG`, `INFO`, `WARN`): the level of Lambda's own lines about the
    /// function. Only with JSON.
    pub system_log_level: Option<String>,
}

impl LoggingConfig {
    /// The application log level in force: the one set, or `INFO` with JSON; none with text.
    pub fn application_level(&self) -> Option<&str> {
        match (&self.application_log_level, self.json) {
            (Some(level), _) => Some(level),
            (None, true) => Some("INFO"),
            (None, false) => None,
        }
    }
}
