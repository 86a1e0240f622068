//! `POST /mcp`: checks the body, then picks the era. A request carrying the 2026-07-28 `_meta`
//! (or a non-legacy `MCP-Protocol-Version` header without a session) is served statelessly;
//! `initialize` and session traffic go to the legacy Streamable HTTP path.

use super::authn::{self, Caller};
use super::guard::{check_accept, check_content_type};
use super::headers::{SESSION_HEADER, VERSION_HEADER};
use super::reply::error;
use super::view_route::ViewRoute;
use super::{AppState, client, held, stateless, streamable, switch};
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::Response;
use mcp_declaration::Transport;
use mcp_protocol::methods;
use mcp_protocol::{Era, Incoming, LATEST_LEGACY, LegacyVersion, member, meta, parse_weighed};
use std::sync::Arc;

/// Handles every POST on `/mcp`.
pub(super) async fn post(State(state): State<Arc<AppState>>, request: Request) -> Response {
    // The headers are taken apart rather than extracted as a `HeaderMap`, which would copy them.
    let (mut parts, body) = request.into_parts();
    let address = client::address(&state, &parts.extensions, &parts.headers);
    let caller = parts.extensions.remove::<Caller>();
    let view = parts.extensions.remove::<ViewRoute>();
    let headers = parts.headers;
    if let Err(refusal) = check_content_type(&headers) {
        return refusal;
    }
    let accepts = match check_accept(&headers) {
        Ok(accepts) => accepts,
        Err(refusal) => return refusal,
    };
    let (body, share) = match state.bodies.read(&headers, body).await {
        Ok(read) => read,
        Err(refusal) => return refusal,
    };
    // Weighed and charged before parsing; the charge lives as long as the request.
    let (weighed, held) = match held::charge(&state, &body, Era::Legacy(LATEST_LEGACY)) {
        Ok(charged) => charged,
        Err(refusal) => return refusal,
    };
    let parsed = parse_weighed(&body, &weighed);
    // The body and its share of the large-body budget are not needed past the parse.
    drop((body, share));
    let message = match parsed {
        Ok(message) => message,
        Err(err) => return error(None, &err, Era::Legacy(LATEST_LEGACY)),
    };
    let modern = is_modern(&headers, &message);
    let transport = if modern {
        Transport::Modern
    } else {
        Transport::Streamable
    };
    if let Some(refusal) = switch::refuse(&state, transport) {
        return refusal;
    }
    let era = if modern {
        Era::Modern
    } else {
        Era::Legacy(header_version(&headers).unwrap_or(LATEST_LEGACY))
    };
    let session = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok());
    let view_name = view.as_ref().map(|v| v.name.as_str());
    let message = match authn::authorize(&state, caller.as_ref(), message, era, session, view_name)
    {
        Ok(message) => message,
        Err((_, refusal)) => return refusal,
    };
    let caller = caller.map(|c| c.principal);
    // Each era's future is boxed on its own: inline, this handler's future holds the larger
    // (legacy) one even for a stateless call, and axum copies the whole future into a box on
    // every request (9.7 KB, a third of a call's instructions by callgrind).
    if modern {
        Box::pin(stateless::post(
            state,
            headers,
            message,
            accepts.sse,
            caller,
            held,
            address,
        ))
        .await
    } else {
        Box::pin(streamable::post(
            state,
            headers,
            message,
            accepts.sse,
            caller,
            held,
            address,
        ))
        .await
    }
}

fn is_modern(headers: &HeaderMap, message: &Incoming) -> bool {
    let (method, params) = match message {
        Incoming::Request { method, params, .. } | Incoming::Notification { method, params } => {
            (method, params)
        }
        Incoming::Response { .. } => return false,
    };
    if member(params, "_meta")
        .and_then(|m| member(m, meta::PROTOCOL_VERSION))
        .is_some()
    {
        return true;
    }
    if method == methods::INITIALIZE || headers.contains_key(SESSION_HEADER) {
        return false;
    }
    headers
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|version| LegacyVersion::parse(version.trim()).is_none())
}

/// The legacy version the `MCP-Protocol-Version` header names, if it names one.
fn header_version(headers: &HeaderMap) -> Option<LegacyVersion> {
    let version = headers.get(VERSION_HEADER)?.to_str().ok()?;
    LegacyVersion::parse(version.trim())
}
