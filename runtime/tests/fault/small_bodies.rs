//! Many small dense bodies at once: each body is under 64 KiB (so the large-body budget and the
//! density check pass it) but parses into megabytes of JSON values, held while its slow call
//! runs. Their parsed weight shares one budget: past it, 503 with `Retry-After` before parsing,
//! and the server's RSS grows by less than [`BOUND`].

use super::harness::{Server, dense_call, mib};
use std::time::Duration;

/// Growth of the server's RSS the attack may cause with default flags: the global budget of
/// held bytes (64 MiB) plus 32 MiB of slack for connections and buffers. Before it, 150
/// concurrent calls held about 4 MiB each.
const BOUND: u64 = 96 << 20;

/// Concurrent connections, each posting one dense call.
const CONNECTIONS: u64 = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dense_small_bodies_share_one_budget() {
    let mut server = Server::start(&[]);
    let baseline = server.rss();
    let watch = server.watch_rss();
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..CONNECTIONS {
        let body = dense_call(n, 64 * 1024 - 64, true);
        // A client per call: one connection each, all held at once.
        let client = reqwest::Client::new();
        let url = format!("{}/mcp", server.url);
        calls.spawn(async move {
            let response = client
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "slow")
                .timeout(Duration::from_secs(30))
                .body(body)
                .send()
                .await
                .unwrap();
            let retry = response.headers().contains_key("retry-after");
            (response.status().as_u16(), retry)
        });
    }
    let answers = calls.join_all().await;
    let peak = watch.peak();
    drop(watch);
    let grown = peak.saturating_sub(baseline);
    let refused = answers.iter().filter(|(s, _)| *s == 503).count();
    let served = answers.iter().filter(|(s, _)| *s == 200).count();
    eprintln!(
        "dense bodies: baseline {:.1} MiB, peak {:.1} MiB, growth {:.1} MiB (bound {:.1}); {served} served, {refused} refused",
        mib(baseline),
        mib(peak),
        mib(grown),
        mib(BOUND)
    );
    assert!(server.alive(), "the server died");
    assert!(
        grown < BOUND,
        "RSS grew by {:.1} MiB under dense bodies (bound {:.1} MiB)",
        mib(grown),
        mib(BOUND)
    );
    assert!(refused > 0, "no call was refused: {answers:?}");
    assert!(answers.iter().all(|(s, retry)| *s != 503 || *retry));
    assert!(served > 0, "every call was refused");
    assert_eq!(served + refused, answers.len(), "{answers:?}");
}
