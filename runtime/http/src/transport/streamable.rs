//! Legacy Streamable HTTP on `/mcp` (2025-03-26 … 2025-11-25): `initialize` opens a session,
//! later requests carry `Mcp-Session-Id`, GET opens the server-to-client stream, DELETE ends it.

use super::authn::Message;
use super::client::{self, Client};
use super::guard::accepts;
use super::headers::{SESSION_HEADER, VERSION_HEADER};
use super::legacy::{self, missing_session};
use super::reply::{self, error};
use super::{AppState, held, param_headers, session_stream, switch};
use crate::auth::Principal;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_declaration::Transport;
use mcp_protocol::methods;
use mcp_protocol::{Era, LATEST_LEGACY, LegacyVersion, McpError, RequestId, success_response};
use mcp_server::RequestContext;
use mcp_server::budget::Held;
use mcp_server::clients::ClientKey;
use mcp_server::param_headers::Expect;
use mcp_server::sessions::{Session, SessionTransport};
use serde_json::Value;
use std::net::IpAddr;
use std::sync::Arc;

const ERA: Era = Era::Legacy(LATEST_LEGACY);

/// Serves one legacy message.
pub(super) async fn post(
    state: Arc<AppState>,
    headers: HeaderMap,
    message: Message,
    accepts_sse: bool,
    caller: Option<Arc<Principal>>,
    held: Held,
    address: IpAddr,
) -> Response {
    let client = client::key_of(caller.as_deref(), address);
    if let Message::Request { id, authorized } = &message
        && authorized.request().method == methods::INITIALIZE
    {
        let params = &authorized.request().params;
        // The session serves the view the request came through.
        let view = authorized.request().view_name();
        return initialize(&state, id, params, caller.as_deref(), client, view);
    }
    let session = match session_of(&state, &headers, client) {
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
            return (StatusCode::BAD_REQUEST, reply::error_body(None, &err, ERA)).into_response();
        }
    }
    // Clients of these versions predate `Mcp-Param-*`: only headers that were sent are checked.
    if let Message::Request { id, authorized } = &message
        && let Err(err) = param_headers::check(authorized, &headers, Expect::IfSent)
    {
        return error(Some(id), &err, ERA);
    }
    // What the session holds counts against its own budget too.
    let bytes = held.bytes();
    let Some(held) = legacy::charge_session(&state, &session, held, bytes) else {
        let id = match &message {
            Message::Request { id, .. } => Some(id),
            Message::Other(_) => None,
        };
        return held::busy(id, ERA, "this session holds its most now");
    };
    match legacy::take_request(&state, &session, message, held) {
        Some(taken) => {
            let origin = legacy::Origin::new(&headers, caller);
            request(state, session, taken, accepts_sse, origin).await
        }
        None => StatusCode::ACCEPTED.into_response(),
    }
}

/// `initialize` opens a session, bound to the caller when requests are authenticated, in
/// `client`'s share: its id travels in the response header.
fn initialize(
    state: &AppState,
    id: &RequestId,
    params: &Value,
    caller: Option<&Principal>,
    client: ClientKey,
    view: Option<&str>,
) -> Response {
    let (version, outcome) = state.server.initialize(params, |version| {
        state.sessions.open_in(
            SessionTransport::StreamableHttp,
            Some(version),
            caller.map(Principal::digest),
            client,
            view,
        )
    });
    let (session, result) = match outcome {
        Ok(opened) => opened,
        Err(err) => return error(Some(id), &err, Era::Legacy(version)),
    };
    session.set_client_capabilities(params.get("capabilities"));
    let mut response = reply::json(StatusCode::OK, &success_response(id, result));
    if let Ok(value) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

/// The session a request names (adopted in `client`'s share when another replica opened it):
/// 400 without the header, 404 for an unknown or ended session (the client then initializes
/// again).
fn session_of(
    state: &AppState,
    headers: &HeaderMap,
    client: ClientKey,
) -> Result<Arc<Session>, Response> {
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return Err((
            StatusCode::BAD_REQUEST,
            reply::error_body(None, &missing_session(), ERA),
        )
            .into_response());
    };
    match state.sessions.find(id, client) {
        Ok(Some(session)) => Ok(session),
        Ok(None) => {
            let err = McpError::InvalidRequest(
                "session not found: it ended or expired; initialize again".into(),
            );
            Err((StatusCode::NOT_FOUND, reply::error_body(None, &err, ERA)).into_response())
        }
        Err(err) => Err(error(None, &err, ERA)),
    }
}

async fn request(
    state: Arc<AppState>,
    session: Arc<Session>,
    (id, authorized, held): legacy::Taken,
    accepts_sse: bool,
    origin: legacy::Origin,
) -> Response {
    let keepalive = state.http.keepalive;
    // Interactive items send their requests on this stream too.
    let may_notify = session.log_level().is_some()
        || RequestContext::progress_token(&authorized.request().params).is_some()
        || state.server.may_ask(authorized.request());
    let (notifier, notifications) = reply::notification_channel(may_notify);
    let outcome = Box::pin(async move {
        let response = legacy::run(&state, &session, &id, authorized, notifier, origin).await;
        // The request is gone with its run; its charges go before the answer is written.
        drop(held);
        // The POST still needs an HTTP answer after a cancellation; clients ignore it.
        let response = response.unwrap_or_else(|| {
            let err = McpError::InvalidRequest("request cancelled".into());
            reply::error_body(Some(&id), &err, ERA).0
        });
        (StatusCode::OK, response)
    });
    reply::respond(outcome, notifications, accepts_sse, keepalive).await
}

/// `GET /mcp`: the server-to-client stream of a session (405 without a session: stateless
/// clients have no stream).
pub(super) async fn get(
    State(state): State<Arc<AppState>>,
    Client(client): Client,
    headers: HeaderMap,
) -> Response {
    if !headers.contains_key(SESSION_HEADER) {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response();
    }
    if let Some(refusal) = switch::refuse_with(
        &state,
        Transport::Streamable,
        StatusCode::METHOD_NOT_ALLOWED,
    ) {
        return refusal;
    }
    if !accepts(&headers).sse {
        return (
            StatusCode::NOT_ACCEPTABLE,
            "Accept must include text/event-stream",
        )
            .into_response();
    }
    let session = match session_of(&state, &headers, client) {
        Ok(session) => session,
        Err(refusal) => return refusal,
    };
    match session_stream::open(&state, &session) {
        Some(messages) => {
            let priming = session
                .version()
                .is_some_and(|v| v >= LegacyVersion::V2025_11_25);
            reply::sse(
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
pub(super) async fn delete(
    State(state): State<Arc<AppState>>,
    Client(client): Client,
    headers: HeaderMap,
) -> Response {
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response();
    };
    if let Some(refusal) = switch::refuse_with(
        &state,
        Transport::Streamable,
        StatusCode::METHOD_NOT_ALLOWED,
    ) {
        return refusal;
    }
    // A session opened on another replica is adopted first, so that ending it here sticks.
    match state.sessions.find(id, client) {
        Ok(Some(_)) => {
            state.sessions.end(id);
            StatusCode::NO_CONTENT.into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
