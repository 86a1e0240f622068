//! The scale of one declaration, over HTTP to a real `mcp-runtime serve`
//! (`bench/declaration-scale.sh`):
//!
//! - `pages`: walks `tools/list` page by page (2026-07-28 stateless, following `nextCursor`)
//!   for a while, timing every page and every whole walk;
//! - `reload`: stateless `tools/call` at a fixed rate (open loop) twice, once with the manifest
//!   left alone and once while it is rewritten every `--every` (two versions in turn, each
//!   forcing a reload of the whole declaration), and compares the latencies.
//!
//! Does I/O: loopback HTTP, and writes the manifest file it is given.

use crate::conn::{Call, Conn};
use crate::load::{self, LoadConfig, Workload};
use crate::mcp;
use crate::stats::{Percentiles, percentiles};
use http::Method;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

fn summary(p: &Percentiles) -> Value {
    json!({"p50_ms": p.p50, "p95_ms": p.p95, "p99_ms": p.p99, "max_ms": p.max})
}

/// Walks `tools/list` for `duration` (at least one whole walk) and returns the record.
pub async fn pages(addr: SocketAddr, path: &str, duration: Duration) -> anyhow::Result<Value> {
    let mut conn = Conn::open(addr).await?;
    let (mut page_micros, mut walk_micros) = (Vec::new(), Vec::new());
    let (mut listed, mut pages_per_walk, mut bytes) = (0usize, 0usize, 0usize);
    let end = Instant::now() + duration;
    let mut id = 0u64;
    while walk_micros.is_empty() || Instant::now() < end {
        let walk_started = Instant::now();
        let (mut cursor, mut tools, mut pages, mut walk_bytes) = (None::<String>, 0, 0, 0);
        loop {
            id += 1;
            let started = Instant::now();
            let answer = conn
                .send(&mcp::modern_list(path, id, cursor.as_deref()))
                .await?;
            page_micros.push(micros(started.elapsed()));
            anyhow::ensure!(
                answer.status.is_success(),
                "tools/list answered {}",
                answer.status
            );
            walk_bytes += answer.body.len();
            let value: Value = serde_json::from_slice(&answer.body)?;
            let result = value
                .get("result")
                .ok_or_else(|| anyhow::anyhow!("tools/list failed: {value}"))?;
            tools += result["tools"].as_array().map_or(0, Vec::len);
            pages += 1;
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
            if conn.is_closed() {
                conn.reopen().await?;
            }
        }
        walk_micros.push(micros(walk_started.elapsed()));
        (listed, pages_per_walk, bytes) = (tools, pages, walk_bytes);
    }
    Ok(json!({
        "workload": "tools-list-pages",
        "tools_listed": listed,
        "pages": pages_per_walk,
        "list_bytes": bytes,
        "walks": walk_micros.len(),
        "page": summary(&percentiles(&mut page_micros)),
        "walk": summary(&percentiles(&mut walk_micros)),
    }))
}

fn micros(elapsed: Duration) -> u32 {
    u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX)
}

/// What the reload comparison needs.
pub struct ReloadConfig {
    /// The server.
    pub addr: SocketAddr,
    /// Its admin address (for `mcp_reloads_total`).
    pub admin: SocketAddr,
    /// Its process.
    pub pid: Option<u32>,
    /// The manifest file it serves, which this rewrites.
    pub manifest: PathBuf,
    /// The two versions written in turn.
    pub versions: [String; 2],
    /// Time between rewrites.
    pub every: Duration,
    /// Measured time of each phase.
    pub duration: Duration,
    /// Calls per second (open loop).
    pub rate: f64,
    /// Connections.
    pub concurrency: usize,
}

/// Runs both phases and returns the record.
pub async fn reload(config: ReloadConfig) -> anyhow::Result<Value> {
    let load = LoadConfig {
        addr: config.addr,
        path: "/mcp".into(),
        workload: Workload::ModernCall,
        calls: 0,
        concurrency: config.concurrency,
        warmup: Duration::from_secs(2),
        duration: config.duration,
        rate: Some(config.rate),
        pid: config.pid,
        server: "kube-mcp".into(),
        protocol: "2026-07-28".into(),
    };
    let steady = load::run(load.clone()).await?;
    let before = reloads(config.admin).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, written) = (stop.clone(), written.clone());
        let (file, versions, every) = (config.manifest.clone(), config.versions, config.every);
        tokio::spawn(async move {
            let mut timer = tokio::time::interval(every);
            timer.tick().await;
            while !stop.load(Ordering::Relaxed) {
                timer.tick().await;
                let n = written.load(Ordering::Relaxed);
                let text = versions[usize::from(n % 2 == 1)].clone();
                let file = file.clone();
                // Written beside it and renamed over it: the server never reads half a file.
                tokio::task::spawn_blocking(move || {
                    let part = file.with_extension("yaml.part");
                    std::fs::write(&part, text)?;
                    std::fs::rename(&part, &file)
                })
                .await??;
                written.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        })
    };
    let reloading = load::run(load).await;
    stop.store(true, Ordering::Relaxed);
    writer.await??;
    let reloading = reloading?;
    // The last rewrite's reload may still be compiling.
    tokio::time::sleep(config.every).await;
    let after = reloads(config.admin).await?;
    let phase = |r: &crate::stats::Record| {
        json!({"requests": r.requests, "errors": r.errors, "rps": r.rps, "p50_ms": r.p50_ms,
               "p95_ms": r.p95_ms, "p99_ms": r.p99_ms, "max_ms": r.max_ms,
               "server_cpu_s": r.server_cpu_s, "rss_peak_mib": r.rss_peak_mib})
    };
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    Ok(json!({
        "workload": "call-during-reload",
        "rate": config.rate,
        "concurrency": config.concurrency,
        "every_s": config.every.as_secs_f64(),
        "rewrites": written.load(Ordering::Relaxed),
        "reloads": after.saturating_sub(before),
        "steady": phase(&steady),
        "reloading": phase(&reloading),
        "p50_ratio": ratio(reloading.p50_ms, steady.p50_ms),
        "p99_ratio": ratio(reloading.p99_ms, steady.p99_ms),
        "max_ratio": ratio(reloading.max_ms, steady.max_ms),
    }))
}

/// Successful reloads so far, from the admin port's `/metrics`.
async fn reloads(admin: SocketAddr) -> anyhow::Result<u64> {
    let mut conn = Conn::open(admin).await?;
    let answer = conn
        .send(&Call {
            method: Method::GET,
            path: "/metrics".into(),
            headers: Vec::new(),
            body: bytes::Bytes::new(),
        })
        .await?;
    let text = String::from_utf8_lossy(&answer.body);
    Ok(text
        .lines()
        .filter(|l| l.starts_with("mcp_reloads_total{") && l.contains("outcome=\"success\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum())
}
