//! `--transports` and `spec.transports`: whether a request's transport is served, and the answer
//! for one that is turned off. What is served is what both allow; the declaration's part is read
//! per request, so a reload turns a transport on or off without a restart. Pure.

use super::AppState;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_declaration::Transport;

/// `None` when `transport` is served; else 404 with a hint (405 with `Allow: POST` for `GET`
/// and `DELETE /mcp`, as the spec asks of a server without Streamable HTTP sessions).
pub(super) fn refuse(state: &AppState, transport: Transport) -> Option<Response> {
    refuse_with(state, transport, StatusCode::NOT_FOUND)
}

/// As [`refuse`], answering `status` instead of 404.
pub(super) fn refuse_with(
    state: &AppState,
    transport: Transport,
    status: StatusCode,
) -> Option<Response> {
    let served = state
        .http
        .transports
        .and(state.server.declaration().transports);
    if served.serves(transport) {
        return None;
    }
    let what = match transport {
        Transport::Modern => "2026-07-28 stateless requests are",
        Transport::Streamable => "Streamable HTTP sessions (2025-03-26 to 2025-11-25) are",
        Transport::Sse => "the HTTP+SSE transport (2024-11-05, GET /sse) is",
    };
    let served = match served.names() {
        names if names.is_empty() => "none".to_owned(),
        names => names,
    };
    let hint = format!(
        "{what} turned off on this server (served: {served}; see mcp-runtime --transports and \
         spec.transports)\n"
    );
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        hint,
    )
        .into_response();
    if status == StatusCode::METHOD_NOT_ALLOWED {
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
    }
    Some(response)
}
