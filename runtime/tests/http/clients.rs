//! Per-client shares over real sockets: one client (here an address; 127.0.0.1 and 127.0.0.2
//! are two clients of the server on 127.0.0.1) is refused its next session or listen stream
//! with the limit named while another is still served, its places come back whichever way its
//! sessions end, and `X-Forwarded-For` names the client only from a trusted proxy.

use super::support::{MANIFEST, Runtime, body_json, initialize_body, modern_meta, start};
use serde_json::{Value, json};
use std::net::IpAddr;
use std::time::Duration;

/// A client connecting from `source` (a loopback address).
fn from(source: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(IpAddr::from(source))
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

const A: [u8; 4] = [127, 0, 0, 1];
const B: [u8; 4] = [127, 0, 0, 2];

/// `initialize` from `client` with `extra` headers: the status, the session id, the body.
async fn initialize(
    rt: &Runtime,
    client: &reqwest::Client,
    extra: &[(&str, &str)],
) -> (u16, Option<String>, Option<String>, Value) {
    let mut request = client
        .post(format!("{}/mcp", rt.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize_body().to_string());
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (session, retry) = (header("mcp-session-id"), header("retry-after"));
    (
        response.status().as_u16(),
        session,
        retry,
        body_json(response).await,
    )
}

/// Polls until `client` may open a session again (its places came back), for `limit`.
async fn opens_again_within(rt: &Runtime, client: &reqwest::Client, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if initialize(rt, client, &[]).await.0 == 200 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn one_client_is_refused_its_next_session_while_another_still_gets_one() {
    let rt = start(MANIFEST, |c| c.sessions.max_sessions_per_client = 2).await;
    let (a, b) = (from(A), from(B));
    let (status, first, _, _) = initialize(&rt, &a, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(initialize(&rt, &a, &[]).await.0, 200);
    // Before, one client could open every session of the replica.
    let (status, _, retry, body) = initialize(&rt, &a, &[]).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(retry.as_deref(), Some("5"));
    assert_eq!(body["error"]["data"]["limit"], "sessions");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("--max-sessions-per-client"), "{message}");
    // HTTP+SSE sessions share the same count.
    let sse = a.get(format!("{}/sse", rt.url)).send().await.unwrap();
    assert_eq!(sse.status(), 429);
    // Another client is served.
    assert_eq!(initialize(&rt, &b, &[]).await.0, 200);
    assert!(
        rt.metric_shows(r#"mcp_client_share_refusals_total{limit="sessions"} 2"#)
            .await
    );
    // Ending one session gives its place back.
    let deleted = a
        .delete(format!("{}/mcp", rt.url))
        .header("mcp-session-id", first.unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(initialize(&rt, &a, &[]).await.0, 200);
}

#[tokio::test]
async fn places_come_back_when_sessions_expire_or_their_stream_goes() {
    let rt = start(MANIFEST, |c| {
        c.sessions.max_sessions_per_client = 1;
        c.sessions.unused_timeout = Duration::from_millis(200);
    })
    .await;
    let a = from(A);
    assert_eq!(initialize(&rt, &a, &[]).await.0, 200);
    assert_eq!(initialize(&rt, &a, &[]).await.0, 429);
    // The unused session expires, and with it the client's place.
    assert!(opens_again_within(&rt, &a, Duration::from_secs(5)).await);
    // An HTTP+SSE session ends with its stream.
    let b = from(B);
    let stream = b.get(format!("{}/sse", rt.url)).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(initialize(&rt, &b, &[]).await.0, 429);
    drop(stream);
    assert!(opens_again_within(&rt, &b, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn one_client_is_refused_its_next_listen_stream_while_another_still_gets_one() {
    let rt = start(MANIFEST, |c| c.http.max_listen_streams_per_client = 1).await;
    let listen = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": true}}});
    let open = |client: reqwest::Client| {
        client
            .post(format!("{}/mcp", rt.url))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .body(listen.to_string())
            .send()
    };
    let first = open(from(A)).await.unwrap();
    assert_eq!(first.status(), 200);
    let refused = open(from(A)).await.unwrap();
    assert_eq!(refused.status(), 429);
    let body = body_json(refused).await;
    assert_eq!(body["error"]["data"]["limit"], "listen streams");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-listen-streams-per-client")
    );
    let other = open(from(B)).await.unwrap();
    assert_eq!(other.status(), 200);
    assert!(
        rt.metric_shows(r#"mcp_client_share_refusals_total{limit="listen_streams"} 1"#)
            .await
    );
    // Closing the stream gives its place back.
    drop(first);
    let mut reopened = false;
    for _ in 0..100 {
        if open(from(A)).await.unwrap().status() == 200 {
            reopened = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reopened, "closing a stream gives its client's place back");
}

#[tokio::test]
async fn forwarded_for_names_the_client_only_from_a_trusted_proxy() {
    let rt = start(MANIFEST, |c| {
        c.sessions.max_sessions_per_client = 1;
        c.http.trusted_proxies = vec!["127.0.0.2/32".parse().unwrap()];
    })
    .await;
    let xff = |ip: &'static str| [("x-forwarded-for", ip)];
    // From an untrusted peer the header is ignored: one client, whatever it claims.
    let (untrusted, proxy) = (from(A), from(B));
    assert_eq!(
        initialize(&rt, &untrusted, &xff("203.0.113.1")).await.0,
        200
    );
    assert_eq!(
        initialize(&rt, &untrusted, &xff("203.0.113.2")).await.0,
        429
    );
    // From the trusted proxy, each forwarded address is a client of its own.
    assert_eq!(initialize(&rt, &proxy, &xff("203.0.113.1")).await.0, 200);
    assert_eq!(initialize(&rt, &proxy, &xff("203.0.113.1")).await.0, 429);
    assert_eq!(
        initialize(&rt, &proxy, &xff("198.51.100.7, 203.0.113.2"))
            .await
            .0,
        200
    );
    // What a client writes left of the hop the proxy appended does not make it another client.
    assert_eq!(
        initialize(&rt, &proxy, &xff("198.51.100.8, 203.0.113.2"))
            .await
            .0,
        429
    );
}

#[tokio::test]
async fn under_spec_auth_a_client_is_its_principal_wherever_it_connects_from() {
    use super::issuer::{self, Published, RSA_A, SigningKey};
    use mcp_server::sessions::unix_now;
    use std::sync::Arc;
    const PUBLIC: &str = "http://127.0.0.1:8080/mcp";
    let signer = SigningKey::rsa("a", RSA_A);
    let published = Arc::new(Published::default());
    published.keys.lock().unwrap().push(signer.jwk());
    let issuer = issuer::serve(published).await;
    let bearer = |sub: &str| {
        let token = signer.sign(&json!({"iss": issuer, "sub": sub, "aud": PUBLIC,
            "exp": unix_now() + 300, "iat": unix_now(), "scope": "mcp"}));
        format!("Bearer {token}")
    };
    let manifest = format!(
        "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: shares}}\nspec:\n  auth: {{issuer: \"{issuer}\", requiredScopes: [mcp]}}\n  tools:\n    - {{name: greet, content: [{{type: text, text: hi}}]}}\n"
    );
    let rt = start(&manifest, |c| {
        c.sessions.max_sessions_per_client = 1;
        c.auth.public_url = Some(PUBLIC.into());
    })
    .await;
    let (alice, bob) = (bearer("alice"), bearer("bob"));
    let auth = |value: &str| [("authorization", value.to_owned())];
    let open = |client: reqwest::Client, value: String| {
        let rt = &rt;
        async move {
            let headers = auth(&value);
            let extra: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            initialize(rt, &client, &extra).await.0
        }
    };
    assert_eq!(open(from(A), alice.clone()).await, 200);
    // Another address does not make alice another client.
    assert_eq!(open(from(B), alice.clone()).await, 429);
    // Another principal at the same address is.
    assert_eq!(open(from(A), bob.clone()).await, 200);
}
