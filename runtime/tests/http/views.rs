//! `spec.views` over real sockets: a view's endpoints list and serve only its items (an item
//! outside it is answered as undeclared), a legacy session cannot cross views, HTTP+SSE
//! announces the view's own endpoint, and with `spec.auth` each view has its scopes, its
//! challenge, its metadata and its token audience.

use super::issuer::{self, Published, RSA_A, SigningKey};
use super::sse::open_at;
use super::support::{Runtime, body_json, initialize_body, start};
use mcp_server::sessions::unix_now;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const VIEWS: &str = r#"
  tools:
    - {name: get_pod, content: [{type: text, text: pod}]}
    - {name: list_pods, content: [{type: text, text: pods}]}
    - {name: delete_pod, content: [{type: text, text: deleted}]}
  views:
    - {name: readers, path: /readers, requiredScopes: [read], tools: [get_*, list_*]}
    - {name: operators, path: /operators, tools: ["*"]}
"#;

fn manifest(auth: Option<&str>) -> String {
    let mut text = String::from(
        "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {name: viewed}\nspec:\n",
    );
    if let Some(issuer) = auth {
        text.push_str(&format!(
            "  auth: {{issuer: \"{issuer}\", requiredScopes: [mcp]}}\n"
        ));
    }
    // Without spec.auth there is no caller to check a view's scopes on.
    let views = if auth.is_some() {
        VIEWS.to_owned()
    } else {
        VIEWS.replace("requiredScopes: [read], ", "")
    };
    text.push_str(&views);
    text
}

/// POSTs `body` to `path` with the usual headers plus `extra`.
async fn post_at(
    rt: &Runtime,
    path: &str,
    body: &Value,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{}{path}", rt.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

/// Opens a legacy session at `path`; its id.
async fn session_at(rt: &Runtime, path: &str, extra: &[(&str, &str)]) -> String {
    let response = post_at(rt, path, &initialize_body(), extra).await;
    assert_eq!(response.status(), 200, "initialize at {path}");
    response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

async fn call_at(
    rt: &Runtime,
    path: &str,
    session: &str,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut headers = vec![("mcp-session-id", session)];
    headers.extend_from_slice(extra);
    let response = post_at(rt, path, &body, &headers).await;
    let status = response.status().as_u16();
    (status, body_json(response).await)
}

fn tool_names(listed: &Value) -> Vec<&str> {
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_view_lists_and_serves_only_its_items() {
    let rt = start(&manifest(None), |_| {}).await;
    let readers = session_at(&rt, "/readers/mcp", &[]).await;
    let (status, listed) =
        call_at(&rt, "/readers/mcp", &readers, "tools/list", json!({}), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(tool_names(&listed), ["get_pod", "list_pods"]);

    let call = |name: &'static str| {
        let (rt, readers) = (&rt, &readers);
        async move {
            let params = json!({"name": name, "arguments": {}});
            call_at(rt, "/readers/mcp", readers, "tools/call", params, &[]).await
        }
    };
    let (_, allowed) = call("get_pod").await;
    assert_eq!(allowed["result"]["content"][0]["text"], "pod");
    // Outside the view: the answer an undeclared tool gets.
    let (hidden_status, hidden) = call("delete_pod").await;
    let (missing_status, missing) = call("no_such_tool").await;
    assert_eq!(hidden_status, missing_status);
    assert_eq!(hidden["error"]["code"], missing["error"]["code"]);
    assert_eq!(
        hidden["error"]["message"]
            .as_str()
            .unwrap()
            .replace("delete_pod", "X"),
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .replace("no_such_tool", "X"),
    );

    // The server's own endpoint serves everything.
    let whole = rt.initialize().await;
    let (_, listed) = rt.call(&whole, 2, "tools/list", json!({})).await;
    assert_eq!(tool_names(&listed), ["get_pod", "list_pods", "delete_pod"]);
}

#[tokio::test]
async fn a_session_cannot_cross_views() {
    let rt = start(&manifest(None), |_| {}).await;
    let readers = session_at(&rt, "/readers/mcp", &[]).await;
    let whole = rt.initialize().await;
    for (path, session) in [
        ("/mcp", &readers),
        ("/operators/mcp", &readers),
        ("/readers/mcp", &whole),
    ] {
        let (status, _) = call_at(&rt, path, session, "tools/list", json!({}), &[]).await;
        assert_eq!(status, 404, "a session of another view at {path}");
    }
    // Each still works where it was opened.
    let (status, _) = call_at(&rt, "/readers/mcp", &readers, "tools/list", json!({}), &[]).await;
    assert_eq!(status, 200);
    let (status, _) = rt.call(&whole, 3, "tools/list", json!({})).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn http_sse_through_a_view_announces_and_serves_the_view() {
    let rt = start(&manifest(None), |c| c.http.path_prefix = "/k8s".into()).await;
    let (mut stream, endpoint) = open_at(&rt, "/k8s/readers/sse").await;
    assert!(
        endpoint.starts_with("/k8s/readers/messages?sessionId="),
        "{endpoint}"
    );
    let client = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let initialized = client
        .post(format!("{}{endpoint}", rt.url))
        .header("content-type", "application/json")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(initialized.status(), 202);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let posted = client
        .post(format!("{}{endpoint}", rt.url))
        .header("content-type", "application/json")
        .body(list.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 202);
    assert!(
        stream
            .until(Duration::from_secs(2), |t| t.contains("list_pods"))
            .await
    );
    assert!(!stream.text.contains("delete_pod"), "{}", stream.text);
    // The same session through the server's own endpoint is not found.
    let session = endpoint.split("sessionId=").nth(1).unwrap();
    let crossed = client
        .post(format!("{}/k8s/messages?sessionId={session}", rt.url))
        .header("content-type", "application/json")
        .body(list.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(crossed.status(), 404);
}

const PUBLIC: &str = "http://127.0.0.1:8080/mcp";
const READERS_URL: &str = "http://127.0.0.1:8080/readers/mcp";

#[tokio::test]
async fn each_view_has_its_scopes_challenge_metadata_and_audience() {
    let signer = SigningKey::rsa("a", RSA_A);
    let published = Arc::new(Published::default());
    published.keys.lock().unwrap().push(signer.jwk());
    let issuer = issuer::serve(published).await;
    let rt = start(&manifest(Some(&issuer)), |c| {
        c.auth.public_url = Some(PUBLIC.into());
    })
    .await;
    let token = |aud: &str, scope: &str| {
        let claims = json!({"iss": issuer, "sub": "alice", "aud": aud, "exp": unix_now() + 300,
            "iat": unix_now(), "scope": scope});
        format!("Bearer {}", signer.sign(&claims))
    };

    // Without the view's scope: the 403 challenge names the server's and the view's scopes
    // and points to the view's metadata.
    let plain = token(PUBLIC, "mcp");
    let refused = post_at(
        &rt,
        "/readers/mcp",
        &initialize_body(),
        &[("authorization", &plain)],
    )
    .await;
    assert_eq!(refused.status(), 403);
    let challenge = refused.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(challenge.contains("scope=\"mcp read\""), "{challenge}");
    assert!(
        challenge.contains("resource_metadata=\"http://127.0.0.1:8080/.well-known/oauth-protected-resource/readers/mcp\""),
        "{challenge}"
    );
    // The same token serves the whole server, and the view without scopes of its own.
    session_at(&rt, "/mcp", &[("authorization", &plain)]).await;
    session_at(&rt, "/operators/mcp", &[("authorization", &plain)]).await;
    // No token at all: the 401 points to the view's metadata too.
    let missing = post_at(&rt, "/readers/mcp", &initialize_body(), &[]).await;
    assert_eq!(missing.status(), 401);
    let challenge = missing.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains("oauth-protected-resource/readers/mcp"),
        "{challenge}"
    );

    // The view's metadata: its URL as the resource, the scopes it needs.
    let metadata: Value = reqwest::get(format!(
        "{}/.well-known/oauth-protected-resource/readers/mcp",
        rt.url
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(metadata["resource"], READERS_URL);
    assert_eq!(metadata["scopes_supported"], json!(["mcp", "read"]));
    assert_eq!(metadata["authorization_servers"], json!([issuer]));

    // A token for the view's URL: good on the view, refused by the whole server.
    let scoped = token(READERS_URL, "mcp read");
    let readers = session_at(&rt, "/readers/mcp", &[("authorization", &scoped)]).await;
    let (status, listed) = call_at(
        &rt,
        "/readers/mcp",
        &readers,
        "tools/list",
        json!({}),
        &[("authorization", &scoped)],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(tool_names(&listed), ["get_pod", "list_pods"]);
    for path in ["/mcp", "/operators/mcp"] {
        let wrong = post_at(&rt, path, &initialize_body(), &[("authorization", &scoped)]).await;
        assert_eq!(
            wrong.status(),
            401,
            "a token for the readers view at {path}"
        );
        let challenge = wrong.headers()["www-authenticate"].to_str().unwrap();
        assert!(challenge.contains("invalid_token"), "{challenge}");
    }
}

#[tokio::test]
async fn a_session_keeps_its_view_when_a_reload_removes_it() {
    let rt = start(&manifest(None), |_| {}).await;
    let readers = session_at(&rt, "/readers/mcp", &[]).await;
    let without = manifest(None).split("  views:").next().unwrap().to_owned();
    rt.replace_manifest(without);
    // Reloaded once the view's endpoint is gone.
    let mut gone = false;
    for _ in 0..100 {
        let response = post_at(&rt, "/readers/mcp", &initialize_body(), &[]).await;
        if response.status() == 404 {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the reload did not remove the view");
    let (status, _) = call_at(&rt, "/mcp", &readers, "tools/list", json!({}), &[]).await;
    assert_eq!(status, 404, "the view's session reached the whole server");
}

#[tokio::test]
async fn a_views_session_is_served_through_its_view_on_another_replica() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, [6u8; 32]).unwrap();
    let manifest = manifest(None);
    let replica = || {
        let key_file = key_file.clone();
        start(&manifest, move |c| {
            c.session_key_file = Some(key_file);
            c.advertise_address = Some(c.listen);
        })
    };
    let (a, b) = (replica().await, replica().await);
    let readers = session_at(&a, "/readers/mcp", &[]).await;
    // B hands the request to A, the session's owner, with the path the client sent: A serves
    // it through the same view.
    let (status, listed) =
        call_at(&b, "/readers/mcp", &readers, "tools/list", json!({}), &[]).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(tool_names(&listed), ["get_pod", "list_pods"]);
    assert!(
        b.metric_shows("mcp_session_forwards_total{outcome=\"forwarded\"} 1")
            .await
    );
    // Through B's own endpoint, the session is not found.
    let (status, _) = call_at(&b, "/mcp", &readers, "tools/list", json!({}), &[]).await;
    assert_eq!(status, 404);
}
