//! Every kind of registry answer, for servers from bare to full, validated against the
//! registry's published OpenAPI `v0.1` and the `server.json` schema (2025-12-11); and a broken
//! answer is refused, so the validators are known to bite. Pure: the routes are called in
//! memory (the cluster test `tests/e2e/registry.sh` repeats this over real HTTP).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "registry/schemas.rs"]
mod schemas;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use mcp_operator::registry::{Catalog, RegistryState, Settings, router};
use mcp_operator::resource::MCPServer;
use serde_json::{Value, json};
use tower::ServiceExt as _;

fn server(yaml: &str) -> MCPServer {
    serde_yaml_ng::from_str(yaml).unwrap()
}

fn servers() -> Vec<MCPServer> {
    let tools: String = (0..250)
        .map(|i| format!("\n  - {{name: t{i}, description: 'tool <b>{i}</b>', content: [{{type: text, text: x}}]}}"))
        .collect();
    vec![
        // Bare: no description, version, status or URL.
        server("apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {name: bare, namespace: a, uid: u1, generation: 1, creationTimestamp: '2025-01-01T00:00:00Z'}\nspec: {registry: {publish: true}}"),
        // Full: every metadata field, auth, many tools, Ready and Verified.
        server(&format!("apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {{name: full, namespace: b, uid: u2, generation: 7, creationTimestamp: '2025-02-01T00:00:00Z'}}
spec:
  title: Tracker
  description: Issue tracker of the platform team
  version: 1.4.0+build.5
  icons: [{{src: 'https://example.com/icon.png', mimeType: image/png, sizes: ['48x48'], theme: dark}}, {{src: 'data:image/png;base64,AAAA'}}]
  websiteUrl: https://wiki.example.com/tracker-mcp
  repository: {{url: 'https://git.example.com/platform/tracker', source: git, subfolder: servers/tracker}}
  registry: {{publish: true}}
  auth: {{issuer: 'https://idp.example.com', requiredScopes: [mcp]}}
  prompts: [{{name: p, messages: [{{role: user, content: {{type: text, text: x}}}}]}}]
  resources: [{{uri: 'docs://a', name: a, text: x}}]
  tools:{tools}
status:
  url: https://mcp.example.com/tracker/mcp
  conditions:
  - {{type: Ready, status: 'True', reason: Available, message: ok, lastTransitionTime: '2025-02-02T00:00:00Z'}}
  - {{type: Verified, status: 'True', reason: Serving, message: ok, lastTransitionTime: '2025-02-02T00:00:00Z'}}
")),
        // Suspended, with a description of exactly 100 characters and a title too long.
        server(&format!("apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: held, namespace: c, uid: u3, generation: 1, creationTimestamp: '2025-03-01T00:00:00Z'}}\nspec: {{registry: {{publish: true}}, suspend: true, title: '{}', description: '{}'}}\nstatus: {{url: 'http://held.c.svc.cluster.local/mcp'}}", "T".repeat(140), "d".repeat(100))),
        // Deleted below.
        server("apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {name: gone, namespace: d, uid: u4, generation: 1, creationTimestamp: '2025-04-01T00:00:00Z'}\nspec: {registry: {publish: true}}"),
    ]
}

fn state() -> RegistryState {
    let now = "2026-01-01T00:00:00Z".parse().unwrap();
    let mut catalog = Catalog::new(Settings::default(), vec![None]);
    catalog.list_started(None);
    let all = servers();
    for s in &all {
        catalog.apply(None, s, now);
    }
    catalog.list_done(None, now);
    catalog.delete(&all[3], "2026-01-02T00:00:00Z".parse().unwrap());
    RegistryState::new(catalog)
}

async fn get(state: &RegistryState, method: Method, uri: &str) -> (StatusCode, Value) {
    let response = router(state.clone())
        .oneshot(
            Request::builder()
                .method(method)
                .uri(uri)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 8 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn every_answer_validates_against_the_published_documents() {
    let schemas = schemas::Schemas::load();
    let state = state();
    let (status, list) = get(
        &state,
        Method::GET,
        "/v0.1/servers?include_deleted=true&limit=100",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        schemas.list_problems(&list),
        Vec::<String>::new(),
        "{list:#}"
    );
    let names: Vec<&str> = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["server"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "local.kube-mcp/a.bare",
            "local.kube-mcp/b.full",
            "local.kube-mcp/c.held",
            "local.kube-mcp/d.gone"
        ]
    );
    let statuses: Vec<&str> = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s["_meta"]["io.modelcontextprotocol.registry/official"]["status"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(statuses, ["deprecated", "active", "deprecated", "deleted"]);
    let full = &list["servers"][1];
    assert_eq!(
        full["_meta"]["io.kube-mcp/server"]["tools"]
            .as_array()
            .unwrap()
            .len(),
        200
    );
    assert_eq!(full["_meta"]["io.kube-mcp/server"]["toolsOmitted"], 50);
    assert_eq!(
        full["_meta"]["io.kube-mcp/server"]["auth"]["issuer"],
        "https://idp.example.com"
    );

    for uri in [
        "/v0.1/servers",
        "/v0.1/servers?limit=1",
        "/v0.1/servers?search=track&version=latest",
        "/v0.1/servers?updated_since=2026-01-01T12:00:00Z",
        "/v0.1/servers/local.kube-mcp%2Fb.full/versions",
        "/v0.1/servers/local.kube-mcp%2Fd.gone/versions?include_deleted=true",
    ] {
        let (status, body) = get(&state, Method::GET, uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert_eq!(
            schemas.list_problems(&body),
            Vec::<String>::new(),
            "{uri}: {body:#}"
        );
    }
    for uri in [
        "/v0.1/servers/local.kube-mcp%2Fb.full/versions/latest",
        "/v0.1/servers/local.kube-mcp%2Fb.full/versions/1.4.0%2Bbuild.5",
        "/v0.1/servers/local.kube-mcp%2Fa.bare/versions/latest",
        "/v0.1/servers/local.kube-mcp%2Fc.held/versions/latest",
        "/v0.1/servers/local.kube-mcp%2Fd.gone/versions/latest?include_deleted=true",
    ] {
        let (status, body) = get(&state, Method::GET, uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert_eq!(
            schemas.response_problems(&body),
            Vec::<String>::new(),
            "{uri}: {body:#}"
        );
    }
    for (method, uri, want) in [
        (
            Method::GET,
            "/v0.1/servers/local.kube-mcp%2Fd.gone/versions/latest",
            StatusCode::NOT_FOUND,
        ),
        (
            Method::GET,
            "/v0.1/servers/x%2Fy/versions",
            StatusCode::NOT_FOUND,
        ),
        (
            Method::GET,
            "/v0.1/servers?limit=x",
            StatusCode::BAD_REQUEST,
        ),
        (Method::POST, "/v0.1/publish", StatusCode::NOT_IMPLEMENTED),
        (
            Method::PUT,
            "/v0.1/servers/local.kube-mcp%2Fb.full/versions/1.4.0",
            StatusCode::NOT_IMPLEMENTED,
        ),
    ] {
        let (status, body) = get(&state, method, uri).await;
        assert_eq!(status, want, "{uri}");
        assert_eq!(
            schemas.error_problems(&body),
            Vec::<String>::new(),
            "{uri}: {body:#}"
        );
    }
}

#[tokio::test]
async fn the_validators_refuse_a_broken_answer() {
    let schemas = schemas::Schemas::load();
    let (_, mut good) = get(
        &state(),
        Method::GET,
        "/v0.1/servers/local.kube-mcp%2Fb.full/versions/latest",
    )
    .await;
    assert!(schemas.response_problems(&good).is_empty());
    let mut long = good.clone();
    long["server"]["description"] = json!("x".repeat(101));
    assert!(!schemas.response_problems(&long).is_empty());
    let mut bad_name = good.clone();
    bad_name["server"]["name"] = json!("no-slash");
    assert!(!schemas.response_problems(&bad_name).is_empty());
    good["_meta"]["io.modelcontextprotocol.registry/official"]["status"] = json!("gone");
    assert!(!schemas.response_problems(&good).is_empty());
    let mut time = good.clone();
    time["_meta"]["io.modelcontextprotocol.registry/official"]["status"] = json!("active");
    time["_meta"]["io.modelcontextprotocol.registry/official"]["updatedAt"] = json!("yesterday");
    assert!(!schemas.response_problems(&time).is_empty());
    assert!(
        !schemas
            .list_problems(&json!({"servers": [{"server": {"name": "a/b"}}]}))
            .is_empty()
    );
}
