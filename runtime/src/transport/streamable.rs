//! Legacy Streamable HTTP on `/mcp` (2025-03-26 … 2025-11-25): `initialize` opens a session,
//! later requests carry `Mcp-Session-Id`, GET opens the server-to-client stream, DELETE ends it.

use super::answer::{self, error};
use super::guard::accepts;
use super::mcp::{SESSION_HEADER, VERSION_HEADER, missing_session};
use super::modern::MAX_SUBSCRIPTIONS;
use super::{AppState, session_stream};
use crate::auth::Principal;
use crate::protocol::{
    Era, Incoming, LATEST_LEGACY, LegacyVersion, McpError, RequestId, success_response,
};
use crate::server::{Notifier, RequestContext, initialize_result};
use crate::sessions::{MAX_IN_FLIGHT, Session, SessionTransport};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::sync::Arc;

const ERA: Era = Era::Legacy(LATEST_LEGACY);

/// Serves one legacy message.
pub async fn post(
    state: Arc<AppState>,
    headers: HeaderMap,
    message: Incoming,
    accepts_sse: bool,
    caller: Option<Arc<Principal>>,
) -> Response {
    if let Incoming::Request { id, method, params } = &message
        && method == "initialize"
    {
        return initialize(&state, id, params, caller.as_deref());
    }
    let session = match session_of(&state, &headers) {
        Ok(session) => session,
        Err(refusal) => return refusal,
    };
    if let Some(version) = headers.get(VERSION_HEADER)
        && version
            .to_str()
            .ok()
            .and_then(|v| LegacyVersion::parse(v.trim()))
            .is_none()
    {
        {
            let err = McpError::InvalidRequest(
                "unsupported MCP-Protocol-Version header for this session".into(),
            );
            return (StatusCode::BAD_REQUEST, answer::error_body(None, &err, ERA)).into_response();
        }
    }
    match message {
        Incoming::Request { id, method, params } => {
            request(state, session, id, method, params, accepts_sse, caller).await
        }
        Incoming::Notification { method, params } => {
            notification(&session, &method, &params);
            StatusCode::ACCEPTED.into_response()
        }
        Incoming::Response { id, .. } => {
            session.answer(&id);
            StatusCode::ACCEPTED.into_response()
        }
    }
}

fn initialize(
    state: &AppState,
    id: &RequestId,
    params: &Value,
    caller: Option<&Principal>,
) -> Response {
    let started = std::time::Instant::now();
    let version = LegacyVersion::negotiate(params);
    let session = match state.sessions.open_for(
        SessionTransport::StreamableHttp,
        Some(version),
        caller.map(Principal::digest),
    ) {
        Ok(session) => session,
        Err(err) => {
            state.server.record("initialize", false, started);
            return error(Some(id), &err, Era::Legacy(version));
        }
    };
    let result = initialize_result(&state.server.declaration(), version);
    state.server.record("initialize", true, started);
    let mut response = answer::json(success_response(id, result));
    if let Ok(value) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

/// The session a request names: 400 without the header, 404 for an unknown or ended session
/// (the client then initializes again).
fn session_of(state: &AppState, headers: &HeaderMap) -> Result<Arc<Session>, Response> {
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return Err((
            StatusCode::BAD_REQUEST,
            answer::error_body(None, &missing_session(), ERA),
        )
            .into_response());
    };
    match state.sessions.find(id) {
        Ok(Some(session)) => Ok(session),
        Ok(None) => {
            let err = McpError::InvalidRequest(
                "session not found: it ended or expired; initialize again".into(),
            );
            Err((StatusCode::NOT_FOUND, answer::error_body(None, &err, ERA)).into_response())
        }
        Err(err) => Err(error(None, &err, ERA)),
    }
}

/// Client notifications: cancellation stops an in-flight request; the rest need nothing.
pub fn notification(session: &Session, method: &str, params: &Value) {
    if method == "notifications/cancelled"
        && let Some(id) = params.get("requestId")
    {
        session.cancel_request(id);
    }
}

async fn request(
    state: Arc<AppState>,
    session: Arc<Session>,
    id: RequestId,
    method: String,
    params: Value,
    accepts_sse: bool,
    caller: Option<Arc<Principal>>,
) -> Response {
    let keepalive = state.http.keepalive;
    let may_notify =
        session.log_level().is_some() || RequestContext::progress_token(&params).is_some();
    let (notifier, notifications) = answer::notification_channel(may_notify);
    let outcome = async move {
        let response = run(&state, &session, &id, &method, &params, notifier, caller).await;
        // The POST still needs an HTTP answer after a cancellation; clients ignore it.
        let response = response.unwrap_or_else(|| {
            let err = McpError::InvalidRequest("request cancelled".into());
            answer::error_body(Some(&id), &err, ERA).0
        });
        (StatusCode::OK, response)
    };
    answer::answer(outcome, notifications, accepts_sse, keepalive).await
}

/// Runs a session request to its JSON-RPC response, honoring cancellation and applying the
/// session side effects of `logging/setLevel` and `resources/(un)subscribe`.
pub async fn run(
    state: &AppState,
    session: &Session,
    id: &RequestId,
    method: &str,
    params: &Value,
    notifier: Option<Notifier>,
    caller: Option<Arc<Principal>>,
) -> Option<Value> {
    let era = Era::Legacy(session.version().unwrap_or(LegacyVersion::V2024_11_05));
    let Some(in_flight) = session.start_request(id) else {
        let err = McpError::TooManyRequests(MAX_IN_FLIGHT);
        return Some(answer::error_body(Some(id), &err, era).0);
    };
    if method == "resources/subscribe" && session.subscription_count() >= MAX_SUBSCRIPTIONS {
        let err = McpError::InvalidParams(format!(
            "at most {MAX_SUBSCRIPTIONS} resource subscriptions per session; unsubscribe first"
        ));
        return Some(answer::error_body(Some(id), &err, era).0);
    }
    let ctx = RequestContext::new(era, params, session.log_level(), notifier).with_caller(caller);
    let outcome = tokio::select! {
        outcome = state.server.handle(&ctx, method, params) => outcome,
        // A cancelled request gets no response, as the protocol asks.
        () = in_flight.token.cancelled() => return None,
    };
    Some(match outcome {
        Ok(result) => {
            apply_side_effects(state, session, method, params);
            success_response(id, result)
        }
        Err(err) => answer::error_body(Some(id), &err, era).0,
    })
}

fn apply_side_effects(state: &AppState, session: &Session, method: &str, params: &Value) {
    match method {
        "logging/setLevel" => {
            if let Ok(level) = crate::server::parse_level(params.get("level")) {
                session.set_log_level(level);
            }
        }
        "resources/subscribe" | "resources/unsubscribe" => {
            if let Some(uri) = params.get("uri").and_then(Value::as_str) {
                let on = method == "resources/subscribe";
                session.subscribe(uri, on);
                if on {
                    state
                        .server
                        .watch_resource(uri, &session.id, session.ended.clone());
                } else {
                    state.server.unwatch_resource(uri, &session.id);
                }
            }
        }
        _ => {}
    }
}

/// `GET /mcp`: the server-to-client stream of a session (405 without a session: stateless
/// clients have no stream).
pub async fn get(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if !headers.contains_key(SESSION_HEADER) {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response();
    }
    if !accepts(&headers).sse {
        return (
            StatusCode::NOT_ACCEPTABLE,
            "Accept must include text/event-stream",
        )
            .into_response();
    }
    let session = match session_of(&state, &headers) {
        Ok(session) => session,
        Err(refusal) => return refusal,
    };
    match session_stream::open(&state, &session) {
        Some(messages) => {
            let priming = session
                .version()
                .is_some_and(|v| v >= LegacyVersion::V2025_11_25);
            answer::sse(
                session_stream::events(messages, priming, None),
                state.http.keepalive,
            )
        }
        None => (
            StatusCode::CONFLICT,
            "this session already has an open stream",
        )
            .into_response(),
    }
}

/// `DELETE /mcp`: ends a session.
pub async fn delete(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response();
    };
    // A session opened on another replica is adopted first, so that ending it here sticks.
    match state.sessions.find(id) {
        Ok(Some(_)) => {
            state.sessions.end(id);
            StatusCode::NO_CONTENT.into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
