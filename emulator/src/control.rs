//! The control endpoint `kinesis-esm run` serves on its listen address, beside the status, the
//! metrics and the live page: health and readiness for a service manager (ECS, Kubernetes,
//! systemd; `docs/production.md`) and replays (`kinesis-esm replay`).
//!
//! | request | answer |
//! |---|---|
//! | `GET /healthz` | `200 ok`: the process is alive and serves requests |
//! | `GET /readyz` | `200 ready`, or `503` with one line per reason: still starting, stopping, a mapping whose stream or lease store does not answer |
//! | `POST /kinesis-esm/replay` | [`ReplayRequest`] as JSON: `200` with a [`MappingReplay`] per mapping, or `400 {"error": ...}` |
//!
//! Like the page's actions, a replay takes JSON bodies only, which a browser sends cross-origin
//! only after a CORS preflight this server never allows.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use esm_engine::mapping::MappingControl;
use esm_engine::mapping::replay::{ReplayFrom, ReplayReport};

/// Liveness: answers while the process serves requests.
pub const HEALTHZ_PATH: &str = "/healthz";
/// Readiness: answers 200 only while every mapping can work.
pub const READYZ_PATH: &str = "/readyz";
/// Replays: `kinesis-esm replay`.
pub const REPLAY_PATH: &str = "/kinesis-esm/replay";

/// How long a readiness check waits for a stream or lease store: a probe must answer before
/// the manager's own timeout (Kubernetes: 1 s by default; ECS: 5 s).
const READINESS_TIMEOUT: Duration = Duration::from_millis(900);

/// Whether a request is the control endpoint's.
pub fn serves(method: &Method, path: &str) -> bool {
    match path {
        HEALTHZ_PATH | READYZ_PATH => method == Method::GET || method == Method::HEAD,
        REPLAY_PATH => method == Method::POST,
        _ => false,
    }
}

/// Where the run is in its life, for `/readyz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Its mappings are not all started yet.
    Starting = 0,
    /// Every mapping has started.
    Running = 1,
    /// A stop was asked for: the batches in flight finish, the leases are given up.
    Stopping = 2,
}

/// What the control endpoint works on: the running mappings, and the run's phase.
#[derive(Default)]
pub struct Control {
    mappings: Mutex<Vec<MappingControl>>,
    phase: AtomicU8,
}

impl Control {
    /// A control endpoint with no mapping yet, starting.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Adds a started mapping.
    pub fn add(&self, mapping: MappingControl) {
        self.mappings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(mapping);
    }

    /// Moves the run to `phase`.
    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Relaxed) {
            0 => Phase::Starting,
            1 => Phase::Running,
            _ => Phase::Stopping,
        }
    }

    fn mappings(&self) -> Vec<MappingControl> {
        self.mappings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The endpoint's routes, to merge with the live page's.
    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route(HEALTHZ_PATH, get(|| async { "ok\n" }))
            .route(READYZ_PATH, get(readyz))
            .route(REPLAY_PATH, post(replay))
            .with_state(Arc::clone(self))
    }

    /// Why the run is not ready, one sentence per reason; empty when it is.
    pub async fn unready_reasons(&self) -> Vec<String> {
        match self.phase() {
            Phase::Starting => return vec!["kinesis-esm is starting: its mappings are not all running yet".to_owned()],
            Phase::Stopping => return vec!["kinesis-esm is stopping: it finishes its batches in flight and gives its leases up".to_owned()],
            Phase::Running => {}
        }
        let checks = self.mappings().into_iter().map(|mapping| async move {
            match tokio::time::timeout(READINESS_TIMEOUT, mapping.check_ready()).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "{} <- {}: the stream or the lease store did not answer within {} ms",
                    mapping.function_name(),
                    mapping.stream_name(),
                    READINESS_TIMEOUT.as_millis()
                )),
            }
        });
        futures_util::future::join_all(checks)
            .await
            .into_iter()
            .filter_map(Result::err)
            .collect()
    }
}

async fn readyz(State(control): State<Arc<Control>>) -> Response {
    let reasons = control.unready_reasons().await;
    if reasons.is_empty() {
        return "ready\n".into_response();
    }
    let mut body = reasons.join("\n");
    body.push('\n');
    (StatusCode::SERVICE_UNAVAILABLE, body).into_response()
}

/// A replay, as `kinesis-esm replay` sends it: one of `sequenceNumber`, `atEpochMillis` and
/// `trimHorizon`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplayRequest {
    /// The function whose mappings read again (its `FunctionName`).
    pub function: String,
    /// One shard; every shard this instance reads when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// From this record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<String>,
    /// From the first record that arrived at or after this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_epoch_millis: Option<i64>,
    /// From the oldest record.
    #[serde(default)]
    pub trim_horizon: bool,
}

impl ReplayRequest {
    /// Where the request reads again from, or why it names no single position.
    pub fn from(&self) -> Result<ReplayFrom, String> {
        match (
            &self.sequence_number,
            self.at_epoch_millis,
            self.trim_horizon,
        ) {
            (Some(digits), None, false) => digits
                .parse()
                .map(ReplayFrom::SequenceNumber)
                .map_err(|error| format!("{error}")),
            (None, Some(millis), false) => {
                let millis = u64::try_from(millis)
                    .map_err(|_| format!("{millis}: a time before 1970 holds no record"))?;
                Ok(ReplayFrom::Timestamp(
                    SystemTime::UNIX_EPOCH + Duration::from_millis(millis),
                ))
            }
            (None, None, true) => Ok(ReplayFrom::TrimHorizon),
            _ => Err(
                "name exactly one position: a sequence number, a timestamp or the trim horizon"
                    .to_owned(),
            ),
        }
    }
}

/// What a replay did to one mapping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MappingReplay {
    /// The function.
    pub function: String,
    /// The stream.
    pub stream: String,
    /// The shards read again and those passed over.
    pub report: ReplayReport,
}

async fn replay(
    State(control): State<Arc<Control>>,
    Json(request): Json<ReplayRequest>,
) -> Response {
    match replay_mappings(&control, &request).await {
        Ok(replays) => Json(replays).into_response(),
        Err(error) => (
            StatusCode::BAD_REQUEST,
            Json(serde_json::json!({ "error": error })),
        )
            .into_response(),
    }
}

async fn replay_mappings(
    control: &Control,
    request: &ReplayRequest,
) -> Result<Vec<MappingReplay>, String> {
    let from = request.from()?;
    let mappings = control.mappings();
    let of_function: Vec<&MappingControl> = mappings
        .iter()
        .filter(|mapping| mapping.function_name() == request.function)
        .collect();
    if of_function.is_empty() {
        let mut names: Vec<&str> = mappings.iter().map(MappingControl::function_name).collect();
        names.dedup();
        return Err(format!(
            "no running mapping of function {}: this run maps {}",
            request.function,
            if names.is_empty() {
                "no function yet".to_owned()
            } else {
                names.join(", ")
            }
        ));
    }
    // A shard id names a shard of one stream: the mappings whose stream has it.
    let targets: Vec<&MappingControl> = match &request.shard {
        Some(shard) => {
            let with_shard: Vec<&MappingControl> = of_function
                .iter()
                .copied()
                .filter(|mapping| mapping.has_shard(shard))
                .collect();
            if with_shard.is_empty() {
                let streams: Vec<&str> = of_function
                    .iter()
                    .map(|mapping| mapping.stream_name())
                    .collect();
                return Err(format!(
                    "no shard {shard} in the stream(s) function {} reads ({})",
                    request.function,
                    streams.join(", ")
                ));
            }
            with_shard
        }
        None => of_function,
    };
    let mut replays = Vec::new();
    for mapping in targets {
        let report = mapping
            .replay(request.shard.as_deref(), from.clone())
            .await
            .map_err(|error| {
                format!(
                    "{} <- {}: {error}",
                    mapping.function_name(),
                    mapping.stream_name()
                )
            })?;
        replays.push(MappingReplay {
            function: mapping.function_name().to_owned(),
            stream: mapping.stream_name().to_owned(),
            report,
        });
    }
    Ok(replays)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: &str) -> ReplayRequest {
        serde_json::from_str(json).expect("a replay request")
    }

    #[test]
    fn the_control_endpoint_owns_its_three_paths_only() {
        assert!(serves(&Method::GET, "/healthz"));
        assert!(serves(&Method::GET, "/readyz"));
        assert!(serves(&Method::POST, "/kinesis-esm/replay"));
        assert!(!serves(&Method::GET, "/kinesis-esm/replay"));
        assert!(!serves(&Method::POST, "/"));
        assert!(!serves(&Method::GET, "/metrics"));
    }

    #[test]
    fn a_replay_names_exactly_one_position() {
        assert_eq!(
            request(r#"{"function": "f", "trimHorizon": true}"#).from(),
            Ok(ReplayFrom::TrimHorizon)
        );
        assert_eq!(
            request(r#"{"function": "f", "sequenceNumber": "42"}"#).from(),
            Ok(ReplayFrom::SequenceNumber("42".parse().unwrap()))
        );
        assert_eq!(
            request(r#"{"function": "f", "atEpochMillis": 1500}"#).from(),
            Ok(ReplayFrom::Timestamp(
                SystemTime::UNIX_EPOCH + Duration::from_millis(1500)
            ))
        );
        for none_or_two in [
            r#"{"function": "f"}"#,
            r#"{"function": "f", "trimHorizon": true, "sequenceNumber": "42"}"#,
        ] {
            assert!(request(none_or_two).from().is_err(), "{none_or_two}");
        }
        assert!(
            request(r#"{"function": "f", "sequenceNumber": "x1"}"#)
                .from()
                .unwrap_err()
                .contains("is not a sequence number")
        );
    }

    #[tokio::test]
    async fn a_run_is_ready_only_while_running() {
        let control = Control::new();
        assert!(control.unready_reasons().await[0].contains("starting"));
        control.set_phase(Phase::Running);
        assert_eq!(control.unready_reasons().await, Vec::<String>::new());
        control.set_phase(Phase::Stopping);
        assert!(control.unready_reasons().await[0].contains("stopping"));
    }
}
