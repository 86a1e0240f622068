//! The operator's admin HTTP server: `/healthz` (the process runs), `/readyz` (the API server
//! answered and, with leader election, the election is under way), `/metrics`. I/O: it listens.

use crate::metrics::Metrics;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What the admin endpoints report.
#[derive(Clone, Default)]
pub struct AdminState {
    /// The operator's metrics.
    pub metrics: Arc<Metrics>,
    /// Set once the operator reached the API server.
    pub ready: Arc<AtomicBool>,
}

/// The admin routes.
pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn readyz(State(state): State<AdminState>) -> impl IntoResponse {
    if state.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok\n")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not connected to the API server yet\n",
        )
    }
}

async fn metrics(State(state): State<AdminState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.encode(),
    )
}

/// Serves the admin routes on `listener` until `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    state: AdminState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt as _;

    async fn get_status(state: AdminState, path: &str) -> (StatusCode, String) {
        let response = router(state)
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn ready_only_once_connected() {
        let state = AdminState::default();
        assert_eq!(
            get_status(state.clone(), "/healthz").await.0,
            StatusCode::OK
        );
        assert_eq!(
            get_status(state.clone(), "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        state.ready.store(true, Ordering::Relaxed);
        assert_eq!(get_status(state, "/readyz").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn serves_metrics() {
        let state = AdminState::default();
        state.metrics.set_leader(true);
        let (status, body) = get_status(state, "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("mcp_operator_leader 1"), "{body}");
    }
}
