//! What both legacy session transports (Streamable HTTP and HTTP+SSE) share: running a session
//! request to its JSON-RPC response (in-flight bound, cancellation) and taking the client's
//! notifications and responses (to pings, and to the requests interactive items send). What each method does is decided in mcp-server.

use super::AppState;
use super::authn::Message;
use super::reply;
use crate::auth::Principal;
use mcp_protocol::{Era, Incoming, LegacyVersion, McpError, RequestId, success_response};
use mcp_server::budget::Held;
use mcp_server::sessions::Session;
use mcp_server::{Authorized, Notifier, RequestContext};
use serde_json::Value;
use std::sync::Arc;

/// Where a session request came from, beyond its session: the authenticated caller and the
/// trace parent of its HTTP `traceparent` header (`_meta.traceparent` wins over it).
#[derive(Default)]
pub(super) struct Origin {
    /// The authenticated caller (with `spec.auth`).
    pub caller: Option<Arc<Principal>>,
    /// The parent from the HTTP headers.
    pub trace_parent: Option<opentelemetry::Context>,
}

impl Origin {
    /// The origin of a request with these HTTP headers, sent by `caller`.
    pub(super) fn new(headers: &http::HeaderMap, caller: Option<Arc<Principal>>) -> Self {
        Self {
            caller,
            trace_parent: mcp_server::telemetry::parent_from_headers(headers),
        }
    }
}

/// The error for a request that needs a session but has none.
pub(super) fn missing_session() -> McpError {
    McpError::InvalidRequest("missing Mcp-Session-Id header: send initialize first".into())
}

/// A request's id and decision, with the budget charges of its parsed message.
pub(super) type Taken = (RequestId, Authorized, Held);

/// A client message that is not a request: a notification goes to the server, a response
/// answers one of our pings or questions (an answer keeps `held`, its message's charges, as
/// long as the call that asked keeps it). `Some` returns the request's parts.
pub(super) fn take_request(
    state: &AppState,
    session: &Session,
    message: Message,
    held: Held,
) -> Option<Taken> {
    let message = match message {
        Message::Request { id, authorized } => return Some((id, authorized, held)),
        Message::Other(message) => message,
    };
    match message {
        Incoming::Request { .. } => None,
        Incoming::Notification { method, params } => {
            state.server.notification(session, &method, &params);
            None
        }
        Incoming::Response { id, ok, outcome } => {
            let key = if ok { "result" } else { "error" };
            if !session.deliver_answer(&id, serde_json::json!({ key: outcome }), held) {
                session.answer(&id);
            }
            None
        }
    }
}

/// Adds the session's charge for a message of `bytes` to `held`; `None` when the session's
/// budget cannot hold it (counted in `mcp_budget_refusals_total{budget="session"}`).
pub(super) fn charge_session(
    state: &AppState,
    session: &Session,
    held: Held,
    bytes: usize,
) -> Option<Held> {
    match session.budget.charge(bytes) {
        Some(charge) => Some(held.with(charge)),
        None => {
            state.server.metrics().budget_refused("session");
            None
        }
    }
}

/// Runs a session request to its JSON-RPC response, honoring cancellation (`None`: cancelled,
/// no response is sent, as the protocol asks).
pub(super) async fn run(
    state: &AppState,
    session: &Arc<Session>,
    id: &RequestId,
    authorized: Authorized,
    notifier: Option<Notifier>,
    origin: Origin,
) -> Option<Value> {
    let era = Era::Legacy(session.version().unwrap_or(LegacyVersion::V2024_11_05));
    let in_flight = match session.try_start_request(id) {
        Ok(in_flight) => in_flight,
        Err(err) => return Some(reply::error_body(Some(id), &err, era).0),
    };
    let ctx = RequestContext::new(
        era,
        &authorized.request().params,
        session.log_level(),
        notifier,
    )
    .in_session(session.clone())
    .with_caller(origin.caller)
    .with_trace_parent(origin.trace_parent);
    let outcome = tokio::select! {
        outcome = state.server.handle(&ctx, authorized) => outcome,
        () = in_flight.token.cancelled() => return None,
    };
    Some(match outcome {
        Ok(result) => success_response(id, result),
        Err(err) => reply::error_body(Some(id), &err, era).0,
    })
}
