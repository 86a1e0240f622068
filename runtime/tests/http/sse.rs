//! HTTP+SSE (2024-11-05): the endpoint event, POST /messages, keep-alives, disconnects, shutdown.

use super::support::{EventReader, MANIFEST, Runtime, start};
use serde_json::json;
use std::time::Duration;

async fn open(rt: &Runtime) -> (EventReader, String) {
    open_at(rt, "/sse").await
}

/// Opens the HTTP+SSE stream at `path`; returns it and the endpoint it announced.
pub(super) async fn open_at(rt: &Runtime, path: &str) -> (EventReader, String) {
    let response = reqwest::Client::new()
        .get(format!("{}{path}", rt.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    let mut stream = EventReader::new(response);
    assert!(
        stream
            .until(Duration::from_secs(2), |t| t
                .contains("event: endpoint\ndata: ")
                && t.contains("\n\n"))
            .await
    );
    let endpoint = stream
        .text
        .split("data: ")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    stream.text.clear();
    (stream, endpoint)
}

#[tokio::test]
async fn the_endpoint_is_relative_and_keeps_the_ingress_prefix() {
    let rt = start(MANIFEST, |c| c.http.path_prefix = "/weather".into()).await;
    let (_stream, endpoint) = open(&rt).await;
    assert!(
        endpoint.starts_with("/weather/messages?sessionId="),
        "{endpoint}"
    );
}

#[tokio::test]
async fn messages_are_answered_on_the_stream() {
    let rt = start(MANIFEST, |_| {}).await;
    let (mut stream, endpoint) = open(&rt).await;
    let client = reqwest::Client::new();
    let post = |body: serde_json::Value| {
        client
            .post(format!("{}{endpoint}", rt.url))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    assert_eq!(post(init).await.unwrap().status(), 202);
    assert!(
        stream
            .until(Duration::from_secs(2), |t| t
                .contains("\"protocolVersion\":\"2024-11-05\""))
            .await
    );
    assert!(stream.text.contains("event: message\n"), "{}", stream.text);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "SSE"}}});
    assert_eq!(post(call).await.unwrap().status(), 202);
    assert!(
        stream
            .until(Duration::from_secs(2), |t| t.contains("Hello, SSE!"))
            .await
    );
    let bogus = client
        .post(format!("{}/messages?sessionId=nope", rt.url))
        .header("content-type", "application/json")
        .body("{}");
    assert_eq!(bogus.send().await.unwrap().status(), 404);
}

#[tokio::test]
async fn idle_streams_carry_keepalive_comments() {
    let rt = start(MANIFEST, |c| c.http.keepalive = Duration::from_millis(100)).await;
    let (mut stream, _) = open(&rt).await;
    assert!(
        stream
            .until(Duration::from_secs(2), |t| t.starts_with(':'))
            .await,
        "{}",
        stream.text
    );
}

#[tokio::test]
async fn a_disconnected_client_ends_its_session() {
    let rt = start(MANIFEST, |_| {}).await;
    let (stream, _) = open(&rt).await;
    assert!(
        rt.metrics()
            .await
            .contains("mcp_sessions_active{transport=\"sse\"} 1")
    );
    drop(stream);
    assert!(
        rt.metric_shows("mcp_sessions_active{transport=\"sse\"} 0")
            .await
    );
}

#[tokio::test]
async fn shutdown_closes_streams_and_drains_within_the_deadline() {
    let rt = start(MANIFEST, |c| c.shutdown_timeout = Duration::from_secs(3)).await;
    let (mut stream, _) = open(&rt).await;
    let started = std::time::Instant::now();
    rt.shutdown.cancel();
    assert!(stream.ends_within(Duration::from_secs(3)).await);
    tokio::time::timeout(Duration::from_secs(4), rt.task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "drain took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn under_a_prefix_every_endpoint_is_served_there_and_at_the_root() {
    let rt = start(MANIFEST, |c| c.http.path_prefix = "/weather".into()).await;
    let client = reqwest::Client::new();
    // HTTP+SSE through the prefix: the stream and the endpoint it announces.
    let (mut stream, endpoint) = open_at(&rt, "/weather/sse").await;
    assert!(endpoint.starts_with("/weather/messages?"), "{endpoint}");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let posted = client
        .post(format!("{}{endpoint}", rt.url))
        .header("content-type", "application/json")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 202);
    assert!(
        stream
            .until(Duration::from_secs(2), |t| t
                .contains("\"protocolVersion\""))
            .await
    );
    // Streamable HTTP under the prefix and at the root; nothing else under the prefix.
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    for path in ["/weather/mcp", "/mcp"] {
        let answer = client
            .post(format!("{}{path}", rt.url))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(ping.to_string())
            .send()
            .await
            .unwrap();
        assert_ne!(answer.status(), 404, "{path}");
    }
    let other = client
        .get(format!("{}/weather/other", rt.url))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
}
