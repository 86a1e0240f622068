//! HTTP+SSE (2024-11-05, deprecated but still used): `GET /sse` opens a session and its stream,
//! whose first event names the POST endpoint (relative, with the ingress path prefix);
//! `POST /messages?sessionId=…` answers 202 and the response travels on the stream.

use super::AppState;
use super::authn::{self, Caller};
use super::guard::check_content_type;
use super::legacy;
use super::reply::{self, error};
use super::session_stream::{self, short};
use axum::Extension;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use mcp_protocol::methods;
use mcp_protocol::{Era, Incoming, LegacyVersion, McpError, parse_message, success_response};
use mcp_server::sessions::{SessionStore, SessionTransport};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

const ERA: Era = Era::Legacy(LegacyVersion::V2024_11_05);

/// How long a response may wait for room on a slow client's stream before it is dropped.
const STREAM_SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// `GET /sse`: opens a session whose life is this stream.
pub async fn get(
    State(state): State<Arc<AppState>>,
    caller: Option<Extension<Caller>>,
) -> Response {
    let principal = caller.map(|Extension(caller)| caller.principal.digest());
    let session = match state
        .sessions
        .open_for(SessionTransport::Sse, None, principal)
    {
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
    let endpoint = format!(
        "{}/messages?sessionId={}",
        state.http.path_prefix, session.id
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
pub struct MessagesQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

/// `POST /messages?sessionId=…`: 202, with the JSON-RPC response sent on the session's stream.
/// A session whose posted messages would exceed [`mcp_server::sessions::MAX_QUEUED_BYTES`] waiting
/// or running, or whose client stops reading its stream, ends: later posts get 404.
pub async fn post(
    State(state): State<Arc<AppState>>,
    Query(query): Query<MessagesQuery>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
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
    let Some(queued) = session.queue_bytes(body.len()) else {
        state.sessions.end(&session.id);
        tracing::warn!(session = %short(&session.id), "ended a session: too much posted and not yet answered");
        return (
            StatusCode::NOT_FOUND,
            "session ended: too much posted and not yet answered",
        )
            .into_response();
    };
    let parsed = parse_message(&body);
    drop((body, share));
    let message = match parsed {
        Ok(message) => message,
        Err(err) => return error(None, &err, ERA),
    };
    if let Some(Extension(caller)) = &caller
        && let Some(refusal) = authn::item_refusal(&state, caller, &message)
    {
        // HTTP+SSE clients read answers from the session stream, not from the POST: without
        // this error there, the request would wait for its timeout.
        if let (Incoming::Request { id, .. }, Some(stream)) = (&message, session.stream()) {
            let err = McpError::InvalidRequest(format!(
                "refused ({refusal}): the POST was answered {} with the challenge",
                refusal.status().as_u16()
            ));
            let answer = reply::error_body(Some(id), &err, ERA).0;
            let _ = stream.try_send(Box::new(answer));
        }
        return authn::refuse_item(&state, caller, &message, &refusal, ERA, Some(&session.id));
    }
    let origin = legacy::Origin::new(&headers, caller.map(|Extension(caller)| caller.principal));
    let Some((id, method, params)) = legacy::take_request(&state, &session, message) else {
        return StatusCode::ACCEPTED.into_response();
    };
    let Some(stream) = session.stream() else {
        return (StatusCode::NOT_FOUND, "session stream closed").into_response();
    };
    tokio::spawn(async move {
        let _queued = queued;
        let response = if method == methods::INITIALIZE {
            // The session opened with the stream; initialize gives it its version.
            let (version, outcome) = state.server.initialize(&params, |version| {
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
                &method,
                &params,
                Some(stream.clone()),
                origin,
            )
            .await
        };
        let Some(response) = response else {
            return; // cancelled: no response
        };
        if stream
            .send_timeout(Box::new(response), STREAM_SEND_TIMEOUT)
            .await
            .is_err()
        {
            // The reader stalled: everything queued behind it would wait as well.
            state.sessions.end(&session.id);
            tracing::warn!(session = %short(&session.id), "ended a session: the client is not reading its stream");
        }
    });
    (StatusCode::ACCEPTED, "Accepted").into_response()
}
