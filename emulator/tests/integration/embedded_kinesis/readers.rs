//! The `ShardSource` seam over the embedded Kinesis, and readers woken by a put.

use super::*;

// The ShardSource seam.

#[tokio::test]
async fn the_shard_source_seam_reads_the_same_stream() {
    let (kinesis, _) = kinesis_with(2);
    let source: Arc<dyn ShardSource> = Arc::new(kinesis.clone());
    let description = source.describe_stream(STREAM).await.unwrap();
    assert_eq!(description.arn.to_string(), kinesis.stream_arn(STREAM));
    assert_eq!(description.created, start_time());
    assert_eq!(
        source.list_shards(STREAM).await.unwrap(),
        kinesis.list_shards(STREAM).unwrap()
    );
    let (shard_id, sequence_number) = put(&kinesis, "a", "x");
    let iterator = source
        .shard_iterator(STREAM, &shard_id, &IteratorPosition::TrimHorizon)
        .await
        .unwrap();
    let output = source.get_records(&iterator, 10).await.unwrap();
    assert_eq!(output.records[0].sequence_number, sequence_number);
    assert_err!(source.describe_stream("nope").await, NotFound);
}

#[test]
fn the_embedded_kinesis_is_shareable_across_threads() {
    fn assert_shareable<T: Send + Sync + Clone + 'static>() {}
    assert_shareable::<EmbeddedKinesis>();
}

// Waking readers.

const LONG: Duration = Duration::from_secs(3600);

/// Polls `future` once, to tell whether it is waiting.
async fn poll_once<F: Future>(mut future: Pin<&mut F>) -> Poll<F::Output> {
    std::future::poll_fn(|context| Poll::Ready(future.as_mut().poll(context))).await
}

/// Awaits `future` for at most a minute of (paused) tokio time, far less than `LONG`: when it
/// finishes, something other than its own timeout ended it.
async fn finishes_before_timeout<F: Future>(future: Pin<&mut F>) {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .expect("the wait ended before its timeout");
}

#[tokio::test(start_paused = true)]
async fn a_waiting_reader_wakes_on_a_put_to_its_shard_only() {
    let (kinesis, _) = kinesis_with(2);
    let first_shard = shard(0);
    let mut wait = pin!(kinesis.wait_for_records(STREAM, &first_shard, None, LONG));
    assert!(poll_once(wait.as_mut()).await.is_pending());
    // A record in the other shard (key "b" hashes into the upper half) does not wake it.
    assert_eq!(put(&kinesis, "b", "x").0, shard(1));
    assert!(poll_once(wait.as_mut()).await.is_pending());
    assert_eq!(put(&kinesis, "a", "x").0, shard(0));
    finishes_before_timeout(wait).await;
}

#[tokio::test(start_paused = true)]
async fn a_reader_does_not_wait_when_a_newer_record_is_there() {
    let (kinesis, _) = kinesis_with(1);
    let (_, first) = put(&kinesis, "k", "1");
    let (_, second) = put(&kinesis, "k", "2");
    let started = tokio::time::Instant::now();
    kinesis
        .wait_for_records(STREAM, &shard(0), None, LONG)
        .await;
    kinesis
        .wait_for_records(STREAM, &shard(0), Some(&first), LONG)
        .await;
    assert_eq!(started.elapsed(), Duration::ZERO);
    // After the newest record it waits, until the next put.
    let first_shard = shard(0);
    let mut wait = pin!(kinesis.wait_for_records(STREAM, &first_shard, Some(&second), LONG));
    assert!(poll_once(wait.as_mut()).await.is_pending());
    put(&kinesis, "k", "3");
    finishes_before_timeout(wait).await;
}

#[tokio::test(start_paused = true)]
async fn a_waiting_reader_wakes_when_its_shard_closes() {
    let (kinesis, _) = kinesis_with(1);
    let first_shard = shard(0);
    let mut wait = pin!(kinesis.wait_for_records(STREAM, &first_shard, None, LONG));
    assert!(poll_once(wait.as_mut()).await.is_pending());
    kinesis
        .split_shard(STREAM, &shard(0), &(1_u128 << 127).to_string())
        .unwrap();
    finishes_before_timeout(wait).await;
    // A closed shard never makes its reader wait.
    let started = tokio::time::Instant::now();
    kinesis
        .wait_for_records(STREAM, &shard(0), None, LONG)
        .await;
    assert_eq!(started.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_waiting_reader_wakes_when_its_stream_is_deleted() {
    let (kinesis, _) = kinesis_with(1);
    let first_shard = shard(0);
    let mut wait = pin!(kinesis.wait_for_records(STREAM, &first_shard, None, LONG));
    assert!(poll_once(wait.as_mut()).await.is_pending());
    kinesis.delete_stream(STREAM).unwrap();
    finishes_before_timeout(wait).await;
}

#[tokio::test(start_paused = true)]
async fn a_waiting_reader_without_news_returns_after_its_timeout() {
    let (kinesis, _) = kinesis_with(2);
    let (_, newest) = put(&kinesis, "a", "x");
    let started = tokio::time::Instant::now();
    let timeout = Duration::from_millis(1_500);
    kinesis
        .wait_for_records(STREAM, &shard(0), Some(&newest), timeout)
        .await;
    let waited = started.elapsed();
    assert!(
        waited >= timeout && waited < timeout + Duration::from_secs(1),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_wait_on_something_unknown_returns_at_once() {
    let (kinesis, _) = kinesis_with(2);
    let (_, in_shard_0) = put(&kinesis, "a", "x");
    let started = tokio::time::Instant::now();
    kinesis
        .wait_for_records("nope", &shard(0), None, LONG)
        .await;
    kinesis
        .wait_for_records(STREAM, &shard(5), None, LONG)
        .await;
    kinesis
        .wait_for_records(STREAM, &shard(1), Some(&in_shard_0), LONG)
        .await;
    assert_eq!(started.elapsed(), Duration::ZERO);
}
