//! Legacy sessions: limits, expiry, unknown ids, DELETE, pings, cancellation, replicas.

use super::support::{MANIFEST, initialize_body, start};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn sessions_past_the_limit_are_refused_with_503() {
    let rt = start(MANIFEST, |c| c.sessions.max_sessions = 1).await;
    rt.initialize().await;
    let response = rt.post(&initialize_body(), &[]).await;
    assert_eq!(response.status(), 503);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("too many sessions"),
        "{body}"
    );
    assert!(rt.metrics().await.contains("mcp_session_refusals_total 1"));
}

#[tokio::test]
async fn idle_sessions_expire() {
    let rt = start(MANIFEST, |c| {
        c.sessions.idle_timeout = Duration::from_secs(1)
    })
    .await;
    let session = rt.initialize().await;
    assert_eq!(rt.call(&session, 1, "ping", json!({})).await.0, 200);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(rt.call(&session, 2, "ping", json!({})).await.0, 404);
    assert!(
        rt.metrics()
            .await
            .contains("mcp_sessions_active{transport=\"streamable_http\"} 0")
    );
}

#[tokio::test]
async fn unknown_missing_and_deleted_sessions() {
    let rt = start(MANIFEST, |_| {}).await;
    assert_eq!(rt.call("forged", 1, "ping", json!({})).await.0, 404);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    assert_eq!(rt.post(&body, &[]).await.status(), 400);
    let session = rt.initialize().await;
    let client = reqwest::Client::new();
    let delete = || {
        client
            .delete(format!("{}/mcp", rt.url))
            .header("mcp-session-id", &session)
            .send()
    };
    assert_eq!(delete().await.unwrap().status(), 204);
    assert_eq!(rt.call(&session, 2, "ping", json!({})).await.0, 404);
    assert_eq!(delete().await.unwrap().status(), 404);
}

#[tokio::test]
async fn an_unanswered_ping_ends_the_session() {
    let rt = start(MANIFEST, |c| {
        c.sessions.ping_interval = Some(Duration::from_millis(100));
        c.sessions.ping_timeout = Duration::from_millis(200);
    })
    .await;
    let session = rt.initialize().await;
    let mut stream = rt.open_stream(&session).await;
    assert!(
        stream
            .until(Duration::from_secs(2), |t| t
                .contains("\"method\":\"ping\""))
            .await
    );
    assert!(
        stream.ends_within(Duration::from_secs(2)).await,
        "stream should close: {}",
        stream.text
    );
    assert_eq!(rt.call(&session, 1, "tools/list", json!({})).await.0, 404);
    assert!(rt.metrics().await.contains("mcp_ping_failures_total 1"));
}

#[tokio::test]
async fn answered_pings_keep_the_session() {
    // A generous timeout: a loaded machine may deliver pings late, and every one is answered.
    let rt = start(MANIFEST, |c| {
        c.sessions.ping_interval = Some(Duration::from_millis(100));
        c.sessions.ping_timeout = Duration::from_secs(2);
    })
    .await;
    let session = rt.initialize().await;
    let mut stream = rt.open_stream(&session).await;
    let mut answered = 0;
    while answered < 4 {
        assert!(
            stream
                .until(Duration::from_secs(3), |t| t.contains("kube-mcp-ping-"))
                .await
        );
        let ids: Vec<String> = stream
            .text
            .split("\"id\":\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .map(str::to_owned)
            .collect();
        stream.text.clear();
        for id in ids {
            let pong = json!({"jsonrpc": "2.0", "id": id, "result": {}});
            let status = rt
                .post(&pong, &[("mcp-session-id", &session)])
                .await
                .status();
            assert_eq!(status, 202);
            answered += 1;
        }
    }
    assert_eq!(rt.call(&session, 1, "tools/list", json!({})).await.0, 200);
    assert!(rt.metrics().await.contains("mcp_ping_failures_total 0"));
}

#[tokio::test]
async fn a_second_stream_for_one_session_is_a_conflict() {
    let rt = start(MANIFEST, |_| {}).await;
    let session = rt.initialize().await;
    let _first = rt.open_stream(&session).await;
    let second = reqwest::Client::new()
        .get(format!("{}/mcp", rt.url))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session);
    let second = second.send().await.unwrap();
    assert_eq!(second.status(), 409);
}

#[tokio::test]
async fn cancellation_stops_a_running_call() {
    let rt = start(MANIFEST, |_| {}).await;
    let session = rt.initialize().await;
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "slow", "_meta": {"progressToken": "p"}}});
    let started = std::time::Instant::now();
    let headers = [("mcp-session-id", session.as_str())];
    let pending = rt.post(&call, &headers);
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
        rt.post(&note, &[("mcp-session-id", &session)])
            .await
            .status()
    };
    let (response, cancelled) = tokio::join!(pending, cancel);
    assert_eq!(cancelled, 202);
    let text = response.text().await.unwrap();
    assert!(text.contains("request cancelled"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the call ran to completion"
    );
}

#[tokio::test]
async fn a_second_replica_with_the_key_serves_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, [42u8; 32]).unwrap();
    let with_key = |path: std::path::PathBuf| {
        move |c: &mut mcp_http::app::RunConfig| c.session_key_file = Some(path)
    };
    let first = start(MANIFEST, with_key(key.clone())).await;
    let second = start(MANIFEST, with_key(key.clone())).await;
    let session = first.initialize().await;
    let (status, body) = second
        .call(
            &session,
            1,
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["content"][0]["text"], "Hello, Ada!");
    let other_key = dir.path().join("other");
    std::fs::write(&other_key, [7u8; 32]).unwrap();
    let stranger = start(MANIFEST, with_key(other_key)).await;
    assert_eq!(stranger.call(&session, 2, "ping", json!({})).await.0, 404);
}

#[tokio::test]
async fn a_rotated_key_keeps_the_sessions_of_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old"), dir.path().join("new"));
    std::fs::write(&old, [42u8; 32]).unwrap();
    std::fs::write(&new, [43u8; 32]).unwrap();
    let before = start(MANIFEST, |c| c.session_key_file = Some(old.clone())).await;
    let session = before.initialize().await;
    let (new_key, old_key) = (new.clone(), old.clone());
    let rotating = start(MANIFEST, move |c| {
        c.session_key_file = Some(new_key);
        c.previous_session_key_file = Some(old_key);
    })
    .await;
    assert_eq!(rotating.call(&session, 1, "ping", json!({})).await.0, 200);
    // Sessions opened during the rotation are sealed with the new key alone.
    let opened_during = rotating.initialize().await;
    let retired = start(MANIFEST, |c| c.session_key_file = Some(new)).await;
    assert_eq!(
        retired.call(&opened_during, 2, "ping", json!({})).await.0,
        200
    );
    assert_eq!(
        before.call(&opened_during, 3, "ping", json!({})).await.0,
        404
    );
    // Once the previous key is gone, the sessions it sealed end.
    assert_eq!(retired.call(&session, 4, "ping", json!({})).await.0, 404);
}
