//! A property test of the budgets against one real process: random sequences of HTTP+SSE
//! sessions that read or stall, posts of megabyte reads and dense bodies, and disconnects.
//! After each sequence (its clients gone) the session table, the per-client session counts and
//! both byte budgets return to zero, and the server's RSS settles within [`SETTLED`] of where it started.

use super::harness::{Server, dense_call, mib};
use proptest::prelude::*;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// RSS the process may keep above its start once every client is gone (allocator caches,
/// grown tables).
const SETTLED: u64 = 48 << 20;

#[derive(Clone, Debug)]
enum Op {
    /// Opens an HTTP+SSE session whose client reads its stream, or never does.
    Open { reads: bool },
    /// Posts a read of the 1 MiB resource to a session.
    Read(usize),
    /// Posts a 32 KiB body of `[0,0,...]` (a slow call) to a session.
    Dense(usize),
    /// The client of a session disconnects.
    Drop(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => any::<bool>().prop_map(|reads| Op::Open { reads }),
        4 => (0..4usize).prop_map(Op::Read),
        2 => (0..4usize).prop_map(Op::Dense),
        1 => (0..4usize).prop_map(Op::Drop),
    ]
}

/// One client's session: its stream (drained in the background when it reads) and endpoint.
struct Client {
    endpoint: String,
    stream: Option<TcpStream>,
    drain: Option<tokio::task::JoinHandle<()>>,
}

async fn open(server: &Server, reads: bool) -> Client {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket
        .connect(server.address.parse().unwrap())
        .await
        .unwrap();
    let head = format!(
        "GET /sse HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n",
        server.address
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    let endpoint = loop {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0);
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen).into_owned();
        if let Some(rest) = text.split("event: endpoint\ndata: ").nth(1)
            && let Some((endpoint, _)) = rest.split_once('\n')
        {
            break endpoint.to_owned();
        }
    };
    let (stream, drain) = if reads {
        let mut stream = stream;
        let drain = tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
        });
        (None, Some(drain))
    } else {
        (Some(stream), None)
    };
    let client = Client {
        endpoint,
        stream,
        drain,
    };
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"churn","version":"1"}}}"#;
    post(server, &client, init.to_owned()).await;
    client
}

async fn post(server: &Server, client: &Client, body: String) {
    let _ = reqwest::Client::new()
        .post(format!("{}{}", server.url, client.endpoint))
        .header("content-type", "application/json")
        .timeout(Duration::from_secs(10))
        .body(body)
        .send()
        .await;
}

async fn run(server: &Server, ops: Vec<Op>) {
    let mut clients: Vec<Client> = Vec::new();
    for (n, op) in ops.into_iter().enumerate() {
        let id = n as u64 + 1;
        match op {
            Op::Open { reads } => clients.push(open(server, reads).await),
            Op::Read(i) | Op::Dense(i) | Op::Drop(i) if clients.is_empty() => {
                let _ = i;
            }
            Op::Read(i) => {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"big://doc"}}}}"#
                );
                post(server, &clients[i % clients.len()], body).await;
            }
            Op::Dense(i) => {
                post(
                    server,
                    &clients[i % clients.len()],
                    dense_call(id, 32 * 1024, false),
                )
                .await;
            }
            Op::Drop(i) => {
                let client = clients.remove(i % clients.len());
                drop(client.stream);
                if let Some(drain) = client.drain {
                    drain.abort();
                }
            }
        }
    }
    for client in clients {
        drop(client.stream);
        if let Some(drain) = client.drain {
            drain.abort();
        }
    }
}

/// Waits (bounded) until every sample reads 0.
async fn settles_to_zero(server: &Server, samples: &[&str]) -> Result<(), String> {
    for _ in 0..150 {
        let mut values = Vec::new();
        for sample in samples {
            values.push(server.metric(sample).await);
        }
        if values.iter().all(|v| *v == Some(0.0)) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut now = Vec::new();
    for sample in samples {
        now.push(format!("{sample} = {:?}", server.metric(sample).await));
    }
    Err(now.join(", "))
}

#[test]
fn sessions_and_budgets_return_to_idle_after_any_churn() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut server = tokio.block_on(async { Server::start(&[]) });
    let baseline = server.rss();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 6,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let samples = [
        "mcp_sessions_active{transport=\"sse\"}",
        "mcp_held_bytes{budget=\"global\"}",
        "mcp_held_bytes{budget=\"session\"}",
        "mcp_client_share_clients{limit=\"sessions\"}",
    ];
    let result = runner.run(&proptest::collection::vec(op(), 4..24), |ops| {
        tokio.block_on(run(&server, ops));
        tokio
            .block_on(settles_to_zero(&server, &samples))
            .map_err(TestCaseError::fail)
    });
    assert!(result.is_ok(), "{result:?}");
    assert!(server.alive(), "the server died");
    // jemalloc hands freed pages back after its decay time (10 s); give it that.
    let mut settled = server.rss();
    for _ in 0..30 {
        if settled <= baseline + SETTLED {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
        settled = server.rss();
    }
    eprintln!(
        "churn: baseline {:.1} MiB, settled {:.1} MiB (allowed {:.1} above)",
        mib(baseline),
        mib(settled),
        mib(SETTLED)
    );
    assert!(
        settled <= baseline + SETTLED,
        "RSS did not settle: {:.1} MiB over a {:.1} MiB baseline",
        mib(settled.saturating_sub(baseline)),
        mib(baseline)
    );
}
