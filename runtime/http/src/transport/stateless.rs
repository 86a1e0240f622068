//! The 2026-07-28 stateless path: header and `_meta` checks in the order clients rely on, then
//! dispatch; `subscriptions/listen` holds a stream of change notifications open.

use super::authn::Message;
use super::headers::{METHOD_HEADER, NAME_HEADER, VERSION_HEADER};
use super::reply::{self, error};
use super::{AppState, client, param_headers};
use crate::auth::Principal;
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use mcp_declaration::LogLevel;
use mcp_protocol::methods;
use mcp_protocol::{Era, MODERN_VERSION, McpError, RequestId, Success, member, meta};
use mcp_server::budget::Held;
use mcp_server::clients::ClientKey;
use mcp_server::param_headers::{Expect, decode_header_value};
use mcp_server::{Authorized, Finished, RequestContext};
use serde_json::Value;
use std::net::IpAddr;
use std::sync::Arc;

/// Serves one stateless message.
pub(super) async fn post(
    state: Arc<AppState>,
    headers: HeaderMap,
    message: Message,
    accepts_sse: bool,
    caller: Option<Arc<Principal>>,
    held: Held,
    address: IpAddr,
) -> Response {
    let Message::Request { id, authorized } = message else {
        // Notifications need no answer; closing a response stream is how 2026 clients cancel.
        return StatusCode::ACCEPTED.into_response();
    };
    let (method, params) = (&authorized.request().method, &authorized.request().params);
    let checked = check(&headers, method, params).and_then(|level| {
        param_headers::check(&authorized, &headers, Expect::Always).map(|()| level)
    });
    let log_level = match checked {
        Ok(level) => level,
        Err(err) => {
            state
                .server
                .record(method, false, std::time::Instant::now());
            return error(Some(&id), &err, Era::Modern);
        }
    };
    if method == methods::SUBSCRIPTIONS_LISTEN {
        if !accepts_sse {
            return (
                StatusCode::NOT_ACCEPTABLE,
                "subscriptions/listen answers with text/event-stream; accept it",
            )
                .into_response();
        }
        let client = client::key_of(caller.as_deref(), address);
        return listen(state, id, &authorized, client, caller);
    }
    let keepalive = state.http.keepalive;
    let may_notify = log_level.is_some() || RequestContext::progress_token(params).is_some();
    let (notifier, notifications) = reply::notification_channel(may_notify);
    let ctx = RequestContext::new(Era::Modern, params, log_level, notifier)
        .from_address(address)
        .with_caller(caller)
        .with_trace_parent(mcp_server::telemetry::parent_from_headers(&headers));
    // A refusal at a limit says when to retry in a header, which only a plain JSON answer has
    // (a streamed one is already 200 when its error comes).
    let retry_after = Arc::new(std::sync::OnceLock::new());
    let outcome = {
        let retry_after = retry_after.clone();
        Box::pin(async move {
            // The message's charge is released with its params, once the answer is ready.
            let _held = held;
            match state.server.answer(&ctx, authorized).await {
                Ok(result) => (StatusCode::OK, Answer::Success(Success { id, result })),
                Err(err) => {
                    let status = StatusCode::from_u16(err.http_status(Era::Modern))
                        .unwrap_or(StatusCode::BAD_REQUEST);
                    if let Some(value) = reply::retry_after(&err) {
                        let _ = retry_after.set(value);
                    }
                    let body = reply::error_body(Some(&id), &err, Era::Modern).0;
                    (status, Answer::Error(body))
                }
            }
        })
    };
    let mut response = reply::respond(outcome, notifications, accepts_sse, keepalive).await;
    if response.status() != StatusCode::OK
        && let Some(value) = retry_after.get()
    {
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, value.clone());
    }
    response
}

/// A stateless request's JSON-RPC response, written once to JSON.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Answer {
    Success(Success<Finished>),
    Error(Value),
}

/// The 2026-07-28 request checks, in order: version header present, `_meta` complete, header and
/// `_meta` agree, version served, `Mcp-Method` and `Mcp-Name` agree with the body, log level valid
/// (the `Mcp-Param-*` headers are checked after these, by the server).
fn check(headers: &HeaderMap, method: &str, params: &Value) -> Result<Option<LogLevel>, McpError> {
    let header = |name: &HeaderName| headers.get(name).map(|v| v.to_str().map(str::trim));
    let version_header = match header(&VERSION_HEADER) {
        Some(Ok(version)) => version,
        Some(Err(_)) => {
            return Err(McpError::HeaderMismatch(
                "MCP-Protocol-Version is not valid ASCII".into(),
            ));
        }
        None => {
            return Err(McpError::HeaderMismatch(
                "missing MCP-Protocol-Version header".into(),
            ));
        }
    };
    let meta = member(params, "_meta")
        .ok_or_else(|| McpError::InvalidMeta("missing params._meta".into()))?;
    let version = member(meta, meta::PROTOCOL_VERSION)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            McpError::InvalidMeta(format!("missing _meta[\"{}\"]", meta::PROTOCOL_VERSION))
        })?;
    if !member(meta, meta::CLIENT_CAPABILITIES).is_some_and(Value::is_object) {
        return Err(McpError::InvalidMeta(format!(
            "missing _meta[\"{}\"]",
            meta::CLIENT_CAPABILITIES
        )));
    }
    if version_header != version {
        return Err(McpError::HeaderMismatch(format!(
            "MCP-Protocol-Version header {version_header:?} differs from _meta protocol version {version:?}"
        )));
    }
    if version != MODERN_VERSION {
        return Err(McpError::UnsupportedVersion {
            requested: version.to_owned(),
        });
    }
    match header(&METHOD_HEADER) {
        Some(Ok(value)) if value == method => {}
        Some(_) => {
            return Err(McpError::HeaderMismatch(format!(
                "Mcp-Method header does not match method {method:?}"
            )));
        }
        None => return Err(McpError::HeaderMismatch("missing Mcp-Method header".into())),
    }
    let named = match method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => member(params, "name"),
        methods::RESOURCES_READ => member(params, "uri"),
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => {
            member(params, "taskId")
        }
        _ => None,
    };
    if let Some(expected) = named.and_then(Value::as_str) {
        match headers.get(&NAME_HEADER) {
            Some(value) if decode_header_value(value.as_bytes()).as_deref() == Some(expected) => {}
            Some(_) => {
                return Err(McpError::HeaderMismatch(format!(
                    "Mcp-Name header does not match {expected:?}"
                )));
            }
            None => return Err(McpError::HeaderMismatch("missing Mcp-Name header".into())),
        }
    }
    member(meta, meta::LOG_LEVEL)
        .map(|level| mcp_server::parse_level(Some(level)))
        .transpose()
}

/// `subscriptions/listen`: the server's stream of messages, as SSE events (in `client`'s
/// share of the streams).
fn listen(
    state: Arc<AppState>,
    id: RequestId,
    authorized: &Authorized,
    client: ClientKey,
    caller: Option<Arc<Principal>>,
) -> Response {
    let refusal_id = id.clone();
    match state.server.listen(
        id,
        authorized,
        &state.listen_streams,
        client,
        state.shutdown.clone(),
        caller,
    ) {
        Ok(messages) => {
            let events = futures_util::StreamExt::map(messages, |message| {
                Ok::<_, std::convert::Infallible>(reply::event(&message, None))
            });
            reply::sse(events, state.http.keepalive)
        }
        Err(err) => error(Some(&refusal_id), &err, Era::Modern),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, value.parse().unwrap());
        }
        headers
    }

    fn params(version: &str) -> Value {
        json!({"name": "greet", "_meta": {meta::PROTOCOL_VERSION: version, meta::CLIENT_CAPABILITIES: {}}})
    }

    const GOOD: &[(&str, &str)] = &[
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "greet"),
    ];

    #[test]
    fn accepts_a_well_formed_request() {
        assert_eq!(
            check(&headers(GOOD), "tools/call", &params("2026-07-28")),
            Ok(None)
        );
    }

    #[test]
    fn checks_in_the_documented_order() {
        let code = |h: &[(&'static str, &str)], p: &Value| {
            check(&headers(h), "tools/call", p)
                .unwrap_err()
                .code(Era::Modern)
        };
        assert_eq!(code(&GOOD[1..], &params("2026-07-28")), -32020);
        assert_eq!(code(GOOD, &json!({})), -32602);
        assert_eq!(code(GOOD, &params("v999")), -32020);
        let v999 = [("mcp-protocol-version", "v999"), GOOD[1], GOOD[2]];
        assert_eq!(code(&v999, &params("v999")), -32022);
        assert_eq!(
            code(
                &[GOOD[0], ("mcp-method", "tools/list"), GOOD[2]],
                &params("2026-07-28")
            ),
            -32020
        );
        assert_eq!(code(&GOOD[..2], &params("2026-07-28")), -32020);
    }

    #[test]
    fn names_may_come_in_base64() {
        let encoded = [GOOD[0], GOOD[1], ("mcp-name", "=?base64?Z3JlZXQ=?=")];
        assert_eq!(
            check(&headers(&encoded), "tools/call", &params("2026-07-28")),
            Ok(None)
        );
        let wrong = [GOOD[0], GOOD[1], ("mcp-name", "=?base64?Z3JlZXQ?=")];
        assert!(check(&headers(&wrong), "tools/call", &params("2026-07-28")).is_err());
    }
}
