//! Request workloads: `concurrency` workers, each on its own keep-alive connection, either as
//! fast as the server answers (closed loop) or at a fixed total rate (open loop, latency measured
//! from each request's scheduled start, so a stalled server cannot hide its queueing). Does I/O.

use crate::conn::{Call, Conn, SseReader};
use crate::mcp::{self, Expect};
use crate::procfs::{self, Sampler};
use crate::stats::{Record, mib, percentiles};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// What each worker repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// 2026-07-28 stateless `tools/call`.
    ModernCall,
    /// 2026-07-28 stateless `resources/read`.
    ModernRead,
    /// Session-less `tools/call` under 2025-11-25 (SDKs' stateless mode without 2026-07-28).
    SessionlessCall,
    /// Session-less `resources/read` under 2025-11-25.
    SessionlessRead,
    /// Legacy Streamable HTTP: initialize, initialized, `--calls` tool calls, DELETE.
    LegacyFlow,
    /// HTTP+SSE (2024-11-05): `GET /sse`, then initialize, initialized and `--calls` tool calls
    /// POSTed to the endpoint with each response read from the stream; then the stream closes.
    SseFlow,
}

/// A load run.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// Server address.
    pub addr: SocketAddr,
    /// MCP endpoint path.
    pub path: String,
    /// The workload.
    pub workload: Workload,
    /// Tool calls per legacy session.
    pub calls: usize,
    /// Connections.
    pub concurrency: usize,
    /// Unmeasured warm-up.
    pub warmup: Duration,
    /// Measured time.
    pub duration: Duration,
    /// Total requests per second (open loop); `None` runs closed loop.
    pub rate: Option<f64>,
    /// Server process to sample.
    pub pid: Option<u32>,
    /// Server label.
    pub server: String,
    /// Protocol label.
    pub protocol: String,
}

/// How late a timer may fire before an open-loop request counts as sent late.
const TIMER_SLACK: Duration = Duration::from_millis(2);

/// Longest wait for one answer before it counts as an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Tally {
    micros: Vec<u32>,
    requests: u64,
    sessions: u64,
    errors: u64,
}

/// Window of the measurement, shared by the workers.
struct Window {
    start: Instant,
    end: Instant,
}

impl Window {
    fn counts(&self, at: Instant) -> bool {
        at >= self.start && at <= self.end
    }
}

/// Runs the workload and summarizes it.
pub async fn run(config: LoadConfig) -> anyhow::Result<Record> {
    let config = Arc::new(config);
    let begin = Instant::now();
    let window = Arc::new(Window {
        start: begin + config.warmup,
        end: begin + config.warmup + config.duration,
    });
    let mut workers = Vec::with_capacity(config.concurrency);
    for index in 0..config.concurrency {
        let (config, window) = (config.clone(), window.clone());
        workers.push(tokio::spawn(async move {
            worker(&config, &window, index).await
        }));
    }
    let sampler = Sampler::start(config.pid, Duration::from_millis(100));
    let rss_before = sampler.now().rss;
    tokio::time::sleep_until(window.start).await;
    let (server_start, client_start) = (sampler.now().cpu, procfs::own_cpu());
    tokio::time::sleep_until(window.end).await;
    let (server_end, client_end) = (sampler.now().cpu, procfs::own_cpu());
    let rss_peak = sampler.stop();
    let mut total = Tally::default();
    for worker in workers {
        let tally = worker.await??;
        total.micros.extend(tally.micros);
        total.requests += tally.requests;
        total.sessions += tally.sessions;
        total.errors += tally.errors;
    }
    let seconds = config.duration.as_secs_f64();
    let p = percentiles(&mut total.micros);
    let server_cpu = server_end - server_start;
    Ok(Record {
        server: config.server.clone(),
        workload: workload_name(config.workload).to_owned(),
        protocol: config.protocol.clone(),
        concurrency: config.concurrency,
        rate: config.rate,
        seconds,
        requests: total.requests,
        sessions: total.sessions,
        errors: total.errors,
        rps: total.requests as f64 / seconds,
        p50_ms: p.p50,
        p95_ms: p.p95,
        p99_ms: p.p99,
        p999_ms: p.p999,
        max_ms: p.max,
        server_cpu_s: server_cpu,
        cpu_us_per_req: if total.requests > 0 {
            server_cpu * 1e6 / total.requests as f64
        } else {
            0.0
        },
        rss_peak_mib: mib(rss_peak),
        rss_before_mib: mib(rss_before),
        client_cpu_s: client_end - client_start,
        ..Record::default()
    })
}

/// The workload's name in records.
pub fn workload_name(workload: Workload) -> &'static str {
    match workload {
        Workload::ModernCall => "modern-call",
        Workload::ModernRead => "modern-read",
        Workload::SessionlessCall => "sessionless-call",
        Workload::SessionlessRead => "sessionless-read",
        Workload::LegacyFlow => "legacy-flow",
        Workload::SseFlow => "sse-flow",
    }
}

async fn worker(config: &LoadConfig, window: &Window, index: usize) -> anyhow::Result<Tally> {
    let mut conn = Conn::open(config.addr).await?;
    let mut tally = Tally::default();
    let mut id = 0u64;
    // Open loop: worker `index` owns every `concurrency`-th slot of the schedule.
    let interval = config
        .rate
        .map(|rate| Duration::from_secs_f64(config.concurrency as f64 / rate));
    let offset = config
        .rate
        .map(|rate| Duration::from_secs_f64(index as f64 / rate));
    let begin = Instant::now();
    let mut slot = 0u32;
    loop {
        let scheduled = match (interval, offset) {
            (Some(interval), Some(offset)) => {
                let at = begin + offset + interval * slot;
                slot += 1;
                tokio::time::sleep_until(at).await;
                at
            }
            _ => Instant::now(),
        };
        if scheduled > window.end {
            break;
        }
        id += 1;
        if config.workload == Workload::LegacyFlow {
            legacy_flow(config, window, &mut conn, &mut tally, id).await;
            continue;
        }
        if config.workload == Workload::SseFlow {
            let ok = tokio::time::timeout(
                REQUEST_TIMEOUT * 2,
                sse_flow(config, window, &mut conn, &mut tally),
            )
            .await
            .is_ok_and(|ok| ok);
            if !ok {
                tally.errors += 1;
            } else if window.counts(Instant::now()) {
                tally.sessions += 1;
            }
            continue;
        }
        let (call, expect) = match config.workload {
            Workload::ModernCall => (mcp::modern_call(&config.path, id), Expect::Echo),
            Workload::ModernRead => (mcp::modern_read(&config.path, id), Expect::Resource),
            Workload::SessionlessCall => (mcp::sessionless_call(&config.path, id), Expect::Echo),
            Workload::SessionlessRead => {
                (mcp::sessionless_read(&config.path, id), Expect::Resource)
            }
            Workload::LegacyFlow | Workload::SseFlow => unreachable!("handled above"),
        };
        let sent = Instant::now();
        // Tokio's timers wake up to a millisecond late: lateness within TIMER_SLACK is the
        // generator's, so latency counts from the send; a later send means the previous request
        // on this connection overran its slot, and latency counts from the scheduled start.
        let origin = if sent.saturating_duration_since(scheduled) <= TIMER_SLACK {
            sent
        } else {
            scheduled
        };
        let ok = exchange(&mut conn, &call, expect).await.is_some();
        let done = Instant::now();
        if window.counts(done) {
            record(&mut tally, ok, done - origin);
        }
    }
    Ok(tally)
}

fn record(tally: &mut Tally, ok: bool, latency: Duration) {
    if ok {
        tally.requests += 1;
        tally
            .micros
            .push(u32::try_from(latency.as_micros()).unwrap_or(u32::MAX));
    } else {
        tally.errors += 1;
    }
}

/// One request; `None` on any failure (the connection is reopened when it broke).
async fn exchange(conn: &mut Conn, call: &Call, expect: Expect) -> Option<crate::conn::Answer> {
    if conn.is_closed() && conn.reopen().await.is_err() {
        return None;
    }
    match tokio::time::timeout(REQUEST_TIMEOUT, conn.send(call)).await {
        Ok(Ok(answer)) if mcp::ok(&answer, expect) => Some(answer),
        Ok(Ok(_)) => None,
        _ => {
            let _ = conn.reopen().await;
            None
        }
    }
}

async fn legacy_flow(
    config: &LoadConfig,
    window: &Window,
    conn: &mut Conn,
    tally: &mut Tally,
    id: u64,
) {
    let path = &config.path;
    let mut timed = async |call: Call, expect: Expect, tally: &mut Tally| {
        let started = Instant::now();
        let answer = exchange(conn, &call, expect).await;
        let done = Instant::now();
        if window.counts(done) {
            record(tally, answer.is_some(), done - started);
        }
        answer
    };
    let Some(session) = timed(mcp::initialize(path), Expect::Accepted, tally)
        .await
        .and_then(|a| mcp::session_id(&a))
    else {
        return;
    };
    let mut ok = timed(mcp::initialized(path, &session), Expect::Accepted, tally)
        .await
        .is_some();
    for call in 0..config.calls {
        if !ok {
            break;
        }
        let call_id = id * 1000 + call as u64 + 1;
        ok = timed(
            mcp::legacy_call(path, Some(&session), call_id),
            Expect::Echo,
            tally,
        )
        .await
        .is_some();
    }
    // End the session even after a failure, so sessions do not pile up on the server.
    let deleted = timed(mcp::delete(path, &session), Expect::Accepted, tally)
        .await
        .is_some();
    if ok && deleted && window.counts(Instant::now()) {
        tally.sessions += 1;
    }
}

/// One HTTP+SSE session; `false` when any step failed. The stream has its own connection; the
/// POSTs go on the worker's keep-alive connection.
async fn sse_flow(
    config: &LoadConfig,
    window: &Window,
    conn: &mut Conn,
    tally: &mut Tally,
) -> bool {
    let Ok(mut stream_conn) = Conn::open(config.addr).await else {
        return false;
    };
    let started = Instant::now();
    let Ok(response) = stream_conn
        .start(&mcp::get_stream(&config.path, None))
        .await
    else {
        return false;
    };
    if !response.status().is_success() {
        return false;
    }
    let mut events = SseReader::new(response.into_body());
    let Ok(endpoint) = events.next_data().await else {
        return false;
    };
    let done = Instant::now();
    if window.counts(done) {
        record(tally, true, done - started);
    }
    let mut steps = vec![(mcp::sse_initialize_body(), Some(0))];
    steps.push((mcp::initialized_body(), None));
    for call in 0..config.calls {
        let id = call as u64 + 1;
        steps.push((mcp::call_body(id), Some(id)));
    }
    for (body, id) in steps {
        let started = Instant::now();
        let posted = exchange(conn, &mcp::sse_message(&endpoint, body), Expect::Accepted).await;
        let ok = match (posted, id) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(_), Some(id)) => loop {
                match events.next_data().await {
                    Ok(data) => match mcp::is_response(&data, id) {
                        Some(ok) => break ok,
                        None => continue,
                    },
                    Err(_) => break false,
                }
            },
        };
        let done = Instant::now();
        if window.counts(done) {
            record(tally, ok, done - started);
        }
        if !ok {
            return false;
        }
    }
    true
}
