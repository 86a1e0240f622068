//! HTTP+SSE (2024-11-05, deprecated but still used): `GET /sse` opens a session and its stream,
//! whose first event names the POST endpoint (relative, with the ingress path prefix);
//! `POST /messages?sessionId=…` answers 202 and the response travels on the stream.

use super::authn::{self, Caller};
use super::client::Client;
use super::guard::check_content_type;
use super::legacy;
use super::reply::{self, error};
use super::session_stream::{self, short};
use super::view_route::ViewRoute;
use super::{AppState, held, param_headers, switch};
use axum::Extension;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use mcp_declaration::Transport;
use mcp_protocol::methods;
use mcp_protocol::{Era, Incoming, LegacyVersion, McpError, parse_weighed, success_response};
use mcp_server::Outgoing;
use mcp_server::budget::Held;
use mcp_server::param_headers::Expect;
use mcp_server::sessions::{Session, SessionStore, SessionTransport, StreamSender};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc::error::TrySendError;

const ERA: Era = Era::Legacy(LegacyVersion::V2024_11_05);

/// `GET /sse`: opens a session whose life is this stream.
pub(super) async fn get(
    State(state): State<Arc<AppState>>,
    caller: Option<Extension<Caller>>,
    view: Option<Extension<ViewRoute>>,
    Client(client): Client,
) -> Response {
    if let Some(refusal) = switch::refuse(&state, Transport::Sse) {
        return refusal;
    }
    let principal = caller.map(|Extension(caller)| caller.principal.digest());
    let view = view.map(|Extension(view)| view);
    let session = match state.sessions.open_in(
        SessionTransport::Sse,
        None,
        principal,
        client,
        view.as_ref().map(|v| v.name.as_str()),
    ) {
        Ok(session) => session,
        Err(err) => return error(None, &err, ERA),
    };
    let Some(messages) = session_stream::open(&state, &session) else {
        state.sessions.end(&session.id);
        return error(
            None,
            &McpError::Internal("could not open the session stream".into()),
            ERA,
        );
    };
    // Under the view's path for a session of a view: its posts go through the same view.
    let endpoint = format!(
        "{}{}/messages?sessionId={}",
        state.http.path_prefix,
        view.as_ref().map_or("", |v| v.path.as_str()),
        session.id
    );
    let guard = EndOnDrop {
        sessions: state.sessions.clone(),
        id: session.id.clone(),
    };
    let events = session_stream::events(
        messages,
        false,
        Some(Event::default().event("endpoint").data(endpoint)),
    );
    let events = futures_util::StreamExt::map(events, move |event| {
        let _alive = &guard;
        event
    });
    reply::sse(events, state.http.keepalive)
}

/// Ends an HTTP+SSE session when its stream is dropped (the client disconnected).
struct EndOnDrop {
    sessions: Arc<SessionStore>,
    id: String,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        if self.sessions.end(&self.id) {
            tracing::debug!(session = %short(&self.id), "SSE client disconnected; session ended");
        }
    }
}

/// The session query of `POST /messages`.
#[derive(Deserialize)]
pub(super) struct MessagesQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

/// `POST /messages?sessionId=…`: 202, with the JSON-RPC response sent on the session's stream.
/// What a session holds (its parsed requests while they run, their answers until written to
/// the stream) counts against its byte budget and the shared one; a session whose budget is
/// full, or whose stream has no room for an answer (its client stopped reading), ends at once:
/// later posts get 404. A request's params are dropped before its answer is queued.
pub(super) async fn post(
    State(state): State<Arc<AppState>>,
    Query(query): Query<MessagesQuery>,
    caller: Option<Extension<Caller>>,
    view: Option<Extension<ViewRoute>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(refusal) = switch::refuse(&state, Transport::Sse) {
        return refusal;
    }
    let Some(id) = query.session_id else {
        return (StatusCode::BAD_REQUEST, "missing sessionId query parameter").into_response();
    };
    let Some(session) = state.sessions.find_local(&id) else {
        return (
            StatusCode::NOT_FOUND,
            "session not found: open a new one with GET /sse",
        )
            .into_response();
    };
    if let Err(refusal) = check_content_type(&headers) {
        return refusal;
    }
    let (body, share) = match state.bodies.read(&headers, body).await {
        Ok(read) => read,
        Err(refusal) => return refusal,
    };
    let (weighed, held) = match held::charge(&state, &body, ERA) {
        Ok(charged) => charged,
        Err(refusal) => return refusal,
    };
    let Some(held) = legacy::charge_session(&state, &session, held, weighed.bytes) else {
        return end_full(&state, &session, "too much posted and not yet answered");
    };
    let parsed = parse_weighed(&body, &weighed);
    drop((body, share));
    let message = match parsed {
        Ok(message) => message,
        Err(err) => return error(None, &err, ERA),
    };
    let request_id = match &message {
        Incoming::Request { id, .. } => Some(id.clone()),
        _ => None,
    };
    let caller = caller.map(|Extension(caller)| caller);
    let view = view.as_ref().map(|Extension(v)| v.name.as_str());
    let message = match authn::authorize(
        &state,
        caller.as_ref(),
        message,
        ERA,
        Some(&session.id),
        view,
    ) {
        Ok(message) => message,
        Err((refusal, response)) => {
            // HTTP+SSE clients read answers from the session stream, not from the POST: without
            // this error there, the request would wait for its timeout.
            if let (Some(id), Some(stream)) = (&request_id, session.stream()) {
                let err = McpError::InvalidRequest(format!(
                    "refused ({refusal}): the POST was answered {} with the challenge",
                    refusal.status().as_u16()
                ));
                let answer = reply::error_body(Some(id), &err, ERA).0;
                let _ = stream.try_send(Outgoing::boxed(answer));
            }
            return response;
        }
    };
    // Clients of 2024-11-05 predate `Mcp-Param-*`: only headers that were sent are checked.
    if let authn::Message::Request { id, authorized } = &message
        && let Err(err) = param_headers::check(authorized, &headers, Expect::IfSent)
    {
        if let Some(stream) = session.stream() {
            let answer = reply::error_body(Some(id), &err, ERA).0;
            let _ = stream.try_send(Outgoing::boxed(answer));
        }
        return error(Some(id), &err, ERA);
    }
    let origin = legacy::Origin::new(&headers, caller.map(|caller| caller.principal));
    let Some((id, authorized, held)) = legacy::take_request(&state, &session, message, held) else {
        return StatusCode::ACCEPTED.into_response();
    };
    let Some(stream) = session.stream() else {
        return (StatusCode::NOT_FOUND, "session stream closed").into_response();
    };
    tokio::spawn(async move {
        let response = if authorized.request().method == methods::INITIALIZE {
            // The session opened with the stream; initialize gives it its version.
            let authorized = authorized;
            let params = &authorized.request().params;
            let (version, outcome) = state.server.initialize(params, |version| {
                session.set_version(version);
                session.set_client_capabilities(params.get("capabilities"));
                Ok(())
            });
            Some(match outcome {
                Ok(((), result)) => success_response(&id, result),
                Err(err) => reply::error_body(Some(&id), &err, Era::Legacy(version)).0,
            })
        } else {
            legacy::run(
                &state,
                &session,
                &id,
                authorized,
                Some(stream.clone()),
                origin,
            )
            .await
        };
        // Nothing of the request is kept while its answer waits for the client (`run` consumed
        // it; the initialize branch dropped its own).
        drop(held);
        let Some(response) = response else {
            return; // cancelled: no response
        };
        queue_answer(&state, &session, &stream, &response);
    });
    (StatusCode::ACCEPTED, "Accepted").into_response()
}

/// Puts an answer on the session's stream, written as JSON and charged (both budgets) until
/// the stream writes it; ends the session when the budgets or the stream have no room: its
/// client is not reading, and everything queued behind would wait as well.
fn queue_answer(state: &AppState, session: &Session, stream: &StreamSender, response: &Value) {
    // Only a map with non-string keys fails to serialize; no answer is built that way.
    let json = serde_json::to_string(response).unwrap_or_else(|_| "null".to_owned());
    let Some(global) = state.held.charge(json.len()) else {
        state.server.metrics().budget_refused("global");
        end_full(state, session, "no room left for its answers");
        return;
    };
    let Some(held) = legacy::charge_session(state, session, Held::none().with(global), json.len())
    else {
        end_full(state, session, "its answers are not being read");
        return;
    };
    match stream.try_send(Box::new(Outgoing::Written { json, held })) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => {
            end_full(
                state,
                session,
                "its stream is full: the client is not reading it",
            );
        }
        // The stream ended (client gone); the session ends with it.
        Err(TrySendError::Closed(_)) => {}
    }
}

/// Ends a session that holds too much, and answers 404 as for an ended session.
fn end_full(state: &AppState, session: &Session, why: &str) -> Response {
    if state.sessions.end(&session.id) {
        tracing::warn!(session = %short(&session.id), "ended a session: {why}");
    }
    (StatusCode::NOT_FOUND, format!("session ended: {why}")).into_response()
}
