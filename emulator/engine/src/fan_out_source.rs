//! Enhanced fan-out as a [`ShardSource`]: records pushed through `SubscribeToShard` instead of
//! polled with `GetRecords`, so that the shard readers of the event source mapping read a
//! consumer exactly as they read a stream (`docs/event-source-mapping.md` §10).
//!
//! [`FanOutSource`] keeps one `Lane` per shard: the subscription open on it (fed by a task,
//! so that a read takes what has arrived without waiting), the records pushed and not yet
//! read, and where the next subscription starts. A shard iterator it hands out names the lane
//! and its generation; `GetRecords` on it takes the records pushed so far, and
//! `wait_for_records` waits for the next event. A subscription that ends (after its 5
//! minutes, or replaced) is renewed from its last `ContinuationSequenceNumber` by the next
//! read; one that fails hands its error to the reader, whose backoff retries the read, which
//! subscribes again from the same place. Records pushed are kept until read, so no failure
//! loses one. At a shard's end the event's `ChildShards` come back as `GetRecords` gives them:
//! no next iterator, and the children.
//!
//! When a shard's reader stops (its lease lost, stolen, given up, or its shard ended), the
//! reader releases the shard ([`ShardSource::release_shard`]) and its lane goes, subscription
//! and all: a worker that no longer holds a shard's lease does not keep a subscription open
//! on it, streaming records nobody reads (and, on AWS, holding the consumer's one
//! subscription to the shard that the lease's new holder needs).
//!
//! The stream calls (`DescribeStreamSummary`, `ListShards`) go to the polling source it wraps.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;

use kinesis_source::sequence::SequenceNumber;
use kinesis_source::{
    ChildShard, GetRecordsOutput, IteratorPosition, Record, Shard, ShardEvent, ShardSource,
    ShardSubscriber, SourceError, StreamDescription, Subscription,
};

/// How long a read on a new subscription waits for its first event, which Kinesis sends at
/// once: without it a reader checking its checkpoint would see an empty shard.
const FIRST_EVENT_WAIT: Duration = Duration::from_secs(5);

/// How many events a subscription's task reads ahead of the reader.
const EVENTS_AHEAD: usize = 4;

/// What a subscription's task hands the lane.
type Fed = Result<ShardEvent, SourceError>;

/// A subscription's task and what it has read ahead; dropping it ends the task.
struct Feed {
    events: mpsc::Receiver<Fed>,
    task: tokio::task::JoinHandle<()>,
    /// Whether any event arrived on it yet.
    heard: bool,
}

impl Feed {
    fn start(mut subscription: Box<dyn Subscription>) -> Self {
        let (sender, events) = mpsc::channel(EVENTS_AHEAD);
        let task = tokio::spawn(async move {
            loop {
                let next = subscription.next_event().await.transpose();
                let Some(next) = next else { return };
                let failed = next.is_err();
                if sender.send(next).await.is_err() || failed {
                    return;
                }
            }
        });
        Self {
            events,
            task,
            heard: false,
        }
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One shard's reading through the consumer, as rules with no I/O but the feed it holds.
pub(crate) struct Lane {
    /// Bumped whenever the lane starts over elsewhere: older iterators are expired.
    generation: u64,
    /// Where the next subscription starts.
    from: IteratorPosition,
    /// Records pushed and not yet read.
    buffer: VecDeque<Record>,
    /// The last record read from the lane, if any since it started over.
    last_read: Option<SequenceNumber>,
    millis_behind_latest: u64,
    /// Set once the shard's end was pushed: its children.
    children: Option<Vec<ChildShard>>,
    feed: Option<Feed>,
    /// A failure met while waiting, for the next read to report (and its reader to retry).
    failed: Option<SourceError>,
}

impl Lane {
    fn new(from: IteratorPosition) -> Self {
        Self {
            generation: 0,
            from,
            buffer: VecDeque::new(),
            last_read: None,
            millis_behind_latest: 0,
            children: None,
            feed: None,
            failed: None,
        }
    }

    /// Where a new iterator at `position` reads: on from the records pushed when it resumes
    /// right after the last record read (a reader renewing its iterator, or resuming after a
    /// look at its checkpoint); anywhere else, from a new subscription.
    fn reposition(&mut self, position: &IteratorPosition) {
        let continues = match position {
            IteratorPosition::AfterSequenceNumber(after) => self.last_read.as_ref() == Some(after),
            _ => false,
        };
        if continues {
            return;
        }
        self.generation += 1;
        self.from = position.clone();
        self.buffer.clear();
        self.last_read = None;
        self.millis_behind_latest = 0;
        self.children = None;
        self.feed = None;
        self.failed = None;
    }

    /// Takes in one pushed event.
    fn accept(&mut self, event: ShardEvent) {
        let ends = event.ends_shard();
        let resume_after = event.continuation_sequence_number.or_else(|| {
            event
                .records
                .last()
                .map(|record| record.sequence_number.clone())
        });
        if let Some(after) = resume_after {
            self.from = IteratorPosition::AfterSequenceNumber(after);
        }
        self.buffer.extend(event.records);
        self.millis_behind_latest = event.millis_behind_latest;
        if ends {
            self.children = Some(event.child_shards);
            self.feed = None;
        }
    }

    /// Whether a read has something to return without a subscription.
    fn has_news(&self) -> bool {
        !self.buffer.is_empty() || self.children.is_some()
    }

    /// Hands out up to `limit` records, as `GetRecords` would; the next iterator is `token`,
    /// or none once the shard's end has been read.
    fn take(&mut self, limit: usize, token: String) -> GetRecordsOutput {
        let count = limit.min(self.buffer.len());
        let records: Vec<Record> = self.buffer.drain(..count).collect();
        if let Some(last) = records.last() {
            self.last_read = Some(last.sequence_number.clone());
        }
        let at_end = self.buffer.is_empty() && self.children.is_some();
        GetRecordsOutput {
            records,
            next_shard_iterator: (!at_end).then_some(token),
            // Records still waiting here are behind, whatever the event said: read on at once.
            millis_behind_latest: if self.buffer.is_empty() {
                self.millis_behind_latest
            } else {
                self.millis_behind_latest.max(1)
            },
            child_shards: if at_end {
                self.children.clone().unwrap_or_default()
            } else {
                Vec::new()
            },
        }
    }

    /// Takes in what the feed has read ahead, without waiting. An error ends the feed and is
    /// returned; a feed that ended is dropped, so that the next read subscribes again.
    fn drain_feed(&mut self) -> Result<(), SourceError> {
        loop {
            let Some(feed) = self.feed.as_mut() else {
                return Ok(());
            };
            match feed.events.try_recv() {
                Ok(fed) => self.take_in(fed)?,
                Err(TryRecvError::Empty) => return Ok(()),
                Err(TryRecvError::Disconnected) => {
                    self.feed = None;
                    return Ok(());
                }
            }
        }
    }

    /// Waits up to `timeout` for the feed's next event and takes it in.
    async fn wait_for_event(&mut self, timeout: Duration) -> Result<(), SourceError> {
        let Some(feed) = self.feed.as_mut() else {
            return Ok(());
        };
        match tokio::time::timeout(timeout, feed.events.recv()).await {
            Ok(Some(fed)) => self.take_in(fed),
            Ok(None) => {
                self.feed = None;
                Ok(())
            }
            Err(_elapsed) => Ok(()),
        }
    }

    fn take_in(&mut self, fed: Fed) -> Result<(), SourceError> {
        if let Some(feed) = self.feed.as_mut() {
            feed.heard = true;
        }
        match fed {
            Ok(event) => {
                self.accept(event);
                Ok(())
            }
            Err(error) => {
                self.feed = None;
                Err(error)
            }
        }
    }
}

/// A [`ShardSource`] that reads the shards of one stream through one consumer.
pub struct FanOutSource {
    streams: Arc<dyn ShardSource>,
    subscriber: Arc<dyn ShardSubscriber>,
    consumer_arn: String,
    lanes: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Lane>>>>,
}

impl FanOutSource {
    /// Reads through `consumer_arn` with `subscriber`; stream and shard listings come from
    /// `streams`.
    pub fn new(
        streams: Arc<dyn ShardSource>,
        subscriber: Arc<dyn ShardSubscriber>,
        consumer_arn: impl Into<String>,
    ) -> Self {
        Self {
            streams,
            subscriber,
            consumer_arn: consumer_arn.into(),
            lanes: Mutex::default(),
        }
    }

    /// The consumer read through.
    pub fn consumer_arn(&self) -> &str {
        &self.consumer_arn
    }

    fn lane(&self, shard_id: &str) -> Option<Arc<tokio::sync::Mutex<Lane>>> {
        self.lanes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(shard_id)
            .cloned()
    }

    async fn subscribe(&self, shard_id: &str, lane: &mut Lane) -> Result<(), SourceError> {
        let subscription = self
            .subscriber
            .subscribe(&self.consumer_arn, shard_id, &lane.from)
            .await
            .map_err(|error| self.subscription_error(shard_id, error))?;
        lane.feed = Some(Feed::start(subscription));
        Ok(())
    }

    /// A consumer or shard the subscription did not find is retried like any failure (the
    /// consumer may be registering, or registered again), not taken for a shard gone: the
    /// shard listing, through the stream, says which shards are gone.
    fn subscription_error(&self, shard_id: &str, error: SourceError) -> SourceError {
        match error {
            SourceError::NotFound { what } => SourceError::Service {
                message: format!(
                    "SubscribeToShard of consumer {} to shard {shard_id}: {what} not found",
                    self.consumer_arn
                ),
            },
            other => other,
        }
    }
}

/// A shard iterator of the lane `shard_id` at `generation`.
fn token(shard_id: &str, generation: u64) -> String {
    format!("efo:{generation}:{shard_id}")
}

/// The lane and generation a token names.
fn read_token(token: &str) -> Option<(&str, u64)> {
    let rest = token.strip_prefix("efo:")?;
    let (generation, shard_id) = rest.split_once(':')?;
    Some((shard_id, generation.parse().ok()?))
}

#[async_trait]
impl ShardSource for FanOutSource {
    async fn describe_stream(&self, stream: &str) -> Result<StreamDescription, SourceError> {
        self.streams.describe_stream(stream).await
    }

    async fn list_shards(&self, stream: &str) -> Result<Vec<Shard>, SourceError> {
        self.streams.list_shards(stream).await
    }

    async fn shard_iterator(
        &self,
        _stream: &str,
        shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<String, SourceError> {
        let lane = {
            let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
            match lanes.get(shard_id) {
                Some(lane) => Arc::clone(lane),
                None => {
                    let lane = Arc::new(tokio::sync::Mutex::new(Lane::new(position.clone())));
                    lanes.insert(shard_id.to_owned(), Arc::clone(&lane));
                    return Ok(token(shard_id, 0));
                }
            }
        };
        let mut lane = lane.lock().await;
        lane.reposition(position);
        Ok(token(shard_id, lane.generation))
    }

    async fn get_records(
        &self,
        shard_iterator: &str,
        limit: usize,
    ) -> Result<GetRecordsOutput, SourceError> {
        let Some((shard_id, generation)) = read_token(shard_iterator) else {
            return Err(SourceError::InvalidArgument {
                message: format!(
                    "{shard_iterator} is not a shard iterator of consumer {}",
                    self.consumer_arn
                ),
            });
        };
        let Some(lane) = self.lane(shard_id) else {
            return Err(SourceError::ExpiredIterator);
        };
        let mut lane = lane.lock().await;
        if lane.generation != generation {
            return Err(SourceError::ExpiredIterator);
        }
        if let Some(failed) = lane.failed.take() {
            return Err(failed);
        }
        if !lane.has_news() {
            if lane.feed.is_none() {
                self.subscribe(shard_id, &mut lane).await?;
            }
            lane.drain_feed()?;
            if lane.feed.as_ref().is_some_and(|feed| !feed.heard) && !lane.has_news() {
                lane.wait_for_event(FIRST_EVENT_WAIT).await?;
            }
        }
        Ok(lane.take(limit, shard_iterator.to_owned()))
    }

    async fn wait_for_records(
        &self,
        _stream: &str,
        shard_id: &str,
        _after: Option<&SequenceNumber>,
        timeout: Duration,
    ) {
        let Some(lane) = self.lane(shard_id) else {
            tokio::time::sleep(timeout).await;
            return;
        };
        let mut lane = lane.lock().await;
        if lane.has_news() || lane.feed.is_none() {
            return;
        }
        // The next read reports the failure, and its retry subscribes again.
        if let Err(error) = lane.wait_for_event(timeout).await {
            lane.failed = Some(error);
        }
    }

    fn pushes_records(&self) -> bool {
        true
    }

    /// Drops the shard's lane: its feed's task is aborted, which drops the subscription (over
    /// the SDK, the HTTP/2 stream is reset), and records pushed but not read are let go, since
    /// whoever reads the shard next starts from its checkpoint.
    async fn release_shard(&self, _stream: &str, shard_id: &str) {
        let lane = self
            .lanes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(shard_id);
        if let Some(lane) = lane {
            // A read still holding the lane (none once its reader stopped) would keep it alive:
            // the feed goes now either way.
            lane.lock().await.feed = None;
        }
    }
}

#[cfg(test)]
mod tests;
