//! The MCP requests the workloads send, and the checks on their answers. Pure.

use crate::conn::{Answer, Call};
use bytes::Bytes;
use http::Method;
use serde_json::Value;

/// The tool every server under test declares; it echoes `message`.
pub const TOOL: &str = "echo";
/// The text the bench sends and expects back.
pub const MESSAGE: &str = "hello from mcp-bench";
/// The static resource every server under test declares.
pub const RESOURCE_URI: &str = "bench://static/readme";
/// Its text.
pub const RESOURCE_TEXT: &str = "kube-mcp benchmark static resource.";

/// The 2026-07-28 protocol version.
pub const MODERN: &str = "2026-07-28";
/// The newest legacy version, which every peer speaks.
pub const LEGACY: &str = "2025-11-25";

const ACCEPT: &str = "application/json, text/event-stream";

fn post(path: &str, headers: Vec<(&'static str, String)>, body: String) -> Call {
    let mut all = vec![
        ("content-type", "application/json".to_owned()),
        ("accept", ACCEPT.to_owned()),
    ];
    all.extend(headers);
    Call {
        method: Method::POST,
        path: path.to_owned(),
        headers: all,
        body: Bytes::from(body),
    }
}

const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-bench","version":"1"}}"#;

/// A 2026-07-28 stateless `tools/call` of the echo tool.
pub fn modern_call(path: &str, id: u64) -> Call {
    post(
        path,
        vec![
            ("mcp-protocol-version", MODERN.to_owned()),
            ("mcp-method", "tools/call".to_owned()),
            ("mcp-name", TOOL.to_owned()),
        ],
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{TOOL}","arguments":{{"message":"{MESSAGE}"}},{MODERN_META}}}}}"#
        ),
    )
}

/// A 2026-07-28 stateless `tools/list`, of the page `cursor` names (the first without one).
pub fn modern_list(path: &str, id: u64, cursor: Option<&str>) -> Call {
    let cursor = cursor.map_or(String::new(), |c| {
        format!(r#""cursor":{},"#, Value::from(c))
    });
    post(
        path,
        vec![
            ("mcp-protocol-version", MODERN.to_owned()),
            ("mcp-method", "tools/list".to_owned()),
        ],
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{{cursor}{MODERN_META}}}}}"#
        ),
    )
}

/// A 2026-07-28 stateless `resources/read` of the static resource.
pub fn modern_read(path: &str, id: u64) -> Call {
    post(
        path,
        vec![
            ("mcp-protocol-version", MODERN.to_owned()),
            ("mcp-method", "resources/read".to_owned()),
            ("mcp-name", RESOURCE_URI.to_owned()),
        ],
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"{RESOURCE_URI}",{MODERN_META}}}}}"#
        ),
    )
}

/// A session-less `tools/call` under a legacy version: the stateless mode of SDKs that do not
/// speak 2026-07-28 (no initialize, no session; the TypeScript SDK's stateless transport).
pub fn sessionless_call(path: &str, id: u64) -> Call {
    legacy_call(path, None, id)
}

/// A session-less `resources/read` under a legacy version (see [`sessionless_call`]).
pub fn sessionless_read(path: &str, id: u64) -> Call {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"{RESOURCE_URI}"}}}}"#
    );
    post(
        path,
        vec![("mcp-protocol-version", LEGACY.to_owned())],
        body,
    )
}

/// `initialize` opening a legacy Streamable HTTP session.
pub fn initialize(path: &str) -> Call {
    post(
        path,
        Vec::new(),
        format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{LEGACY}","capabilities":{{}},"clientInfo":{{"name":"mcp-bench","version":"1"}}}}}}"#
        ),
    )
}

fn session_headers(session: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = vec![("mcp-protocol-version", LEGACY.to_owned())];
    if let Some(session) = session {
        headers.push(("mcp-session-id", session.to_owned()));
    }
    headers
}

/// `notifications/initialized` in a session.
pub fn initialized(path: &str, session: &str) -> Call {
    post(
        path,
        session_headers(Some(session)),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
    )
}

/// A `tools/call` of the echo tool in a legacy session (or without one).
pub fn legacy_call(path: &str, session: Option<&str>, id: u64) -> Call {
    post(
        path,
        session_headers(session),
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{TOOL}","arguments":{{"message":"{MESSAGE}"}}}}}}"#
        ),
    )
}

/// A message POSTed to an HTTP+SSE session's endpoint (2024-11-05 has no version header).
pub fn sse_message(endpoint: &str, body: String) -> Call {
    post(endpoint, Vec::new(), body)
}

/// `initialize` of an HTTP+SSE session.
pub fn sse_initialize_body() -> String {
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"mcp-bench","version":"1"}}}"#.to_owned()
}

/// `notifications/initialized`.
pub fn initialized_body() -> String {
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned()
}

/// A `tools/call` of the echo tool.
pub fn call_body(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{TOOL}","arguments":{{"message":"{MESSAGE}"}}}}}}"#
    )
}

/// Whether an SSE `message` event is the successful response to request `id`.
pub fn is_response(data: &str, id: u64) -> Option<bool> {
    let value: serde_json::Value = serde_json::from_str(data).ok()?;
    (value.get("id")? == id).then(|| value.get("result").is_some())
}

/// `DELETE` ending a session.
pub fn delete(path: &str, session: &str) -> Call {
    Call {
        method: Method::DELETE,
        path: path.to_owned(),
        headers: session_headers(Some(session)),
        body: Bytes::new(),
    }
}

/// `GET` opening a session's server-to-client stream (Streamable HTTP) or an HTTP+SSE stream.
pub fn get_stream(path: &str, session: Option<&str>) -> Call {
    let mut headers = vec![("accept", "text/event-stream".to_owned())];
    if let Some(session) = session {
        headers.extend(session_headers(Some(session)));
    }
    Call {
        method: Method::GET,
        path: path.to_owned(),
        headers,
        body: Bytes::new(),
    }
}

/// What an answer must contain to count as a success.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    /// A JSON-RPC result echoing the message.
    Echo,
    /// A JSON-RPC result with the resource text.
    Resource,
    /// Any 2xx (notifications, DELETE).
    Accepted,
}

/// Whether an answer is the expected success.
pub fn ok(answer: &Answer, expect: Expect) -> bool {
    if !answer.status.is_success() {
        return false;
    }
    let has = |needle: &str| memfind(&answer.body, needle.as_bytes());
    match expect {
        Expect::Echo => has("\"result\"") && has(MESSAGE) && !has("\"isError\":true"),
        Expect::Resource => has("\"result\"") && has(RESOURCE_TEXT),
        Expect::Accepted => true,
    }
}

fn memfind(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The session id an initialize answer assigned.
pub fn session_id(answer: &Answer) -> Option<String> {
    answer
        .headers
        .get("mcp-session-id")?
        .to_str()
        .ok()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_json() {
        for call in [
            modern_call("/mcp", 7),
            modern_read("/mcp", 7),
            initialize("/mcp"),
            legacy_call("/mcp", Some("s"), 1),
            sessionless_read("/mcp", 1),
        ] {
            let value: serde_json::Value = serde_json::from_slice(&call.body).unwrap();
            assert_eq!(value["jsonrpc"], "2.0");
        }
        let call: serde_json::Value = serde_json::from_slice(&modern_call("/mcp", 7).body).unwrap();
        assert_eq!(
            call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            MODERN
        );
    }

    #[test]
    fn checks_answers() {
        let answer = |status: u16, body: &'static str| Answer {
            status: http::StatusCode::from_u16(status).unwrap(),
            headers: http::HeaderMap::new(),
            body: Bytes::from_static(body.as_bytes()),
        };
        let echo = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello from mcp-bench"}]}}"#;
        assert!(ok(&answer(200, echo), Expect::Echo));
        assert!(!ok(&answer(400, echo), Expect::Echo));
        assert!(!ok(&answer(200, r#"{"error":{}}"#), Expect::Echo));
        assert!(ok(&answer(202, ""), Expect::Accepted));
    }
}
