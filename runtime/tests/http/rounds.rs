//! 2026-07-28 multi round-trip through the whole HTTP path: a `requestState` is refused once it
//! has expired, and the same state within its time completes the call. The test holds the
//! session key, so it can re-seal a real state with an old expiry, as only a replica could.

use super::support::{modern_meta, start};
use mcp_server::sessions::Sealer;
use serde_json::{Value, json};

const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: rounds}
spec:
  tools:
    - name: remove
      description: Removes an entry, once confirmed.
      inputSchema: {type: object, properties: {id: {type: string}}, required: [id]}
      confirm: {message: "Remove {{ args.id }}?"}
      content: [{type: text, text: "removed {{ args.id }}"}]
"#;

/// What `requestState` is sealed for (`server/interactive/stateless.rs`).
const STATE_AAD: &[u8] = b"kube-mcp requestState v1";

fn call(extra: Value) -> Value {
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
    let mut params = json!({"name": "remove", "arguments": {"id": "7"}, "_meta": meta});
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
}

#[tokio::test]
async fn an_expired_request_state_is_refused_and_a_live_one_completes() {
    let dir = tempfile::tempdir().unwrap();
    let key = [7u8; 32];
    let key_file = dir.path().join("session-key");
    std::fs::write(&key_file, key).unwrap();
    let rt = start(MANIFEST, |c| c.session_key_file = Some(key_file)).await;
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "remove"),
    ];
    let post = |body: Value| {
        let rt = &rt;
        async move {
            let response = rt.post(&body, &headers).await;
            response.json::<Value>().await.unwrap()
        }
    };

    let first = post(call(json!({}))).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let token = first["result"]["requestState"].as_str().unwrap().to_owned();
    let key_asked = first["result"]["inputRequests"]
        .as_object()
        .and_then(|asked| asked.keys().next().cloned())
        .unwrap();
    let answers = json!({key_asked: {"action": "accept", "content": {"confirm": true}}});

    // The same state, re-sealed under the shared key with an expiry in the past.
    let sealer = Sealer::new(&key);
    let mut state: Value =
        serde_json::from_slice(&sealer.open_bytes(STATE_AAD, &token, 1 << 20).unwrap()).unwrap();
    state["e"] = json!(1);
    let expired = sealer.seal_bytes(STATE_AAD, &serde_json::to_vec(&state).unwrap());
    let refused = post(call(
        json!({"inputResponses": answers, "requestState": expired}),
    ))
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{refused}"
    );

    let done = post(call(
        json!({"inputResponses": answers, "requestState": token}),
    ))
    .await;
    assert_eq!(done["result"]["content"][0]["text"], "removed 7", "{done}");
}
