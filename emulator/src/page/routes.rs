//! The page's routes: the page and its assets, the event stream, and the actions' requests.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{Method, StatusCode};
use axum::response::{Html, IntoResponse, Response, Sse};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use super::actions::Reshard;
use super::events;
use super::live_page::LivePage;

const INDEX_HTML: &str = include_str!("assets/index.html");
const PAGE_JS: &str = include_str!("assets/page.js");
const PAGE_CSS: &str = include_str!("assets/page.css");

/// Whether a request is the page's: `GET /`, or anything under `/page/`. Everything else (the
/// Kinesis API, `/status`, `/metrics`) is the endpoint's.
pub fn serves(method: &Method, path: &str) -> bool {
    (method == Method::GET && path == "/") || path.starts_with("/page/")
}

impl LivePage {
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
