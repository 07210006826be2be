//! The agent's HTTP API (`[api] listen = "127.0.0.1:9477"`): what operators and
//! Prometheus see of a running agent.
//!
//! - `GET /metrics`: Prometheus/OpenMetrics text ([`metrics`]), read at scrape
//!   time from the counters the stages already keep (no second bookkeeping).
//! - `GET /healthz`: `ok`.
//! - `GET /status`: JSON — interfaces, ring span, open windows, upload queue.
//! - `POST /trigger`: a manual trigger with a reason (JSON `{"reason": …}` or a
//!   plain-text body). It needs `Authorization: Bearer <token>` when `[api]
//!   token` is set (compared in constant time); with no token it is allowed only
//!   when the listener is loopback, and refused (403) otherwise.
//!
//! The listener is bound by [`Api::bind`] before the agent starts capturing, so
//! a busy port fails the start, not the middle of a run.

pub mod metrics;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::capture::InterfaceInfo;
use crate::clock::now_ns;
use crate::deliver::{CaptureCounts, DeliverStats};
use crate::follow::FollowStats;
use crate::recorder::{Fired, Firing, Recorder, TriggerId};
use crate::ring::Ring;

/// Default address of the API.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9477";
/// Longest reason kept from a manual trigger.
pub const MAX_REASON: usize = 1000;

/// The `[api]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiConfig {
    /// Address to listen on (`127.0.0.1:0` picks a free port).
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Bearer token for `POST /trigger`; `${ENV}` is expanded. Required to
    /// trigger when `listen` is not loopback.
    #[serde(default)]
    pub token: Option<String>,
}

fn default_listen() -> SocketAddr {
    DEFAULT_LISTEN.parse().expect("constant address")
}

impl Default for ApiConfig {
    fn default() -> ApiConfig {
        ApiConfig {
            listen: default_listen(),
            token: None,
        }
    }
}

/// Why the API cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The address cannot be bound.
    #[error("[api] cannot listen on {addr}: {source}: choose another `listen` address or stop what uses it")]
    Listen {
        /// Address.
        addr: SocketAddr,
        /// Cause.
        source: std::io::Error,
    },
    /// The token refers to an unset variable.
    #[error("[api] `token`: {0}")]
    Token(String),
}

/// What the API reads of a running agent.
#[derive(Clone)]
pub struct AgentView {
    /// Captured interfaces, in ring order.
    pub interfaces: Arc<Vec<InterfaceInfo>>,
    /// The ring.
    pub ring: Arc<Ring>,
    /// The recorder (fires manual triggers).
    pub recorder: Arc<Recorder>,
    /// The manual trigger.
    pub manual_trigger: TriggerId,
    /// Replaying: "now" is the replay's position, not the wall clock.
    pub replay: bool,
    /// Log follower counters, when following.
    pub follow: Option<Arc<FollowStats>>,
    /// Spool and upload counters.
    pub deliver: Option<Arc<DeliverStats>>,
    /// Captures written.
    pub captures: Arc<CaptureCounts>,
    /// The agent's threads and tasks.
    pub tasks: crate::tasks::Tasks,
    /// The fleet link's counters, with `[fleet]`.
    pub fleet: Option<Arc<crate::fleet::FleetStats>>,
    /// The baseline thread's counters, when it runs.
    pub baseline: Option<Arc<crate::baseline::keeper::BaselineStats>>,
}

/// A bound, not yet serving API.
pub struct Api {
    listener: tokio::net::TcpListener,
    token: Option<String>,
}

struct ApiState {
    view: AgentView,
    token: Option<String>,
    loopback: bool,
    manual_fired: AtomicU64,
}

impl Api {
    /// Bind the listener and resolve the token.
    pub async fn bind(config: &ApiConfig) -> Result<Api, ApiError> {
        let token = config
            .token
            .as_deref()
            .map(|t| crate::auth::expand_env(t, "`token`"))
            .transpose()
            .map_err(|e| ApiError::Token(e.to_string()))?
            .filter(|t| !t.is_empty());
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| ApiError::Listen {
                addr: config.listen,
                source,
            })?;
        Ok(Api { listener, token })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve until `shutdown`; logs `api listening on http://ADDR`.
    pub async fn run(self, view: AgentView, shutdown: CancellationToken) {
        let addr = match self.listener.local_addr() {
            Ok(a) => a,
            Err(e) => {
                tracing::error!(error = %e, "api: listener has no address");
                return;
            }
        };
        let loopback = addr.ip().is_loopback();
        if self.token.is_none() && !loopback {
            tracing::warn!(%addr, "[api] has no token and is not on loopback: POST /trigger is refused (set [api] token)");
        }
        tracing::info!(
            auth = self.token.is_some(),
            "api listening on http://{addr}"
        );
        let state = Arc::new(ApiState {
            view,
            token: self.token,
            loopback,
            manual_fired: AtomicU64::new(0),
        });
        let result = axum::serve(self.listener, router(state))
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await;
        if let Err(e) = result {
            tracing::error!(error = %e, "api stopped");
        }
    }
}

fn router(state: Arc<ApiState>) -> Router {
    Router::new()
        .route("/metrics", get(get_metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/status", get(get_status))
        .route("/trigger", post(post_trigger))
        .with_state(state)
}

async fn get_metrics(State(st): State<Arc<ApiState>>) -> Response {
    match metrics::encode(&st.view) {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode metrics: {e}\n"),
        )
            .into_response(),
    }
}

async fn get_status(State(st): State<Arc<ApiState>>) -> Response {
    Json(status(&st.view)).into_response()
}

/// The `/status` document.
pub fn status(v: &AgentView) -> serde_json::Value {
    let r = Ordering::Relaxed;
    let span = v.ring.span();
    let span_s = span
        .newest_ts
        .map(|n| (n.saturating_sub(span.reaches_back_to)).max(0) as f64 / 1e9);
    let interfaces: Vec<_> = v
        .interfaces
        .iter()
        .map(|i| {
            serde_json::json!({
                "name": i.desc.name,
                "packets": i.counters.packets.load(r),
                "bytes": i.counters.bytes.load(r),
                "kernel_drops": i.counters.kernel_drops.load(r),
                "if_drops": i.counters.if_drops.load(r),
            })
        })
        .collect();
    let rec = v.recorder.stats();
    let queue = v.deliver.as_ref().map(|d| {
        serde_json::json!({
            "pending": d.pending.load(r),
            "parked": d.parked_now.load(r),
            "parked_reasons": *d.parked_reasons.lock().unwrap_or_else(|e| e.into_inner()),
            "units": d.units.load(r),
            "spool_bytes": d.spool_bytes.load(r),
            "uploads_ok": d.uploads_ok.load(r),
            "uploads_failed": d.uploads_failed.load(r),
            "dropped_uploaded": d.dropped_uploaded.load(r),
            "dropped_pending": d.dropped_pending.load(r),
        })
    });
    serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "interfaces": interfaces,
        "ring": {
            "memory_limit": v.ring.memory_limit(),
            "allocated_bytes": span.allocated_bytes,
            "idle_bytes": span.idle_bytes,
            "blocks": span.blocks,
            "reaches_back_to_ns": span.reaches_back_to,
            "newest_ns": span.newest_ts,
            "span_seconds": span_s,
            "history_seconds": span.history_seconds(),
            "packets": span.packets,
            "held_bytes": span.held_bytes,
            "bytes_per_packet": span.bytes_per_packet(),
            "compress": v.ring.compresses(),
            "packed_blocks": span.packed_blocks,
            "compression_ratio": span.compression_ratio(),
            "packed_total": v.ring.stats().packed_blocks.load(r),
            "left_raw_total": v.ring.stats().unpacked_blocks.load(r),
            "compressor_behind_blocks": v.ring.compressor_behind(),
        },
        "open_windows": v.recorder.open_windows(),
        "tasks_running": v.tasks.running(),
        "triggers": {
            "opened": rec.opened.load(r),
            "merged": rec.merged.load(r),
            "suppressed": rec.suppressed.load(r),
        },
        "captures": {
            "written": v.captures.written.load(r),
            "failed": v.captures.failed.load(r),
        },
        "queue": queue,
        "baseline": v.baseline.as_ref().map(|b| {
            let oldest = b.oldest_ns.load(r);
            serde_json::json!({
                "summaries": b.summaries.load(r),
                "oldest": (oldest != 0).then(|| crate::clock::rfc3339(oldest)),
                "written": b.written.load(r),
                "write_errors": b.write_errors.load(r),
                "skipped_blocks": b.skipped_blocks.load(r),
            })
        }),
        "logs": v.follow.as_ref().map(|f| serde_json::json!({
            "files_followed": f.files_followed.load(r),
            "lines_read": f.lines_read.load(r),
        })),
    })
}

#[derive(Debug, Deserialize)]
struct TriggerBody {
    reason: Option<String>,
}

/// Whether a manual trigger may be fired: `None` when allowed.
fn authorize(headers: &HeaderMap, token: Option<&str>, loopback: bool) -> Option<Response> {
    match token {
        Some(t) => crate::auth::check_bearer(headers, Some(t)),
        None if loopback => None,
        None => Some(
            (
                StatusCode::FORBIDDEN,
                "manual triggers need a token on a non-loopback listener: set [api] token\n",
            )
                .into_response(),
        ),
    }
}

async fn post_trigger(
    State(st): State<Arc<ApiState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = authorize(&headers, st.token.as_deref(), st.loopback) {
        tracing::warn!("manual trigger refused: bad or missing token");
        return r;
    }
    let text = String::from_utf8_lossy(&body);
    let reason = match serde_json::from_str::<TriggerBody>(&text) {
        Ok(b) => b.reason.unwrap_or_default(),
        Err(_) => text.trim().to_string(),
    };
    let reason: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_REASON)
        .collect();
    let reason = if reason.trim().is_empty() {
        "manual trigger via API".to_string()
    } else {
        reason
    };
    let v = &st.view;
    let at_ns = if v.replay {
        v.ring.span().newest_ts.unwrap_or_else(now_ns)
    } else {
        now_ns()
    };
    let firing = Firing {
        trigger: v.manual_trigger,
        at_ns,
        source: Some("api".into()),
        line: Some(reason.clone().into_bytes()),
        ..Firing::default()
    };
    st.manual_fired.fetch_add(1, Ordering::Relaxed);
    match v.recorder.fire(firing) {
        Ok(fired) => {
            let (outcome, incident) = match &fired {
                Fired::Opened(i) => ("opened", Some(i.clone())),
                Fired::Merged(i) => ("merged", Some(i.clone())),
                _ => ("suppressed", None),
            };
            tracing::info!(%reason, outcome, "manual trigger via API");
            (
                StatusCode::ACCEPTED,
                Json(serde_json::json!({"outcome": outcome, "incident": incident, "at_ns": at_ns})),
            )
                .into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "manual trigger: cannot open a capture");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot open a capture: {e}: check the output directory\n"),
            )
                .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_authorization() {
        let mut h = HeaderMap::new();
        assert!(authorize(&h, None, true).is_none());
        let r = authorize(&h, None, false).expect("refused off loopback");
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        let r = authorize(&h, Some("t0k"), true).expect("no token sent");
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        h.insert(header::AUTHORIZATION, "Bearer nope".parse().expect("hv"));
        let r = authorize(&h, Some("t0k"), true).expect("wrong token");
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        h.insert(header::AUTHORIZATION, "Bearer t0k".parse().expect("hv"));
        assert!(authorize(&h, Some("t0k"), false).is_none());
    }

    #[test]
    fn config_defaults_to_loopback() {
        let c: ApiConfig = toml::from_str("").expect("empty");
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert!(toml::from_str::<ApiConfig>("listen = \"nowhere\"").is_err());
    }
}
