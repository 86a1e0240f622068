//! Byte budgets over real sockets: a legacy call waiting for its client's answer holds its
//! parsed message in its session's budget and the shared one until it ends; a message that
//! does not fit gets 503 with `Retry-After` (the session's, or the server's, before parsing),
//! and everything held is released when the call completes.

use super::support::{EventReader, Runtime, body_json, modern_meta, start};
use serde_json::{Value, json};
use std::time::Duration;

const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: budgets}
spec:
  tools:
    - name: remove
      description: Removes an entry, once confirmed.
      inputSchema: {type: object, properties: {id: {type: string}}, required: [id]}
      confirm: {message: "Remove {{ args.id }}?"}
      content: [{type: text, text: "removed {{ args.id }}"}]
"#;

/// A session whose client can answer questions.
async fn session(rt: &Runtime) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "test", "version": "1"}}});
    let response = rt.post(&init, &[]).await;
    assert_eq!(response.status(), 200);
    response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// Starts a call of `remove` and reads its stream up to the question; returns the stream (the
/// call waits on it) and the question's id.
async fn waiting_call(rt: &Runtime, session: &str) -> (EventReader, Value) {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "remove", "arguments": {"id": "7"}}});
    let response = rt.post(&call, &[("mcp-session-id", session)]).await;
    assert_eq!(response.status(), 200);
    let mut stream = EventReader::new(response);
    assert!(
        stream
            .until(Duration::from_secs(5), |t| t.contains("elicitation/create"))
            .await,
        "{}",
        stream.text
    );
    let question: Value = stream
        .text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap();
    (stream, question["id"].clone())
}

/// The `mcp_held_bytes` gauge of `budget`.
async fn held(rt: &Runtime, budget: &str) -> u64 {
    let prefix = format!("mcp_held_bytes{{budget=\"{budget}\"}} ");
    rt.metrics()
        .await
        .lines()
        .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
        .unwrap()
}

/// Answers the question `id` in `session` with a confirmation.
async fn confirm(rt: &Runtime, session: &str, id: &Value) {
    let answer = json!({"jsonrpc": "2.0", "id": id,
        "result": {"action": "accept", "content": {"confirm": true}}});
    let response = rt.post(&answer, &[("mcp-session-id", session)]).await;
    assert_eq!(response.status(), 202);
}

#[tokio::test]
async fn waiting_questions_hold_their_session_budget_until_answered() {
    let rt = start(MANIFEST, |c| c.sessions.max_session_bytes = 6000).await;
    let session = session(&rt).await;
    let (mut stream, question) = waiting_call(&rt, &session).await;
    let waiting = held(&rt, "session").await;
    assert!(waiting > 0 && held(&rt, "global").await >= waiting);

    // Another call of the session, larger than what its budget has left while the first
    // waits: 503, and it is not run.
    let big = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "remove", "arguments": {"id": "8", "pad": "x".repeat(3000)}}});
    let refused = rt.post(&big, &[("mcp-session-id", &session)]).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    assert_eq!(body_json(refused).await["error"]["code"], -32000);
    assert!(
        rt.metric_shows("mcp_budget_refusals_total{budget=\"session\"} 1")
            .await
    );

    confirm(&rt, &session, &question).await;
    assert!(
        stream
            .until(Duration::from_secs(5), |t| t.contains("removed 7"))
            .await
    );
    assert!(
        rt.metric_shows("mcp_held_bytes{budget=\"session\"} 0")
            .await
    );
    assert!(rt.metric_shows("mcp_held_bytes{budget=\"global\"} 0").await);
    // Released: the large call fits now (and asks its own question).
    let response = rt.post(&big, &[("mcp-session-id", &session)]).await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn a_message_the_shared_budget_cannot_hold_gets_503_before_parsing() {
    let rt = start(MANIFEST, |c| c.http.max_held_bytes = 6000).await;
    let session = session(&rt).await;
    let (mut stream, question) = waiting_call(&rt, &session).await;
    // A stateless request (no session of its own) weighing more than is left: its commas are
    // counted as the values they might be, without parsing.
    let discover = json!({"jsonrpc": "2.0", "id": 3, "method": "server/discover",
        "params": {"_meta": modern_meta(), "pad": ",".repeat(20)}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "server/discover"),
    ];
    let refused = rt.post(&discover, &headers).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    assert!(
        rt.metric_shows("mcp_budget_refusals_total{budget=\"global\"} 1")
            .await
    );

    confirm(&rt, &session, &question).await;
    assert!(
        stream
            .until(Duration::from_secs(5), |t| t.contains("removed 7"))
            .await
    );
    assert!(rt.metric_shows("mcp_held_bytes{budget=\"global\"} 0").await);
    assert_eq!(rt.post(&discover, &headers).await.status(), 200);
}
