//! Edge checks: body size, content type, accept, JSON, Host and Origin, era routing errors.

use super::support::{MANIFEST, modern_meta, start};
use serde_json::{Value, json};

#[tokio::test]
async fn oversized_bodies_are_refused_with_413() {
    let rt = start(MANIFEST, |c| c.http.max_body_bytes = 1024).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"pad": "x".repeat(2048)}});
    assert_eq!(rt.post(&big, &[]).await.status(), 413);
}

#[tokio::test]
async fn non_json_bodies_are_refused_with_415() {
    let rt = start(MANIFEST, |_| {}).await;
    let response = reqwest::Client::new()
        .post(format!("{}/mcp", rt.url))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
}

#[tokio::test]
async fn unacceptable_accept_is_refused_with_406() {
    let rt = start(MANIFEST, |_| {}).await;
    let response = rt.post(&json!({}), &[("accept", "text/html")]).await;
    assert_eq!(response.status(), 406);
}

#[tokio::test]
async fn malformed_json_is_a_parse_error() {
    let rt = start(MANIFEST, |_| {}).await;
    let response = reqwest::Client::new()
        .post(format!("{}/mcp", rt.url))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32700);
    assert_eq!(body["id"], Value::Null);
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused_with_403() {
    let rt = start(MANIFEST, |_| {}).await;
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}});
    let modern = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "server/discover"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| [&modern[..], extra].concat();
    assert_eq!(
        rt.post(&discover, &with(&[("origin", "http://evil.example.com")]))
            .await
            .status(),
        403
    );
    assert_eq!(
        rt.post(&discover, &with(&[("host", "evil.example.com")]))
            .await
            .status(),
        403
    );
    assert_eq!(
        rt.post(&discover, &with(&[("origin", "http://localhost:3000")]))
            .await
            .status(),
        200
    );

    let open = start(MANIFEST, |c| {
        c.http.origins.hosts = vec!["mcp.example.com".into()];
        c.http.origins.origins = vec!["https://app.example.com".into()];
    })
    .await;
    let allowed = [
        ("host", "mcp.example.com"),
        ("origin", "https://app.example.com"),
    ];
    assert_eq!(open.post(&discover, &with(&allowed)).await.status(), 200);
    assert_eq!(
        open.post(&discover, &with(&[("host", "localhost")]))
            .await
            .status(),
        403
    );
}

#[tokio::test]
async fn removed_methods_are_404_in_the_stateless_era() {
    let rt = start(MANIFEST, |_| {}).await;
    let ping =
        json!({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"_meta": modern_meta()}});
    let response = rt
        .post(
            &ping,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "ping"),
            ],
        )
        .await;
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "method not found: ping"}})
    );
}

#[tokio::test]
async fn stateless_clients_get_405_for_get() {
    let rt = start(MANIFEST, |_| {}).await;
    let response = reqwest::get(format!("{}/mcp", rt.url)).await.unwrap();
    assert_eq!(response.status(), 405);
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_naming_the_field() {
    let rt = start(MANIFEST, |_| {}).await;
    let session = rt.initialize().await;
    let (_, body) = rt
        .call(
            &session,
            1,
            "tools/call",
            json!({"name": "greet", "arguments": {"name": 5}}),
        )
        .await;
    assert_eq!(body["result"]["isError"], true);
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("invalid arguments: /name: 5 is not of type \"string\""),
        "{text}"
    );
    let (_, body) = rt
        .call(&session, 2, "tools/call", json!({"name": "nope"}))
        .await;
    assert_eq!(body["error"]["code"], -32602);
}

#[tokio::test]
async fn subscription_streams_are_bounded() {
    let rt = start(MANIFEST, |c| c.sessions.max_sessions = 1).await;
    let listen = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": true}}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "subscriptions/listen"),
    ];
    let first = rt.post(&listen, &headers).await;
    assert_eq!(first.status(), 200);
    let second = rt.post(&listen, &headers).await;
    assert_eq!(second.status(), 503);
    drop(first);
    let mut reopened = false;
    for _ in 0..50 {
        if rt.post(&listen, &headers).await.status() == 200 {
            reopened = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(reopened, "closing a stream frees its place");
}

/// 256 idle connections used to take every admin slot, so kubelet's probes failed and the pod
/// was restarted: a probe now closes the connection idle the longest instead of waiting.
#[tokio::test]
async fn idle_connections_do_not_keep_probes_off_the_admin_port() {
    let rt = start(MANIFEST, |_| {}).await;
    let admin = rt.admin.trim_start_matches("http://").to_owned();
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(tokio::net::TcpStream::connect(&admin).await.unwrap());
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let probe = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(2))
        .build()
        .unwrap();
    for _ in 0..3 {
        let answer = probe.get(format!("{}/healthz", rt.admin)).send().await;
        assert_eq!(answer.expect("probe not answered").status(), 200);
    }
}
