//! Start to ready: spawns a server command, polls its admin `/readyz` every 2 ms until it answers
//! 200, and stops the process by its PID; the median over a few runs. Spawns processes and does
//! socket I/O on loopback; every wait is bounded.

use crate::conn::{Call, Conn};
use crate::stats::Record;
use bytes::Bytes;
use http::Method;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;
use tokio::time::Instant;

/// A start-to-ready measurement.
#[derive(Clone, Debug)]
pub struct ReadyConfig {
    /// The admin address whose `/readyz` says ready.
    pub admin: SocketAddr,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Runs (the record holds their median).
    pub runs: usize,
    /// Longest wait for one run.
    pub timeout: Duration,
    /// What was started, as the report names it.
    pub label: String,
}

const POLL: Duration = Duration::from_millis(2);

/// Runs the command `runs` times and summarizes the times to ready.
pub async fn run(config: ReadyConfig) -> anyhow::Result<Record> {
    let (program, args) = config
        .command
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("no command to start"))?;
    let mut times = Vec::with_capacity(config.runs);
    for _ in 0..config.runs {
        let started = Instant::now();
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let outcome = loop {
            if ready(config.admin).await {
                break Ok(started.elapsed());
            }
            if let Some(status) = child.try_wait()? {
                break Err(anyhow::anyhow!(
                    "{} exited before ready: {status}",
                    config.label
                ));
            }
            if started.elapsed() > config.timeout {
                break Err(anyhow::anyhow!(
                    "{} not ready within {:?}",
                    config.label,
                    config.timeout
                ));
            }
            tokio::time::sleep(POLL).await;
        };
        // Stopped by its PID (SIGKILL: only the time to ready is measured), and reaped.
        let _ = child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
        times.push(outcome?.as_secs_f64() * 1000.0);
    }
    Ok(summarize(&config.label, &times))
}

/// The record of the times to ready, milliseconds.
pub fn summarize(label: &str, times: &[f64]) -> Record {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    };
    let list: Vec<String> = times.iter().map(|t| format!("{t:.1}")).collect();
    Record {
        server: label.to_owned(),
        workload: "start-to-ready".into(),
        protocol: "process start to /readyz 200".into(),
        concurrency: 1,
        requests: times.len() as u64,
        p50_ms: median,
        max_ms: sorted.last().copied().unwrap_or_default(),
        note: format!("runs (ms): {}", list.join(", ")),
        ..Record::default()
    }
}

async fn ready(admin: SocketAddr) -> bool {
    let probe = async {
        let mut conn = Conn::open(admin).await.ok()?;
        let call = Call {
            method: Method::GET,
            path: "/readyz".into(),
            headers: Vec::new(),
            body: Bytes::new(),
        };
        conn.send(&call).await.ok()
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(1), probe).await,
        Ok(Some(answer)) if answer.status.is_success()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_runs() {
        let record = summarize("x", &[30.0, 10.0, 20.0]);
        assert_eq!(
            (record.p50_ms, record.max_ms, record.requests),
            (20.0, 30.0, 3)
        );
        assert_eq!(summarize("x", &[10.0, 20.0]).p50_ms, 15.0);
    }
}
