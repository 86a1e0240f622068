//! Serving a router on a TCP listener through hyper's connection builders, with the bounds
//! axum's `serve` does not set: a header-read timeout, an idle limit for kept-alive connections
//! (HTTP/1: `idle.rs`, longer than proxies keep theirs; HTTP/2: no stream open for as long),
//! connection slots where a new client closes the oldest idle connection when all are taken
//! (`slots.rs`), small read buffers (most connections are idle or long-lived streams), and a
//! limit on how long a write may wait for a client that stopped reading (`write_stall.rs`).
//! Graceful: on shutdown, connections finish their current request and close. HTTP/1 and
//! HTTP/2 (prior knowledge) are told apart by peeking at the first bytes (`sniff.rs`), then
//! served by hyper's own builder for that protocol: hyper-util's `auto` builder would read
//! those bytes itself and replay them, which makes hyper's HTTP/1 read buffer grow to 16 KiB on
//! every connection (twice what idle SSE streams need). Does network I/O.

mod idle;
mod slots;
mod sniff;
mod tracked;
mod write_stall;

use axum::Router;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use slots::{Slot, Slots};
use sniff::{Protocol, sniff};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
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
    /// Longest a kept-alive connection may wait for its next request (HTTP/1: its first
    /// byte; HTTP/2: a new stream).
    pub idle_timeout: Duration,
    /// Most connections open at once; past it, a new client closes the connection idle the
    /// longest, and waits in the listen backlog while every connection has a request in
    /// progress.
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
    let slots = Slots::new(limits.max_connections);
    loop {
        let (stream, peer) = tokio::select! {
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
        // Held here while every connection is busy (one client; the rest wait in the backlog).
        let slot = tokio::select! {
            () = shutdown.cancelled() => break,
            slot = slots.admit() => Arc::new(slot),
        };
        tokio::spawn(connection(
            stream,
            peer,
            slot,
            app.clone(),
            builders.clone(),
            limits.clone(),
            shutdown.clone(),
        ));
    }
    drop(listener);
    slots.drained().await;
    Ok(())
}

/// Serves one connection until it closes, is closed for room or idleness, or the server
/// shuts down (then its current requests finish first).
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    slot: Arc<Slot>,
    app: Router,
    builders: Arc<(http1::Builder, http2::Builder<TokioExecutor>)>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    // hyper's timeout starts once the protocol is known; until then, this one holds.
    let protocol = tokio::select! {
        protocol = sniff(&stream, limits.header_read_timeout) => protocol,
        () = slot.evicted() => None,
        () = shutdown.cancelled() => None,
    };
    let Some(protocol) = protocol else {
        return;
    };
    let service = tracked::Tracked::new(app, slot.clone(), peer);
    let reads = idle::ReadCount::default();
    let stream = idle::CountReads::new(stream, reads.clone());
    let io = TokioIo::new(write_stall::WriteStallLimit::new(
        stream,
        limits.write_stall_timeout,
    ));
    let (h1, h2) = &*builders;
    let bounds = Bounds {
        slot: &slot,
        shutdown: &shutdown,
        grace: limits.header_read_timeout,
    };
    // A client that goes away or times out is not an error of the server.
    match protocol {
        Protocol::Http1 => {
            let mut h1 = h1.clone();
            h1.timer(idle::IdleTimer::new(reads, limits.idle_timeout));
            let conn = h1.serve_connection(io, service);
            // The idle limit is the timer's.
            bounds
                .drive(conn, |conn| conn.graceful_shutdown(), None)
                .await;
        }
        Protocol::Http2 => {
            let conn = h2.serve_connection(io, service);
            let idle = Some(limits.idle_timeout);
            // Boxed: inline, every connection's task (HTTP/1 ones, most idle sessions, included)
            // would be as large as this branch's future, 2 KiB more per connection.
            Box::pin(bounds.drive(conn, |conn| conn.graceful_shutdown(), idle)).await;
        }
    }
}

/// What ends a connection besides its client.
struct Bounds<'a> {
    slot: &'a Slot,
    shutdown: &'a CancellationToken,
    /// Longest a connection closed for room or idleness may take to finish what it started.
    grace: Duration,
}

impl Bounds<'_> {
    /// Runs `conn` until it ends. On shutdown, lets its requests finish. Closed for room, ends
    /// it at once when no request is in progress (a connection closed for room stops counting
    /// as taking one, so it must not linger). After `idle` without a request (HTTP/2), and
    /// closed for room while a request started, tells the client (HTTP/2: GOAWAY) and lets
    /// what started finish within the grace time.
    async fn drive<C: Future>(
        &self,
        conn: C,
        graceful: impl FnOnce(Pin<&mut C>),
        idle: Option<Duration>,
    ) {
        let mut conn = std::pin::pin!(conn);
        let shutdown = tokio::select! {
            _ = conn.as_mut() => return,
            () = self.shutdown.cancelled() => true,
            () = self.slot.evicted() => {
                if self.slot.idle() {
                    return;
                }
                false
            }
            () = idle_expired(self.slot, idle) => false,
        };
        graceful(conn.as_mut());
        if shutdown {
            conn.await;
        } else {
            let _ = tokio::time::timeout(self.grace, conn).await;
        }
    }
}

/// Resolves once `slot` has had no request in progress for `limit` (never, without one).
async fn idle_expired(slot: &Slot, limit: Option<Duration>) {
    let Some(limit) = limit else {
        return std::future::pending().await;
    };
    loop {
        let wait = match slot.idle_for() {
            Some(idle) if idle >= limit => return,
            Some(idle) => limit - idle,
            None => limit,
        };
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests;
