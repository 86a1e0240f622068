//! Live reload: a valid edit is served and announced; an invalid one keeps the old declaration.

use super::support::{MANIFEST, start};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn edits_are_served_and_announced_and_bad_edits_are_refused() {
    let rt = start(MANIFEST, |_| {}).await;
    let session = rt.initialize().await;
    let mut stream = rt.open_stream(&session).await;
    let (_, subscribed) = rt
        .call(
            &session,
            1,
            "resources/subscribe",
            json!({"uri": "docs://readme"}),
        )
        .await;
    assert_eq!(subscribed["result"], json!({}));

    rt.replace_manifest(
        MANIFEST
            .replace("name: greet", "name: welcome")
            .replace("text: \"first\"", "text: \"second\""),
    );
    assert!(
        stream
            .until(Duration::from_secs(3), |t| t
                .contains("notifications/tools/list_changed"))
            .await,
        "{}",
        stream.text
    );
    assert!(
        stream
            .until(Duration::from_secs(3), |t| t
                .contains("notifications/resources/updated"))
            .await,
        "{}",
        stream.text
    );
    let (_, tools) = rt.call(&session, 2, "tools/list", json!({})).await;
    assert_eq!(tools["result"]["tools"][0]["name"], "welcome");

    rt.replace_manifest(MANIFEST.replace("{{ args.name }}", "{{ args.name "));
    assert!(
        rt.metric_shows("mcp_reloads_total{outcome=\"error\"} 1")
            .await
    );
    let (_, tools) = rt.call(&session, 3, "tools/list", json!({})).await;
    assert_eq!(tools["result"]["tools"][0]["name"], "welcome");
}

/// The declaration a stateless `server/discover` reports being served.
async fn served(rt: &super::support::Runtime) -> serde_json::Value {
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": super::support::modern_meta()}});
    let response = rt
        .post(
            &discover,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "server/discover"),
            ],
        )
        .await;
    assert_eq!(response.status(), 200);
    let body = super::support::body_json(response).await;
    body["result"]["_meta"]["kube-mcp.io/declaration"].clone()
}

#[tokio::test]
async fn the_served_declaration_hash_follows_reloads() {
    let rt = start(MANIFEST, |_| {}).await;
    let first = served(&rt).await;
    let computed = first["hash"].as_str().unwrap().to_owned();
    assert_eq!(computed.len(), 16, "{first}");
    assert_eq!(
        first,
        json!({"hash": computed, "tools": 2, "resources": 1, "resourceTemplates": 0, "prompts": 0})
    );
    let series = format!("mcp_runtime_declaration_info{{hash=\"{computed}\"}} 1");
    assert!(rt.metric_shows(&series).await, "{}", rt.metrics().await);

    // The operator's stamp wins over the computed hash; the old series goes.
    rt.replace_manifest(MANIFEST.replace(
        "metadata: {name: harness}",
        "metadata: {name: harness, annotations: {kube-mcp.io/declaration-hash: feedc0de}}",
    ));
    assert!(
        rt.metric_shows("mcp_runtime_declaration_info{hash=\"feedc0de\"} 1")
            .await
    );
    assert!(!rt.metrics().await.contains(&series));
    assert_eq!(served(&rt).await["hash"], "feedc0de");

    // A malformed stamp is refused like any invalid manifest: the old declaration keeps serving.
    rt.replace_manifest(MANIFEST.replace(
        "metadata: {name: harness}",
        "metadata: {name: harness, annotations: {kube-mcp.io/declaration-hash: \"a b\"}}",
    ));
    assert!(
        rt.metric_shows("mcp_reloads_total{outcome=\"error\"} 1")
            .await
    );
    assert_eq!(served(&rt).await["hash"], "feedc0de");
}

/// The admin port's `GET /declaration` report.
async fn report(rt: &super::support::Runtime) -> serde_json::Value {
    let response = reqwest::get(format!("{}/declaration", rt.admin))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// Polls the report until `done` holds (reloads are polled every 100 ms here).
async fn report_until(
    rt: &super::support::Runtime,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    for _ in 0..60 {
        let now = report(rt).await;
        if done(&now) {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    report(rt).await
}

#[tokio::test]
async fn the_admin_port_reports_the_served_declaration_and_the_last_reload() {
    let rt = start(MANIFEST, |_| {}).await;
    let first = report(&rt).await;
    // The same report as `_meta`, plus when it was loaded; no reload yet.
    let meta = served(&rt).await;
    for key in ["hash", "tools", "resources", "resourceTemplates", "prompts"] {
        assert_eq!(first[key], meta[key], "{key}: {first}");
    }
    assert!(
        first["loadedAt"].as_str().unwrap().ends_with('Z'),
        "{first}"
    );
    assert!(first.get("lastReload").is_none(), "{first}");

    let stamped = |hash: &str| {
        MANIFEST.replace(
            "metadata: {name: harness}",
            &format!(
                "metadata: {{name: harness, annotations: {{kube-mcp.io/declaration-hash: {hash}}}}}"
            ),
        )
    };
    rt.replace_manifest(stamped("feedc0de"));
    let loaded = report_until(&rt, |r| r["hash"] == "feedc0de").await;
    assert_eq!(loaded["lastReload"]["outcome"], "loaded", "{loaded}");
    assert_eq!(loaded["lastReload"]["hash"], "feedc0de", "{loaded}");
    assert_ne!(loaded["loadedAt"], first["loadedAt"], "{loaded}");

    // A version the runtime refuses: named by its stamp, with the compiler's error; the
    // previous declaration keeps serving and keeps its load time.
    rt.replace_manifest(stamped("0badbeef").replace("{{ args.name }}", "{{ args.name "));
    let refused = report_until(&rt, |r| r["lastReload"]["outcome"] == "refused").await;
    assert_eq!(refused["hash"], "feedc0de", "{refused}");
    assert_eq!(refused["loadedAt"], loaded["loadedAt"], "{refused}");
    assert_eq!(refused["lastReload"]["hash"], "0badbeef", "{refused}");
    let error = refused["lastReload"]["error"].as_str().unwrap();
    assert!(error.contains("spec.tools[0].content[0].text"), "{error}");
}
