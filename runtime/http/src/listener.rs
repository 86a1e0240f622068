//! Serving a router on a TCP listener through hyper-util's connection builder, with the bounds
//! axum's `serve` does not set: a header-read timeout, an idle limit for kept-alive connections
//! (`idle.rs`: longer than proxies keep theirs), a limit on open connections, and small read buffers
//! (most connections are idle or long-lived streams), and a limit on how long a write may wait
//! for a client that stopped reading (`write_stall.rs`). Graceful: on shutdown, connections finish
//! their current request and close. HTTP/1 and HTTP/2 (prior knowledge) are told apart by peeking
//! at the first bytes, then served by hyper's own builder for that protocol: hyper-util's `auto`
//! builder would read those bytes itself and replay them, which makes hyper's HTTP/1 read buffer
//! grow to 16 KiB on every connection (twice what idle SSE streams need). Does network I/O.

mod idle;
mod write_stall;

use axum::Router;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The default idle limit of a kept-alive connection: longer than the proxies in front keep
/// their upstream connections (Google's load balancers 600 s, most others 60-90 s), so the
/// proxy, not the server, closes an idle one and never sends a request into a closing socket.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Bounds of one listening port.
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// Longest a client may take to send a request's headers, from its first byte (or from
    /// the connection's start).
    pub header_read_timeout: Duration,
    /// Longest a kept-alive HTTP/1 connection may wait for its next request's first byte.
    pub idle_timeout: Duration,
    /// Most connections open at once; further clients wait in the listen backlog.
    pub max_connections: usize,
    /// Largest read buffer of a connection (requests' headers must fit).
    pub max_buf_size: usize,
    /// Longest a write may wait for a client that stopped reading; then the connection closes
    /// (and with it what was queued for it, and an HTTP+SSE session it carried).
    pub write_stall_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: 20_000,
            max_buf_size: 64 * 1024,
            write_stall_timeout: Duration::from_secs(20),
        }
    }
}

/// Serves `app` on `listener` until `shutdown`, then waits for open connections to finish
/// their requests.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    // Each connection gets its own timer (`idle::IdleTimer`), which needs its read count.
    let mut h1 = http1::Builder::new();
    h1.header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_buf_size.max(8192));
    let mut h2 = http2::Builder::new(TokioExecutor::new());
    h2.timer(TokioTimer::new())
        .keep_alive_interval(Some(limits.header_read_timeout))
        .keep_alive_timeout(limits.header_read_timeout);
    let builders = Arc::new((h1, h2));
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    loop {
        let permit = tokio::select! {
            () = shutdown.cancelled() => break,
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let (stream, _peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let (app, builders, watcher) = (app.clone(), builders.clone(), graceful.watcher());
        let timeout = limits.header_read_timeout;
        let idle_timeout = limits.idle_timeout;
        let write_stall = limits.write_stall_timeout;
        tokio::spawn(async move {
            let _permit = permit;
            // hyper's timeout starts once the protocol is known; until then, this one holds.
            let Some(protocol) = sniff(&stream, timeout).await else {
                return;
            };
            let service = TowerToHyperService::new(app);
            let reads = idle::ReadCount::default();
            let stream = idle::CountReads::new(stream, reads.clone());
            let io = TokioIo::new(write_stall::WriteStallLimit::new(stream, write_stall));
            let (h1, h2) = &*builders;
            // A client that goes away or times out is not an error of the server.
            match protocol {
                Protocol::Http1 => {
                    let mut h1 = h1.clone();
                    h1.timer(idle::IdleTimer::new(reads, idle_timeout));
                    let _ = watcher.watch(h1.serve_connection(io, service)).await;
                }
                Protocol::Http2 => {
                    let _ = watcher.watch(h2.serve_connection(io, service)).await;
                }
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The HTTP/2 connection preface; anything else is HTTP/1.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The protocol a client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

/// The protocol the client's first bytes announce, once it sent enough within `timeout` to tell
/// (`None`: it did not, or it left). The bytes stay in the socket for hyper to read.
async fn sniff(stream: &tokio::net::TcpStream, timeout: Duration) -> Option<Protocol> {
    let wait = async {
        let mut buf = [0u8; H2_PREFACE.len()];
        loop {
            match stream.peek(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) if !H2_PREFACE.starts_with(&buf[..n]) => return Some(Protocol::Http1),
                Ok(n) if n == H2_PREFACE.len() => return Some(Protocol::Http2),
                // Part of the preface: peek returns at once, so wait a little between looks.
                Ok(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    };
    tokio::time::timeout(timeout, wait).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn start(limits: ConnectionLimits) -> (std::net::SocketAddr, CancellationToken) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route("/", axum::routing::get(|| async { "ok" }));
        let stop = CancellationToken::new();
        tokio::spawn(serve(listener, app, limits, stop.clone()));
        (addr, stop)
    }

    /// Reads until the server closes the connection; how long that took.
    async fn time_to_close(stream: &mut tokio::net::TcpStream) -> Duration {
        let started = std::time::Instant::now();
        let mut buf = [0u8; 1024];
        loop {
            match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return started.elapsed(),
                Ok(Ok(_)) => {}
                Err(_) => return Duration::from_secs(5),
            }
        }
    }

    #[tokio::test]
    async fn half_sent_and_idle_connections_are_closed() {
        let limits = ConnectionLimits {
            header_read_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(1500),
            ..ConnectionLimits::default()
        };
        let (addr, stop) = start(limits).await;
        // Slowloris: headers started and never finished. axum::serve held these forever.
        let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        assert!(time_to_close(&mut slow).await < Duration::from_secs(1));
        // A connection that never sends a byte.
        let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
        assert!(time_to_close(&mut silent).await < Duration::from_secs(1));
        // A kept-alive connection that goes quiet after one request stays open for the idle
        // limit, not the header time, and then closes.
        let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
        idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let closed = time_to_close(&mut idle).await;
        assert!(
            closed > Duration::from_millis(1000) && closed < Duration::from_secs(4),
            "idle connection closed after {closed:?}"
        );
        stop.cancel();
    }

    #[tokio::test]
    async fn the_header_time_starts_at_the_next_requests_first_byte() {
        let limits = ConnectionLimits {
            header_read_timeout: Duration::from_millis(400),
            idle_timeout: Duration::from_secs(30),
            ..ConnectionLimits::default()
        };
        let (addr, stop) = start(limits).await;
        let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
        conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 1024];
        let n = conn.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        // Idle for longer than the header time: a proxy's pooled connection, still usable.
        tokio::time::sleep(Duration::from_millis(900)).await;
        conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let n = conn.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        // A next request started and never finished closes within the header time of its
        // first byte, however long the idle limit.
        conn.write_all(b"GET / HTTP/1.1\r\nHo").await.unwrap();
        assert!(time_to_close(&mut conn).await < Duration::from_secs(2));
        stop.cancel();
    }

    #[tokio::test]
    async fn both_protocols_are_served() {
        let (addr, stop) = start(ConnectionLimits::default()).await;
        let mut h1 = tokio::net::TcpStream::connect(addr).await.unwrap();
        h1.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        h1.read_to_end(&mut answer).await.unwrap();
        assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"));
        // HTTP/2 with prior knowledge: the preface and an empty SETTINGS frame, sent in two
        // parts; the server answers with its own SETTINGS frame (type 4).
        let mut h2 = tokio::net::TcpStream::connect(addr).await.unwrap();
        h2.write_all(&H2_PREFACE[..10]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        h2.write_all(&H2_PREFACE[10..]).await.unwrap();
        h2.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
        let mut frame = [0u8; 9];
        tokio::time::timeout(Duration::from_secs(5), h2.read_exact(&mut frame))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(frame[3], 4, "not a SETTINGS frame: {frame:?}");
        stop.cancel();
    }

    #[tokio::test]
    async fn connections_beyond_the_limit_wait() {
        let limits = ConnectionLimits {
            max_connections: 1,
            header_read_timeout: Duration::from_secs(2),
            ..ConnectionLimits::default()
        };
        let (addr, stop) = start(limits).await;
        let _holder = tokio::net::TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut second = tokio::net::TcpStream::connect(addr).await.unwrap();
        second
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut buf = Vec::new();
        let waited =
            tokio::time::timeout(Duration::from_millis(500), second.read_to_end(&mut buf)).await;
        assert!(waited.is_err(), "served past the connection limit");
        // Once the first times out, the second is served.
        tokio::time::timeout(Duration::from_secs(5), second.read_to_end(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 200"));
        stop.cancel();
    }
}
