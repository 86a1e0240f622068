//! Admin HTTP routes: `/healthz` (the process serves), `/readyz` (declaration loaded and MCP
//! listener bound), `/metrics` (Prometheus text format), `/declaration` (what is served, see
//! `declaration.rs`).

use crate::reload::ReloadLog;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use mcp_server::Server;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the admin routes read.
pub struct AdminState {
    /// The dispatch layer (for its metrics).
    pub server: Arc<Server>,
    /// Set once the MCP listener is bound; cleared when shutdown starts.
    pub ready: AtomicBool,
    /// When the served declaration was loaded, and how the last reload went.
    pub log: Arc<ReloadLog>,
}

impl AdminState {
    /// Marks readiness.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }
}

/// The admin routes.
pub fn router(state: Arc<AdminState>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/declaration", get(declaration))
        .with_state(state)
}

async fn readyz(State(state): State<Arc<AdminState>>) -> Response {
    if state.ready.load(Ordering::Acquire) {
        "ready\n".into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n").into_response()
    }
}

async fn declaration(State(state): State<Arc<AdminState>>) -> Json<serde_json::Value> {
    Json(super::declaration::report(&state.server, &state.log))
}

async fn metrics(State(state): State<Arc<AdminState>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.server.metrics().encode(),
    )
        .into_response()
}
