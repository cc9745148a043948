//! Tumbling windows through the emulator (`docs/event-source-mapping.md` §8): a counting window
//! function over windows of one or two seconds, invoked as Lambda invokes it: the state carried
//! from one invocation of a window to the next, the final invocation, the early end at a
//! reshard, and a held record retried inside its window.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use end_to_end::{Observed, TestStream, one_shard_mapping, within};
use kinesis_esm::invoke::{InProcessWindow, Invocation, InvokeError, InvokeOutcome, Invoker};
use lambda_kinesis::window::event::{WindowEvent, parse_iso8601};
use lambda_kinesis::window::{Window, WindowAdapter, WindowOutcome};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The counting function's state: the ids of the records its window counted, in order.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Counted {
    ids: Vec<u64>,
}

fn id_of(record: &Value) -> u64 {
    record["id"].as_u64().expect("every test record has an id")
}

/// Counts each record's id into the window's state.
async fn count(
    state: Option<Counted>,
    _window: &Window,
    records: &[Value],
) -> WindowOutcome<Counted> {
    let mut counted = state.unwrap_or_default();
    counted.ids.extend(records.iter().map(id_of));
    WindowOutcome::state(counted)
}

/// Whether [`count_holding_once`] has held its record.
static HELD_ONCE: AtomicBool = AtomicBool::new(false);

/// Counts as [`count`] does, but holds the first record marked `hold` the first time it sees it.
async fn count_holding_once(
    state: Option<Counted>,
    _window: &Window,
    records: &[Value],
) -> WindowOutcome<Counted> {
    let mut counted = state.unwrap_or_default();
    for (index, record) in records.iter().enumerate() {
        if record["hold"] == json!(true) && !HELD_ONCE.swap(true, Ordering::SeqCst) {
            return WindowOutcome::state(counted).hold_from(index);
        }
        counted.ids.push(id_of(record));
    }
    WindowOutcome::state(counted)
}

/// One invocation as the function saw it, and what it answered.
#[derive(Debug, Clone)]
struct Seen {
    shard_id: String,
    start: SystemTime,
    end: SystemTime,
    state: Value,
    is_final: bool,
    terminated_early: bool,
    /// The records' ids and arrival times (epoch seconds).
    records: Vec<(u64, f64)>,
    /// The answer's state, when it answered with one.
    answered: Option<Value>,
}

/// Passes every invocation to the window function and keeps what crossed.
struct Recording {
    function: InProcessWindow,
    seen: Arc<Mutex<Vec<Seen>>>,
}

#[async_trait]
impl Invoker for Recording {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeOutcome, InvokeError> {
        let event: WindowEvent = serde_json::from_slice(&invocation.payload)
            .expect("a window mapping sends window events");
        let outcome = self.function.invoke(invocation).await?;
        let answered = match &outcome {
            InvokeOutcome::Response(body) => serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|answer| answer.get("state").cloned()),
            _ => None,
        };
        let records = event
            .records
            .iter()
            .map(|record| {
                let data = record.kinesis.decoded_data().expect("base64 data");
                let value: Value = serde_json::from_slice(&data).expect("JSON data");
                (id_of(&value), record.kinesis.approximate_arrival_timestamp)
            })
            .collect();
        self.seen.lock().unwrap().push(Seen {
            shard_id: event.shard_id,
            start: parse_iso8601(&event.window.start).expect("a window start"),
            end: parse_iso8601(&event.window.end).expect("a window end"),
            state: event.state,
            is_final: event.is_final_invoke_for_window,
            terminated_early: event.is_window_terminated_early,
            records,
            answered,
        });
        Ok(outcome)
    }
}

fn recording(function: InProcessWindow) -> (Arc<Recording>, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recording = Arc::new(Recording {
        function,
        seen: Arc::clone(&seen),
    });
    (recording, seen)
}

/// Waits until `condition` holds for what the function saw.
async fn wait_until(
    what: &str,
    seen: &Arc<Mutex<Vec<Seen>>>,
    condition: impl Fn(&[Seen]) -> bool + Send + Sync,
) -> Vec<Seen> {
    within(what, async {
        loop {
            {
                let seen = seen.lock().unwrap();
                if condition(&seen) {
                    return seen.clone();
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// Sleeps until `offset` past the next multiple of `length` since the epoch: the start of a
/// window, with the offset's margin.
async fn sleep_into_next_window(length: Duration, offset: Duration) {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let length_millis = length.as_millis();
    let next = (since.as_millis() / length_millis + 1) * length_millis;
    let target = Duration::from_millis(u64::try_from(next).unwrap()) + offset;
    tokio::time::sleep(target - since).await;
}

fn put(stream: &TestStream, key: &str, id: u64, hold: bool) {
    stream.put(key, json!({ "id": id, "hold": hold }).to_string());
}

fn ids(state: &Value) -> Vec<u64> {
    serde_json::from_value::<Counted>(state.clone())
        .map(|counted| counted.ids)
        .unwrap_or_default()
}

/// Checks every window of `shard_id`: its invocations hand the state on from one to the next, the
/// first starts from `{}`, every record lies inside the window, and the window ends with one
/// final invocation, with no records, whose state counts the window's records once each.
/// Returns each window's counted ids, by start.
#[track_caller]
fn check_windows(seen: &[Seen], shard_id: &str) -> BTreeMap<SystemTime, Vec<u64>> {
    let mut windows: BTreeMap<SystemTime, Vec<&Seen>> = BTreeMap::new();
    for invocation in seen.iter().filter(|seen| seen.shard_id == shard_id) {
        windows
            .entry(invocation.start)
            .or_default()
            .push(invocation);
    }
    let mut counted = BTreeMap::new();
    for (start, invocations) in windows {
        let (last, before) = invocations.split_last().unwrap();
        assert!(
            last.is_final,
            "{start:?}: the last invocation is final: {invocations:#?}"
        );
        assert!(
            last.records.is_empty(),
            "the final invocation carries no records"
        );
        assert!(
            before.iter().all(|seen| !seen.is_final),
            "one final invocation per window"
        );
        assert_eq!(
            invocations[0].state,
            json!({}),
            "{start:?}: a window starts fresh"
        );
        for pair in invocations.windows(2) {
            assert_eq!(
                pair[0].answered.as_ref(),
                Some(&pair[1].state),
                "{start:?}: each invocation gets the state the one before returned"
            );
        }
        let mut delivered = Vec::new();
        for invocation in before {
            for &(id, arrival) in &invocation.records {
                let arrival = UNIX_EPOCH + Duration::from_secs_f64(arrival);
                assert!(
                    invocation.start <= arrival && arrival < invocation.end,
                    "record {id} arrived at {arrival:?}, outside its window {start:?}"
                );
                if !delivered.contains(&id) {
                    delivered.push(id);
                }
            }
        }
        assert_eq!(
            ids(&last.state),
            delivered,
            "{start:?}: the final state counts each record once"
        );
        counted.insert(start, delivered);
    }
    counted
}

#[tokio::test]
async fn records_are_counted_window_by_window() {
    let stream = TestStream::create("windows-several", 1);
    let (invoker, seen) = recording(InProcessWindow::new(WindowAdapter::new(count)));
    let config = one_shard_mapping(
        &stream.name,
        "            TumblingWindowInSeconds: 1\n            BatchSize: 2\n",
    );
    let observed = Observed::start(config, &stream, invoker);
    let second = Duration::from_secs(1);
    let margin = Duration::from_millis(100);
    let mut id = 0;
    for records in [3, 2, 4] {
        sleep_into_next_window(second, margin).await;
        for _ in 0..records {
            put(&stream, "key", id, false);
            id += 1;
        }
    }
    let seen = wait_until("three windows to close", &seen, |seen| {
        seen.iter().filter(|seen| seen.is_final).count() >= 3
    })
    .await;
    observed.stop().await;
    let shard_id = &stream.shards()[0].shard_id;
    let counted: Vec<Vec<u64>> = check_windows(&seen, shard_id).into_values().collect();
    assert_eq!(counted, [vec![0, 1, 2], vec![3, 4], vec![5, 6, 7, 8]]);
    // BatchSize 2 splits the first window's three records over two invocations.
    let first_window: Vec<usize> = seen
        .iter()
        .take_while(|seen| !seen.is_final)
        .map(|seen| seen.records.len())
        .collect();
    assert_eq!(first_window, [2, 1]);
    assert!(seen.iter().all(|seen| !seen.terminated_early), "{seen:#?}");
}

#[tokio::test]
async fn a_reshard_ends_the_window_early_and_the_children_start_fresh() {
    let stream = TestStream::create("windows-reshard", 1);
    let (invoker, seen) = recording(InProcessWindow::new(WindowAdapter::new(count)));
    let config = one_shard_mapping(&stream.name, "            TumblingWindowInSeconds: 2\n");
    let observed = Observed::start(config, &stream, invoker);
    let parent = stream.shards()[0].clone();
    sleep_into_next_window(Duration::from_secs(2), Duration::from_millis(50)).await;
    for id in 0..3 {
        put(&stream, &format!("key-{id}"), id, false);
    }
    let counted = wait_until("the parent's records to be counted", &seen, |seen| {
        seen.iter().flat_map(|seen| &seen.records).count() == 3
    })
    .await;
    let window_end = counted[0].end;
    let middle = parent.hash_key_range.starting_hash_key
        + (parent.hash_key_range.ending_hash_key - parent.hash_key_range.starting_hash_key) / 2;
    stream
        .kinesis
        .split_shard(&stream.name, &parent.shard_id, &(middle + 1).to_string())
        .expect("splitting the shard");
    assert!(
        SystemTime::now() < window_end,
        "the split came after the window's end: the machine is too slow for this test"
    );
    // With MD5 routing, `key-0` to `key-9` reach both halves of the hash key space.
    for id in 3..13 {
        put(&stream, &format!("key-{}", id - 3), id, false);
    }
    let children: Vec<String> = stream
        .open_shards()
        .into_iter()
        .map(|shard| shard.shard_id)
        .collect();
    let seen = wait_until("every child's window to close", &seen, |seen| {
        children.iter().all(|child| {
            seen.iter()
                .any(|seen| &seen.shard_id == child && seen.is_final)
        })
    })
    .await;
    observed.stop().await;

    let parent_final = seen
        .iter()
        .position(|seen| seen.shard_id == parent.shard_id && seen.is_final)
        .expect("the parent's window closed");
    assert!(
        seen[parent_final].terminated_early,
        "{:#?}",
        seen[parent_final]
    );
    assert_eq!(ids(&seen[parent_final].state), [0, 1, 2]);
    let first_child = seen
        .iter()
        .position(|seen| seen.shard_id != parent.shard_id)
        .expect("the children were invoked");
    assert!(
        parent_final < first_child,
        "the children start after the parent's window closed"
    );
    let mut children_counted: Vec<u64> = Vec::new();
    for child in &children {
        for ids in check_windows(&seen, child).into_values() {
            children_counted.extend(ids);
        }
        let child_finals = seen
            .iter()
            .filter(|seen| &seen.shard_id == child && seen.is_final);
        assert!(child_finals.clone().all(|seen| !seen.terminated_early));
    }
    children_counted.sort_unstable();
    assert_eq!(children_counted, (3..13).collect::<Vec<u64>>());
    check_windows(&seen, &parent.shard_id);
}

#[tokio::test]
async fn a_held_record_comes_again_inside_its_window() {
    let stream = TestStream::create("windows-held", 1);
    let (invoker, seen) = recording(InProcessWindow::new(WindowAdapter::new(count_holding_once)));
    let config = one_shard_mapping(
        &stream.name,
        "            TumblingWindowInSeconds: 2\n            FunctionResponseTypes: [ReportBatchItemFailures]\n",
    );
    let observed = Observed::start(config, &stream, invoker);
    sleep_into_next_window(Duration::from_secs(2), Duration::from_millis(50)).await;
    for id in 0..4 {
        put(&stream, "key", id, id == 1);
    }
    let seen = wait_until("the window to close", &seen, |seen| {
        seen.iter().any(|seen| seen.is_final)
    })
    .await;
    observed.stop().await;
    assert!(HELD_ONCE.load(Ordering::SeqCst), "the record was held");
    let shard_id = &stream.shards()[0].shard_id;
    let counted: Vec<Vec<u64>> = check_windows(&seen, shard_id).into_values().collect();
    assert_eq!(counted, [vec![0, 1, 2, 3]]);
    let deliveries: Vec<Vec<u64>> = seen
        .iter()
        .map(|seen| seen.records.iter().map(|(id, _)| *id).collect())
        .collect();
    // The held record and every record behind it come again, with the state counting record 0.
    assert_eq!(deliveries, [vec![0, 1, 2, 3], vec![1, 2, 3], vec![]]);
    assert_eq!(ids(&seen[1].state), [0]);
}
