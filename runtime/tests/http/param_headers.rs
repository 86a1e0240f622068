//! `x-mcp-header` (SEP-2243) over real sockets: a 2026-07-28 call whose `Mcp-Param-*` header is
//! missing, malformed or differs from its argument is refused with 400 and -32020 before the
//! tool runs; legacy sessions (Streamable HTTP and HTTP+SSE) check the headers that were sent.

use super::sse::open_at;
use super::support::{Runtime, body_json, modern_meta, start};
use serde_json::{Value, json};
use std::time::Duration;

const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: params}
spec:
  tools:
    - name: execute_sql
      inputSchema:
        type: object
        properties:
          region: {type: string, x-mcp-header: Region}
          limit: {type: integer, x-mcp-header: Limit}
          query: {type: string}
        required: [region, query]
      content: [{type: text, text: "{{ args.region }}: {{ args.query }}"}]
"#;

fn call(arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "execute_sql", "arguments": arguments, "_meta": modern_meta()}})
}

/// A 2026-07-28 `tools/call` of `execute_sql` with the standard headers plus `params`.
async fn modern(rt: &Runtime, arguments: Value, params: &[(&str, &str)]) -> (u16, Value) {
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "execute_sql"),
    ];
    headers.extend_from_slice(params);
    let response = rt.post(&call(arguments), &headers).await;
    let status = response.status().as_u16();
    (status, body_json(response).await)
}

fn refused(outcome: &(u16, Value)) -> bool {
    outcome.0 == 400 && outcome.1["error"]["code"] == -32020 && outcome.1["id"] == 7
}

#[tokio::test]
async fn modern_calls_must_mirror_marked_arguments() {
    let rt = start(MANIFEST, |_| {}).await;
    let args = json!({"region": "us-west1", "query": "SELECT 1"});
    let ok = modern(&rt, args.clone(), &[("mcp-param-region", "us-west1")]).await;
    assert_eq!(ok.0, 200, "{:?}", ok.1);
    assert_eq!(ok.1["result"]["content"][0]["text"], "us-west1: SELECT 1");

    let differs = modern(&rt, args.clone(), &[("Mcp-Param-Region", "us-east1")]).await;
    assert!(refused(&differs), "{differs:?}");
    let missing = modern(&rt, args.clone(), &[]).await;
    assert!(refused(&missing), "{missing:?}");
    let malformed = modern(&rt, args.clone(), &[("mcp-param-region", "=?base64?%%?=")]).await;
    assert!(refused(&malformed), "{malformed:?}");
    let unasked = modern(
        &rt,
        args,
        &[("mcp-param-region", "us-west1"), ("mcp-param-limit", "5")],
    )
    .await;
    assert!(
        refused(&unasked),
        "a header without its argument: {unasked:?}"
    );
}

#[tokio::test]
async fn modern_values_compare_as_the_spec_says() {
    let rt = start(MANIFEST, |_| {}).await;
    let unicode = json!({"region": "Zürich", "query": "q", "limit": 42});
    let encoded = modern(
        &rt,
        unicode.clone(),
        &[
            ("mcp-param-region", "=?base64?WsO8cmljaA==?="),
            ("mcp-param-limit", "42.0"),
        ],
    )
    .await;
    assert_eq!(encoded.0, 200, "{:?}", encoded.1);
    let other_number = modern(
        &rt,
        unicode,
        &[
            ("mcp-param-region", "=?base64?WsO8cmljaA==?="),
            ("mcp-param-limit", "43"),
        ],
    )
    .await;
    assert!(refused(&other_number), "{other_number:?}");
}

#[tokio::test]
async fn tools_list_keeps_the_annotation_as_declared() {
    let rt = start(MANIFEST, |_| {}).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let body = body_json(rt.post(&list, &headers).await).await;
    let properties = &body["result"]["tools"][0]["inputSchema"]["properties"];
    assert_eq!(properties["region"]["x-mcp-header"], "Region");
    assert_eq!(properties["limit"]["x-mcp-header"], "Limit");
}

#[tokio::test]
async fn legacy_sessions_check_the_headers_sent() {
    let rt = start(MANIFEST, |_| {}).await;
    let session = rt.initialize().await;
    let body = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "execute_sql", "arguments": {"region": "eu", "query": "q"}}})
    };
    let plain = rt.post(&body(1), &[("mcp-session-id", &session)]).await;
    assert_eq!(
        plain.status(),
        200,
        "legacy clients send no Mcp-Param headers"
    );
    let differs = rt
        .post(
            &body(2),
            &[("mcp-session-id", &session), ("mcp-param-region", "us")],
        )
        .await;
    assert_eq!(differs.status(), 400);
    assert_eq!(body_json(differs).await["error"]["code"], -32020);
}

#[tokio::test]
async fn http_sse_answers_a_mismatch_on_the_post_and_the_stream() {
    let rt = start(MANIFEST, |_| {}).await;
    let (mut stream, endpoint) = open_at(&rt, "/sse").await;
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "execute_sql", "arguments": {"region": "eu", "query": "q"}}});
    let response = reqwest::Client::new()
        .post(format!("{}{endpoint}", rt.url))
        .header("content-type", "application/json")
        .header("mcp-param-region", "us")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert!(
        stream
            .until(Duration::from_secs(2), |t| t.contains("-32020"))
            .await,
        "{}",
        stream.text
    );
}
