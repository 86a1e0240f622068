//! The stalled HTTP+SSE reader: a client opens `GET /sse`, reads the endpoint event, never reads
//! again, and keeps posting reads of a 1 MiB resource (a 60-byte post, a megabyte answer) and
//! 64 KiB bodies of `[0,0,...]`. What its sessions hold must stay within their byte budgets:
//! the sessions end as soon as their streams are full, and the server's RSS grows by less than
//! [`BOUND`] however much is posted.

use super::harness::{Server, dense_call, mib};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;

/// Growth of the server's RSS the attack may cause, with default flags: two sessions' byte
/// budgets (8 MiB each, within the global one), the global budget of held bytes (64 MiB) and
/// 32 MiB of slack for connections and buffers.
/// Before the budgets, the same attack held 1 MiB per posted read: hundreds of MiB.
const BOUND: u64 = 96 << 20;

/// Sessions the attacker opens, and posts of each kind per session.
const SESSIONS: usize = 2;
const READS: u64 = 200;
const DENSE: u64 = 64;

/// Opens `GET /sse` with a small receive buffer, reads up to the endpoint event, and returns the
/// socket (never read again) and the endpoint.
async fn stalled_stream(address: &str) -> (TcpStream, String) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(address.parse().unwrap()).await.unwrap();
    let head = format!("GET /sse HTTP/1.1\r\nHost: {address}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    let endpoint = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "the stream ended before its endpoint event");
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen);
            if let Some(rest) = text.split("event: endpoint\ndata: ").nth(1)
                && let Some((endpoint, _)) = rest.split_once('\n')
            {
                return endpoint.to_owned();
            }
        }
    })
    .await
    .unwrap();
    (stream, endpoint)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_sse_readers_stay_within_their_budgets() {
    let mut server = Server::start(&[]);
    let client = reqwest::Client::new();
    let post = |url: String, body: String| {
        let client = client.clone();
        async move {
            client
                .post(url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .map(|r| r.status().as_u16())
                .unwrap_or(0)
        }
    };
    let baseline = server.rss();
    let watch = server.watch_rss();
    let mut streams = Vec::new();
    let mut statuses = Vec::new();
    for _ in 0..SESSIONS {
        let (stream, endpoint) = stalled_stream(&server.address).await;
        let url = format!("{}{endpoint}", server.url);
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"stall","version":"1"}}}"#;
        assert_eq!(post(url.clone(), init.to_owned()).await, 202);
        streams.push(stream);
        let limit = Arc::new(Semaphore::new(16));
        let mut posts = tokio::task::JoinSet::new();
        for n in 1..=READS + DENSE {
            let body = if n <= READS {
                format!(
                    r#"{{"jsonrpc":"2.0","id":{n},"method":"resources/read","params":{{"uri":"big://doc"}}}}"#
                )
            } else {
                dense_call(n, 64 * 1024, false)
            };
            let permit = limit.clone().acquire_owned().await.unwrap();
            posts.spawn(post(url.clone(), body).then_release(permit));
        }
        statuses.extend(posts.join_all().await);
    }
    // Answers still being produced settle.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let peak = watch.peak();
    drop(watch);
    let grown = peak.saturating_sub(baseline);
    let ended = statuses.iter().filter(|s| **s == 404).count();
    eprintln!(
        "stalled readers: baseline {:.1} MiB, peak {:.1} MiB, growth {:.1} MiB (bound {:.1}); {} of {} posts found the session ended",
        mib(baseline),
        mib(peak),
        mib(grown),
        mib(BOUND),
        ended,
        statuses.len()
    );
    assert!(server.alive(), "the server died");
    assert!(
        grown < BOUND,
        "RSS grew by {:.1} MiB under stalled readers (bound {:.1} MiB)",
        mib(grown),
        mib(BOUND)
    );
    // Each session ended once its stream was full: far fewer answers were held than posted.
    assert!(
        ended as u64 > SESSIONS as u64 * (READS + DENSE) / 2,
        "sessions with stalled readers were not ended: {statuses:?}"
    );
    drop(streams);
}

/// Releases a concurrency permit when a future finishes.
trait ThenRelease: std::future::Future + Sized {
    fn then_release(
        self,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) -> impl std::future::Future<Output = Self::Output> {
        async move {
            let out = self.await;
            drop(permit);
            out
        }
    }
}

impl<F: std::future::Future> ThenRelease for F {}
