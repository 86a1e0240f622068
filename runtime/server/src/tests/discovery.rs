//! Discovery's search mode through `Server::handle`: what `tools/list` shows, what the meta
//! tools find and describe for callers with different rights, their bounds, and that every
//! declared tool stays callable. No I/O (declared content only).

use super::*;
use mcp_declaration::{MAX_DESCRIBE_NAMES, MAX_SEARCH_LIMIT};

const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: big}
spec:
  auth: {issuer: "https://idp.example.com"}
  discovery: {mode: search, pinned: [get_pod]}
  tools:
    - {name: get_pod, description: Reads one pod., content: [{type: text, text: pod}]}
    - name: list_pods
      title: List pods
      description: "Lists the pods of a namespace.\nSecond line, not in search results."
      inputSchema: {type: object, properties: {namespace: {type: string}}, required: [namespace]}
      content: [{type: text, text: "pods in {{ args.namespace }}"}]
    - name: delete_pod
      description: Deletes a pod.
      requiredScopes: [admin]
      content: [{type: text, text: deleted}]
    - name: evict_pod
      description: Evicts a pod.
      allow: "{{ 'staff' in token.claims.groups }}"
      content: [{type: text, text: evicted}]
    - {name: get_weather, description: Forecast for a city., content: [{type: text, text: sun}]}
"#;

fn server() -> Server {
    super::serving(MANIFEST)
}

fn ctx(scopes: &str, groups: &[&str]) -> RequestContext {
    session_ctx(&caller(scopes, groups))
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

async fn tool(server: &Server, ctx: &RequestContext, name: &str, arguments: Value) -> Value {
    let params = json!({"name": name, "arguments": arguments});
    super::serve(server, ctx, methods::TOOLS_CALL, &params)
        .await
        .unwrap()
}

#[tokio::test]
async fn tools_list_shows_the_pinned_tools_and_the_meta_tools() {
    let server = server();
    let list = super::serve(&server, &ctx("", &[]), methods::TOOLS_LIST, &json!({}))
        .await
        .unwrap();
    assert_eq!(
        names(&list["tools"]),
        ["get_pod", "search_tools", "describe_tools"]
    );
    assert!(list["tools"][1]["outputSchema"].is_object());
}

#[tokio::test]
async fn search_ranks_and_filters_by_what_the_caller_may_see() {
    let server = server();
    let plain = tool(
        &server,
        &ctx("", &[]),
        "search_tools",
        json!({"query": "list pods"}),
    )
    .await;
    assert_eq!(plain.get("isError"), None, "{plain}");
    let found = &plain["structuredContent"];
    // The name ranks first; tools the caller may not see are never found.
    assert_eq!(names(&found["tools"]), ["list_pods", "get_pod"]);
    assert_eq!(found["total"], 2);
    assert_eq!(found["tools"][0]["title"], "List pods");
    assert_eq!(
        found["tools"][0]["description"],
        "Lists the pods of a namespace."
    );
    let text = plain["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("- list_pods (List pods): Lists the pods"),
        "{text}"
    );

    let admin = tool(
        &server,
        &ctx("admin", &["staff"]),
        "search_tools",
        json!({"query": "pod", "limit": 3}),
    )
    .await;
    let found = &admin["structuredContent"];
    assert_eq!(found["total"], 4);
    assert_eq!(found["tools"].as_array().unwrap().len(), 3);
    // Same query, same answer.
    let again = tool(
        &server,
        &ctx("admin", &["staff"]),
        "search_tools",
        json!({"query": "pod", "limit": 3}),
    )
    .await;
    assert_eq!(admin, again);
}

#[tokio::test]
async fn search_arguments_are_bounded_and_bad_ones_are_tool_errors() {
    let server = server();
    let ctx = ctx("", &[]);
    for bad in [
        json!({}),
        json!({"query": "  "}),
        json!({"query": "pod", "limit": 0}),
        json!({"query": "pod", "limit": MAX_SEARCH_LIMIT + 1}),
        json!({"query": "x".repeat(mcp_declaration::MAX_QUERY_CHARS + 1)}),
        json!({"query": "pod", "extra": 1}),
    ] {
        let result = tool(&server, &ctx, "search_tools", bad.clone()).await;
        assert_eq!(result["isError"], true, "{bad}: {result}");
    }
    let none = tool(
        &server,
        &ctx,
        "search_tools",
        json!({"query": "kubernetes"}),
    )
    .await;
    assert_eq!(none["structuredContent"], json!({"tools": [], "total": 0}));
}

#[tokio::test]
async fn describe_returns_full_entries_and_reports_unknown_and_hidden_names() {
    let server = server();
    let ctx = ctx("", &[]);
    let result = tool(
        &server,
        &ctx,
        "describe_tools",
        json!({"names": ["list_pods", "delete_pod", "nope", "list_pods"]}),
    )
    .await;
    let described = &result["structuredContent"];
    assert_eq!(names(&described["tools"]), ["list_pods"]);
    assert_eq!(
        described["tools"][0]["inputSchema"]["required"],
        json!(["namespace"])
    );
    assert_eq!(described["unknown"], json!(["delete_pod", "nope"]));
    let too_many: Vec<String> = (0..=MAX_DESCRIBE_NAMES).map(|i| format!("t{i}")).collect();
    let refused = tool(&server, &ctx, "describe_tools", json!({"names": too_many})).await;
    assert_eq!(refused["isError"], true);
    let refused = tool(&server, &ctx, "describe_tools", json!({"names": [1]})).await;
    assert_eq!(refused["isError"], true);
}

#[tokio::test]
async fn every_declared_tool_stays_callable_under_its_own_rules() {
    let server = server();
    let plain = ctx("", &[]);
    let listed = tool(&server, &plain, "list_pods", json!({"namespace": "web"})).await;
    assert_eq!(listed["content"][0]["text"], "pods in web");
    let staff = ctx("", &["staff"]);
    let evicted = tool(&server, &staff, "evict_pod", json!({})).await;
    assert_eq!(evicted["content"][0]["text"], "evicted");
    let params = json!({"name": "delete_pod", "arguments": {}});
    let refused = super::serve(&server, &plain, methods::TOOLS_CALL, &params).await;
    assert!(refused.is_err(), "{refused:?}");
}
