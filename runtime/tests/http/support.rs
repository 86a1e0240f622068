//! Test harness: a runtime on loopback port 0 with a manifest in a temp dir, and small clients
//! for the three transports. Every wait is bounded.

use mcp_declaration::CompileOptions;
use mcp_http::app::{RunConfig, serve};
use mcp_http::transport::HttpSettings;
use mcp_server::ServerSettings;
use mcp_server::sessions::SessionSettings;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The manifest most tests serve.
pub const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: harness}
spec:
  version: 1.0.0
  tools:
    - name: greet
      description: Greets someone.
      inputSchema: {type: object, properties: {name: {type: string}}, required: [name]}
      content: [{type: text, text: "Hello, {{ args.name }}!"}]
    - name: slow
      description: Takes a while.
      progress:
        - {progress: 1, total: 2, delayMs: 3000}
        - {progress: 2, total: 2, delayMs: 3000}
      content: [{type: text, text: done}]
  resources:
    - {uri: "docs://readme", name: readme, mimeType: text/plain, text: "first"}
"#;

/// A running runtime.
pub struct Runtime {
    pub url: String,
    pub admin: String,
    pub manifest: PathBuf,
    pub shutdown: CancellationToken,
    pub task: tokio::task::JoinHandle<anyhow::Result<()>>,
    _dir: tempfile::TempDir,
}

/// A config with test-friendly defaults; `tweak` adjusts it.
pub fn config(manifest: PathBuf) -> RunConfig {
    RunConfig {
        auth: mcp_http::auth::AuthSettings::default(),
        manifests: vec![manifest],
        listen: "127.0.0.1:0".parse().unwrap(),
        admin_listen: "127.0.0.1:0".parse().unwrap(),
        http: HttpSettings::default(),
        sessions: SessionSettings::default(),
        session_key_file: None,
        previous_session_key_file: None,
        advertise_address: None,
        replica_networks: Vec::new(),
        server: ServerSettings::default(),
        compile: CompileOptions::default(),
        reload_interval: Duration::from_millis(100),
        shutdown_timeout: Duration::from_secs(2),
        connection_idle_timeout: mcp_http::listener::DEFAULT_IDLE_TIMEOUT,
        approvals: mcp_server::approvals::StoreConfig::None,
    }
}

/// Starts a runtime serving `manifest`.
pub async fn start(manifest: &str, tweak: impl FnOnce(&mut RunConfig)) -> Runtime {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).unwrap();
    let mut config = config(path.clone());
    let mcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
    // `tweak` sees the addresses bound (a replica advertises its own).
    config.listen = mcp.local_addr().unwrap();
    config.admin_listen = admin.local_addr().unwrap();
    tweak(&mut config);
    let url = format!("http://127.0.0.1:{}", mcp.local_addr().unwrap().port());
    let admin_url = format!("http://127.0.0.1:{}", admin.local_addr().unwrap().port());
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(serve(config, mcp, admin, shutdown.clone()));
    let client = reqwest::Client::new();
    for _ in 0..100 {
        if client
            .get(format!("{admin_url}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Runtime {
        url,
        admin: admin_url,
        manifest: path,
        shutdown,
        task,
        _dir: dir,
    }
}

impl Runtime {
    /// Replaces the manifest in one step (a sibling file renamed over it), as a ConfigMap
    /// volume swaps its files: the 100 ms reload poll never reads a half-written file.
    pub fn replace_manifest(&self, text: impl AsRef<[u8]>) {
        let next = self.manifest.with_extension("next");
        std::fs::write(&next, text).unwrap();
        std::fs::rename(&next, &self.manifest).unwrap();
    }

    /// POSTs a JSON body to `/mcp` with the usual headers plus `extra`.
    pub async fn post(&self, body: &Value, extra: &[(&str, &str)]) -> reqwest::Response {
        let mut request = reqwest::Client::new()
            .post(format!("{}/mcp", self.url))
            .body(body.to_string());
        for (name, value) in [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ] {
            if !extra
                .iter()
                .any(|(extra, _)| extra.eq_ignore_ascii_case(name))
            {
                request = request.header(name, value);
            }
        }
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }

    /// Opens a legacy Streamable HTTP session and returns its id.
    pub async fn initialize(&self) -> String {
        let response = self.post(&initialize_body(), &[]).await;
        assert_eq!(response.status(), 200);
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(
            self.post(&initialized, &[("mcp-session-id", &id)])
                .await
                .status(),
            202
        );
        id
    }

    /// A legacy request in session `session`; returns (status, body).
    pub async fn call(&self, session: &str, id: u64, method: &str, params: Value) -> (u16, Value) {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.post(&body, &[("mcp-session-id", session)]).await;
        let status = response.status().as_u16();
        (status, body_json(response).await)
    }

    /// Whether `/metrics` shows `line` within two seconds.
    pub async fn metric_shows(&self, line: &str) -> bool {
        for _ in 0..100 {
            if self.metrics().await.contains(line) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Opens the Streamable HTTP stream of `session` (GET /mcp).
    pub async fn open_stream(&self, session: &str) -> EventReader {
        let response = reqwest::Client::new()
            .get(format!("{}/mcp", self.url))
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-accel-buffering"], "no");
        EventReader::new(response)
    }

    /// The admin `/metrics` text.
    pub async fn metrics(&self) -> String {
        reqwest::get(format!("{}/metrics", self.admin))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }
}

/// An initialize request body.
pub fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
}

/// A response body as JSON: the last `data:` line of an SSE body, or the whole JSON body.
pub async fn body_json(response: reqwest::Response) -> Value {
    let text = response.text().await.unwrap();
    if text.is_empty() {
        return Value::Null;
    }
    match text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
    {
        Some(last) => serde_json::from_str(last).unwrap(),
        None => serde_json::from_str(&text).unwrap_or(Value::String(text)),
    }
}

/// Reads an SSE body until `done` holds for the text so far, or `limit` passes.
pub struct EventReader {
    response: reqwest::Response,
    pub text: String,
}

impl EventReader {
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            text: String::new(),
        }
    }

    /// Waits until `done(text)`; `false` if the stream ended or `limit` passed first.
    pub async fn until(&mut self, limit: Duration, done: impl Fn(&str) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while !done(&self.text) {
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Ok(Ok(Some(chunk))) => self.text.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return false,
            }
        }
        true
    }

    /// Whether the stream has ended within `limit`.
    pub async fn ends_within(&mut self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Ok(Ok(None)) | Ok(Err(_)) => return true,
                Ok(Ok(Some(chunk))) => self.text.push_str(&String::from_utf8_lossy(&chunk)),
                Err(_) => return false,
            }
        }
    }
}

/// `_meta` of a 2026-07-28 request.
pub fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}})
}
