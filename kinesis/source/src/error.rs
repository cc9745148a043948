//! Why a Kinesis call failed, in the Kinesis API's own terms.

/// Why a Kinesis call failed, in the Kinesis API's own terms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// `ResourceNotFoundException`: the stream or shard does not exist.
    #[error("{what} not found")]
    NotFound {
        /// The stream or shard, named.
        what: String,
    },
    /// `InvalidArgumentException`: the request itself is wrong.
    #[error("invalid argument: {message}")]
    InvalidArgument {
        /// Kinesis' explanation.
        message: String,
    },
    /// `ExpiredIteratorException`: the iterator is older than five minutes. Get a new one from
    /// the checkpoint.
    #[error("the shard iterator has expired")]
    ExpiredIterator,
    /// `ProvisionedThroughputExceededException` (or another throttle): try again after a pause.
    #[error("throttled: {message}")]
    Throttled {
        /// Kinesis' explanation.
        message: String,
    },
    /// `LimitExceededException`: too many resharding operations or shards.
    #[error("limit exceeded: {message}")]
    LimitExceeded {
        /// Kinesis' explanation.
        message: String,
    },
    /// `ResourceInUseException`: the stream is being created, updated or deleted.
    #[error("resource in use: {message}")]
    ResourceInUse {
        /// Kinesis' explanation.
        message: String,
    },
    /// Anything else: a 5xx answer, a dropped connection, a server that went away.
    #[error("Kinesis failed: {message}")]
    Service {
        /// What went wrong.
        message: String,
    },
}

impl SourceError {
    /// Whether the same call may succeed if tried again after a pause.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Throttled { .. } | Self::Service { .. } | Self::ResourceInUse { .. }
        )
    }
}
