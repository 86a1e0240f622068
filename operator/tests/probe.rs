//! The verifier's question against a real runtime (the mcp-http crate's own `serve`, on
//! 127.0.0.1 port 0): a manifest the operator renders, served with `spec.auth` (whose tokens the
//! MCP port demands and the admin port does not), is reported with the hash and counts the
//! operator stamped.

// Test helpers outside `#[test]` functions may panic on setup failures: that fails the test.
#![allow(clippy::unwrap_used)]

use mcp_declaration::CompileOptions;
use mcp_http::app::{RunConfig, serve};
use mcp_operator::reconcile::validate::{Fragments, validate};
use mcp_operator::resource::MCPServer;
use mcp_operator::verifier::Prober;
use mcp_operator::verifier::probe::Target;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const SERVER: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: probed, namespace: tools, uid: u-1, generation: 1}
spec:
  auth: {issuer: "https://idp.example.com/realms/acme", requiredScopes: [mcp]}
  tools:
    - {name: hi, content: [{type: text, text: hi}]}
    - {name: bye, content: [{type: text, text: bye}]}
  prompts:
    - {name: p, messages: [{role: user, content: {type: text, text: go}}]}
"#;

#[tokio::test]
async fn the_runtime_reports_what_the_operator_stamped_without_a_token() {
    let server: MCPServer = serde_yaml_ng::from_str(SERVER).unwrap();
    let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("manifest.yaml");
    std::fs::write(&manifest, &accepted.manifest_yaml).unwrap();
    let config = RunConfig {
        auth: mcp_http::auth::AuthSettings {
            public_url: Some("https://mcp.example.com/probed".into()),
            ..Default::default()
        },
        manifests: vec![manifest],
        listen: "127.0.0.1:0".parse().unwrap(),
        admin_listen: "127.0.0.1:0".parse().unwrap(),
        http: mcp_http::transport::HttpSettings::default(),
        sessions: mcp_server::sessions::SessionSettings::default(),
        session_key_file: None,
        previous_session_key_file: None,
        advertise_address: None,
        replica_networks: Vec::new(),
        server: mcp_server::ServerSettings::default(),
        compile: CompileOptions::default(),
        reload_interval: Duration::from_millis(100),
        shutdown_timeout: Duration::from_secs(2),
        connection_idle_timeout: mcp_http::listener::DEFAULT_IDLE_TIMEOUT,
        approvals: mcp_server::approvals::StoreConfig::None,
    };
    let mcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mcp_port = mcp.local_addr().unwrap().port();
    let target = Target {
        namespace: "tools".into(),
        pod: "probed-0".into(),
        ip: "127.0.0.1".into(),
        port: admin.local_addr().unwrap().port(),
    };
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(serve(config, mcp, admin, shutdown.clone()));

    let mut answer = Prober::Pods.ask(&target).await;
    for _ in 0..50 {
        if answer.is_ok() {
            break;
        }
        assert!(!task.is_finished(), "the runtime stopped: {:?}", task.await);
        tokio::time::sleep(Duration::from_millis(50)).await;
        answer = Prober::Pods.ask(&target).await;
    }
    let report = answer.unwrap();
    assert_eq!(report.hash, accepted.hash);
    assert_eq!(report.counts(), accepted.counts);
    assert!(report.loaded_at.is_some());
    assert_eq!(report.last_reload, None);
    // The MCP port, by contrast, wants a token.
    assert_eq!(status_of_unauthenticated_post(mcp_port).await, "401");
    shutdown.cancel();
    task.await.unwrap().unwrap();
}

/// The status code of a `POST /mcp` without a token, read off the raw response.
async fn status_of_unauthenticated_post(port: u16) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}
