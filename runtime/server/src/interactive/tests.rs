//! The interactive rounds through `Server::handle` in 2026-07-28 (pure: no HTTP), and the
//! declaration checks of interactive items.

use crate::Principal;
use crate::{RequestContext, Served, Server, ServerSettings};
use mcp_declaration::{CompileOptions, compile, parse_manifest};
use mcp_protocol::{Era, McpError, meta};
use serde_json::{Value, json};
use std::sync::Arc;

const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: interactive}
spec:
  tools:
    - name: delete_issue
      inputSchema: {type: object, properties: {id: {type: integer}, project: {type: string}}, required: [id, project]}
      elicit:
        - {name: project, description: Which project?, schema: {type: string, enum: [alpha, beta]}}
      confirm: {message: "Delete issue #{{ args.id }} of {{ args.project }} for good?"}
      content: [{type: text, text: "deleted {{ args.id }} in {{ args.project }}"}]
    - name: summarise
      inputSchema: {type: object, properties: {text: {type: string}}}
      sample:
        messages: [{role: user, content: {type: text, text: "Summarise: {{ args.text }}"}}]
        systemPrompt: Be brief.
        maxTokens: 200
      roots: true
      content: [{type: text, text: "{{ sample.text }} [{{ roots | map(attribute='uri') | join(',') }}]"}]
  prompts:
    - name: plan
      elicit: [{name: days, description: How many days?, schema: {type: integer, minimum: 1}}]
      messages: [{role: user, content: {type: text, text: "Plan {{ args.days }} days."}}]
"#;

const ALL: &str = r#"{"elicitation": {}, "sampling": {}, "roots": {}}"#;

fn server() -> Server {
    let manifest = parse_manifest(MANIFEST, ".".into()).unwrap();
    Server::new(
        Served::new(compile(&manifest, &CompileOptions::default()).unwrap()).unwrap(),
        ServerSettings::default(),
        Arc::default(),
    )
}

fn params(mut params: Value, caps: &str) -> Value {
    params["_meta"] = json!({
        meta::PROTOCOL_VERSION: "2026-07-28",
        meta::CLIENT_CAPABILITIES: serde_json::from_str::<Value>(caps).unwrap(),
    });
    params
}

async fn call(server: &Server, method: &str, params: &Value) -> Result<Value, McpError> {
    let ctx = RequestContext::new(Era::Modern, params, None, None);
    crate::tests::serve(server, &ctx, method, params).await
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[tokio::test]
async fn asks_missing_values_then_confirms_then_runs_over_three_rounds() {
    let server = server();
    let first = params(
        json!({"name": "delete_issue", "arguments": {"id": 12}}),
        ALL,
    );
    let round1 = call(&server, "tools/call", &first).await.unwrap();
    assert_eq!(round1["resultType"], "input_required");
    let asked = round1["inputRequests"].as_object().unwrap();
    // The confirmation names the project, so it waits for the elicited value.
    assert_eq!(asked.keys().collect::<Vec<_>>(), ["project"]);
    assert_eq!(
        asked["project"]["params"]["requestedSchema"]["properties"]["project"]["enum"],
        json!(["alpha", "beta"])
    );
    let mut second = first.clone();
    second["inputResponses"] = json!({"project": accept(json!({"project": "beta"}))});
    second["requestState"] = round1["requestState"].clone();
    let round2 = call(&server, "tools/call", &second).await.unwrap();
    assert_eq!(round2["resultType"], "input_required");
    assert_eq!(
        round2["inputRequests"]["confirm"]["params"]["message"],
        "Delete issue #12 of beta for good?"
    );
    assert_ne!(round2["requestState"], round1["requestState"]);
    let mut third = first.clone();
    third["inputResponses"] = json!({"confirm": accept(json!({"confirm": true}))});
    third["requestState"] = round2["requestState"].clone();
    let done = call(&server, "tools/call", &third).await.unwrap();
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["content"][0]["text"], "deleted 12 in beta");
    assert!(done.get("isError").is_none());
}

/// `first` asked, then `first` again carrying `answers` and the state the first round sealed.
async fn answered(server: &Server, first: &Value, answers: Value) -> Value {
    let round = call(server, "tools/call", first).await.unwrap();
    assert_eq!(round["resultType"], "input_required", "{round}");
    let mut next = first.clone();
    next["inputResponses"] = answers;
    next["requestState"] = round["requestState"].clone();
    next
}

#[tokio::test]
async fn declined_confirmation_calls_nothing_and_says_so() {
    let server = server();
    for (answer, says) in [
        (json!({"action": "decline"}), "did not confirm"),
        (accept(json!({"confirm": false})), "did not confirm"),
        (json!({"action": "cancel"}), "cancelled"),
    ] {
        let first = params(
            json!({"name": "delete_issue", "arguments": {"id": 1, "project": "alpha"}}),
            ALL,
        );
        let p = answered(&server, &first, json!({"confirm": answer})).await;
        let result = call(&server, "tools/call", &p).await.unwrap();
        assert_eq!(result["isError"], true);
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains(says)
        );
    }
}

#[tokio::test]
async fn invalid_or_missing_answers_are_asked_again_and_garbage_is_refused() {
    let server = server();
    let first = params(json!({"name": "delete_issue", "arguments": {"id": 1}}), ALL);
    let answers = json!({"project": accept(json!({"project": "gamma"})), "extra": 1});
    let p = answered(&server, &first, answers).await;
    let again = call(&server, "tools/call", &p).await.unwrap();
    assert!(again["inputRequests"].get("project").is_some());
    let p = answered(&server, &first, json!({"project": 5})).await;
    let err = call(&server, "tools/call", &p).await.unwrap_err();
    assert_eq!(err.code(Era::Modern), -32602);
}

#[tokio::test]
async fn answers_count_only_for_questions_asked_and_a_state_opens_once() {
    let server = server();
    let confirmed = json!({"confirm": accept(json!({"confirm": true}))});
    // A first call that brings its own confirmation is asked anyway.
    let mut eager = params(
        json!({"name": "delete_issue", "arguments": {"id": 3, "project": "alpha"}}),
        ALL,
    );
    eager["inputResponses"] = confirmed.clone();
    let asked = call(&server, "tools/call", &eager).await.unwrap();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert!(asked["inputRequests"].get("confirm").is_some());
    // A round that asked only for the project: a confirmation sent along does not count.
    let first = params(json!({"name": "delete_issue", "arguments": {"id": 3}}), ALL);
    let mut both = confirmed.clone();
    both["project"] = accept(json!({"project": "beta"}));
    let second = answered(&server, &first, both).await;
    let round2 = call(&server, "tools/call", &second).await.unwrap();
    assert_eq!(round2["resultType"], "input_required", "{round2}");
    assert!(round2["inputRequests"].get("confirm").is_some());
    // Confirmed once, run once: the same state and answers again are refused.
    let mut third = first.clone();
    third["inputResponses"] = confirmed;
    third["requestState"] = round2["requestState"].clone();
    let done = call(&server, "tools/call", &third).await.unwrap();
    assert_eq!(done["content"][0]["text"], "deleted 3 in beta");
    let replay = call(&server, "tools/call", &third).await.unwrap_err();
    assert!(replay.to_string().contains("used already"), "{replay}");
}

#[tokio::test]
async fn sampling_and_roots_reach_the_reply_templates() {
    let server = server();
    let first = params(
        json!({"name": "summarise", "arguments": {"text": "long"}}),
        ALL,
    );
    let round1 = call(&server, "tools/call", &first).await.unwrap();
    let asked = &round1["inputRequests"];
    assert_eq!(
        asked["sample"]["params"]["messages"][0]["content"]["text"],
        "Summarise: long"
    );
    assert_eq!(asked["sample"]["params"]["systemPrompt"], "Be brief.");
    assert_eq!(asked["roots"]["method"], "roots/list");
    let mut second = first.clone();
    second["requestState"] = round1["requestState"].clone();
    second["inputResponses"] = json!({
        "sample": {"role": "assistant", "content": {"type": "text", "text": "Short."}, "model": "m"},
        "roots": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b", "name": "b"}]},
    });
    let done = call(&server, "tools/call", &second).await.unwrap();
    assert_eq!(done["content"][0]["text"], "Short. [file:///a,file:///b]");
}

#[tokio::test]
async fn a_client_without_the_capability_gets_32021_naming_it() {
    let server = server();
    let p = params(
        json!({"name": "summarise", "arguments": {}}),
        r#"{"sampling": {}}"#,
    );
    let err = call(&server, "tools/call", &p).await.unwrap_err();
    assert_eq!(err.code(Era::Modern), -32021);
    assert_eq!(err.http_status(Era::Modern), 400);
    assert_eq!(
        err.to_json(Era::Modern)["data"]["requiredCapabilities"],
        json!({"roots": {}})
    );
}

#[tokio::test]
async fn prompts_ask_too_and_the_state_is_bound_to_the_request() {
    let server = server();
    let first = params(json!({"name": "plan"}), ALL);
    let round1 = call(&server, "prompts/get", &first).await.unwrap();
    assert_eq!(round1["resultType"], "input_required");
    let mut other = params(json!({"name": "plan", "arguments": {"x": "y"}}), ALL);
    other["requestState"] = round1["requestState"].clone();
    let err = call(&server, "prompts/get", &other).await.unwrap_err();
    assert!(err.to_string().contains("another request"));
    let mut second = first.clone();
    second["requestState"] = round1["requestState"].clone();
    second["inputResponses"] = json!({"days": accept(json!({"days": 3}))});
    let done = call(&server, "prompts/get", &second).await.unwrap();
    assert_eq!(done["messages"][0]["content"]["text"], "Plan 3 days.");
}

const AUTH_MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: interactive-auth}
spec:
  auth: {issuer: 'https://idp.example.com'}
  tools:
    - name: drop_repo
      inputSchema: {type: object, properties: {repo: {type: string}}, required: [repo]}
      elicit: [{name: repo, description: Which repository?, schema: {type: string}}]
      allow: "{{ args.repo is not defined or args.repo in token.claims.repos }}"
      content: [{type: text, text: "dropped {{ args.repo }}"}]
"#;

fn caller(subject: &str) -> Option<Arc<Principal>> {
    let claims = json!({"iss": "https://idp.example.com", "sub": subject, "repos": ["mine"]});
    let Value::Object(claims) = claims else {
        unreachable!()
    };
    Some(Arc::new(Principal::from_claims(claims, u64::MAX)))
}

async fn call_as(
    server: &Server,
    subject: Option<&str>,
    params: &Value,
) -> Result<Value, McpError> {
    let ctx =
        RequestContext::new(Era::Modern, params, None, None).with_caller(subject.and_then(caller));
    crate::tests::serve(server, &ctx, "tools/call", params).await
}

#[tokio::test]
async fn state_opens_only_for_its_caller_and_elicited_values_meet_allow() {
    let manifest = parse_manifest(AUTH_MANIFEST, ".".into()).unwrap();
    let server = Server::new(
        Served::new(compile(&manifest, &CompileOptions::default()).unwrap()).unwrap(),
        ServerSettings::default(),
        Arc::default(),
    );
    let first = params(json!({"name": "drop_repo"}), ALL);
    let round1 = call_as(&server, Some("alice"), &first).await.unwrap();
    assert_eq!(round1["resultType"], "input_required");
    let answered = |state: &Value, repo: &str| {
        let mut next = first.clone();
        next["requestState"] = state.clone();
        next["inputResponses"] = json!({"repo": accept(json!({"repo": repo}))});
        next
    };
    let next = answered(&round1["requestState"], "mine");
    // Another subject of the same issuer, or no caller at all, cannot continue alice's round.
    for other in [Some("bob"), None] {
        let err = call_as(&server, other, &next).await.unwrap_err();
        assert!(matches!(err, McpError::InvalidParams(_)), "{err:?}");
        assert!(err.to_string().contains("another caller"), "{err}");
    }
    let mut tampered = next.clone();
    let mut state = round1["requestState"].as_str().unwrap().to_owned();
    let mid = state.len() / 2;
    let flipped = if &state[mid..=mid] == "A" { "B" } else { "A" };
    state.replace_range(mid..=mid, flipped);
    tampered["requestState"] = json!(state);
    let err = call_as(&server, Some("alice"), &tampered)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("altered"), "{err}");
    let done = call_as(&server, Some("alice"), &next).await.unwrap();
    assert_eq!(done["content"][0]["text"], "dropped mine");
    // `allow` passed on the empty call; the elicited value is checked again.
    let round1 = call_as(&server, Some("alice"), &first).await.unwrap();
    let refused = answered(&round1["requestState"], "theirs");
    let done = call_as(&server, Some("alice"), &refused).await.unwrap();
    assert_eq!(done["isError"], true, "{done}");
    assert!(
        done["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("not allowed"),
        "{done}"
    );
}

fn compile_errors(tools: &str) -> String {
    let manifest = format!(
        "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: x}}\nspec:\n  tools:\n{tools}"
    );
    let manifest = parse_manifest(&manifest, ".".into()).unwrap();
    compile(&manifest, &CompileOptions::default())
        .unwrap_err()
        .to_string()
}

#[test]
fn declarations_ask_only_flat_non_secret_primitives() {
    let nested = compile_errors(
        "    - name: t\n      elicit: [{name: a, schema: {type: object, properties: {}}}]\n      content: [{type: text, text: x}]\n",
    );
    assert!(
        nested.contains("spec.tools[0].elicit[0].schema.properties: not allowed"),
        "{nested}"
    );
    assert!(nested.contains("schema.type: must be"), "{nested}");
    let secret = compile_errors(
        "    - name: t\n      elicit: [{name: api_token, schema: {type: string}}]\n      content: [{type: text, text: x}]\n",
    );
    assert!(secret.contains("looks like a secret"), "{secret}");
    let password = compile_errors(
        "    - name: t\n      elicit: [{name: p, schema: {type: string, format: password}}]\n      content: [{type: text, text: x}]\n",
    );
    assert!(password.contains("schema.format"), "{password}");
    let reserved = compile_errors(
        "    - name: t\n      elicit: [{name: confirm, schema: {type: boolean}}]\n      content: [{type: text, text: x}]\n",
    );
    assert!(
        reserved.contains("key of another input request"),
        "{reserved}"
    );
    let default = compile_errors(
        "    - name: t\n      elicit: [{name: n, schema: {type: integer, default: x}}]\n      content: [{type: text, text: x}]\n",
    );
    assert!(default.contains("schema.default"), "{default}");
    let closed = compile_errors(
        "    - name: t\n      inputSchema: {type: object, additionalProperties: false}\n      elicit: [{name: n, schema: {type: string}}]\n      content: [{type: text, text: x}]\n",
    );
    assert!(closed.contains("not a property of inputSchema"), "{closed}");
    let http = compile_errors(
        "    - name: t\n      sample: {messages: [{role: user, content: {type: text, text: x}}], maxTokens: 0}\n      http: {url: \"https://example.com/\"}\n",
    );
    assert!(
        http.contains("spec.tools[0].sample: is supported on declared-content tools only"),
        "{http}"
    );
    assert!(http.contains("maxTokens"), "{http}");
}

/// A legacy session whose client answers each server request with `answer(method, params)`.
async fn legacy_call(
    server: &Server,
    caps: Value,
    method: &str,
    params: Value,
    answer: fn(&str, &Value) -> Value,
) -> (Result<Value, McpError>, Vec<String>) {
    use crate::sessions::{Session, SessionTransport};
    use mcp_protocol::LegacyVersion;
    let session = Arc::new(Session::new(
        "s".into(),
        SessionTransport::StreamableHttp,
        Some(LegacyVersion::V2025_11_25),
        0,
    ));
    session.set_client_capabilities(Some(&caps));
    let (notifier, mut requests) = tokio::sync::mpsc::channel::<Box<crate::Outgoing>>(8);
    let client = session.clone();
    let answering = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(request) = requests.recv().await {
            let crate::Outgoing::Message(request) = *request else {
                panic!("questions are messages");
            };
            let method = request["method"].as_str().unwrap().to_owned();
            let result = answer(&method, &request["params"]);
            let response = if result.get("error").is_some() {
                result
            } else {
                json!({"result": result})
            };
            assert!(client.deliver_answer(&request["id"], response, crate::budget::Held::none()));
            seen.push(method);
        }
        seen
    });
    let ctx = RequestContext::new(
        Era::Legacy(LegacyVersion::V2025_11_25),
        &params,
        None,
        Some(notifier),
    )
    .in_session(session);
    let result = crate::tests::serve(server, &ctx, method, &params).await;
    drop(ctx);
    (result, answering.await.unwrap())
}

#[tokio::test]
async fn legacy_sessions_ask_over_the_stream_round_after_round() {
    let server = server();
    let (result, asked) = legacy_call(
        &server,
        serde_json::from_str(ALL).unwrap(),
        "tools/call",
        json!({"name": "delete_issue", "arguments": {"id": 7}}),
        |method, params| match params["requestedSchema"]["properties"].get("project") {
            Some(_) => json!({"action": "accept", "content": {"project": "alpha"}}),
            None => {
                assert_eq!(method, "elicitation/create");
                assert_eq!(params["message"], "Delete issue #7 of alpha for good?");
                json!({"action": "accept", "content": {"confirm": true}})
            }
        },
    )
    .await;
    assert_eq!(result.unwrap()["content"][0]["text"], "deleted 7 in alpha");
    assert_eq!(asked, ["elicitation/create", "elicitation/create"]);
    let (result, asked) = legacy_call(
        &server,
        serde_json::from_str(ALL).unwrap(),
        "tools/call",
        json!({"name": "summarise", "arguments": {"text": "t"}}),
        |method, _| match method {
            "sampling/createMessage" => {
                json!({"error": {"code": -1, "message": "User rejected sampling"}})
            }
            _ => json!({"roots": []}),
        },
    )
    .await;
    let result = result.unwrap();
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("User rejected sampling")
    );
    assert_eq!(asked.len(), 2);
    let (result, asked) = legacy_call(
        &server,
        json!({"elicitation": {}}),
        "tools/call",
        json!({"name": "summarise", "arguments": {}}),
        |_, _| unreachable!(),
    )
    .await;
    assert_eq!(result.unwrap_err().code(Era::Modern), -32021);
    assert!(asked.is_empty());
}
