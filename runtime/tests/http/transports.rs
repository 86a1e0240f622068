//! `--transports` and `spec.transports` over real sockets: a transport turned off by either
//! answers 404 with a hint naming both (405 for `GET`/`DELETE /mcp`, as for a server without
//! sessions), the others are served as before, and a reload turns one off without a restart.

use super::support::{MANIFEST, Runtime, body_json, initialize_body, modern_meta, start};
use mcp_declaration::Transports;
use serde_json::json;
use std::time::Duration;

async fn get(rt: &Runtime, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = reqwest::Client::new().get(format!("{}{path}", rt.url));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn modern_list(rt: &Runtime) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    rt.post(&body, &headers).await.status().as_u16()
}

fn hinted(text: &str) -> bool {
    text.contains("--transports") && text.contains("spec.transports")
}

#[tokio::test]
async fn the_flag_turns_http_sse_off() {
    let rt = start(MANIFEST, |c| {
        c.http.transports = Transports::parse("modern,streamable").unwrap();
    })
    .await;
    let (status, text) = get(&rt, "/sse", &[]).await;
    assert_eq!(status, 404);
    assert!(hinted(&text) && text.contains("HTTP+SSE"), "{text}");
    assert!(text.contains("served: modern,streamable"), "{text}");
    let posted = reqwest::Client::new()
        .post(format!("{}/messages?sessionId=any", rt.url))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 404);
    assert!(hinted(&posted.text().await.unwrap()));
    assert_eq!(modern_list(&rt).await, 200);
    rt.initialize().await;
}

#[tokio::test]
async fn the_declaration_turns_sessions_off() {
    let manifest = MANIFEST.replace("spec:\n", "spec:\n  transports: [modern]\n");
    let rt = start(&manifest, |_| {}).await;
    let refused = rt.post(&initialize_body(), &[]).await;
    assert_eq!(refused.status(), 404);
    let text = refused.text().await.unwrap();
    assert!(hinted(&text) && text.contains("Streamable HTTP"), "{text}");
    let (status, text) = get(
        &rt,
        "/mcp",
        &[("accept", "text/event-stream"), ("mcp-session-id", "x")],
    )
    .await;
    assert_eq!(status, 405, "{text}");
    assert!(hinted(&text));
    assert_eq!(get(&rt, "/sse", &[]).await.0, 404);
    assert_eq!(modern_list(&rt).await, 200);
}

#[tokio::test]
async fn what_is_served_is_what_both_allow() {
    let manifest = MANIFEST.replace("spec:\n", "spec:\n  transports: [sse]\n");
    let rt = start(&manifest, |c| {
        c.http.transports = Transports::parse("modern").unwrap();
    })
    .await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let refused = rt.post(&body, &headers).await;
    assert_eq!(refused.status(), 404);
    let text = refused.text().await.unwrap();
    assert!(text.contains("served: none"), "{text}");
    assert_eq!(get(&rt, "/sse", &[]).await.0, 404);
}

#[tokio::test]
async fn a_reload_turns_a_transport_off() {
    let rt = start(MANIFEST, |_| {}).await;
    let session = rt.initialize().await;
    let call = |id| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let before = rt.post(&call(1), &[("mcp-session-id", &session)]).await;
    assert_eq!(before.status(), 200);
    assert!(body_json(before).await["result"]["tools"].is_array());
    let manifest = MANIFEST.replace("spec:\n", "spec:\n  transports: [modern, sse]\n");
    rt.replace_manifest(manifest);
    let mut refused = false;
    for _ in 0..100 {
        if rt
            .post(&call(2), &[("mcp-session-id", &session)])
            .await
            .status()
            == 404
        {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        refused,
        "the session's requests are refused after the reload"
    );
    assert_eq!(modern_list(&rt).await, 200);
}
