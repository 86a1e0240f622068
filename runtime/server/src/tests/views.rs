//! `spec.views` in the dispatch: through a view, lists show only what it publishes, an item it
//! does not publish is answered exactly as an undeclared one, and the view's scopes are needed
//! for every request. No I/O.

use super::*;

const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: viewed}
spec:
  auth: {issuer: "https://idp.example.com"}
  tools:
    - {name: get_pod, content: [{type: text, text: pod}]}
    - {name: list_pods, content: [{type: text, text: pods}]}
    - {name: delete_pod, content: [{type: text, text: deleted}]}
  resources:
    - {uri: "docs://readme", name: readme, text: read me}
    - {uri: "docs://runbook", name: runbook, text: run}
  resourceTemplates:
    - {uriTemplate: "pods://{name}", name: pod, text: "pod {{ args.name }}"}
    - {uriTemplate: "secrets://{name}", name: secret, text: "secret {{ args.name }}"}
  prompts:
    - {name: explain, arguments: [{name: a, completions: [x]}], messages: [{role: user, content: {type: text, text: explain}}]}
    - {name: drain, arguments: [{name: a, completions: [x]}], messages: [{role: user, content: {type: text, text: drain}}]}
  views:
    - name: readers
      path: /readers
      requiredScopes: [read]
      tools: [get_*, list_*]
      resources: [readme]
      resourceTemplates: [pod]
      prompts: [explain]
"#;

/// Serves `method` through `view` for `who`: the decision, then the answer.
async fn through(
    server: &Server,
    who: &Arc<Principal>,
    view: Option<&str>,
    method: &str,
    params: Value,
) -> (Decision, Result<Value, McpError>) {
    let request = server.request(method.to_owned(), params, view);
    let authorized = server.authorize(Some(who), request);
    let decision = authorized.decision().clone();
    let ctx = session_ctx(who);
    (decision, server.handle(&ctx, authorized).await)
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item[field].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn lists_through_a_view_show_what_it_publishes() {
    let server = serving(MANIFEST);
    let reader = caller("read", &[]);
    let list = |method: &'static str, view: Option<&'static str>| {
        let (server, reader) = (&server, &reader);
        async move {
            through(server, reader, view, method, json!({}))
                .await
                .1
                .unwrap()
        }
    };
    let tools = list(methods::TOOLS_LIST, Some("readers")).await;
    assert_eq!(names(&tools, "tools", "name"), ["get_pod", "list_pods"]);
    let resources = list(methods::RESOURCES_LIST, Some("readers")).await;
    assert_eq!(names(&resources, "resources", "name"), ["readme"]);
    let templates = list(methods::RESOURCES_TEMPLATES_LIST, Some("readers")).await;
    assert_eq!(names(&templates, "resourceTemplates", "name"), ["pod"]);
    let prompts = list(methods::PROMPTS_LIST, Some("readers")).await;
    assert_eq!(names(&prompts, "prompts", "name"), ["explain"]);
    // The whole server, without a view.
    let all = list(methods::TOOLS_LIST, None).await;
    assert_eq!(
        names(&all, "tools", "name"),
        ["get_pod", "list_pods", "delete_pod"]
    );
}

#[tokio::test]
async fn an_item_outside_the_view_is_answered_as_undeclared() {
    let server = serving(MANIFEST);
    let reader = caller("read", &[]);
    let cases = [
        (
            methods::TOOLS_CALL,
            json!({"name": "delete_pod", "arguments": {}}),
            json!({"name": "nope", "arguments": {}}),
        ),
        (
            methods::RESOURCES_READ,
            json!({"uri": "docs://runbook"}),
            json!({"uri": "docs://nope"}),
        ),
        (
            methods::RESOURCES_READ,
            json!({"uri": "secrets://db"}),
            json!({"uri": "nope://db"}),
        ),
        (
            methods::PROMPTS_GET,
            json!({"name": "drain"}),
            json!({"name": "nope"}),
        ),
        (
            methods::COMPLETION_COMPLETE,
            json!({"ref": {"type": "ref/prompt", "name": "drain"}, "argument": {"name": "a", "value": ""}}),
            json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}}),
        ),
    ];
    for (method, outside, undeclared) in cases {
        let (_, hidden) = through(&server, &reader, Some("readers"), method, outside.clone()).await;
        let (_, missing) = through(
            &server,
            &reader,
            Some("readers"),
            method,
            undeclared.clone(),
        )
        .await;
        let (hidden, missing) = (hidden.unwrap_err(), missing.unwrap_err());
        assert_eq!(
            std::mem::discriminant(&hidden),
            std::mem::discriminant(&missing),
            "{method} {outside}: {hidden:?} vs {missing:?}"
        );
        // The same text, but for the name itself.
        let strip = |err: &McpError, name: &Value| {
            let name = name
                .get("name")
                .or_else(|| name.get("uri"))
                .or_else(|| name.pointer("/ref/name"))
                .and_then(Value::as_str)
                .unwrap()
                .to_owned();
            err.to_string().replace(&name, "NAME")
        };
        assert_eq!(
            strip(&hidden, &outside),
            strip(&missing, &undeclared),
            "{method}"
        );
        // Served without the view, the item is there.
        let (_, whole) = through(&server, &reader, None, method, outside).await;
        assert!(whole.is_ok(), "{method}: {whole:?}");
    }
    let (_, inside) = through(
        &server,
        &reader,
        Some("readers"),
        methods::TOOLS_CALL,
        json!({"name": "get_pod", "arguments": {}}),
    )
    .await;
    assert_eq!(inside.unwrap()["content"][0]["text"], "pod");
}

#[tokio::test]
async fn the_view_needs_its_scopes_for_every_request() {
    let server = serving(MANIFEST);
    let outsider = caller("", &[]);
    for (method, params) in [
        (methods::TOOLS_LIST, json!({})),
        (
            methods::TOOLS_CALL,
            json!({"name": "get_pod", "arguments": {}}),
        ),
    ] {
        let (decision, answer) =
            through(&server, &outsider, Some("readers"), method, params.clone()).await;
        assert_eq!(
            decision,
            Decision::NeedsScopes(vec!["read".into()]),
            "{method}"
        );
        assert!(answer.is_err(), "{method}: the item is never served");
        // Without the view, the server asks for nothing.
        let (decision, _) = through(&server, &outsider, None, method, params).await;
        assert_eq!(decision, Decision::Allowed, "{method}");
    }
}

#[tokio::test]
async fn a_view_removed_by_a_reload_serves_nothing() {
    let server = serving(MANIFEST);
    let reader = caller("read", &[]);
    let (_, tools) = through(
        &server,
        &reader,
        Some("gone"),
        methods::TOOLS_LIST,
        json!({}),
    )
    .await;
    assert_eq!(tools.unwrap()["tools"], json!([]));
    let (_, call) = through(
        &server,
        &reader,
        Some("gone"),
        methods::TOOLS_CALL,
        json!({"name": "get_pod", "arguments": {}}),
    )
    .await;
    assert!(call.is_err(), "{call:?}");
}

#[tokio::test]
async fn search_mode_finds_only_what_the_view_publishes() {
    let manifest = MANIFEST.replace("  views:", "  discovery: {mode: search}\n  views:");
    let server = serving(&manifest);
    let reader = caller("read", &[]);
    let (_, found) = through(
        &server,
        &reader,
        Some("readers"),
        methods::TOOLS_CALL,
        json!({"name": "search_tools", "arguments": {"query": "pod"}}),
    )
    .await;
    let found = found.unwrap();
    let names: Vec<&str> = found["structuredContent"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"get_pod"), "{names:?}");
    assert!(!names.contains(&"delete_pod"), "{names:?}");
    let (_, described) = through(
        &server,
        &reader,
        Some("readers"),
        methods::TOOLS_CALL,
        json!({"name": "describe_tools", "arguments": {"names": ["delete_pod"]}}),
    )
    .await;
    assert_eq!(
        described.unwrap()["structuredContent"]["unknown"],
        json!(["delete_pod"])
    );
}

#[tokio::test]
async fn a_reload_that_changes_only_a_view_announces_new_lists() {
    let server = serving(MANIFEST);
    let reload = |text: &str| {
        let manifest = parse_manifest(text, ".".into()).unwrap();
        Served::new(compile(&manifest, &CompileOptions::default()).unwrap()).unwrap()
    };
    assert!(!server.replace(reload(MANIFEST)).any(), "nothing changed");
    let narrower = MANIFEST.replace("tools: [get_*, list_*]", "tools: [get_*]");
    let changes = server.replace(reload(&narrower));
    assert!(
        changes.tools && changes.prompts && changes.resources,
        "{changes:?}"
    );
}
