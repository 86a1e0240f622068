//! Forwarding between replicas when the address a session's sealed owner names now belongs to a
//! stranger (a pod that reused the IP): the forwarding replica authenticates the client itself
//! and sends no credential on (the stranger sees no `Authorization`, only a hop token it cannot
//! open), refuses an unauthenticated request without forwarding it, and discards the stranger's
//! answer (untagged, or tagged with a bare mark) and serves the request itself.

use super::issuer::{self, Published, RSA_A, SigningKey};
use super::support::{body_json, start};
use base64::Engine as _;
use mcp_server::Principal;
use mcp_server::sessions::{SealedSession, Sealer, unix_now};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PUBLIC: &str = "http://127.0.0.1:8080/mcp";

fn manifest(issuer: &str) -> String {
    format!(
        r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {{name: forwarding}}
spec:
  auth: {{issuer: "{issuer}", requiredScopes: [mcp]}}
  tools:
    - name: greet
      inputSchema: {{type: object, properties: {{name: {{type: string}}}}}}
      content: [{{type: text, text: "Hello, {{{{ args.name }}}}!"}}]
"#
    )
}

/// A stranger on a reused address: records each request it receives and answers every one
/// 200 with the old bare mark a replica used to send.
async fn stranger() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let record = record.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                record
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                let body = r#"{"jsonrpc":"2.0","id":2,"result":{"stolen":true}}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nkube-mcp-served: 1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    (address, seen)
}

#[tokio::test]
async fn a_forward_carries_no_credential_and_a_strangers_answer_is_dropped() {
    let signer = SigningKey::rsa("a", RSA_A);
    let published = Arc::new(Published::default());
    published.keys.lock().unwrap().push(signer.jwk());
    let issuer = issuer::serve(published).await;
    let claims = json!({"iss": issuer, "sub": "alice", "aud": PUBLIC, "exp": unix_now() + 300,
        "iat": unix_now(), "scope": "mcp"});
    let token = signer.sign(&claims);
    let dir = tempfile::tempdir().unwrap();
    let key = [9u8; 32];
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, key).unwrap();
    let rt = start(&manifest(&issuer), |c| {
        c.session_key_file = Some(key_file);
        c.advertise_address = Some(c.listen);
        c.auth.public_url = Some(PUBLIC.into());
    })
    .await;

    // Sessions of alice that the sealed ids say the stranger's address owns.
    let (owner, seen) = stranger().await;
    let Value::Object(map) = claims else {
        unreachable!()
    };
    let alice = Principal::from_claims(map, unix_now() + 300).digest();
    let sealer = Sealer::new(&key);
    let session = || {
        sealer.seal(&SealedSession {
            version: "2025-11-25".into(),
            created: unix_now(),
            principal: Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(alice)),
            owner: Some(owner.to_string()),
            view: None,
        })
    };
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});

    // Without a token: refused here, nothing sent anywhere.
    let anonymous = session();
    let refused = rt.post(&ping, &[("mcp-session-id", &anonymous)]).await;
    assert_eq!(refused.status(), 401);
    assert!(
        seen.lock().unwrap().is_empty(),
        "an unauthenticated request was forwarded"
    );

    // With alice's token: forwarded without it; the stranger's answer is not relayed.
    let bearer = format!("Bearer {token}");
    let mine = session();
    let answer = rt
        .post(
            &ping,
            &[("mcp-session-id", &mine), ("authorization", &bearer)],
        )
        .await;
    assert_eq!(answer.status(), 200);
    assert_eq!(body_json(answer).await["result"], json!({}));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let forwarded = seen[0].to_ascii_lowercase();
    assert!(forwarded.contains("kube-mcp-forwarded: "), "{forwarded}");
    assert!(!forwarded.contains("authorization"), "{forwarded}");
    let signature = token.rsplit('.').next().unwrap().to_ascii_lowercase();
    assert!(
        !forwarded.contains(&signature),
        "the token reached the stranger"
    );
    assert!(
        rt.metric_shows("mcp_session_forwards_total{outcome=\"not_owner\"} 1")
            .await
    );
}

#[tokio::test]
async fn the_owner_trusts_the_principal_the_forwarding_replica_sealed() {
    let signer = SigningKey::rsa("a", RSA_A);
    let published = Arc::new(Published::default());
    published.keys.lock().unwrap().push(signer.jwk());
    let issuer = issuer::serve(published).await;
    let token = |sub: &str| {
        signer.sign(&json!({"iss": issuer, "sub": sub, "aud": PUBLIC,
            "exp": unix_now() + 300, "iat": unix_now(), "scope": "mcp"}))
    };
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, [5u8; 32]).unwrap();
    let manifest = manifest(&issuer);
    let replica = || {
        let key_file = key_file.clone();
        start(&manifest, move |c| {
            c.session_key_file = Some(key_file);
            c.advertise_address = Some(c.listen);
            c.auth.public_url = Some(PUBLIC.into());
        })
    };
    let (a, b) = (replica().await, replica().await);
    let alice = format!("Bearer {}", token("alice"));
    let opened = a
        .post(
            &super::support::initialize_body(),
            &[("authorization", &alice)],
        )
        .await;
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "greet", "arguments": {"name": "B"}}});
    let through_b = b
        .post(
            &call,
            &[("mcp-session-id", &session), ("authorization", &alice)],
        )
        .await;
    assert_eq!(through_b.status(), 200);
    assert_eq!(
        body_json(through_b).await["result"]["content"][0]["text"],
        "Hello, B!"
    );
    assert!(
        b.metric_shows("mcp_session_forwards_total{outcome=\"forwarded\"} 1")
            .await
    );
    // Someone else's token: refused by the replica that received it, not forwarded.
    let bob = format!("Bearer {}", token("bob"));
    let refused = b
        .post(
            &call,
            &[("mcp-session-id", &session), ("authorization", &bob)],
        )
        .await;
    assert_eq!(refused.status(), 403);
    assert!(
        b.metric_shows("mcp_auth_failures_total{reason=\"wrong_principal\"} 1")
            .await
    );
    assert!(
        b.metric_shows("mcp_session_forwards_total{outcome=\"forwarded\"} 1")
            .await
    );
}

#[tokio::test]
async fn an_owner_outside_the_replica_network_is_not_dialled() {
    let dir = tempfile::tempdir().unwrap();
    let key = [3u8; 32];
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, key).unwrap();
    let rt = start(super::support::MANIFEST, |c| {
        c.session_key_file = Some(key_file);
        c.advertise_address = Some(c.listen);
        c.replica_networks = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    // The sealed owner listens on ::1, outside the one network replicas live in.
    let listener = tokio::net::TcpListener::bind("[::1]:0").await.unwrap();
    let owner = listener.local_addr().unwrap();
    let session = Sealer::new(&key).seal(&SealedSession {
        version: "2025-11-25".into(),
        created: unix_now(),
        principal: None,
        owner: Some(owner.to_string()),
        view: None,
    });
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let answer = rt.post(&ping, &[("mcp-session-id", &session)]).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(body_json(answer).await["result"], json!({}));
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(300), listener.accept())
            .await
            .is_err(),
        "the owner outside the replica network was dialled"
    );
    assert!(
        rt.metric_shows("mcp_session_forwards_total{outcome=\"outside\"} 1")
            .await
    );
}
