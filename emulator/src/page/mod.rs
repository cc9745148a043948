//! The live page `kinesis-esm run` serves at `/` on its listen address: the mappings, their
//! shards' lineage and phases, held records, throughput and the function's log lines, pushed as
//! they change, and forms to publish a record and to split or merge a shard.
//!
//! The page is one HTML file, one script and one style sheet, embedded in the binary
//! (`assets/`): no build step, nothing to install, and it works offline. It reads one stream of
//! server-sent events (`GET /page/events`, `events.rs`); what each event carries is made by pure
//! functions in `view.rs`. The actions go through [`PageActions`], which `run` implements with the
//! code of the `put` and `reshard` commands.
//!
//! | request | answer |
//! |---|---|
//! | `GET /` | the page |
//! | `GET /page/page.js`, `GET /page/page.css` | its script and style sheet |
//! | `GET /page/events` | the event stream: `status` (every mapping, as JSON), `log` (a function line), `missed` (lines a slow page missed) |
//! | `POST /page/put` | `{"stream", "partitionKey", "data"}` (`data` is JSON text): publishes a record |
//! | `POST /page/reshard` | `{"stream", "split": SHARD}` or `{"stream", "merge": [SHARD, ADJACENT]}` |
//!
//! An action answers `{"message": ...}`, or a 400 with `{"error": ...}` saying what is wrong.
//! The actions take JSON bodies only (`Content-Type: application/json`), which a browser sends
//! cross-origin only after a CORS preflight this server never allows: another site cannot post
//! them from a visitor's browser.

mod events;
pub(crate) mod view;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{Method, StatusCode};
use axum::response::{Html, IntoResponse, Response, Sse};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use tokio::sync::watch;

use self::view::Settings;
use esm_engine::config::MappingConfig;
use esm_engine::mapping::MappingStatus;
use kinesis_source::ShardSource;

const INDEX_HTML: &str = include_str!("assets/index.html");
const PAGE_JS: &str = include_str!("assets/page.js");
const PAGE_CSS: &str = include_str!("assets/page.css");

/// Whether a request is the page's: `GET /`, or anything under `/page/`. Everything else (the
/// Kinesis API, `/status`, `/metrics`) is the endpoint's.
pub fn serves(method: &Method, path: &str) -> bool {
    (method == Method::GET && path == "/") || path.starts_with("/page/")
}

/// A change to a stream's shards the page asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reshard {
    /// Splits an open shard at the middle of its hash key range.
    Split {
        /// The shard.
        shard: String,
    },
    /// Merges two adjacent open shards.
    Merge {
        /// The shard.
        shard: String,
        /// The shard next to it.
        adjacent_shard: String,
    },
}

/// What the page's forms do: `run` implements it with the code the `put` and `reshard` commands
/// run. An error is a sentence for the user.
#[async_trait]
pub trait PageActions: Send + Sync {
    /// Publishes one record; says where it landed.
    async fn put(&self, stream: &str, partition_key: &str, data: Vec<u8>)
    -> anyhow::Result<String>;

    /// Splits or merges shards of `stream`.
    async fn reshard(&self, stream: &str, change: Reshard) -> anyhow::Result<()>;
}

/// A mapping the page shows.
struct Shown {
    settings: Settings,
    status: watch::Receiver<MappingStatus>,
}

/// The page's state: the mappings it shows, where held records are read, and the actions.
pub struct LivePage {
    board: Mutex<Vec<Shown>>,
    /// How many mappings the board holds: open pages wait on it to pick a new one up at once.
    shown: watch::Sender<usize>,
    source: Arc<dyn ShardSource>,
    actions: Arc<dyn PageActions>,
}

impl LivePage {
    /// A page showing no mapping yet, reading held records from `source`.
    pub fn new(source: Arc<dyn ShardSource>, actions: Arc<dyn PageActions>) -> Arc<Self> {
        Arc::new(Self {
            board: Mutex::default(),
            shown: watch::Sender::new(0),
            source,
            actions,
        })
    }

    /// Shows the mapping of `config`, whose status `status` follows. Open pages pick it up at
    /// once.
    pub fn show(&self, config: &MappingConfig, status: watch::Receiver<MappingStatus>) {
        let mut board = self.board();
        board.push(Shown {
            settings: view::settings(config).into(),
            status,
        });
        self.shown.send_replace(board.len());
    }

    /// The page's routes, for [`crate::endpoint::serve_with_page`].
    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route("/", get(|| async { Html(INDEX_HTML) }))
            .route(
                "/page/page.js",
                get(|| async { asset("text/javascript; charset=utf-8", PAGE_JS) }),
            )
            .route(
                "/page/page.css",
                get(|| async { asset("text/css; charset=utf-8", PAGE_CSS) }),
            )
            .route("/page/events", get(event_stream))
            .route("/page/put", post(put))
            .route("/page/reshard", post(reshard))
            .with_state(Arc::clone(self))
    }

    fn board(&self) -> MutexGuard<'_, Vec<Shown>> {
        self.board.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes whenever a mapping is shown.
    fn mappings_shown(&self) -> watch::Receiver<usize> {
        self.shown.subscribe()
    }
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [(CONTENT_TYPE, content_type), (CACHE_CONTROL, "no-cache")],
        body,
    )
        .into_response()
}

async fn event_stream(State(page): State<Arc<LivePage>>) -> impl IntoResponse {
    Sse::new(events::stream(page)).keep_alive(axum::response::sse::KeepAlive::default())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PutRequest {
    stream: String,
    partition_key: String,
    data: String,
}

async fn put(State(page): State<Arc<LivePage>>, Json(request): Json<PutRequest>) -> Response {
    if let Err(message) = check_put(&request) {
        return refused(message);
    }
    let data = request.data.trim().as_bytes().to_vec();
    match page
        .actions
        .put(&request.stream, &request.partition_key, data)
        .await
    {
        Ok(placed) => done(placed),
        Err(error) => refused(format!("{error:#}")),
    }
}

/// Refuses a record the form got wrong, saying what.
fn check_put(request: &PutRequest) -> Result<(), String> {
    if request.partition_key.is_empty() {
        return Err("the partition key is empty: Kinesis needs one of 1 to 256 characters".into());
    }
    serde_json::from_str::<serde_json::Value>(&request.data)
        .map(drop)
        .map_err(|error| format!("the data is not JSON: {error}"))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReshardRequest {
    stream: String,
    #[serde(default)]
    split: Option<String>,
    #[serde(default)]
    merge: Option<[String; 2]>,
}

async fn reshard(
    State(page): State<Arc<LivePage>>,
    Json(request): Json<ReshardRequest>,
) -> Response {
    let change = match (request.split, request.merge) {
        (Some(shard), None) => Reshard::Split { shard },
        (None, Some([shard, adjacent_shard])) => Reshard::Merge {
            shard,
            adjacent_shard,
        },
        _ => return refused("name either a shard to split or two shards to merge".to_owned()),
    };
    let said = match &change {
        Reshard::Split { shard } => format!("split {shard}"),
        Reshard::Merge {
            shard,
            adjacent_shard,
        } => format!("merged {shard} and {adjacent_shard}"),
    };
    match page.actions.reshard(&request.stream, change).await {
        Ok(()) => done(format!("{said} of stream {}", request.stream)),
        Err(error) => refused(format!("{error:#}")),
    }
}

fn done(message: String) -> Response {
    Json(serde_json::json!({ "message": message })).into_response()
}

fn refused(error: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(serde_json::json!({ "error": error })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put_request(partition_key: &str, data: &str) -> PutRequest {
        PutRequest {
            stream: "shipments".to_owned(),
            partition_key: partition_key.to_owned(),
            data: data.to_owned(),
        }
    }

    #[test]
    fn the_page_owns_the_root_and_its_own_paths_only() {
        assert!(serves(&Method::GET, "/"));
        assert!(serves(&Method::GET, "/page/events"));
        assert!(serves(&Method::POST, "/page/put"));
        // The Kinesis API is POST /; the side documents are the endpoint's.
        assert!(!serves(&Method::POST, "/"));
        assert!(!serves(&Method::GET, "/status"));
        assert!(!serves(&Method::GET, "/metrics"));
    }

    #[test]
    fn a_record_needs_a_partition_key_and_json_data() {
        assert_eq!(
            check_put(&put_request("customer-42", r#"{"id": 2}"#)),
            Ok(())
        );
        assert_eq!(
            check_put(&put_request("", "{}")),
            Err("the partition key is empty: Kinesis needs one of 1 to 256 characters".into())
        );
        assert_eq!(
            check_put(&put_request("customer-42", "{\"id\": }")),
            Err("the data is not JSON: expected value at line 1 column 8".into())
        );
    }
}
