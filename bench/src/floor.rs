//! `mcp-bench-floor`: the floor of the runtime benchmarks. A bare axum server that reads every
//! POST's body and answers it with one constant JSON-RPC result (what the echo tool returns), so
//! `mcp-bench load` can measure what the HTTP stack alone costs per request; kube-mcp's CPU per
//! stateless `tools/call` is reported as a ratio to it. No MCP, no checks, no limits beyond
//! axum's defaults: not a server to expose. Listens on a loopback address only. Does network I/O.

use axum::Router;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::routing::post;
use axum::serve::ListenerExt;
use std::net::SocketAddr;

/// The answer the bench's `tools/call` check accepts (`Expect::Echo`), as kube-mcp sends it.
const ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello from mcp-bench"}]}}"#;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18190".to_owned())
        .parse()?;
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "the floor listens on loopback only"
    );
    // The body is read (as every MCP server must) and dropped.
    let app = Router::new().fallback(post(|_body: Bytes| async {
        ([(CONTENT_TYPE, "application/json")], ANSWER)
    }));
    let listener = tokio::net::TcpListener::bind(addr).await?.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    eprintln!("mcp-bench-floor listening on {addr}");
    axum::serve(listener, app).await?;
    Ok(())
}
