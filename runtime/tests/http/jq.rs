//! jq over an upstream's answer, through the whole runtime: a program that would build
//! gigabytes in a few steps answers a tool error, and the process serves on.

use super::support::{body_json, modern_meta, start};
use serde_json::json;

/// jq programs that allocated gigabytes (or aborted the process) before their step budget
/// noticed.
const BOMBS: &[&str] = &[
    r#""x" * 1000000000"#,
    r#""x" * 1000000000000"#,
    r#""x" | until(length > 1e10; . + .)"#,
    r#"("x" * 1000000) as $s | [range(100000) | $s] | tojson"#,
];

#[tokio::test]
async fn jq_programs_that_build_too_much_answer_a_tool_error() {
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = upstream.local_addr().unwrap();
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "{\"n\": 1}" }));
    let stop = tokio_util::sync::CancellationToken::new();
    let server = stop.clone();
    tokio::spawn(async move {
        axum::serve(upstream, app)
            .with_graceful_shutdown(server.cancelled_owned())
            .await
    });
    let mut tools = String::new();
    for (i, jq) in BOMBS.iter().chain([&".n + 1"]).enumerate() {
        let jq = serde_json::to_string(jq).unwrap();
        tools.push_str(&format!(
            "    - name: t{i}\n      http:\n        url: \"http://{address}/\"\n        responses:\n          - {{status: 2xx, jq: {jq}}}\n"
        ));
    }
    let manifest = format!(
        "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: jq}}\nspec:\n  tools:\n{tools}"
    );
    let rt = start(&manifest, |_| {}).await;
    let call = |i: usize| {
        json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": format!("t{i}"), "arguments": {}, "_meta": modern_meta()}})
    };
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
    ];
    for (i, jq) in BOMBS.iter().enumerate() {
        let name = format!("t{i}");
        let mut extra = headers.to_vec();
        extra.push(("mcp-name", &name));
        let answer = body_json(rt.post(&call(i), &extra).await).await;
        let result = &answer["result"];
        assert_eq!(result["isError"], true, "{jq}: {answer}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("32 MiB of values"), "{jq}: {text}");
    }
    // The process is still there, and jq still works.
    let name = format!("t{}", BOMBS.len());
    let mut extra = headers.to_vec();
    extra.push(("mcp-name", &name));
    let answer = body_json(rt.post(&call(BOMBS.len()), &extra).await).await;
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "2", "{answer}");
    stop.cancel();
}
