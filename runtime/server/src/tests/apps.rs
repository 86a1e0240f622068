//! MCP Apps through `Server::handle`: a client that declares `io.modelcontextprotocol/ui` with
//! the view's MIME type sees `_meta.ui` on tools and the tools only the view calls; any other
//! client gets the plain tools; the view's resource carries its sandbox rules when read. No I/O.

use super::*;
use mcp_protocol::meta;

const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: pods}
spec:
  tools:
    - name: get_pod
      ui: {resource: "ui://pods/view", visibility: [model, app]}
      content: [{type: text, text: "pod web-1 is Running"}]
    - name: refresh_pods
      ui: {resource: "ui://pods/view", visibility: [app]}
      content: [{type: text, text: "refreshed"}]
    - name: plain
      content: [{type: text, text: plain}]
  resources:
    - uri: ui://pods/view
      name: pods_view
      mimeType: text/html;profile=mcp-app
      text: "<!doctype html><title>Pods</title>"
      ui:
        csp: {connectDomains: ["https://api.example.com"], resourceDomains: []}
        permissions: {clipboardWrite: {}}
"#;

fn server() -> Server {
    super::serving(MANIFEST)
}

fn modern(capabilities: Value) -> Value {
    json!({"_meta": {meta::PROTOCOL_VERSION: "2026-07-28", meta::CLIENT_CAPABILITIES: capabilities}})
}

async fn tools(server: &Server, capabilities: Value) -> Vec<Value> {
    let ctx = RequestContext::new(Era::Modern, &json!({}), None, None);
    let result = serve(server, &ctx, "tools/list", &modern(capabilities))
        .await
        .unwrap();
    result["tools"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_client_with_mcp_apps_sees_the_views() {
    let server = server();
    let apps = json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}});
    let listed = tools(&server, apps).await;
    let names: Vec<&str> = listed.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["get_pod", "refresh_pods", "plain"]);
    assert_eq!(
        listed[0]["_meta"]["ui"],
        json!({"resourceUri": "ui://pods/view", "visibility": ["model", "app"]})
    );
    assert_eq!(listed[1]["_meta"]["ui"]["visibility"], json!(["app"]));
    assert!(listed[2].get("_meta").is_none());
}

#[tokio::test]
async fn a_client_without_it_gets_the_plain_tools() {
    let server = server();
    for capabilities in [
        json!({}),
        json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/other"]}}}),
    ] {
        let listed = tools(&server, capabilities).await;
        let names: Vec<&str> = listed.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["get_pod", "plain"],
            "the view-only tool is not listed"
        );
        assert!(listed.iter().all(|t| t.get("_meta").is_none()));
    }
    // Its answer is the content, whatever the client shows.
    let ctx = RequestContext::new(Era::Modern, &json!({}), None, None);
    let mut params = modern(json!({}));
    params["name"] = json!("get_pod");
    let result = serve(&server, &ctx, "tools/call", &params).await.unwrap();
    assert_eq!(result["content"][0]["text"], "pod web-1 is Running");
}

#[tokio::test]
async fn the_view_carries_its_sandbox_rules() {
    let server = server();
    let ctx = RequestContext::new(Era::Modern, &json!({}), None, None);
    let mut params = modern(json!({}));
    params["uri"] = json!("ui://pods/view");
    let read = serve(&server, &ctx, "resources/read", &params)
        .await
        .unwrap();
    let contents = &read["contents"][0];
    assert_eq!(contents["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(
        contents["_meta"]["ui"],
        json!({"csp": {"connectDomains": ["https://api.example.com"]}, "permissions": {"clipboardWrite": {}}})
    );
    let list = serve(&server, &ctx, "resources/list", &modern(json!({})))
        .await
        .unwrap();
    assert_eq!(list["resources"][0]["_meta"], contents["_meta"]);
    let discover = serve(&server, &ctx, "server/discover", &modern(json!({})))
        .await
        .unwrap();
    assert_eq!(
        discover["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/ui": {}})
    );
}
