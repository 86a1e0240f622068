//! The listener over real sockets: timeouts, both protocols, connection slots, the preface sniff.

use super::sniff::{H2_PREFACE, sniff_counting};
use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn start(limits: ConnectionLimits) -> (std::net::SocketAddr, CancellationToken) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/", axum::routing::get(|| async { "ok" }))
        .route(
            "/slow",
            axum::routing::get(|| async {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                "slow"
            }),
        );
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

/// Sends one HTTP/1 request on `conn` and reads its answer's status line (the answers here are
/// small enough for one read).
async fn get(conn: &mut tokio::net::TcpStream, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut buf))
        .await
        .expect("no answer within 5 s")
        .unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]);
    answer.lines().next().unwrap_or_default().to_owned()
}

/// Whether the server closed `conn` within `within`.
async fn closed_within(conn: &mut tokio::net::TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(within, conn.read(&mut buf)).await,
        Ok(Ok(0) | Err(_))
    )
}

#[tokio::test]
async fn busy_connections_beyond_the_limit_wait() {
    let limits = ConnectionLimits {
        max_connections: 1,
        ..ConnectionLimits::default()
    };
    let (addr, stop) = start(limits).await;
    // A request in progress holds its slot.
    let mut holder = tokio::net::TcpStream::connect(addr).await.unwrap();
    holder
        .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut second = tokio::net::TcpStream::connect(addr).await.unwrap();
    second
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let waited =
        tokio::time::timeout(Duration::from_millis(500), second.read_to_end(&mut buf)).await;
    assert!(waited.is_err(), "served past the connection limit");
    // Once the slow answer is written, its connection is idle, and the second is served.
    tokio::time::timeout(Duration::from_secs(5), second.read_to_end(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 200"));
    stop.cancel();
}

/// A port full of idle connections (256 of them made kubelet probes of the admin port fail)
/// still serves a new client: the connection idle the longest is closed for it.
#[tokio::test]
async fn a_full_listener_closes_its_oldest_idle_connection() {
    let limits = ConnectionLimits {
        max_connections: 2,
        ..ConnectionLimits::default()
    };
    let (addr, stop) = start(limits).await;
    // One that never sends a byte, then one kept alive after a request.
    let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut kept = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert_eq!(get(&mut kept, "/").await, "HTTP/1.1 200 OK");
    // A probe gets in at once, and the silent one, idle the longest, is closed.
    let mut probe = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert_eq!(get(&mut probe, "/").await, "HTTP/1.1 200 OK");
    assert!(closed_within(&mut silent, Duration::from_secs(1)).await);
    // The kept-alive one was idle longer than the probe: the next client takes its slot.
    let mut next = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert_eq!(get(&mut next, "/").await, "HTTP/1.1 200 OK");
    assert!(closed_within(&mut kept, Duration::from_secs(1)).await);
    assert_eq!(get(&mut probe, "/").await, "HTTP/1.1 200 OK");
    stop.cancel();
}

/// An HTTP/2 client: the preface and an empty SETTINGS frame.
async fn h2_connect(addr: std::net::SocketAddr) -> tokio::net::TcpStream {
    let mut h2 = tokio::net::TcpStream::connect(addr).await.unwrap();
    h2.write_all(H2_PREFACE).await.unwrap();
    h2.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
    h2
}

/// Reads frames until the server closes the connection, acknowledging its PINGs as a live
/// client does (hyper's keep-alive pings would otherwise close it); how long that took.
async fn h2_time_to_close(h2: &mut tokio::net::TcpStream, limit: Duration) -> Duration {
    let started = std::time::Instant::now();
    let frames = async {
        loop {
            let mut head = [0u8; 9];
            if h2.read_exact(&mut head).await.is_err() {
                return;
            }
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0u8; len];
            if h2.read_exact(&mut payload).await.is_err() {
                return;
            }
            // PING without ACK: answer it, with the ACK flag and the same payload.
            if head[3] == 6 && head[4] & 1 == 0 {
                let mut ack = vec![0, 0, 8, 6, 1, 0, 0, 0, 0];
                ack.extend_from_slice(&payload);
                if h2.write_all(&ack).await.is_err() {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout(limit, frames).await;
    started.elapsed()
}

#[tokio::test]
async fn idle_http2_connections_are_closed() {
    let limits = ConnectionLimits {
        header_read_timeout: Duration::from_millis(500),
        idle_timeout: Duration::from_millis(1500),
        ..ConnectionLimits::default()
    };
    let (addr, stop) = start(limits).await;
    let mut h2 = h2_connect(addr).await;
    let closed = h2_time_to_close(&mut h2, Duration::from_secs(6)).await;
    assert!(
        closed > Duration::from_millis(1000) && closed < Duration::from_secs(4),
        "idle HTTP/2 connection closed after {closed:?}"
    );
    stop.cancel();
}

#[tokio::test]
async fn a_partial_preface_is_awaited_not_polled() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    let sending = tokio::spawn(async move {
        client.write_all(&H2_PREFACE[..10]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
        client.write_all(&H2_PREFACE[10..]).await.unwrap();
        client
    });
    let mut looks = 0;
    let protocol = sniff_counting(&server, Duration::from_secs(5), &mut looks).await;
    assert_eq!(protocol, Some(Protocol::Http2));
    // Two arrivals; a look at each, and one more after each to see that nothing else came.
    assert!(looks <= 6, "{looks} looks at the socket for two arrivals");
    drop(sending.await.unwrap());
}
