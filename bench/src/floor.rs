//! `mcp-bench-floor`: the floors of the runtime benchmarks, bare axum servers that do only what
//! the shape of traffic needs, so `mcp-bench load` can measure what the HTTP stack alone costs per
//! request. No MCP, no checks, no limits beyond axum's defaults: not servers to expose. Each
//! listens on a loopback address only. Does network I/O.
//!
//! - `mcp-bench-floor [ADDR]`: reads every POST's body and answers one constant JSON-RPC result
//!   (what the echo tool returns); kube-mcp's CPU per stateless `tools/call` is reported as a
//!   ratio to it.
//! - `mcp-bench-floor upstream ADDR`: the loopback upstream of the HTTP-tool benchmark; answers
//!   a POST with its own body (so `{"message": …}` comes back) and a GET with a constant small
//!   JSON object.
//! - `mcp-bench-floor proxy ADDR UPSTREAM`: the floor of an HTTP-backed tool; for every POST it
//!   reads the body, takes the `message` argument out of it with a byte search (no JSON tree),
//!   POSTs `{"message": …}` to `UPSTREAM` (a `http://127.0.0.1:PORT/path` URL) on a keep-alive
//!   pool (hyper-util's legacy client), as kube-mcp's declared tool does, and answers a JSON-RPC
//!   result whose text is the upstream's answer.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::routing::post;
use axum::serve::ListenerExt;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::net::SocketAddr;

/// The answer the bench's `tools/call` check accepts (`Expect::Echo`), as kube-mcp sends it.
const ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello from mcp-bench"}]}}"#;

/// What the upstream answers to a GET.
const UPSTREAM_GET: &str = r#"{"ok":true,"text":"hello from mcp-bench"}"#;

type Pool = Client<HttpConnector, Full<Bytes>>;

#[derive(Clone)]
struct Proxy {
    client: Pool,
    upstream: http::Uri,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, addr, upstream) = match args.first().map(String::as_str) {
        Some("upstream") => ("upstream", args.get(1), None),
        Some("proxy") => ("proxy", args.get(1), args.get(2)),
        _ => ("floor", args.first(), None),
    };
    let addr: SocketAddr = addr.map_or("127.0.0.1:18190", String::as_str).parse()?;
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "the floor listens on loopback only"
    );
    let app = match mode {
        // The body is read (as every MCP server must) and dropped.
        "floor" => Router::new().fallback(post(|_body: Bytes| async {
            ([(CONTENT_TYPE, "application/json")], ANSWER)
        })),
        "upstream" => Router::new().fallback(
            post(|body: Bytes| async { ([(CONTENT_TYPE, "application/json")], body) })
                .get(|| async { ([(CONTENT_TYPE, "application/json")], UPSTREAM_GET) }),
        ),
        _ => {
            let upstream: http::Uri = upstream
                .ok_or_else(|| anyhow::anyhow!("usage: mcp-bench-floor proxy ADDR UPSTREAM"))?
                .parse()?;
            let host = upstream.host().unwrap_or_default();
            anyhow::ensure!(
                host.parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback()),
                "the upstream must be a loopback address, not {host}"
            );
            let mut connector = HttpConnector::new();
            connector.set_nodelay(true);
            let client = Client::builder(TokioExecutor::new()).build(connector);
            Router::new()
                .fallback(post(proxy))
                .with_state(Proxy { client, upstream })
        }
    };
    let listener = tokio::net::TcpListener::bind(addr).await?.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    eprintln!("mcp-bench-floor {mode} listening on {addr}");
    axum::serve(listener, app).await?;
    Ok(())
}

/// One proxied call: the upstream request kube-mcp's HTTP tool makes, the answer wrapped as a
/// JSON-RPC tool result.
async fn proxy(
    State(proxy): State<Proxy>,
    body: Bytes,
) -> (StatusCode, [(http::HeaderName, &'static str); 1], String) {
    let json = [(CONTENT_TYPE, "application/json")];
    let Some(message) = message(&body) else {
        return (StatusCode::BAD_REQUEST, json, String::new());
    };
    let mut upstream_body = Vec::with_capacity(message.len() + 16);
    upstream_body.extend_from_slice(br#"{"message":""#);
    upstream_body.extend_from_slice(message);
    upstream_body.extend_from_slice(br#""}"#);
    let request = http::Request::post(proxy.upstream.clone())
        .header(CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(upstream_body)));
    let Ok(request) = request else {
        return (StatusCode::INTERNAL_SERVER_ERROR, json, String::new());
    };
    let text = match proxy.client.request(request).await {
        Ok(response) => match response.into_body().collect().await {
            Ok(body) => body.to_bytes(),
            Err(_) => return (StatusCode::BAD_GATEWAY, json, String::new()),
        },
        Err(_) => return (StatusCode::BAD_GATEWAY, json, String::new()),
    };
    let text = String::from_utf8_lossy(&text);
    let text = serde_json::to_string(&*text).unwrap_or_default();
    (
        StatusCode::OK,
        json,
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":{text}}}]}}}}"#
        ),
    )
}

/// The raw (still JSON-escaped) value of the first `"message":"…"` in `body`.
fn message(body: &[u8]) -> Option<&[u8]> {
    const KEY: &[u8] = br#""message":""#;
    let start = body.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = &body[start..];
    let mut end = 0;
    while end < rest.len() {
        match rest[end] {
            b'\\' => end += 2,
            b'"' => return Some(&rest[..end]),
            _ => end += 1,
        }
    }
    None
}
