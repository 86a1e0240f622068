//! The markdown report: absolute figures per workload, ratios of kube-mcp to each peer, and the
//! goals of issue 31 checked against the numbers (`goals.rs`). Pure (the caller reads and writes
//! files).

use crate::goals;
use crate::stats::Record;
use std::fmt::Write as _;

/// The server whose ratios to the others are reported.
pub const OURS: &str = "kube-mcp";
/// The floor's server name (`mcp-bench-floor`, see bench/src/floor.rs).
pub const FLOOR: &str = "floor";

/// Workloads compared in one table: same shape of traffic, each server on the protocol it speaks.
const GROUPS: &[(&str, &[&str])] = &[
    (
        "Stateless `tools/call` (one POST per call, no session)",
        &["modern-call", "sessionless-call"],
    ),
    (
        "Stateless `resources/read`",
        &["modern-read", "sessionless-read"],
    ),
    (
        "Legacy Streamable HTTP session flow (initialize, initialized, tool calls, DELETE)",
        &["legacy-flow"],
    ),
    (
        "HTTP+SSE session flow (GET /sse, initialize, initialized, tool calls, each answer read from the stream)",
        &["sse-flow"],
    ),
];

const IDLE: &[(&str, &str)] = &[
    ("idle-sse", "Idle HTTP+SSE sessions (`GET /sse` held open)"),
    (
        "idle-streamable",
        "Idle Streamable HTTP sessions (initialize + `GET /mcp` stream held open)",
    ),
];

/// Renders the report.
pub fn render(records: &[Record], machine: &str, notes: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# kube-mcp benchmark results\n");
    let _ = writeln!(out, "{}\n", machine.trim());
    if !notes.trim().is_empty() {
        let _ = writeln!(out, "{}\n", notes.trim());
    }
    goals::goals(&mut out, records);
    for (title, workloads) in GROUPS {
        let rows: Vec<&Record> = records
            .iter()
            .filter(|r| {
                r.rate.is_none()
                    && workloads.contains(&r.workload.as_str())
                    && !goals::OWN_TABLES.contains(&r.server.as_str())
                    && !r.protocol.ends_with(goals::PEAK_LABEL)
            })
            .collect();
        if !rows.is_empty() {
            load_table(&mut out, title, &rows);
        }
    }
    // Open-loop runs are in the tail-latency table.
    goals::tables(&mut out, records);
    for (workload, title) in IDLE {
        let rows: Vec<&Record> = records.iter().filter(|r| r.workload == *workload).collect();
        if !rows.is_empty() {
            idle_table(&mut out, title, &rows);
        }
    }
    out
}

fn ours<'a>(rows: &[&'a Record], concurrency: usize) -> Option<&'a Record> {
    rows.iter()
        .copied()
        .find(|r| r.server == OURS && r.concurrency == concurrency)
}

fn ratio(ours: f64, theirs: f64) -> String {
    if theirs > 0.0 && ours > 0.0 {
        format!("{:.1}x", ours / theirs)
    } else {
        "n/a".into()
    }
}

fn load_table(out: &mut String, title: &str, rows: &[&Record]) {
    let _ = writeln!(out, "## {title}\n");
    let _ = writeln!(
        out,
        "| server | protocol | conc. | rate | req/s | sessions/s | p50 ms | p95 ms | p99 ms | p99.9 ms | errors | server CPU µs/req | peak RSS MiB | kube-mcp req/s ÷ this | this CPU/req ÷ kube-mcp |"
    );
    let _ = writeln!(
        out,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in rows {
        let base = ours(rows, r.concurrency);
        let (speed, cost) = match base {
            Some(b) if r.server != OURS => (
                ratio(b.rps, r.rps),
                ratio(r.cpu_us_per_req, b.cpu_us_per_req),
            ),
            _ => ("—".into(), "—".into()),
        };
        let sessions = if r.sessions > 0 {
            format!("{:.0}", r.sessions as f64 / r.seconds)
        } else {
            "—".into()
        };
        let rate = r.rate.map_or("max".into(), |rate| format!("{rate:.0}"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.0} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.0} | {:.1} | {} | {} |",
            r.server,
            r.protocol,
            r.concurrency,
            rate,
            r.rps,
            sessions,
            r.p50_ms,
            r.p95_ms,
            r.p99_ms,
            r.p999_ms,
            r.errors,
            r.cpu_us_per_req,
            r.rss_peak_mib,
            speed,
            cost
        );
    }
    let _ = writeln!(out);
}

fn idle_table(out: &mut String, title: &str, rows: &[&Record]) {
    let _ = writeln!(out, "## {title}\n");
    let _ = writeln!(
        out,
        "| server | protocol | sessions asked | held open | errors | open time s | RSS idle MiB | peak RSS MiB | this RSS growth ÷ kube-mcp | notes |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in rows {
        let growth = |r: &Record| r.rss_peak_mib - r.rss_before_mib;
        let versus = match ours(rows, r.concurrency) {
            Some(b) if r.server != OURS => ratio(growth(r), growth(b)),
            _ => "—".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} |",
            r.server,
            r.protocol,
            r.concurrency,
            r.sessions,
            r.errors,
            r.seconds,
            r.rss_before_mib,
            r.rss_peak_mib,
            versus,
            r.note
        );
    }
    let _ = writeln!(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(server: &str, workload: &str, rps: f64) -> Record {
        Record {
            server: server.into(),
            workload: workload.into(),
            protocol: "p".into(),
            concurrency: 64,
            seconds: 10.0,
            requests: (rps * 10.0) as u64,
            rps,
            cpu_us_per_req: 1e6 / rps,
            ..Record::default()
        }
    }

    #[test]
    fn ratios_to_the_peers() {
        let records = [
            record(OURS, "modern-call", 20_000.0),
            record("typescript-sdk", "sessionless-call", 2_000.0),
            record("python-sdk", "modern-call", 500.0),
            record(goals::PROXY, "modern-call", 500.0),
        ];
        let text = render(&records, "machine", "");
        assert!(text.contains("| 10.0x |"), "{text}");
        assert!(text.contains("| 40.0x |"), "{text}");
        assert!(text.contains("## Goals (issue 31)"), "{text}");
        assert!(!text.contains("issue 5"), "{text}");
        // The proxy floor has its own table, not a row beside the SDKs.
        assert!(!text.contains("| proxy-floor | p |"), "{text}");
        assert!(text.contains("| proxy-floor | 64 | 500 |"), "{text}");
    }

    #[test]
    fn the_floor_goal() {
        let mut ours = record(OURS, "modern-call", 20_000.0);
        ours.cpu_us_per_req = 16.0;
        let mut floor = record(FLOOR, "modern-call", 40_000.0);
        floor.cpu_us_per_req = 10.0;
        let text = render(&[ours.clone(), floor.clone()], "machine", "");
        assert!(
            text.contains(
                "≤ 1.2x the bare-axum floor's | 1.60x (16.0 vs 10.0 µs/req) | **missed** by 33% |"
            ),
            "{text}"
        );
        ours.cpu_us_per_req = 11.0;
        let text = render(&[ours, floor], "machine", "");
        assert!(
            text.contains("1.10x (11.0 vs 10.0 µs/req) | met (8% under) |"),
            "{text}"
        );
    }
}
