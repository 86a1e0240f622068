//! `http.async` tools through the whole runtime, against an upstream on 127.0.0.1 whose answers
//! the test scripts: the status URL found by jq (relative) or by a header template, a status URL
//! on another host refused, a start refused by the upstream answered without a task, `done`,
//! `failed` and `result` jq over the status body, and a job the upstream lost failing the task.

use super::support::{body_json, start};
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The upstream: `POST /jobs` (202, `{"statusUrl": "jobs/1"}`), `POST /elsewhere` (202 with a
/// `Location` on another host), `POST /refuse` (503); `GET /jobs/1` answers `working` twice, then
/// `failed` with an error; `GET /lost` is 410.
async fn upstream() -> (std::net::SocketAddr, tokio_util::sync::CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let reads = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new()
        .route(
            "/jobs",
            post(|| async {
                let mut headers = HeaderMap::new();
                headers.insert(header::LOCATION, "/lost".parse().unwrap());
                (
                    StatusCode::ACCEPTED,
                    headers,
                    axum::Json(json!({"statusUrl": "jobs/1"})),
                )
            }),
        )
        .route(
            "/elsewhere",
            post(|| async {
                let mut headers = HeaderMap::new();
                let away = "http://jobs.attacker.example/1".parse().unwrap();
                headers.insert(header::LOCATION, away);
                (StatusCode::ACCEPTED, headers, "")
            }),
        )
        .route(
            "/refuse",
            post(|| async { (StatusCode::SERVICE_UNAVAILABLE, "busy") }),
        )
        .route(
            "/jobs/1",
            get(move || {
                let reads = reads.clone();
                async move {
                    let state = match reads.fetch_add(1, Ordering::SeqCst) {
                        0 | 1 => json!({"state": "working"}),
                        _ => json!({"state": "failed", "error": "disk full"}),
                    };
                    axum::Json(state)
                }
            }),
        )
        .route("/lost", get(|| async { (StatusCode::GONE, "gone") }));
    let stop = tokio_util::sync::CancellationToken::new();
    let server = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(server.cancelled_owned())
            .await
    });
    (address, stop)
}

fn manifest(address: std::net::SocketAddr) -> String {
    let tool = |name: &str, path: &str, status: &str| {
        format!(
            "    - name: {name}\n      http:\n        method: POST\n        url: \"http://{address}{path}\"\n        async:\n          status: {status}\n          intervalMs: 100\n          done: '.state != \"working\"'\n          failed: '.state == \"failed\"'\n          result: {{jq: '{{error}}'}}\n"
        )
    };
    let tools = [
        tool("by_jq", "/jobs", "{jq: .statusUrl}"),
        tool(
            "by_header",
            "/jobs",
            "{url: \"{{ response.headers.location }}\"}",
        ),
        tool(
            "elsewhere",
            "/elsewhere",
            "{url: \"{{ response.headers.location }}\"}",
        ),
        tool("refused", "/refuse", "{jq: .statusUrl}"),
    ]
    .concat();
    format!(
        "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: jobs}}\nspec:\n  tools:\n{tools}"
    )
}

/// A 2026-07-28 request of a client that declares the Tasks extension.
async fn send(rt: &super::support::Runtime, method: &str, params: Value) -> Value {
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", name.as_str()),
    ];
    body_json(rt.post(&body, &headers).await).await
}

async fn call(rt: &super::support::Runtime, tool: &str) -> Value {
    send(rt, "tools/call", json!({"name": tool, "arguments": {}})).await["result"].clone()
}

async fn get_task(rt: &super::support::Runtime, id: &str) -> Value {
    send(rt, "tasks/get", json!({"taskId": id})).await["result"].clone()
}

#[tokio::test]
async fn a_relative_status_url_from_jq_is_polled_until_failed_says_so() {
    let (address, stop) = upstream().await;
    let rt = start(&manifest(address), |_| {}).await;
    let created = call(&rt, "by_jq").await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(get_task(&rt, &id).await["status"], "working");
    assert_eq!(get_task(&rt, &id).await["status"], "working");
    let done = get_task(&rt, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    // `failed` makes the tool's result a tool error; `result` is jq over the status body.
    assert_eq!(done["result"]["isError"], true);
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"error": "disk full"})
    );
    stop.cancel();
}

#[tokio::test]
async fn a_job_the_upstream_lost_fails_the_task_with_an_error() {
    let (address, stop) = upstream().await;
    let rt = start(&manifest(address), |_| {}).await;
    let created = call(&rt, "by_header").await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let lost = get_task(&rt, &id).await;
    assert_eq!(lost["status"], "failed", "{lost}");
    assert_eq!(lost["error"]["code"], -32603);
    assert!(lost.get("result").is_none());
    stop.cancel();
}

#[tokio::test]
async fn no_task_starts_when_the_upstream_refuses_or_points_elsewhere() {
    let (address, stop) = upstream().await;
    let rt = start(&manifest(address), |_| {}).await;
    let elsewhere = call(&rt, "elsewhere").await;
    assert_eq!(elsewhere["resultType"], "complete", "{elsewhere}");
    assert_eq!(elsewhere["isError"], true);
    let text = elsewhere["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("another scheme, host or port"), "{text}");
    assert!(!text.contains("attacker"), "{text}");
    let refused = call(&rt, "refused").await;
    assert_eq!(refused["resultType"], "complete", "{refused}");
    assert_eq!(refused["isError"], true);
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("503")
    );
    stop.cancel();
}
