//! The page's event stream (`GET /page/events`, server-sent events): a `status` event with
//! every mapping whenever a mapping's status changes (at most one per [`COALESCE`]), and a `log`
//! event for each line a function writes.
//!
//! Each page gets a task of its own that waits on the mappings' status channels (the fold of
//! their `ShardChange`s, `mapping::status`), so nothing is read until something changed and a
//! mapping with no page open pays nothing but the channel it already updates.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::Event;
use futures_util::Stream;
use tokio::sync::{broadcast, mpsc, watch};

use super::live_page::LivePage;
use super::view::{self, HeldRecordView, HeldRecords, Settings};
use esm_engine::invoke::Invoker;
use esm_engine::invoke::runtime_api::{TappedLine, function_lines};
use esm_engine::mapping::MappingStatus;
use kinesis_source::IteratorPosition;
use kinesis_source::sequence::SequenceNumber;

/// The least time between two `status` events: a busy mapping changes its status thousands of
/// times a second, and a page needs a few pictures a second.
pub(super) const COALESCE: Duration = Duration::from_millis(200);

/// How many events may wait for a slow page before the stream waits for it.
const BACKLOG: usize = 64;

/// One mapping a stream watches.
struct Watched {
    settings: Settings,
    status: watch::Receiver<MappingStatus>,
    invoker: Option<Arc<dyn Invoker>>,
    /// Its sender is gone (the mapping stopped): its last status stays.
    closed: bool,
}

/// The events of one page, until it goes away.
pub(super) fn stream(page: Arc<LivePage>) -> impl Stream<Item = Result<Event, Infallible>> {
    let (events, received) = mpsc::channel(BACKLOG);
    tokio::spawn(feed(page, events));
    futures_util::stream::unfold(received, |mut received| async move {
        received.recv().await.map(|event| (Ok(event), received))
    })
}

/// Sends the page its events; returns once the page is gone.
async fn feed(page: Arc<LivePage>, events: mpsc::Sender<Event>) {
    let (kept, mut lines) = function_lines();
    for line in &kept {
        if events.send(log_event(line)).await.is_err() {
            return;
        }
    }
    let mut watched: Vec<Watched> = Vec::new();
    // Mappings shown after the page opened (`run` starts them after it serves) are picked up
    // at once.
    let mut mappings_shown = page.mappings_shown();
    let mut held = HeldRecords::new();
    let mut looked_up = BTreeSet::new();
    loop {
        page.watch_new_mappings(&mut watched);
        let snapshot: Vec<(Settings, MappingStatus)> = watched
            .iter_mut()
            .map(|mapping| {
                let status = mapping.status.borrow_and_update().clone();
                let status = match &mapping.invoker {
                    Some(invoker) => status.with_environments(&**invoker),
                    None => status,
                };
                (Arc::clone(&mapping.settings), status)
            })
            .collect();
        for (_, status) in &snapshot {
            look_up_held_records(&page, status, &mut held, &mut looked_up).await;
        }
        if events.send(status_event(&snapshot, &held)).await.is_err() {
            return;
        }
        // Waits for a change, passing log lines on meanwhile.
        loop {
            tokio::select! {
                () = any_changed(&mut watched) => break,
                changed = mappings_shown.changed() => {
                    if changed.is_ok() && *mappings_shown.borrow_and_update() != watched.len() {
                        break;
                    }
                }
                line = lines.recv() => match line {
                    Ok(line) => {
                        if events.send(log_event(&line)).await.is_err() {
                            return;
                        }
                    }
                    // A page that fell behind misses lines; it is told so in the log.
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        if events.send(missed_event(missed)).await.is_err() {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => {}
                },
                () = events.closed() => return,
            }
        }
        tokio::time::sleep(COALESCE).await;
    }
}

impl LivePage {
    /// Adds to `watched` the mappings added since it was last called.
    fn watch_new_mappings(&self, watched: &mut Vec<Watched>) {
        let board = self.board();
        for mapping in &board[watched.len()..] {
            watched.push(Watched {
                settings: Arc::clone(&mapping.settings),
                status: mapping.status.clone(),
                invoker: mapping.invoker.clone(),
                closed: false,
            });
        }
    }
}

/// Returns once a watched mapping's status changed; never when none can change any more.
async fn any_changed(watched: &mut [Watched]) {
    loop {
        let waits: Vec<_> = watched
            .iter_mut()
            .filter(|mapping| !mapping.closed)
            .map(|mapping| {
                Box::pin(async move { (mapping.status.changed().await.is_ok(), mapping) })
            })
            .collect();
        if waits.is_empty() {
            return std::future::pending().await;
        }
        let ((changed, mapping), _, _) = futures_util::future::select_all(waits).await;
        if changed {
            return;
        }
        mapping.closed = true;
    }
}

/// Reads each held record the page has not seen, once: its partition key and data come from
/// the stream, read at its sequence number. A record that cannot be read (trimmed, or the
/// Kinesis unreachable) is shown without them.
async fn look_up_held_records(
    page: &LivePage,
    status: &MappingStatus,
    held: &mut HeldRecords,
    looked_up: &mut BTreeSet<(String, SequenceNumber)>,
) {
    for shard in status.shards.values() {
        let Some(record) = &shard.held else { continue };
        let key = (shard.shard_id.clone(), record.sequence_number.clone());
        if !looked_up.insert(key.clone()) {
            continue;
        }
        match read_record(page, &status.stream_name, &key.0, &key.1).await {
            Ok(Some(view)) => {
                held.insert(key, view);
            }
            Ok(None) => {}
            Err(error) => tracing::debug!(
                stream = %status.stream_name,
                shard = %key.0,
                sequence_number = %key.1,
                %error,
                "the page could not read the held record"
            ),
        }
    }
}

async fn read_record(
    page: &LivePage,
    stream: &str,
    shard_id: &str,
    sequence_number: &SequenceNumber,
) -> Result<Option<HeldRecordView>, kinesis_source::SourceError> {
    let position = IteratorPosition::AtSequenceNumber(sequence_number.clone());
    let iterator = page
        .source
        .shard_iterator(stream, shard_id, &position)
        .await?;
    let read = page.source.get_records(&iterator, 1).await?;
    Ok(read
        .records
        .into_iter()
        .find(|record| &record.sequence_number == sequence_number)
        .map(|record| HeldRecordView {
            partition_key: record.partition_key.to_string(),
            data: view::decode_data(&record.data),
        }))
}

fn status_event(snapshot: &[(Settings, MappingStatus)], held: &HeldRecords) -> Event {
    let mappings: Vec<serde_json::Value> = snapshot
        .iter()
        .map(|(settings, status)| view::mapping_view(settings, status, held))
        .collect();
    let document = serde_json::json!({
        "atEpochMillis": kinesis_source::time::millis_since_epoch(std::time::SystemTime::now()),
        "mappings": mappings,
    });
    Event::default().event("status").data(document.to_string())
}

fn log_event(line: &TappedLine) -> Event {
    Event::default()
        .event("log")
        .data(serde_json::to_string(line).unwrap_or_default())
}

fn missed_event(missed: u64) -> Event {
    Event::default()
        .event("missed")
        .data(serde_json::json!({ "lines": missed }).to_string())
}
