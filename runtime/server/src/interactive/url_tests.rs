//! URL-mode elicitation (SEP-1036) through `Server::handle` in 2026-07-28: the step is asked as
//! `elicitation/create` with `mode: url`, its URL rendered over the arguments and the caller's
//! token claims; accepting lets the call run, declining stops it; a client without URL-mode
//! elicitation is refused with -32021 naming it. Pure.

use crate::Principal;
use crate::{RequestContext, Served, Server, ServerSettings};
use mcp_declaration::{CompileOptions, compile, parse_manifest};
use mcp_protocol::{Era, McpError, meta};
use serde_json::{Value, json};
use std::sync::Arc;

const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: consent}
spec:
  tools:
    - name: read_calendar
      inputSchema: {type: object, properties: {day: {type: string}}, required: [day]}
      elicit:
        - name: consent
          url: "https://consent.example.com/start?user={{ token.claims.sub }}&day={{ args.day }}"
          message: "Approve access to your calendar, {{ token.claims.sub }}"
      content: [{type: text, text: "calendar of {{ args.day }}"}]
"#;

fn server() -> Server {
    let manifest = parse_manifest(MANIFEST, ".".into()).unwrap();
    Server::new(
        Served::new(compile(&manifest, &CompileOptions::default()).unwrap()).unwrap(),
        ServerSettings::default(),
        Arc::default(),
    )
}

fn params(caps: Value) -> Value {
    json!({"name": "read_calendar", "arguments": {"day": "monday"}, "_meta": {
        meta::PROTOCOL_VERSION: "2026-07-28", meta::CLIENT_CAPABILITIES: caps}})
}

async fn call(server: &Server, params: &Value) -> Result<Value, McpError> {
    let claims = json!({"iss": "https://idp.example.com", "sub": "alice"});
    let alice = Principal::from_claims(claims.as_object().unwrap().clone(), u64::MAX);
    let ctx =
        RequestContext::new(Era::Modern, params, None, None).with_caller(Some(Arc::new(alice)));
    crate::tests::serve(server, &ctx, "tools/call", params).await
}

#[tokio::test]
async fn the_step_is_asked_with_its_url_then_the_call_runs() {
    let server = server();
    let first = params(json!({"elicitation": {"url": {}}}));
    let round = call(&server, &first).await.unwrap();
    assert_eq!(round["resultType"], "input_required", "{round}");
    let asked = &round["inputRequests"]["consent"];
    assert_eq!(asked["method"], "elicitation/create");
    assert_eq!(asked["params"]["mode"], "url");
    assert_eq!(
        asked["params"]["url"],
        "https://consent.example.com/start?user=alice&day=monday"
    );
    assert_eq!(
        asked["params"]["message"],
        "Approve access to your calendar, alice"
    );
    assert!(
        asked["params"]["elicitationId"]
            .as_str()
            .is_some_and(|id| id.starts_with("consent-"))
    );
    let mut next = first.clone();
    next["inputResponses"] = json!({"consent": {"action": "accept"}});
    next["requestState"] = round["requestState"].clone();
    let done = call(&server, &next).await.unwrap();
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(done["content"][0]["text"], "calendar of monday");

    // A requestState is good for one retry: declining starts from a new round.
    let again = call(&server, &first).await.unwrap();
    let mut declined = first.clone();
    declined["inputResponses"] = json!({"consent": {"action": "decline"}});
    declined["requestState"] = again["requestState"].clone();
    let stopped = call(&server, &declined).await.unwrap();
    assert_eq!(stopped["isError"], true);
    assert!(
        stopped["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("declined")
    );
}

#[tokio::test]
async fn a_client_without_url_mode_is_told_what_it_lacks() {
    let server = server();
    for caps in [json!({}), json!({"elicitation": {"form": {}}})] {
        let err = call(&server, &params(caps)).await.unwrap_err();
        assert_eq!(err.code(Era::Modern), -32021);
        assert_eq!(
            err.to_json(Era::Modern)["data"]["requiredCapabilities"],
            json!({"elicitation": {"url": {}}})
        );
    }
}
