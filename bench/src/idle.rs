//! Idle legacy sessions: open N sessions, each holding its server-to-client SSE stream on its
//! own connection, keep them for a while and read the server's memory. HTTP+SSE (`GET /sse`,
//! whose first event names the POST endpoint) or Streamable HTTP (initialize, initialized,
//! `GET /mcp` with the session id). Does I/O.

use crate::conn::{Conn, SseReader};
use crate::mcp::{self, Expect};
use crate::procfs::{self, Sampler};
use crate::stats::{Record, mib};
use http_body_util::BodyExt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;

/// Which stream each session holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// `GET /sse` (2024-11-05 HTTP+SSE).
    Sse,
    /// Streamable HTTP session with its `GET /mcp` stream.
    Streamable,
}

/// An idle run.
#[derive(Clone, Debug)]
pub struct IdleConfig {
    /// Server address.
    pub addr: SocketAddr,
    /// `/sse` or `/mcp`.
    pub path: String,
    /// Stream kind.
    pub mode: Mode,
    /// Sessions to open.
    pub sessions: usize,
    /// Sessions being opened at once.
    pub parallel: usize,
    /// How long all sessions are held after opening.
    pub hold: Duration,
    /// Server process to sample.
    pub pid: Option<u32>,
    /// Server label.
    pub server: String,
    /// Protocol label.
    pub protocol: String,
}

/// Connections per source address before the next one (127.0.0.2, …) is used: one source
/// address has ~28k ephemeral ports towards one destination (ip_local_port_range 32768-60999).
pub const PER_SOURCE: usize = 25_000;

/// The source address of session `index` out of `sessions`: the kernel's pick while every
/// session fits on one source address, else 127.0.0.1 + index / PER_SOURCE (IPv4 targets only;
/// all of 127.0.0.0/8 is loopback on Linux).
pub fn source(index: usize, sessions: usize, target: SocketAddr) -> Option<IpAddr> {
    if sessions <= PER_SOURCE || !target.is_ipv4() {
        return None;
    }
    let n = u32::try_from(index / PER_SOURCE).unwrap_or(0);
    Some(IpAddr::V4(Ipv4Addr::from(
        u32::from(Ipv4Addr::new(127, 0, 0, 1)) + n,
    )))
}

/// Longest wait for one session to open.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Counters {
    opened: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
}

/// Opens the sessions, holds them, and reports the server's memory while they are held.
pub async fn run(config: IdleConfig) -> anyhow::Result<Record> {
    let config = Arc::new(config);
    let sampler = Sampler::start(config.pid, Duration::from_millis(250));
    let before = sampler.now();
    let counters = Arc::new(Counters::default());
    let gate = Arc::new(Semaphore::new(config.parallel));
    let (stop, stopped) = watch::channel(false);
    let (opened_tx, mut opened_rx) = tokio::sync::mpsc::channel::<()>(config.sessions.max(1));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(config.sessions);
    for index in 0..config.sessions {
        let from = source(index, config.sessions, config.addr);
        let (config, counters, gate, mut stopped, opened_tx) = (
            config.clone(),
            counters.clone(),
            gate.clone(),
            stopped.clone(),
            opened_tx.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let permit = gate.acquire_owned().await;
            let body = tokio::time::timeout(OPEN_TIMEOUT, open(&config, from)).await;
            drop(permit);
            let mut body = match body {
                Ok(Ok(body)) => {
                    counters.opened.fetch_add(1, Ordering::Relaxed);
                    body
                }
                _ => {
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                    let _ = opened_tx.send(()).await;
                    return;
                }
            };
            let _ = opened_tx.send(()).await;
            // Drain whatever the server sends (keep-alives) until told to stop.
            loop {
                tokio::select! {
                    _ = stopped.changed() => return,
                    frame = body.frame() => match frame {
                        Some(Ok(_)) => {}
                        _ => {
                            counters.dropped.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                    },
                }
            }
        }));
    }
    drop(opened_tx);
    for _ in 0..config.sessions {
        if opened_rx.recv().await.is_none() {
            break;
        }
    }
    let open_seconds = started.elapsed().as_secs_f64();
    let (cpu_start, client_start) = (sampler.now().cpu, procfs::own_cpu());
    tokio::time::sleep(config.hold).await;
    let held = sampler.now();
    let client_end = procfs::own_cpu();
    let peak = sampler.stop();
    let _ = stop.send(true);
    for task in tasks {
        let _ = task.await;
    }
    let opened = counters.opened.load(Ordering::Relaxed);
    let dropped = counters.dropped.load(Ordering::Relaxed);
    let rss_held = mib(held.rss);
    let per_session_kib = if opened > 0 {
        (held.rss.saturating_sub(before.rss)) as f64 / 1024.0 / opened as f64
    } else {
        0.0
    };
    Ok(Record {
        server: config.server.clone(),
        workload: match config.mode {
            Mode::Sse => "idle-sse",
            Mode::Streamable => "idle-streamable",
        }
        .to_owned(),
        protocol: config.protocol.clone(),
        concurrency: config.sessions,
        rate: None,
        seconds: open_seconds,
        requests: 0,
        sessions: opened - dropped.min(opened),
        errors: counters.failed.load(Ordering::Relaxed) + dropped,
        rps: opened as f64 / open_seconds.max(1e-9),
        server_cpu_s: held.cpu - cpu_start,
        rss_peak_mib: mib(peak),
        rss_before_mib: mib(before.rss),
        client_cpu_s: client_end - client_start,
        note: format!(
            "RSS held {rss_held:.1} MiB, {per_session_kib:.1} KiB per session over the idle server; \
             {dropped} streams ended early; held {:?}",
            config.hold
        ),
        ..Record::default()
    })
}

/// Opens one session and returns its open stream.
async fn open(
    config: &IdleConfig,
    source: Option<IpAddr>,
) -> anyhow::Result<hyper::body::Incoming> {
    let mut conn = Conn::open_from(config.addr, source).await?;
    match config.mode {
        Mode::Sse => {
            let response = conn.start(&mcp::get_stream(&config.path, None)).await?;
            anyhow::ensure!(
                response.status().is_success(),
                "GET /sse: {}",
                response.status()
            );
            let mut reader = SseReader::new(response.into_body());
            let endpoint = reader.next_data().await?;
            anyhow::ensure!(endpoint.contains("essionId=") || endpoint.contains("ession_id="));
            Ok(reader.into_body())
        }
        Mode::Streamable => {
            let init = conn.send(&mcp::initialize(&config.path)).await?;
            anyhow::ensure!(init.status.is_success(), "initialize: {}", init.status);
            let session = mcp::session_id(&init)
                .ok_or_else(|| anyhow::anyhow!("initialize answered without a session id"))?;
            let note = conn.send(&mcp::initialized(&config.path, &session)).await?;
            anyhow::ensure!(
                mcp::ok(&note, Expect::Accepted),
                "initialized: {}",
                note.status
            );
            let response = conn
                .start(&mcp::get_stream(&config.path, Some(&session)))
                .await?;
            anyhow::ensure!(response.status().is_success(), "GET: {}", response.status());
            Ok(response.into_body())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_spread_past_one_address() {
        let target: SocketAddr = "127.0.0.1:18100".parse().expect("an address");
        assert_eq!(source(0, 10_000, target), None);
        assert_eq!(
            source(0, 100_000, target),
            Some("127.0.0.1".parse().expect("ip"))
        );
        assert_eq!(
            source(24_999, 100_000, target),
            Some("127.0.0.1".parse().expect("ip"))
        );
        assert_eq!(
            source(25_000, 100_000, target),
            Some("127.0.0.2".parse().expect("ip"))
        );
        assert_eq!(
            source(99_999, 100_000, target),
            Some("127.0.0.4".parse().expect("ip"))
        );
    }
}
