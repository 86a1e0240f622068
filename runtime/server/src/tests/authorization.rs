//! Authorization of every method that names an item, through `Server::authorize` and the
//! dispatch, for a caller with some scopes and claims. The table at the end lists every method
//! the protocol crate knows: a method added later must say here whether it names an item, and
//! if it does, a caller the item's rules refuse must be refused. No I/O.

use super::*;
use mcp_protocol::meta;

const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: guarded}
spec:
  auth: {issuer: "https://idp.example.com"}
  tools:
    - name: open
      content: [{type: text, text: open}]
    - name: admin_only
      requiredScopes: [admin]
      content: [{type: text, text: secret work}]
    - name: staff_only
      allow: "{{ 'staff' in token.claims.groups }}"
      content: [{type: text, text: staff work}]
  resources:
    - {uri: "docs://secret", name: secret, text: classified, requiredScopes: [admin]}
  resourceTemplates:
    - {uriTemplate: "docs://{name}", name: doc, text: "open {{ args.name }}"}
    - uriTemplate: "notes://{name}"
      name: note
      text: "note {{ args.name }}"
      allow: "{{ args.name != 'private' }}"
    - uriTemplate: "staff://{id}"
      name: staff
      text: "staff {{ args.id }}"
      allow: "{{ 'staff' in token.claims.groups }}"
      completions: {id: [alpha, beta]}
  prompts:
    - name: staff_prompt
      allow: "{{ 'staff' in token.claims.groups }}"
      arguments: [{name: who, completions: [ann, bob]}]
      messages: [{role: user, content: {type: text, text: "Hi {{ args.who }}"}}]
"#;

fn guarded() -> Server {
    super::serving(MANIFEST)
}

fn decide(server: &Server, who: &Arc<Principal>, method: &str, params: Value) -> Decision {
    let request = server.request(method.to_owned(), params, None);
    server.authorize(Some(who), request).decision().clone()
}

/// Defect: a caller who may not read `notes://private` could still subscribe to it (and learn
/// when it changes): subscribe never went through the `allow` over the URI's arguments.
#[tokio::test]
async fn subscribing_needs_what_reading_needs() {
    let server = guarded();
    let who = caller("", &[]);
    let ctx = session_ctx(&who);
    let private = json!({"uri": "notes://private"});
    let read = tests::serve(&server, &ctx, methods::RESOURCES_READ, &private).await;
    assert!(matches!(read, Err(McpError::InvalidParams(_))), "{read:?}");
    let subscribed = tests::serve(&server, &ctx, methods::RESOURCES_SUBSCRIBE, &private).await;
    assert!(
        matches!(subscribed, Err(McpError::InvalidParams(_))),
        "{subscribed:?}"
    );
    assert!(
        !ctx.session
            .as_ref()
            .unwrap()
            .is_subscribed("notes://private")
    );
    // A listen stream names it too: refused the same way.
    let listen = json!({"notifications": {"resourceSubscriptions": ["notes://private"]}});
    assert!(matches!(
        decide(&server, &who, methods::SUBSCRIPTIONS_LISTEN, listen),
        Decision::Refused(_)
    ));
    // Another note is fine.
    let other = json!({"uri": "notes://public"});
    tests::serve(&server, &ctx, methods::RESOURCES_SUBSCRIBE, &other)
        .await
        .unwrap();
    assert!(
        ctx.session
            .as_ref()
            .unwrap()
            .is_subscribed("notes://public")
    );
}

/// Defect: `docs://%73ecret` was judged as the open template `docs://{name}` while the cache
/// and reads treated it as `docs://secret`. One canonical spelling decides all of them.
#[tokio::test]
async fn another_spelling_of_a_protected_uri_is_the_protected_resource() {
    let server = guarded();
    let reader = caller("", &[]);
    let spelled = json!({"uri": "docs://%73ecret"});
    assert_eq!(
        decide(&server, &reader, methods::RESOURCES_READ, spelled.clone()),
        Decision::NeedsScopes(vec!["admin".into()])
    );
    let admin = caller("admin", &[]);
    let ctx = RequestContext::new(Era::Modern, &json!({}), None, None).with_caller(Some(admin));
    let read = tests::serve(&server, &ctx, methods::RESOURCES_READ, &spelled)
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "classified");
    // The open template still serves other names.
    let open = json!({"uri": "docs://readme"});
    assert_eq!(
        decide(&server, &reader, methods::RESOURCES_READ, open),
        Decision::Allowed
    );
}

/// Defect: completion of a prompt or template the caller may not list gave its declared values
/// (and told the caller it exists). It is answered as an unknown item.
#[tokio::test]
async fn completion_of_an_unlisted_item_is_an_unknown_item() {
    let server = guarded();
    let outsider = caller("", &[]);
    let ctx = RequestContext::new(Era::Modern, &json!({}), None, None)
        .with_caller(Some(outsider.clone()));
    let prompt = json!({"ref": {"type": "ref/prompt", "name": "staff_prompt"}, "argument": {"name": "who", "value": ""}});
    let refused = tests::serve(&server, &ctx, methods::COMPLETION_COMPLETE, &prompt).await;
    let unknown = json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "who", "value": ""}});
    let missing = tests::serve(&server, &ctx, methods::COMPLETION_COMPLETE, &unknown).await;
    assert_eq!(
        refused,
        Err(McpError::InvalidParams(
            "unknown prompt: staff_prompt".into()
        ))
    );
    assert!(matches!(missing, Err(McpError::InvalidParams(_))));
    let template = json!({"ref": {"type": "ref/resource", "uri": "staff://{id}"}, "argument": {"name": "id", "value": ""}});
    let refused = tests::serve(&server, &ctx, methods::COMPLETION_COMPLETE, &template).await;
    assert!(
        matches!(refused, Err(McpError::InvalidParams(_))),
        "{refused:?}"
    );
    // Staff see both.
    let staff = caller("", &["staff"]);
    let ctx = RequestContext::new(Era::Modern, &json!({}), None, None).with_caller(Some(staff));
    let values = tests::serve(&server, &ctx, methods::COMPLETION_COMPLETE, &template)
        .await
        .unwrap();
    assert_eq!(values["completion"]["values"], json!(["alpha", "beta"]));
}

/// A token-only `allow` that refuses is a result the model can read, not a scope challenge
/// (no scope would help).
#[tokio::test]
async fn an_allow_refusal_is_never_a_scope_challenge() {
    let server = guarded();
    let outsider = caller("admin", &[]);
    let call = json!({"name": "staff_only", "arguments": {}});
    assert!(matches!(
        decide(&server, &outsider, methods::TOOLS_CALL, call.clone()),
        Decision::Refused(_)
    ));
    let ctx = RequestContext::new(Era::Modern, &json!({}), None, None).with_caller(Some(outsider));
    let result = tests::serve(&server, &ctx, methods::TOOLS_CALL, &call)
        .await
        .unwrap();
    assert_eq!(result["isError"], true);
}

/// How each method of the protocol names an item, for the table below.
enum Names {
    /// The method names no item (`params` of a request the test sends anyway).
    Nothing,
    /// The method names an item the outsider may not use: it must be refused.
    Guarded(Value),
}

/// Every method in `methods::ALL`, with how it names an item. A method missing here fails the
/// test: decide whether it names an item, and route it through `Server::authorize` if it does.
fn table() -> Vec<(&'static str, Names)> {
    let uri = |uri: &str| json!({"uri": uri});
    vec![
        (methods::INITIALIZE, Names::Nothing),
        (methods::PING, Names::Nothing),
        (methods::SERVER_DISCOVER, Names::Nothing),
        (methods::LOGGING_SET_LEVEL, Names::Nothing),
        (methods::TOOLS_LIST, Names::Nothing),
        (methods::RESOURCES_LIST, Names::Nothing),
        (methods::RESOURCES_TEMPLATES_LIST, Names::Nothing),
        (methods::PROMPTS_LIST, Names::Nothing),
        // A task id names no declared item: it is a handle sealed to its caller's principal,
        // opened (and refused to anyone else) in `tasks/handle.rs`.
        (methods::TASKS_GET, Names::Nothing),
        (methods::TASKS_CANCEL, Names::Nothing),
        (methods::TASKS_UPDATE, Names::Nothing),
        (methods::TASKS_RESULT, Names::Nothing),
        (methods::TASKS_LIST, Names::Nothing),
        (
            methods::TOOLS_CALL,
            Names::Guarded(json!({"name": "admin_only", "arguments": {}})),
        ),
        (
            methods::RESOURCES_READ,
            Names::Guarded(uri("notes://private")),
        ),
        (
            methods::RESOURCES_SUBSCRIBE,
            Names::Guarded(uri("docs://secret")),
        ),
        (
            methods::RESOURCES_UNSUBSCRIBE,
            Names::Guarded(uri("notes://private")),
        ),
        (
            methods::SUBSCRIPTIONS_LISTEN,
            Names::Guarded(json!({"notifications": {"resourceSubscriptions": ["docs://secret"]}})),
        ),
        (
            methods::PROMPTS_GET,
            Names::Guarded(json!({"name": "staff_prompt", "arguments": {"who": "x"}})),
        ),
        (
            methods::COMPLETION_COMPLETE,
            Names::Guarded(
                json!({"ref": {"type": "ref/prompt", "name": "staff_prompt"}, "argument": {"name": "who", "value": ""}}),
            ),
        ),
    ]
}

#[tokio::test]
async fn every_method_that_names_an_item_is_authorized() {
    let server = guarded();
    let outsider = caller("", &[]);
    let table = table();
    for method in methods::ALL {
        let row = table.iter().find(|(m, _)| m == method);
        let Some((_, names)) = row else {
            panic!("{method}: add it to the authorization table (does it name an item?)");
        };
        let Names::Guarded(params) = names else {
            continue;
        };
        let decision = decide(&server, &outsider, method, params.clone());
        assert_ne!(decision, Decision::Allowed, "{method} was not refused");
        // And the dispatch honours the decision, in every era that serves the method.
        if *method == methods::SUBSCRIPTIONS_LISTEN {
            let limit = ListenLimit::new(1, 1, Default::default());
            let request = server.request((*method).to_owned(), params.clone(), None);
            let authorized = server.authorize(Some(&outsider), request);
            let listened = server.listen(
                json!(1),
                &authorized,
                &limit,
                crate::clients::ClientKey::unknown(),
                CancellationToken::new(),
                Some(outsider.clone()),
            );
            assert!(listened.is_err(), "{method} opened a stream");
            continue;
        }
        for ctx in [
            session_ctx(&outsider),
            RequestContext::new(Era::Modern, &json!({}), None, None)
                .with_caller(Some(outsider.clone())),
        ] {
            let mut params = params.clone();
            if ctx.era == Era::Modern {
                params["_meta"] = json!({meta::PROTOCOL_VERSION: mcp_protocol::MODERN_VERSION});
            }
            let answer = tests::serve(&server, &ctx, method, &params).await;
            let refused = match &answer {
                Err(_) => true,
                Ok(result) => result["isError"] == true,
            };
            assert!(refused, "{method} in {:?} answered {answer:?}", ctx.era);
        }
    }
}
