//! The 2026-07-28 stateless path: header and `_meta` checks in the order clients rely on, then
//! dispatch; `subscriptions/listen` holds a stream of change notifications open.

use super::AppState;
use super::answer::{self, error};
use super::mcp::VERSION_HEADER;
use crate::auth::Principal;
use crate::declaration::LogLevel;
use crate::protocol::{
    Era, Incoming, MODERN_VERSION, McpError, RequestId, meta, notification, success_response,
};
use crate::server::{Changes, RequestContext};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Serves one stateless message.
pub async fn post(
    state: Arc<AppState>,
    headers: HeaderMap,
    message: Incoming,
    accepts_sse: bool,
    caller: Option<Arc<Principal>>,
) -> Response {
    let Incoming::Request { id, method, params } = message else {
        // Notifications need no answer; closing a response stream is how 2026 clients cancel.
        return StatusCode::ACCEPTED.into_response();
    };
    let log_level = match check(&headers, &method, &params) {
        Ok(level) => level,
        Err(err) => {
            state
                .server
                .record(&method, false, std::time::Instant::now());
            return error(Some(&id), &err, Era::Modern);
        }
    };
    if method == "subscriptions/listen" {
        if !accepts_sse {
            return (
                StatusCode::NOT_ACCEPTABLE,
                "subscriptions/listen answers with text/event-stream; accept it",
            )
                .into_response();
        }
        return listen(state, id, &params);
    }
    let keepalive = state.http.keepalive;
    let may_notify = log_level.is_some() || RequestContext::progress_token(&params).is_some();
    let (notifier, notifications) = answer::notification_channel(may_notify);
    let ctx = RequestContext::new(Era::Modern, &params, log_level, notifier).with_caller(caller);
    let outcome = async move {
        match state.server.handle(&ctx, &method, &params).await {
            Ok(result) => (StatusCode::OK, success_response(&id, result)),
            Err(err) => {
                let status = StatusCode::from_u16(err.http_status(Era::Modern))
                    .unwrap_or(StatusCode::BAD_REQUEST);
                (status, answer::error_body(Some(&id), &err, Era::Modern).0)
            }
        }
    };
    answer::answer(outcome, notifications, accepts_sse, keepalive).await
}

/// The 2026-07-28 request checks, in order: version header present, `_meta` complete, header and
/// `_meta` agree, version served, `Mcp-Method` and `Mcp-Name` agree with the body, log level valid.
fn check(headers: &HeaderMap, method: &str, params: &Value) -> Result<Option<LogLevel>, McpError> {
    let header = |name: &str| headers.get(name).map(|v| v.to_str().map(str::trim));
    let version_header = match header(VERSION_HEADER) {
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
    let meta = params
        .get("_meta")
        .ok_or_else(|| McpError::InvalidMeta("missing params._meta".into()))?;
    let version = meta
        .get(meta::PROTOCOL_VERSION)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            McpError::InvalidMeta(format!("missing _meta[\"{}\"]", meta::PROTOCOL_VERSION))
        })?;
    if !meta
        .get(meta::CLIENT_CAPABILITIES)
        .is_some_and(Value::is_object)
    {
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
    match header("mcp-method") {
        Some(Ok(value)) if value == method => {}
        Some(_) => {
            return Err(McpError::HeaderMismatch(format!(
                "Mcp-Method header does not match method {method:?}"
            )));
        }
        None => return Err(McpError::HeaderMismatch("missing Mcp-Method header".into())),
    }
    let named = match method {
        "tools/call" | "prompts/get" => params.get("name"),
        "resources/read" => params.get("uri"),
        _ => None,
    };
    if let Some(expected) = named.and_then(Value::as_str) {
        match header("mcp-name") {
            Some(Ok(value)) if decode_header_value(value).as_deref() == Some(expected) => {}
            Some(_) => {
                return Err(McpError::HeaderMismatch(format!(
                    "Mcp-Name header does not match {expected:?}"
                )));
            }
            None => return Err(McpError::HeaderMismatch("missing Mcp-Name header".into())),
        }
    }
    meta.get(meta::LOG_LEVEL)
        .map(|level| crate::server::parse_level(Some(level)))
        .transpose()
}

/// Decodes a header value, including the `=?base64?…?=` form used for non-ASCII values.
fn decode_header_value(value: &str) -> Option<Cow<'_, str>> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok().map(Cow::Owned)
        }
        None => Some(Cow::Borrowed(value)),
    }
}

/// Most resource URIs one listen stream (or one legacy session) may subscribe to.
pub const MAX_SUBSCRIPTIONS: usize = 100;

/// What a listen request asked for (and is honored in full).
#[derive(Clone, Debug, Default, PartialEq)]
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<String>,
}

impl Filter {
    fn parse(params: &Value) -> Self {
        let notifications = params.get("notifications");
        let flag = |key: &str| {
            notifications
                .and_then(|n| n.get(key))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let uris = notifications
            .and_then(|n| n.get("resourceSubscriptions"))
            .and_then(Value::as_array)
            .map(|uris| {
                uris.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Self {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resources: flag("resourcesListChanged"),
            uris,
        }
    }

    fn honored(&self) -> Value {
        let mut honored = json!({});
        for (key, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                honored[key] = json!(true);
            }
        }
        if !self.uris.is_empty() {
            honored["resourceSubscriptions"] = json!(self.uris);
        }
        honored
    }

    fn notifications(&self, changes: &Changes) -> Vec<(&'static str, Option<String>)> {
        let mut out = Vec::new();
        if self.tools && changes.tools {
            out.push(("notifications/tools/list_changed", None));
        }
        if self.prompts && changes.prompts {
            out.push(("notifications/prompts/list_changed", None));
        }
        if self.resources && changes.resources {
            out.push(("notifications/resources/list_changed", None));
        }
        for uri in changes
            .updated_uris
            .iter()
            .filter(|uri| self.uris.contains(uri))
        {
            out.push(("notifications/resources/updated", Some(uri.clone())));
        }
        out
    }
}

/// `subscriptions/listen`: acknowledges, then forwards matching changes until the client leaves
/// or the server shuts down (then it answers the listen request, which ends it gracefully).
fn listen(state: Arc<AppState>, id: RequestId, params: &Value) -> Response {
    let started = std::time::Instant::now();
    let asked = params
        .get("notifications")
        .and_then(|n| n.get("resourceSubscriptions"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if asked > MAX_SUBSCRIPTIONS {
        state.server.record("subscriptions/listen", false, started);
        let err = McpError::InvalidParams(format!(
            "at most {MAX_SUBSCRIPTIONS} resourceSubscriptions per listen request ({asked} asked)"
        ));
        return error(Some(&id), &err, Era::Modern);
    }
    let Ok(permit) = state.listen_streams.clone().try_acquire_owned() else {
        state.server.record("subscriptions/listen", false, started);
        let err = McpError::TooManySessions(state.sessions.settings().max_sessions);
        return error(Some(&id), &err, Era::Modern);
    };
    state.server.record("subscriptions/listen", true, started);
    let filter = Filter::parse(params);
    let keepalive = state.http.keepalive;
    let mut changes = state.server.subscribe_changes();
    let shutdown = state.shutdown.clone();
    let tag = json!({ meta::SUBSCRIPTION_ID: id });
    // Upstream-backed resources are polled while this stream is open (the guard cancels the
    // token when the stream is dropped).
    let watching = CancellationToken::new();
    let watcher = format!("listen:{}", rand::random::<u64>());
    for uri in &filter.uris {
        state.server.watch_resource(uri, &watcher, watching.clone());
    }
    let stop_watching = watching.drop_guard();
    let events = async_stream::stream! {
        let _permit = permit;
        let _stop_watching = stop_watching;
        let ack = json!({"_meta": tag, "notifications": filter.honored()});
        yield Ok(answer::event(&notification("notifications/subscriptions/acknowledged", ack), None));
        loop {
            let changed = tokio::select! {
                () = shutdown.cancelled() => break,
                changed = changes.recv() => changed,
            };
            let changes = match changed {
                Ok(changes) => changes,
                // Fell behind: tell the client everything may have changed.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    Arc::new(Changes { tools: true, prompts: true, resources: true, updated_uris: filter.uris.clone() })
                }
                Err(broadcast::error::RecvError::Closed) => break,
            };
            for (method, uri) in filter.notifications(&changes) {
                let mut params = json!({"_meta": tag});
                if let Some(uri) = uri {
                    params["uri"] = json!(uri);
                }
                yield Ok(answer::event(&notification(method, params), None));
            }
        }
        let done = json!({"resultType": "complete", "_meta": tag});
        yield Ok(answer::event(&success_response(&id, done), None));
    };
    answer::sse(events, keepalive)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn decodes_base64_names() {
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode_header_value("=?base64?SGVsbG8?=").as_deref(), None);
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
    }

    #[test]
    fn acknowledges_only_what_was_asked() {
        let filter = Filter::parse(
            &json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["a://b"]}}),
        );
        assert_eq!(
            filter.honored(),
            json!({"toolsListChanged": true, "resourceSubscriptions": ["a://b"]})
        );
        let changes = Changes {
            tools: true,
            prompts: true,
            resources: true,
            updated_uris: vec!["a://b".into(), "c://d".into()],
        };
        let sent: Vec<_> = filter
            .notifications(&changes)
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        assert_eq!(
            sent,
            [
                "notifications/tools/list_changed",
                "notifications/resources/updated"
            ]
        );
    }
}
