//! `spec.limits` over real sockets: a tool over its per-caller rate answers a tool error the
//! model can read (with the limit in `_meta`) while another caller is still served; any other
//! method over the server's rate gets 429 with `Retry-After`; a legacy session is one caller;
//! the refusals are counted by scope.

use super::support::{Runtime, body_json, modern_meta, start};
use serde_json::{Value, json};
use std::net::IpAddr;
use std::time::Duration;

const LIMITED: &str = r#"apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: limited}
spec:
  limits:
    server: {rate: 6/h}
    tools:
      create_issue: {rate: 1/h, perPrincipal: true}
  tools:
    - name: create_issue
      content: [{type: text, text: created}]
    - name: read_issue
      content: [{type: text, text: read}]
"#;

/// A client connecting from 127.0.0.`n`.
fn from(n: u8) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(IpAddr::from([127, 0, 0, n]))
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// A 2026-07-28 request of `method` (naming `name`) from `client`: status, `Retry-After`, body.
async fn modern(
    rt: &Runtime,
    client: &reqwest::Client,
    method: &str,
    name: Option<&str>,
) -> (u16, Option<String>, Value) {
    let mut params = json!({"_meta": modern_meta()});
    if let Some(name) = name {
        params["name"] = json!(name);
        params["arguments"] = json!({});
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = client
        .post(format!("{}/mcp", rt.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, retry_after, body_json(response).await)
}

#[tokio::test]
async fn a_tool_over_its_per_caller_rate_is_a_readable_tool_error() {
    let rt = start(LIMITED, |_| {}).await;
    let (a, b) = (from(1), from(2));
    let (status, _, first) = modern(&rt, &a, "tools/call", Some("create_issue")).await;
    assert_eq!(
        (status, first["result"]["isError"].as_bool()),
        (200, None),
        "{first}"
    );

    let (status, retry_after, refused) = modern(&rt, &a, "tools/call", Some("create_issue")).await;
    assert_eq!(status, 200, "a tool error, not an HTTP refusal");
    assert_eq!(retry_after, None);
    let result = &refused["result"];
    assert_eq!(result["isError"], true, "{refused}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "rate limit: tool `create_issue` for each caller allows 1/h on this replica; retry in"
        ),
        "{text}"
    );
    let limit = &result["_meta"]["kube-mcp.io/limit"];
    assert_eq!(
        (limit["scope"].as_str(), limit["limit"].as_str()),
        (Some("tool"), Some("1/h"))
    );
    assert!(
        limit["retryAfterMs"].as_u64().unwrap() > 3_000_000,
        "{limit}"
    );

    // Another caller has its own count; another tool is not limited.
    let (_, _, other) = modern(&rt, &b, "tools/call", Some("create_issue")).await;
    assert_eq!(other["result"]["content"][0]["text"], "created", "{other}");
    let (_, _, read) = modern(&rt, &a, "tools/call", Some("read_issue")).await;
    assert_eq!(read["result"]["content"][0]["text"], "read", "{read}");
    assert!(
        rt.metric_shows("mcp_rate_limited_total{scope=\"tool\"} 1")
            .await
    );
}

#[tokio::test]
async fn any_method_over_the_server_rate_is_429_with_retry_after() {
    let rt = start(LIMITED, |_| {}).await;
    let client = from(3);
    // The server allows a burst of 6 an hour, whoever asks.
    for _ in 0..6 {
        let (status, _, body) = modern(&rt, &client, "tools/list", None).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, retry_after, body) = modern(&rt, &from(4), "tools/list", None).await;
    assert_eq!(status, 429, "{body}");
    let seconds: u64 = retry_after.expect("Retry-After").parse().unwrap();
    assert!(
        (500..=600).contains(&seconds),
        "one request every 10 minutes: {seconds}"
    );
    assert_eq!(body["error"]["code"], -32000);
    assert_eq!(body["error"]["data"]["scope"], "server");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("rate limit: this server allows 6/h on this replica"),
        "{body}"
    );
    // A tool call over the server's rate is a tool error too.
    let (status, _, call) = modern(&rt, &client, "tools/call", Some("read_issue")).await;
    assert_eq!(
        (status, &call["result"]["isError"]),
        (200, &json!(true)),
        "{call}"
    );
    assert!(
        rt.metric_shows("mcp_rate_limited_total{scope=\"server\"} 2")
            .await
    );
}

#[tokio::test]
async fn a_legacy_session_is_one_caller() {
    let rt = start(LIMITED, |_| {}).await;
    let session = rt.initialize().await;
    let call = json!({"name": "create_issue", "arguments": {}});
    let (status, first) = rt.call(&session, 2, "tools/call", call.clone()).await;
    assert_eq!(
        (status, &first["result"]["content"][0]["text"]),
        (200, &json!("created")),
        "{first}"
    );
    let (status, second) = rt.call(&session, 3, "tools/call", call).await;
    assert_eq!(
        (status, &second["result"]["isError"]),
        (200, &json!(true)),
        "{second}"
    );
}
