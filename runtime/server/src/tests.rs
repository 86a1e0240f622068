//! `Server::handle` over inline manifests: each method group's behaviour, in both eras, without
//! HTTP. No I/O (declared content only).

use super::*;
use crate::sessions::SessionTransport;
use mcp_declaration::{CompileOptions, compile, parse_manifest};
use mcp_protocol::{LegacyVersion, meta};

const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: harness}
spec:
  instructions: Use the tools.
  tools:
    - name: echo
      inputSchema: {type: object, properties: {message: {type: string}}, required: [message]}
      content: [{type: text, text: "{{ args.message }}"}]
  resources:
    - {uri: "test://static", name: static, mimeType: text/plain, text: fixed}
  resourceTemplates:
    - {uriTemplate: "test://item/{id}", name: item, text: "item {{ args.id }}"}
  prompts:
    - name: greet
      arguments: [{name: who, required: true, completions: [paris, park, rome]}]
      messages: [{role: user, content: {type: text, text: "Hello {{ args.who }}"}}]
"#;

/// A server serving `manifest` with default settings.
fn serving(manifest: &str) -> Server {
    let manifest = parse_manifest(manifest, ".".into()).unwrap();
    let compiled = compile(&manifest, &CompileOptions::default()).unwrap();
    Server::new(
        Served::new(compiled).unwrap(),
        ServerSettings::default(),
        Arc::default(),
    )
}

fn server() -> Server {
    serving(MANIFEST)
}

const LEGACY: Era = Era::Legacy(LegacyVersion::V2025_11_25);

async fn call(
    server: &Server,
    ctx: &RequestContext,
    method: &str,
    params: Value,
) -> Result<Value, McpError> {
    serve(server, ctx, method, &params).await
}

/// What a transport does with a parsed message: the request, its decision for the context's
/// caller, the answer.
pub(crate) async fn serve(
    server: &Server,
    ctx: &RequestContext,
    method: &str,
    params: &Value,
) -> Result<Value, McpError> {
    let request = server.request(method.to_owned(), params.clone(), None);
    let authorized = server.authorize(ctx.caller.as_deref(), request);
    server.handle(ctx, authorized).await
}

fn ctx(era: Era) -> RequestContext {
    RequestContext::new(era, &json!({}), None, None)
}

/// A caller with `scopes` and `groups`.
fn caller(scopes: &str, groups: &[&str]) -> Arc<Principal> {
    let claims =
        json!({"iss": "https://idp.example.com", "sub": "u", "scope": scopes, "groups": groups});
    let Value::Object(claims) = claims else {
        unreachable!()
    };
    Arc::new(Principal::from_claims(claims, u64::MAX))
}

/// A legacy session's request context, for `who`.
fn session_ctx(who: &Arc<Principal>) -> RequestContext {
    let session = Arc::new(Session::new(
        "s".into(),
        SessionTransport::StreamableHttp,
        Some(LegacyVersion::V2025_11_25),
        0,
    ));
    RequestContext::new(LEGACY, &json!({}), None, None)
        .in_session(session)
        .with_caller(Some(who.clone()))
}

#[tokio::test]
async fn prompts_render_and_check_their_arguments() {
    let server = server();
    let got = call(
        &server,
        &ctx(LEGACY),
        methods::PROMPTS_GET,
        json!({"name": "greet", "arguments": {"who": "Ada"}}),
    )
    .await
    .unwrap();
    assert_eq!(got["messages"][0]["content"]["text"], "Hello Ada");
    let missing = call(
        &server,
        &ctx(LEGACY),
        methods::PROMPTS_GET,
        json!({"name": "greet"}),
    )
    .await;
    assert!(
        matches!(missing, Err(McpError::InvalidParams(_))),
        "{missing:?}"
    );
    let unknown = call(
        &server,
        &ctx(LEGACY),
        methods::PROMPTS_GET,
        json!({"name": "nope"}),
    )
    .await;
    assert!(
        matches!(unknown, Err(McpError::InvalidParams(_))),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn completion_filters_declared_values_by_prefix() {
    let server = server();
    let params = json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "pa"}});
    let got = call(&server, &ctx(LEGACY), methods::COMPLETION_COMPLETE, params)
        .await
        .unwrap();
    assert_eq!(got["completion"]["values"], json!(["paris", "park"]));
}

#[tokio::test]
async fn resources_read_fixed_and_templated_and_refuse_unknown() {
    let server = server();
    let fixed = call(
        &server,
        &ctx(LEGACY),
        methods::RESOURCES_READ,
        json!({"uri": "test://static"}),
    )
    .await
    .unwrap();
    assert_eq!(fixed["contents"][0]["text"], "fixed");
    let item = call(
        &server,
        &ctx(LEGACY),
        methods::RESOURCES_READ,
        json!({"uri": "test://item/7"}),
    )
    .await
    .unwrap();
    assert_eq!(item["contents"][0]["text"], "item 7");
    let unknown = call(
        &server,
        &ctx(LEGACY),
        methods::RESOURCES_READ,
        json!({"uri": "test://nope"}),
    )
    .await;
    assert!(
        matches!(unknown, Err(McpError::ResourceNotFound { .. })),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn modern_results_carry_the_era_fields_and_legacy_ones_do_not() {
    let server = server();
    let modern = call(&server, &ctx(Era::Modern), methods::TOOLS_LIST, json!({}))
        .await
        .unwrap();
    assert_eq!(modern["resultType"], "complete");
    assert!(
        modern.get("ttlMs").is_some() && modern["_meta"].is_object(),
        "{modern}"
    );
    let legacy = call(&server, &ctx(LEGACY), methods::TOOLS_LIST, json!({}))
        .await
        .unwrap();
    assert!(legacy.get("resultType").is_none(), "{legacy}");
    assert_eq!(legacy["tools"][0]["name"], "echo");
}

/// What `_meta[SERVED_META]` must say for [`MANIFEST`]: the hash the operator would stamp, and
/// one item of each kind.
fn served_report(server: &Server) -> Value {
    let manifest = parse_manifest(MANIFEST, ".".into()).unwrap();
    let hash = mcp_declaration::hash_of(&manifest.name, &manifest.declaration).unwrap();
    assert_eq!(server.declaration().hash, hash);
    json!({"hash": hash, "tools": 1, "resources": 1, "resourceTemplates": 1, "prompts": 1})
}

async fn discover_answer(server: &Server) -> Value {
    call(
        server,
        &ctx(Era::Modern),
        methods::SERVER_DISCOVER,
        json!({}),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn discover_reports_the_served_declaration_next_to_the_server_info() {
    let server = server();
    let discover = discover_answer(&server).await;
    let meta = &discover["_meta"];
    assert_eq!(meta[mcp_declaration::SERVED_META], served_report(&server));
    assert_eq!(meta[meta::SERVER_INFO]["name"], "harness", "{discover}");
    // A stamped hash is reported as stamped, and a reload reports the new one.
    let stamped = MANIFEST.replace(
        "metadata: {name: harness}",
        "metadata: {name: harness, annotations: {kube-mcp.io/declaration-hash: 0123abcd}}",
    );
    let manifest = parse_manifest(&stamped, ".".into()).unwrap();
    let before = server.declaration().hash.clone();
    let (_, old) =
        server.swap(Served::new(compile(&manifest, &CompileOptions::default()).unwrap()).unwrap());
    // The replaced declaration comes back to be freed by the caller (live reload frees it off
    // the request workers), held by nothing else once no request uses it.
    assert_eq!(old.hash, before);
    assert_eq!(std::sync::Arc::strong_count(&old), 1);
    drop(old);
    let discover = discover_answer(&server).await;
    assert_eq!(
        discover["_meta"][mcp_declaration::SERVED_META]["hash"],
        "0123abcd"
    );
    let metrics = server.metrics().encode();
    assert!(
        metrics.contains("mcp_runtime_declaration_info{hash=\"0123abcd\"} 1"),
        "{metrics}"
    );
    assert_eq!(metrics.matches("mcp_runtime_declaration_info{").count(), 1);
}

#[tokio::test]
async fn methods_are_served_only_in_their_era() {
    let server = server();
    let discover = discover_answer(&server).await;
    assert_eq!(discover["instructions"], "Use the tools.");
    for (era, method) in [
        (LEGACY, methods::SERVER_DISCOVER),
        (Era::Modern, methods::PING),
        (Era::Modern, methods::LOGGING_SET_LEVEL),
        (Era::Modern, methods::RESOURCES_SUBSCRIBE),
        (LEGACY, "tools/unknown"),
    ] {
        let got = call(&server, &ctx(era), method, json!({})).await;
        assert!(
            matches!(got, Err(McpError::MethodNotFound(_))),
            "{method}: {got:?}"
        );
    }
}

#[tokio::test]
async fn set_level_and_subscriptions_change_the_session() {
    let server = server();
    let session = Arc::new(Session::new(
        "s".into(),
        SessionTransport::StreamableHttp,
        Some(LegacyVersion::V2025_11_25),
        0,
    ));
    let ctx = ctx(LEGACY).in_session(session.clone());
    call(
        &server,
        &ctx,
        methods::LOGGING_SET_LEVEL,
        json!({"level": "warning"}),
    )
    .await
    .unwrap();
    assert_eq!(session.log_level(), Some(LogLevel::Warning));
    let bad = call(
        &server,
        &ctx,
        methods::LOGGING_SET_LEVEL,
        json!({"level": "loud"}),
    )
    .await;
    assert!(matches!(bad, Err(McpError::InvalidParams(_))), "{bad:?}");
    assert_eq!(
        session.log_level(),
        Some(LogLevel::Warning),
        "a refused level changes nothing"
    );

    call(
        &server,
        &ctx,
        methods::RESOURCES_SUBSCRIBE,
        json!({"uri": "test://item/1"}),
    )
    .await
    .unwrap();
    assert!(session.is_subscribed("test://item/1"));
    let unknown = call(
        &server,
        &ctx,
        methods::RESOURCES_SUBSCRIBE,
        json!({"uri": "test://nope"}),
    )
    .await;
    assert!(
        matches!(unknown, Err(McpError::ResourceNotFound { .. })),
        "{unknown:?}"
    );
    call(
        &server,
        &ctx,
        methods::RESOURCES_UNSUBSCRIBE,
        json!({"uri": "test://item/1"}),
    )
    .await
    .unwrap();
    assert!(!session.is_subscribed("test://item/1"));
}

#[test]
fn initialize_negotiates_and_lets_the_transport_refuse() {
    let server = server();
    let (version, outcome) = server.initialize(&json!({"protocolVersion": "2025-06-18"}), Ok);
    let (opened, result) = outcome.unwrap();
    assert_eq!(
        (version, opened),
        (LegacyVersion::V2025_06_18, LegacyVersion::V2025_06_18)
    );
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(
        result["_meta"][mcp_declaration::SERVED_META],
        served_report(&server)
    );
    let (_, refused) =
        server.initialize(&json!({}), |_| Err::<(), _>(McpError::TooManySessions(1)));
    assert!(matches!(refused, Err(McpError::TooManySessions(1))));
}

#[test]
fn cancelled_notifications_cancel_the_request() {
    let server = server();
    let session = Session::new("s".into(), SessionTransport::Sse, None, 0);
    let in_flight = session.start_request(&json!(7)).unwrap();
    server.notification(
        &session,
        "notifications/cancelled",
        &json!({"requestId": 7}),
    );
    assert!(in_flight.token.is_cancelled());
}

mod apps;
mod authorization;
mod discovery;
mod views;
