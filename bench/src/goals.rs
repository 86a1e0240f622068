//! The goals of issue 31 checked against the records, and the tables of the figures they are
//! judged on: instructions per call (callgrind), the HTTP-backed tool beside its proxy floor, tail
//! latency at 50% and 90% of each server's peak, the idle-session scale curve, start to ready and
//! the binary size. Pure (the caller reads and writes files).

use crate::report::{FLOOR, OURS};
use crate::stats::Record;
use std::fmt::Write as _;

/// kube-mcp serving `bench/manifest-http.yaml` (the echo tool backed by a loopback upstream).
pub const OURS_HTTP: &str = "kube-mcp-http-tool";
/// The floor of that shape: bare axum and a keep-alive client (`mcp-bench-floor proxy`).
pub const PROXY: &str = "proxy-floor";
/// kube-mcp under callgrind with `spec.auth` (bench/auth.sh), and without (same script).
pub const OURS_AUTH: &str = "kube-mcp-auth";
/// kube-mcp without `spec.auth`, measured by bench/auth.sh beside [`OURS_AUTH`].
pub const OURS_NO_AUTH: &str = "kube-mcp-no-auth";

/// Record kinds written by scripts through `mcp-bench record`.
pub const CALLGRIND: &str = "callgrind-call";
/// The release binary's size.
pub const BINARY_SIZE: &str = "binary-size";
/// An idle size that does not fit this machine (protocol: the idle workload it would have been).
pub const NOT_RUN: &str = "not-run";
/// Start to ready (`mcp-bench ready`).
pub const READY: &str = "start-to-ready";

/// Servers shown in their own tables rather than beside the SDK peers.
pub const OWN_TABLES: &[&str] = &[OURS_HTTP, PROXY];

const CPU_FLOOR: f64 = 1.2;
const INSTRUCTIONS: f64 = 40_000.0;
const AUTH: f64 = 1.05;
const HTTP_TOOL: f64 = 1.3;
const IDLE_MIB: f64 = 64.0;
const IDLE_SESSIONS: usize = 10_000;
const TAIL: f64 = 2.0;

/// "met" or "**missed** by N%" for a figure that must be at most `limit`.
pub fn judge(measured: f64, limit: f64) -> String {
    if measured <= limit {
        let margin = (1.0 - measured / limit) * 100.0;
        format!("met ({margin:.0}% under)")
    } else {
        let over = (measured / limit - 1.0) * 100.0;
        format!("**missed** by {over:.0}%")
    }
}

/// The server's closed-loop run of `workload` (the load or floor stage's rather than the tail
/// stage's peak run, when there are both).
fn closed<'a>(records: &'a [Record], server: &str, workload: &str) -> Option<&'a Record> {
    let mut runs = records.iter().rev().filter(|r| {
        r.server == server && r.workload == workload && r.rate.is_none() && r.errors == 0
    });
    let first = runs.clone().next();
    runs.find(|r| !r.protocol.ends_with(PEAK_LABEL)).or(first)
}

fn callgrind<'a>(records: &'a [Record], server: &str) -> Option<&'a Record> {
    records
        .iter()
        .rev()
        .find(|r| r.server == server && r.workload == CALLGRIND)
        .filter(|r| r.instructions_per_req.is_some())
}

/// Protocol label of the closed-loop run the tail stage measures right before its paced runs.
pub const PEAK_LABEL: &str = "peak before the paced runs";

/// The open-loop runs of `server`'s stateless call with their share of its closed-loop peak: the
/// closest closed-loop run of the same server recorded before each (the same process, when the
/// tail stage measured it), else its last one.
fn paced<'a>(records: &'a [Record], server: &str) -> Vec<(f64, &'a Record)> {
    let is_peak = |r: &Record| {
        r.server == server && r.workload == "modern-call" && r.rate.is_none() && r.rps > 0.0
    };
    let last = records.iter().rev().find(|r| is_peak(r));
    records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.server == server && r.workload == "modern-call")
        .filter_map(|(i, r)| {
            let rate = r.rate?;
            let peak = records[..i].iter().rev().find(|p| is_peak(p)).or(last)?;
            Some((rate / peak.rps, r))
        })
        .collect()
}

fn at_share<'a>(records: &'a [Record], server: &str, share: f64) -> Option<&'a Record> {
    paced(records, server)
        .into_iter()
        .find(|(s, _)| (s - share).abs() < 0.05)
        .map(|(_, r)| r)
}

fn growth(r: &Record) -> f64 {
    r.rss_peak_mib - r.rss_before_mib
}

/// The goals table.
pub fn goals(out: &mut String, records: &[Record]) {
    let _ = writeln!(out, "## Goals (issue 31)\n");
    let _ = writeln!(out, "| goal | measured | verdict |");
    let _ = writeln!(out, "|---|---|---|");
    let rows = [
        (
            format!("stateless tools/call, c=64: server CPU ≤ {CPU_FLOOR}x the bare-axum floor's"),
            cpu_ratio(records, OURS, FLOOR, CPU_FLOOR),
        ),
        (
            format!("stateless tools/call: ≤ {INSTRUCTIONS:.0} instructions per call (callgrind)"),
            instructions(records),
        ),
        (
            format!("with `spec.auth` (cached token): ≤ {AUTH}x the instructions without"),
            auth(records),
        ),
        (
            format!(
                "HTTP-backed tool (loopback upstream), c=64: server CPU ≤ {HTTP_TOOL}x a bare axum proxy's"
            ),
            cpu_ratio(records, OURS_HTTP, PROXY, HTTP_TOOL),
        ),
        (
            format!(
                "{IDLE_SESSIONS} idle HTTP+SSE sessions: ≤ {IDLE_MIB:.0} MiB RSS above the idle process"
            ),
            idle(records),
        ),
        (
            format!("p99 at 50% of peak ≤ {TAIL}x the floor's p99 at 50% of its peak"),
            tail(records),
        ),
    ];
    for (goal, judged) in rows {
        let (measured, verdict) =
            judged.unwrap_or_else(|| ("not measured in this run".into(), "—".into()));
        let _ = writeln!(out, "| {goal} | {measured} | {verdict} |");
    }
    let _ = writeln!(out);
}

/// A goal's measured figure and verdict, `None` when the run did not measure it.
type Judged = Option<(String, String)>;

/// `ours`'s server CPU per stateless call against `base`'s, at most `limit` times.
fn cpu_ratio(records: &[Record], ours: &str, base: &str, limit: f64) -> Judged {
    let ours = closed(records, ours, "modern-call")?;
    let base = closed(records, base, "modern-call").filter(|b| b.cpu_us_per_req > 0.0)?;
    let times = ours.cpu_us_per_req / base.cpu_us_per_req;
    Some((
        format!(
            "{times:.2}x ({:.1} vs {:.1} µs/req)",
            ours.cpu_us_per_req, base.cpu_us_per_req
        ),
        judge(times, limit),
    ))
}

fn instructions(records: &[Record]) -> Judged {
    let n = callgrind(records, OURS)?
        .instructions_per_req
        .unwrap_or_default();
    let floor = callgrind(records, FLOOR)
        .and_then(|f| f.instructions_per_req)
        .map_or(String::new(), |f| {
            format!("; the floor {f:.0}, {:.2}x", n / f.max(1.0))
        });
    Some((format!("{n:.0}{floor}"), judge(n, INSTRUCTIONS)))
}

fn auth(records: &[Record]) -> Judged {
    let count =
        |server| callgrind(records, server).map(|r| r.instructions_per_req.unwrap_or_default());
    let (a, p) = (count(OURS_AUTH)?, count(OURS_NO_AUTH)?);
    let times = a / p.max(1.0);
    Some((
        format!("{times:.3}x ({a:.0} vs {p:.0} instructions)"),
        judge(times, AUTH),
    ))
}

fn idle(records: &[Record]) -> Judged {
    let r = records
        .iter()
        .rev()
        .find(|r| r.server == OURS && r.workload == "idle-sse" && r.concurrency == IDLE_SESSIONS)?;
    if r.sessions as usize != r.concurrency {
        return Some((
            format!(
                "{} of {} sessions held, {} errors",
                r.sessions, r.concurrency, r.errors
            ),
            "**missed** (sessions failed)".into(),
        ));
    }
    Some((
        format!(
            "{:.1} MiB ({:.1} → {:.1} MiB, {:.1} KiB per session)",
            growth(r),
            r.rss_before_mib,
            r.rss_peak_mib,
            growth(r) * 1024.0 / r.concurrency as f64
        ),
        judge(growth(r), IDLE_MIB),
    ))
}

fn tail(records: &[Record]) -> Judged {
    let ours = at_share(records, OURS, 0.5)?;
    let floor = at_share(records, FLOOR, 0.5).filter(|f| f.p99_ms > 0.0)?;
    let times = ours.p99_ms / floor.p99_ms;
    let verdict = if ours.errors > 0 {
        format!("**missed** ({} errors)", ours.errors)
    } else {
        judge(times, TAIL)
    };
    Some((
        format!(
            "{times:.2}x ({:.2} ms at {:.0} req/s vs {:.2} ms at {:.0} req/s)",
            ours.p99_ms,
            ours.rate.unwrap_or_default(),
            floor.p99_ms,
            floor.rate.unwrap_or_default()
        ),
        verdict,
    ))
}

/// The tables of issue 31's figures (each only when its records are there).
pub fn tables(out: &mut String, records: &[Record]) {
    instructions_table(out, records);
    http_tool_table(out, records);
    tail_table(out, records);
    scale_table(out, records);
    ready_table(out, records);
}

fn instructions_table(out: &mut String, records: &[Record]) {
    let rows: Vec<&Record> = [OURS, FLOOR, OURS_NO_AUTH, OURS_AUTH]
        .iter()
        .filter_map(|s| callgrind(records, s))
        .collect();
    if rows.is_empty() {
        return;
    }
    let floor = callgrind(records, FLOOR).and_then(|f| f.instructions_per_req);
    let _ = writeln!(
        out,
        "## Instructions per stateless `tools/call` (callgrind, profiling build)\n"
    );
    let _ = writeln!(
        out,
        "| server | how | requests measured | instructions per call | ÷ floor |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|");
    for r in rows {
        let n = r.instructions_per_req.unwrap_or_default();
        let versus = match floor {
            Some(f) if r.server != FLOOR && f > 0.0 => format!("{:.2}x", n / f),
            _ => "—".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {n:.0} | {versus} |",
            r.server, r.protocol, r.requests
        );
    }
    let _ = writeln!(out);
}

fn http_tool_table(out: &mut String, records: &[Record]) {
    let rows: Vec<&Record> = [OURS_HTTP, PROXY]
        .iter()
        .filter_map(|s| {
            records
                .iter()
                .rev()
                .find(|r| r.server == *s && r.workload == "modern-call" && r.rate.is_none())
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let proxy = rows.iter().find(|r| r.server == PROXY).copied();
    let _ = writeln!(
        out,
        "## HTTP-backed tool (stateless `tools/call` of `echo` POSTing to a loopback upstream)\n"
    );
    let _ = writeln!(
        out,
        "The upstream (`mcp-bench-floor upstream`) is a separate process whose CPU is not counted.\n"
    );
    let _ = writeln!(
        out,
        "| server | conc. | req/s | p50 ms | p99 ms | p99.9 ms | errors | server CPU µs/req | CPU ÷ proxy |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let versus = match proxy {
            Some(p) if r.server != PROXY && p.cpu_us_per_req > 0.0 => {
                format!("{:.2}x", r.cpu_us_per_req / p.cpu_us_per_req)
            }
            _ => "—".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {:.1} | {versus} |",
            r.server,
            r.concurrency,
            r.rps,
            r.p50_ms,
            r.p99_ms,
            r.p999_ms,
            r.errors,
            r.cpu_us_per_req
        );
    }
    let _ = writeln!(out);
}

fn tail_table(out: &mut String, records: &[Record]) {
    let servers = [OURS, "rmcp", FLOOR];
    let rows: Vec<(&str, f64, &Record)> = servers
        .iter()
        .flat_map(|s| paced(records, s).into_iter().map(move |(f, r)| (*s, f, r)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Tail latency at 50% and 90% of each server's peak (stateless `tools/call`, open loop)\n"
    );
    let _ = writeln!(
        out,
        "Peak: the server's own closed-loop req/s, measured in the same process right before; latency from each request's \
         scheduled start (no coordinated omission).\n"
    );
    let _ = writeln!(
        out,
        "| server | share of peak | rate req/s | achieved req/s | p50 ms | p99 ms | p99.9 ms | errors | p99 ÷ floor's at the same share |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (server, share, r) in rows {
        let versus = match at_share(records, FLOOR, share) {
            Some(f) if server != FLOOR && f.p99_ms > 0.0 => format!("{:.2}x", r.p99_ms / f.p99_ms),
            _ => "—".into(),
        };
        let _ = writeln!(
            out,
            "| {server} | {:.0}% | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {versus} |",
            share * 100.0,
            r.rate.unwrap_or_default(),
            r.rps,
            r.p50_ms,
            r.p99_ms,
            r.p999_ms,
            r.errors
        );
    }
    let _ = writeln!(out);
}

/// Least-squares slope of RSS growth (KiB) over sessions, for the runs that held every session.
pub fn slope_kib(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return points.first().map(|(n, kib)| kib / n.max(1.0));
    }
    let n = points.len() as f64;
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let var: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    (var > 0.0).then(|| points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / var)
}

fn scale_table(out: &mut String, records: &[Record]) {
    let modes = [
        ("idle-streamable", "Streamable HTTP (`GET /mcp`)"),
        ("idle-sse", "HTTP+SSE (`GET /sse`)"),
    ];
    let any = records.iter().any(|r| {
        (r.server == OURS && modes.iter().any(|(w, _)| r.workload == *w)) || r.workload == NOT_RUN
    });
    if !any {
        return;
    }
    let _ = writeln!(
        out,
        "## Idle sessions: kube-mcp's scale curve (one fresh process per point)\n"
    );
    let _ = writeln!(
        out,
        "| stream | sessions | held | errors | RSS idle MiB | peak RSS MiB | growth MiB | KiB per session |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut slopes = Vec::new();
    for (workload, label) in modes {
        let mut rows: Vec<&Record> = records
            .iter()
            .filter(|r| {
                r.server == OURS
                    && (r.workload == workload || (r.workload == NOT_RUN && r.protocol == workload))
            })
            .collect();
        rows.sort_by_key(|r| r.concurrency);
        let mut points = Vec::new();
        for r in rows {
            if r.workload == NOT_RUN {
                let _ = writeln!(
                    out,
                    "| {label} | {} | — | — | — | — | — | {} |",
                    r.concurrency, r.note
                );
                continue;
            }
            let kib = growth(r) * 1024.0;
            if r.sessions as usize == r.concurrency && r.concurrency > 0 {
                points.push((r.concurrency as f64, kib));
            }
            let _ = writeln!(
                out,
                "| {label} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
                r.concurrency,
                r.sessions,
                r.errors,
                r.rss_before_mib,
                r.rss_peak_mib,
                growth(r),
                kib / r.concurrency.max(1) as f64
            );
        }
        if let Some(slope) = slope_kib(&points) {
            slopes.push(format!(
                "{label}: {slope:.1} KiB per session (least squares over {} sizes; 100,000 \
                 sessions would add ~{:.0} MiB)",
                points.len(),
                slope * 100_000.0 / 1024.0
            ));
        }
    }
    let _ = writeln!(out);
    for slope in slopes {
        let _ = writeln!(out, "- {slope}");
    }
    let _ = writeln!(out);
}

fn ready_table(out: &mut String, records: &[Record]) {
    let rows: Vec<&Record> = records.iter().filter(|r| r.workload == READY).collect();
    let size = records.iter().rev().find(|r| r.workload == BINARY_SIZE);
    if rows.is_empty() && size.is_none() {
        return;
    }
    let _ = writeln!(out, "## Start to ready, binary size (tracked, no goal)\n");
    if !rows.is_empty() {
        let _ = writeln!(
            out,
            "| declaration | runs | median ms | max ms | notes |\n|---|---:|---:|---:|---|"
        );
        for r in rows {
            let _ = writeln!(
                out,
                "| {} | {} | {:.1} | {:.1} | {} |",
                r.server, r.requests, r.p50_ms, r.max_ms, r.note
            );
        }
        let _ = writeln!(out);
    }
    if let Some(size) = size {
        let bytes = size.bytes.unwrap_or_default();
        let _ = writeln!(
            out,
            "Release binary `{}`: {bytes} bytes ({:.1} MiB){}.\n",
            size.server,
            bytes as f64 / (1024.0 * 1024.0),
            if size.note.is_empty() {
                String::new()
            } else {
                format!(", {}", size.note)
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(server: &str, rps: f64, cpu: f64, rate: Option<f64>, p99: f64) -> Record {
        Record {
            server: server.into(),
            workload: "modern-call".into(),
            concurrency: 64,
            seconds: 10.0,
            rps,
            cpu_us_per_req: cpu,
            rate,
            p99_ms: p99,
            ..Record::default()
        }
    }

    fn counted(server: &str, instructions: f64) -> Record {
        Record {
            server: server.into(),
            workload: CALLGRIND.into(),
            requests: 1000,
            instructions_per_req: Some(instructions),
            ..Record::default()
        }
    }

    fn idle(workload: &str, sessions: usize, growth: f64) -> Record {
        Record {
            server: OURS.into(),
            workload: workload.into(),
            concurrency: sessions,
            sessions: sessions as u64,
            rss_before_mib: 20.0,
            rss_peak_mib: 20.0 + growth,
            ..Record::default()
        }
    }

    #[test]
    fn judging_says_by_how_much() {
        assert_eq!(judge(1.0, 1.2), "met (17% under)");
        assert_eq!(judge(1.5, 1.2), "**missed** by 25%");
        assert_eq!(judge(40_000.0, 40_000.0), "met (0% under)");
    }

    #[test]
    fn every_goal_met() {
        let records = [
            load(OURS, 10_000.0, 11.0, None, 1.0),
            load(FLOOR, 20_000.0, 10.0, None, 1.0),
            load(OURS, 5_000.0, 11.0, Some(5_000.0), 0.9),
            load(FLOOR, 10_000.0, 10.0, Some(10_000.0), 0.5),
            counted(OURS, 38_000.0),
            counted(FLOOR, 25_000.0),
            counted(OURS_NO_AUTH, 38_000.0),
            counted(OURS_AUTH, 39_000.0),
            load(OURS_HTTP, 5_000.0, 25.0, None, 2.0),
            load(PROXY, 8_000.0, 20.0, None, 1.0),
            idle("idle-sse", 10_000, 60.0),
        ];
        let mut text = String::new();
        goals(&mut text, &records);
        assert!(!text.contains("missed"), "{text}");
        assert!(!text.contains("not measured"), "{text}");
        assert!(
            text.contains("| 1.10x (11.0 vs 10.0 µs/req) | met (8% under) |"),
            "{text}"
        );
        assert!(
            text.contains("| 38000; the floor 25000, 1.52x | met (5% under) |"),
            "{text}"
        );
        assert!(
            text.contains("| 1.026x (39000 vs 38000 instructions) |"),
            "{text}"
        );
        assert!(
            text.contains("| 1.25x (25.0 vs 20.0 µs/req) | met (4% under) |"),
            "{text}"
        );
        assert!(
            text.contains("| 60.0 MiB (20.0 → 80.0 MiB, 6.1 KiB per session) |"),
            "{text}"
        );
        assert!(
            text.contains(
                "| 1.80x (0.90 ms at 5000 req/s vs 0.50 ms at 10000 req/s) | met (10% under) |"
            ),
            "{text}"
        );
    }

    #[test]
    fn missed_goals_say_by_how_much_and_absent_ones_say_so() {
        let records = [
            load(OURS, 10_000.0, 15.0, None, 1.0),
            load(FLOOR, 20_000.0, 10.0, None, 1.0),
            load(OURS, 5_000.0, 15.0, Some(5_000.0), 1.5),
            load(FLOOR, 10_000.0, 10.0, Some(10_000.0), 0.5),
            counted(OURS, 60_000.0),
            counted(OURS_NO_AUTH, 60_000.0),
            counted(OURS_AUTH, 66_000.0),
            idle("idle-sse", 10_000, 128.0),
        ];
        let mut text = String::new();
        goals(&mut text, &records);
        assert!(
            text.contains("| 1.50x (15.0 vs 10.0 µs/req) | **missed** by 25% |"),
            "{text}"
        );
        assert!(text.contains("| 60000 | **missed** by 50% |"), "{text}");
        assert!(
            text.contains("| 1.100x (66000 vs 60000 instructions) | **missed** by 5% |"),
            "{text}"
        );
        assert!(
            text.contains(
                "| 128.0 MiB (20.0 → 148.0 MiB, 13.1 KiB per session) | **missed** by 100% |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| 3.00x (1.50 ms at 5000 req/s vs 0.50 ms at 10000 req/s) | **missed** by 50% |"
            ),
            "{text}"
        );
        assert!(
            text.contains("a bare axum proxy's | not measured in this run | — |"),
            "{text}"
        );
    }

    #[test]
    fn scale_curve_lists_sizes_not_run_and_the_slope() {
        let mut not_run = Record {
            server: OURS.into(),
            workload: NOT_RUN.into(),
            protocol: "idle-sse".into(),
            concurrency: 50_000,
            note: "not run: needs ulimit -n ≥ 101000, this machine's hard limit is 20000".into(),
            ..Record::default()
        };
        let records = [
            idle("idle-sse", 1_000, 10.0),
            idle("idle-sse", 10_000, 100.0),
            not_run.clone(),
            {
                not_run.concurrency = 100_000;
                not_run
            },
        ];
        let mut text = String::new();
        tables(&mut text, &records);
        assert!(text.contains("| HTTP+SSE (`GET /sse`) | 50000 | — | — | — | — | — | not run: needs ulimit -n ≥ 101000"), "{text}");
        assert!(
            text.contains(
                "| HTTP+SSE (`GET /sse`) | 10000 | 10000 | 0 | 20.0 | 120.0 | 100.0 | 10.2 |"
            ),
            "{text}"
        );
        assert!(text.contains("HTTP+SSE (`GET /sse`): 10.2 KiB per session (least squares over 2 sizes; 100,000 sessions would add ~1000 MiB)"), "{text}");
    }

    #[test]
    fn tail_table_pairs_each_share_with_the_floor() {
        let records = [
            load(OURS, 10_000.0, 11.0, None, 1.0),
            load(FLOOR, 20_000.0, 10.0, None, 1.0),
            load(OURS, 9_000.0, 11.0, Some(9_000.0), 4.0),
            load(FLOOR, 18_000.0, 10.0, Some(18_000.0), 2.0),
        ];
        let mut text = String::new();
        tables(&mut text, &records);
        assert!(text.contains("| kube-mcp | 90% | 9000 |"), "{text}");
        assert!(text.contains("| 2.00x |"), "{text}");
    }

    #[test]
    fn each_paced_run_is_a_share_of_the_peak_just_before_it() {
        let mut peak = load(OURS, 20_000.0, 11.0, None, 1.0);
        peak.protocol = format!("2026-07-28, {PEAK_LABEL}");
        let records = [
            load(OURS, 10_000.0, 11.0, None, 1.0),
            peak,
            load(OURS, 10_000.0, 11.0, Some(10_000.0), 2.0),
            load(OURS, 18_000.0, 11.0, Some(18_000.0), 3.0),
        ];
        let shares: Vec<f64> = paced(&records, OURS).iter().map(|(s, _)| *s).collect();
        assert_eq!(shares, [0.5, 0.9]);
        // The goal's CPU figure is the load stage's run, not the peak's.
        assert_eq!(
            closed(&records, OURS, "modern-call").map(|r| r.rps),
            Some(10_000.0)
        );
    }

    #[test]
    fn ready_and_size() {
        let records = [
            crate::ready::summarize("examples/weather.yaml", &[12.0, 10.0, 11.0]),
            Record {
                server: "target/release/mcp-runtime".into(),
                workload: BINARY_SIZE.into(),
                bytes: Some(3 * 1024 * 1024),
                ..Record::default()
            },
        ];
        let mut text = String::new();
        tables(&mut text, &records);
        assert!(
            text.contains("| examples/weather.yaml | 3 | 11.0 | 12.0 |"),
            "{text}"
        );
        assert!(text.contains("3145728 bytes (3.0 MiB)"), "{text}");
    }
}
