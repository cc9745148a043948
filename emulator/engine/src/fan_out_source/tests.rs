use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use super::*;
use kinesis_source::HashKeyRange;

fn number(n: u64) -> SequenceNumber {
    format!("{}", 49_000_000_000_000_000_000_u128 + u128::from(n))
        .parse()
        .expect("a sequence number")
}

fn record(n: u64) -> Record {
    Record {
        sequence_number: number(n),
        partition_key: "key".into(),
        data: bytes::Bytes::from(format!("r{n}")),
        approximate_arrival: SystemTime::UNIX_EPOCH,
    }
}

fn child(shard_id: &str) -> ChildShard {
    ChildShard {
        shard_id: shard_id.to_owned(),
        parent_shards: vec!["shardId-000000000000".to_owned()],
        hash_key_range: HashKeyRange {
            starting_hash_key: 0,
            ending_hash_key: u128::MAX,
        },
    }
}

/// How each subscription of [`Scripted`] ends after pushing its records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Its lifetime is over: the stream ends.
    Over,
    /// The stream breaks off with an error.
    Fails,
    /// The shard is closed: its end, with a child.
    ShardEnd,
}

/// A shard of records `1..=count`, pushed two an event from wherever a subscription starts;
/// each subscription ends as `endings` says, in turn (the last one repeats).
struct Scripted {
    count: u64,
    /// Each subscription pushes at most this many events before it ends.
    events_per_subscription: usize,
    endings: Vec<Ending>,
    subscriptions: StdMutex<Vec<IteratorPosition>>,
    /// How many of its subscriptions are open (made and not dropped).
    open: Arc<AtomicUsize>,
}

impl Scripted {
    fn new(count: u64, events_per_subscription: usize, endings: Vec<Ending>) -> Arc<Self> {
        Arc::new(Self {
            count,
            events_per_subscription,
            endings,
            subscriptions: StdMutex::default(),
            open: Arc::default(),
        })
    }

    fn positions(&self) -> Vec<IteratorPosition> {
        self.subscriptions.lock().unwrap().clone()
    }
}

struct ScriptedSubscription {
    events: VecDeque<Result<Option<ShardEvent>, SourceError>>,
    open: Arc<AtomicUsize>,
}

impl Drop for ScriptedSubscription {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Subscription for ScriptedSubscription {
    async fn next_event(&mut self) -> Result<Option<ShardEvent>, SourceError> {
        match self.events.pop_front() {
            Some(event) => event,
            // Nothing more for now: a subscription that stays open.
            None => std::future::pending().await,
        }
    }
}

#[async_trait]
impl ShardSubscriber for Scripted {
    async fn subscribe(
        &self,
        _consumer_arn: &str,
        _shard_id: &str,
        position: &IteratorPosition,
    ) -> Result<Box<dyn Subscription>, SourceError> {
        let made = {
            let mut subscriptions = self.subscriptions.lock().unwrap();
            subscriptions.push(position.clone());
            subscriptions.len()
        };
        let ending = self.endings[(made - 1).min(self.endings.len() - 1)];
        let first = match position {
            IteratorPosition::TrimHorizon => 1,
            IteratorPosition::AfterSequenceNumber(after) => {
                (after.as_str().parse::<u128>().unwrap() - 49_000_000_000_000_000_000) as u64 + 1
            }
            other => panic!("unexpected position {other:?}"),
        };
        let mut events = VecDeque::new();
        let mut next = first;
        for _ in 0..self.events_per_subscription {
            if next > self.count {
                break;
            }
            let last = (next + 1).min(self.count);
            events.push_back(Ok(Some(ShardEvent {
                records: (next..=last).map(record).collect(),
                continuation_sequence_number: Some(number(last)),
                millis_behind_latest: 0,
                child_shards: Vec::new(),
            })));
            next = last + 1;
        }
        match ending {
            Ending::Over => events.push_back(Ok(None)),
            Ending::Fails => events.push_back(Err(SourceError::Service {
                message: "the event stream broke off".to_owned(),
            })),
            Ending::ShardEnd if next > self.count => events.push_back(Ok(Some(ShardEvent {
                child_shards: vec![child("shardId-000000000001")],
                ..ShardEvent::default()
            }))),
            Ending::ShardEnd => {}
        }
        self.open.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(ScriptedSubscription {
            events,
            open: Arc::clone(&self.open),
        }))
    }
}

/// A source whose stream calls are never made in these tests.
fn source(subscriber: Arc<Scripted>) -> FanOutSource {
    FanOutSource::new(
        Arc::new(embedded_kinesis::EmbeddedKinesis::new()),
        subscriber,
        "arn:aws:kinesis:us-east-1:123456789012:stream/s/consumer/c:1",
    )
}

const SHARD: &str = "shardId-000000000000";

/// Reads as a shard reader does (waiting when a read finds nothing, trying again after an
/// error) until the shard ends or `count` records were read; the data read and the errors met.
async fn read_all(
    source: &FanOutSource,
    count: usize,
) -> (Vec<String>, Vec<SourceError>, Vec<ChildShard>) {
    let mut iterator = source
        .shard_iterator("s", SHARD, &IteratorPosition::TrimHorizon)
        .await
        .unwrap();
    let (mut read, mut errors) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        match source.get_records(&iterator, 3).await {
            Ok(output) => {
                read.extend(
                    output
                        .records
                        .iter()
                        .map(|record| String::from_utf8(record.data.to_vec()).unwrap()),
                );
                match output.next_shard_iterator {
                    Some(next) => iterator = next,
                    None => return (read, errors, output.child_shards),
                }
                if read.len() >= count {
                    return (read, errors, Vec::new());
                }
                if output.records.is_empty() {
                    source
                        .wait_for_records("s", SHARD, None, Duration::from_millis(20))
                        .await;
                }
            }
            Err(error) => errors.push(error),
        }
    }
    panic!("the shard was not read: {read:?}, {errors:?}");
}

fn expected(count: u64) -> Vec<String> {
    (1..=count).map(|n| format!("r{n}")).collect()
}

#[tokio::test]
async fn records_pushed_are_read_in_order_and_a_subscription_over_is_renewed_after_its_continuation()
 {
    let subscriber = Scripted::new(7, 2, vec![Ending::Over]);
    let source = source(Arc::clone(&subscriber));
    let (read, errors, _) = read_all(&source, 7).await;
    assert_eq!(read, expected(7));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        subscriber.positions(),
        vec![
            IteratorPosition::TrimHorizon,
            IteratorPosition::AfterSequenceNumber(number(4)),
        ]
    );
}

#[tokio::test]
async fn a_failed_subscription_is_reported_and_the_retry_resumes_where_reading_stopped() {
    let subscriber = Scripted::new(6, 1, vec![Ending::Fails]);
    let source = source(Arc::clone(&subscriber));
    let (read, errors, _) = read_all(&source, 6).await;
    assert_eq!(read, expected(6), "no record lost nor read twice");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.iter().all(SourceError::is_transient));
    assert_eq!(
        subscriber.positions(),
        vec![
            IteratorPosition::TrimHorizon,
            IteratorPosition::AfterSequenceNumber(number(2)),
            IteratorPosition::AfterSequenceNumber(number(4)),
        ]
    );
}

#[tokio::test]
async fn the_shard_end_comes_after_its_last_record_with_its_children() {
    let subscriber = Scripted::new(5, 10, vec![Ending::ShardEnd]);
    let source = source(subscriber);
    let (read, _, children) = read_all(&source, usize::MAX).await;
    assert_eq!(read, expected(5));
    assert_eq!(children, vec![child("shardId-000000000001")]);
}

#[tokio::test]
async fn an_iterator_after_the_last_record_read_continues_and_any_other_starts_over() {
    let subscriber = Scripted::new(6, 10, vec![Ending::Over]);
    let source = source(Arc::clone(&subscriber));
    let first = source
        .shard_iterator("s", SHARD, &IteratorPosition::TrimHorizon)
        .await
        .unwrap();
    let output = source.get_records(&first, 2).await.unwrap();
    assert_eq!(output.records.len(), 2);
    // A reader renewing its iterator after the last record it read goes on from the records
    // pushed, without subscribing again.
    let renewed = source
        .shard_iterator(
            "s",
            SHARD,
            &IteratorPosition::AfterSequenceNumber(number(2)),
        )
        .await
        .unwrap();
    assert_eq!(renewed, first);
    source
        .wait_for_records("s", SHARD, None, Duration::from_secs(5))
        .await;
    let output = source.get_records(&renewed, 1).await.unwrap();
    assert_eq!(output.records[0].sequence_number, number(3));
    assert_eq!(subscriber.positions().len(), 1);
    // Anywhere else starts over: the old iterator has expired.
    let elsewhere = source
        .shard_iterator(
            "s",
            SHARD,
            &IteratorPosition::AfterSequenceNumber(number(1)),
        )
        .await
        .unwrap();
    assert_eq!(
        source.get_records(&first, 1).await,
        Err(SourceError::ExpiredIterator)
    );
    let output = source.get_records(&elsewhere, 1).await.unwrap();
    assert_eq!(output.records[0].sequence_number, number(2));
    assert_eq!(
        subscriber.positions()[1],
        IteratorPosition::AfterSequenceNumber(number(1))
    );
}

#[tokio::test]
async fn a_released_shard_closes_its_subscription_and_its_next_reader_starts_afresh() {
    // Records keep coming (the subscription stays open): as when a lease is lost mid-stream.
    let subscriber = Scripted::new(100, 2, vec![Ending::ShardEnd]);
    let source = source(Arc::clone(&subscriber));
    let (read, _, _) = read_all(&source, 3).await;
    assert_eq!(read, expected(read.len() as u64));
    let last = read.len() as u64;
    assert_eq!(
        subscriber.open.load(Ordering::SeqCst),
        1,
        "reading: one open"
    );

    source.release_shard("s", SHARD).await;
    // The feed's task is aborted; the runtime drops its future at its next turn.
    for _ in 0..100 {
        if subscriber.open.load(Ordering::SeqCst) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        subscriber.open.load(Ordering::SeqCst),
        0,
        "the subscription of a released shard is closed"
    );
    // The next reader starts where it says (its checkpoint), with a subscription of its own.
    let iterator = source
        .shard_iterator(
            "s",
            SHARD,
            &IteratorPosition::AfterSequenceNumber(number(last)),
        )
        .await
        .unwrap();
    let output = source.get_records(&iterator, 1).await.unwrap();
    assert_eq!(output.records[0].sequence_number, number(last + 1));
    assert_eq!(
        subscriber.positions().last(),
        Some(&IteratorPosition::AfterSequenceNumber(number(last)))
    );
}

#[test]
fn an_event_ends_its_shard_only_without_a_continuation_and_with_children() {
    let end = ShardEvent {
        child_shards: vec![child("shardId-000000000001")],
        ..ShardEvent::default()
    };
    assert!(end.ends_shard());
    assert!(!ShardEvent::default().ends_shard(), "a heartbeat at LATEST");
    assert!(
        !ShardEvent {
            continuation_sequence_number: Some(number(1)),
            ..end
        }
        .ends_shard()
    );
}
