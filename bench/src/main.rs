//! `mcp-bench`: the load generator of the kube-mcp benchmarks, and the report writer.
//!
//! - `mcp-bench load`: a request workload at a concurrency (and optionally a fixed rate);
//! - `mcp-bench idle`: N idle legacy sessions with open SSE streams, held for a while;
//! - `mcp-bench report`: the markdown table from the JSON lines the other two append;
//! - `mcp-bench declaration N`: prints an N-tool declaration shaped like an import;
//! - `mcp-bench pages`: `tools/list` page latency over a large declaration;
//! - `mcp-bench reload`: call latency while the manifest is rewritten (forcing reloads) and
//!   without;
//! - `mcp-bench ready`: process start to `/readyz` 200 of a server command, median of runs;
//! - `mcp-bench record`: appends one record measured by a script (callgrind counts, the binary
//!   size, a size that could not run) to the records.
//!
//! Loopback only: the target must be a 127.0.0.0/8 or ::1 address. Every run is bounded in time.

mod conn;
mod declaration;
mod goals;
mod idle;
mod load;
mod mcp;
mod procfs;
mod ready;
mod report;
mod scale;
mod stats;

use clap::{Args, Parser, Subcommand};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "mcp-bench",
    version,
    about = "Load generator of the kube-mcp benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs a request workload and appends its record.
    Load(LoadArgs),
    /// Holds idle legacy sessions and appends the record.
    Idle(IdleArgs),
    /// Writes the markdown report of a records file.
    Report(ReportArgs),
    /// Prints an N-tool declaration shaped like an import (see `src/declaration.rs`).
    Declaration(DeclarationArgs),
    /// Walks `tools/list` page by page for a while and prints the page latencies.
    Pages(PagesArgs),
    /// Call latency at a fixed rate with and without reloads of the served manifest.
    Reload(ReloadArgs),
    /// Process start to `/readyz` 200 of a server command (median of runs) and its record.
    Ready(ReadyArgs),
    /// Appends one record measured elsewhere (a script) to the records.
    Record(RecordArgs),
}

#[derive(Args)]
struct ReadyArgs {
    /// The admin address the command serves `/readyz` on (loopback only).
    #[arg(long, value_name = "ADDR")]
    admin: SocketAddr,
    /// What is started, as the report names it.
    #[arg(long)]
    label: String,
    /// Runs.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Longest wait for one run (at most 5 minutes).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Append the JSON record to this file (it is also printed).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The server command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Args)]
struct RecordArgs {
    /// Server label.
    #[arg(long)]
    server: String,
    /// Record kind (`callgrind-call`, `binary-size`, `idle-sse`, …).
    #[arg(long)]
    workload: String,
    /// Protocol or description label.
    #[arg(long, default_value = "")]
    protocol: String,
    /// Concurrency (sessions, for idle kinds).
    #[arg(long, default_value_t = 0)]
    concurrency: usize,
    /// Requests measured.
    #[arg(long, default_value_t = 0)]
    requests: u64,
    /// Instructions per request (callgrind).
    #[arg(long)]
    instructions: Option<f64>,
    /// A size in bytes.
    #[arg(long)]
    bytes: Option<u64>,
    /// Free-form remark.
    #[arg(long, default_value = "")]
    note: String,
    /// Append the JSON record to this file (it is also printed).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct DeclarationArgs {
    /// Tools (at least 1: `echo`).
    tools: usize,
    /// Written into `spec.version`: two variants differ only there.
    #[arg(long, default_value_t = 0)]
    variant: u64,
}

#[derive(Args)]
struct PagesArgs {
    /// Server address (loopback only).
    #[arg(long, value_name = "ADDR")]
    addr: SocketAddr,
    /// MCP endpoint path.
    #[arg(long, default_value = "/mcp")]
    path: String,
    /// How long to walk the list (at least one whole walk; at most 10 minutes).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    duration: Duration,
}

#[derive(Args)]
struct ReloadArgs {
    /// Server address (loopback only).
    #[arg(long, value_name = "ADDR")]
    addr: SocketAddr,
    /// Its admin address (loopback only), for `mcp_reloads_total`.
    #[arg(long, value_name = "ADDR")]
    admin: SocketAddr,
    /// Server process id, for RSS and CPU sampling.
    #[arg(long)]
    pid: Option<u32>,
    /// The manifest file the server serves; rewritten during the second phase.
    #[arg(long, value_name = "FILE")]
    manifest: PathBuf,
    /// Tools of the declaration written (`mcp-bench declaration`; the file should hold
    /// variant 0 of the same size).
    #[arg(long)]
    tools: usize,
    /// Time between rewrites (each forces a reload).
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    every: Duration,
    /// Measured time of each phase (at most 5 minutes).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Calls per second, open loop.
    #[arg(long, default_value_t = 200.0)]
    rate: f64,
    /// Connections.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
}

#[derive(Args)]
struct Target {
    /// Server address (loopback only).
    #[arg(long, value_name = "ADDR")]
    addr: SocketAddr,
    /// Server process id, for RSS and CPU sampling.
    #[arg(long)]
    pid: Option<u32>,
    /// Server label in the report.
    #[arg(long)]
    server: String,
    /// Protocol label in the report.
    #[arg(long, default_value = "")]
    protocol: String,
    /// Append the JSON record to this file (it is also printed).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct LoadArgs {
    #[command(flatten)]
    target: Target,
    /// MCP endpoint path.
    #[arg(long, default_value = "/mcp")]
    path: String,
    /// The workload.
    #[arg(long, value_enum)]
    workload: load::Workload,
    /// Tool calls per legacy session.
    #[arg(long, default_value_t = 5)]
    calls: usize,
    /// Connections, each with one request in flight.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Unmeasured warm-up.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    warmup: Duration,
    /// Measured time (at most 10 minutes).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Total requests per second (open loop); without it, as fast as the server answers.
    #[arg(long)]
    rate: Option<f64>,
    /// File holding an access token sent as `Authorization: Bearer` with every request.
    #[arg(long, value_name = "FILE")]
    bearer_token_file: Option<PathBuf>,
}

#[derive(Args)]
struct IdleArgs {
    #[command(flatten)]
    target: Target,
    /// `/sse` or `/mcp`.
    #[arg(long, default_value = "/sse")]
    path: String,
    /// Stream kind.
    #[arg(long, value_enum, default_value_t = idle::Mode::Sse)]
    mode: idle::Mode,
    /// Sessions to open.
    #[arg(long, default_value_t = 1000)]
    sessions: usize,
    /// Sessions opened at once.
    #[arg(long, default_value_t = 64)]
    parallel: usize,
    /// How long the sessions are held once open (at most 10 minutes).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    hold: Duration,
}

#[derive(Args)]
struct ReportArgs {
    /// The records (JSON lines).
    records: PathBuf,
    /// Markdown describing the machine and the run.
    #[arg(long, value_name = "FILE")]
    machine: Option<PathBuf>,
    /// Markdown notes to put under the machine description.
    #[arg(long, value_name = "FILE")]
    notes: Option<PathBuf>,
}

const LONGEST: Duration = Duration::from_secs(600);

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(
            std::env::var("MCP_BENCH_THREADS")
                .ok()
                .and_then(|t| t.parse().ok())
                .unwrap_or(2),
        )
        .enable_all()
        .build()?;
    match cli.command {
        Command::Load(args) => {
            check_target(&args.target)?;
            anyhow::ensure!(args.duration + args.warmup <= LONGEST, "runs are bounded");
            anyhow::ensure!(args.concurrency > 0, "--concurrency must be positive");
            if let Some(file) = &args.bearer_token_file {
                let token = std::fs::read_to_string(file)?;
                let _ = conn::AUTHORIZATION.set(format!("Bearer {}", token.trim()));
            }
            let config = load::LoadConfig {
                addr: args.target.addr,
                path: args.path,
                workload: args.workload,
                calls: args.calls,
                concurrency: args.concurrency,
                warmup: args.warmup,
                duration: args.duration,
                rate: args.rate,
                pid: args.target.pid,
                server: args.target.server.clone(),
                protocol: args.target.protocol.clone(),
            };
            let record = runtime.block_on(load::run(config))?;
            emit(&args.target, &record)
        }
        Command::Idle(args) => {
            check_target(&args.target)?;
            anyhow::ensure!(args.hold <= LONGEST, "runs are bounded");
            anyhow::ensure!(args.sessions <= 100_000, "at most 100,000 sessions");
            let config = idle::IdleConfig {
                addr: args.target.addr,
                path: args.path,
                mode: args.mode,
                sessions: args.sessions,
                parallel: args.parallel.max(1),
                hold: args.hold,
                pid: args.target.pid,
                server: args.target.server.clone(),
                protocol: args.target.protocol.clone(),
            };
            let record = runtime.block_on(idle::run(config))?;
            emit(&args.target, &record)
        }
        Command::Declaration(args) => {
            anyhow::ensure!((1..=100_000).contains(&args.tools), "1 to 100,000 tools");
            print!("{}", declaration::manifest(args.tools, args.variant));
            Ok(())
        }
        Command::Pages(args) => {
            anyhow::ensure!(args.addr.ip().is_loopback(), "loopback addresses only");
            anyhow::ensure!(args.duration <= LONGEST, "runs are bounded");
            let record = runtime.block_on(scale::pages(args.addr, &args.path, args.duration))?;
            println!("{record}");
            Ok(())
        }
        Command::Reload(args) => {
            anyhow::ensure!(
                args.addr.ip().is_loopback() && args.admin.ip().is_loopback(),
                "loopback addresses only"
            );
            anyhow::ensure!(args.duration <= LONGEST / 2, "runs are bounded");
            anyhow::ensure!(
                args.rate > 0.0 && args.concurrency > 0,
                "a rate and connections"
            );
            let config = scale::ReloadConfig {
                addr: args.addr,
                admin: args.admin,
                pid: args.pid,
                manifest: args.manifest,
                versions: [1, 2].map(|v| declaration::manifest(args.tools, v)),
                every: args.every,
                duration: args.duration,
                rate: args.rate,
                concurrency: args.concurrency,
            };
            let record = runtime.block_on(scale::reload(config))?;
            println!("{record}");
            Ok(())
        }
        Command::Ready(args) => {
            anyhow::ensure!(args.admin.ip().is_loopback(), "loopback addresses only");
            anyhow::ensure!(args.timeout <= LONGEST / 2, "runs are bounded");
            anyhow::ensure!((1..=50).contains(&args.runs), "1 to 50 runs");
            let config = ready::ReadyConfig {
                admin: args.admin,
                command: args.command,
                runs: args.runs,
                timeout: args.timeout,
                label: args.label,
            };
            let record = runtime.block_on(ready::run(config))?;
            append(args.out.as_deref(), &record)
        }
        Command::Record(args) => {
            let record = stats::Record {
                server: args.server,
                workload: args.workload,
                protocol: args.protocol,
                concurrency: args.concurrency,
                requests: args.requests,
                instructions_per_req: args.instructions,
                bytes: args.bytes,
                note: args.note,
                ..stats::Record::default()
            };
            append(args.out.as_deref(), &record)
        }
        Command::Report(args) => {
            let text = std::fs::read_to_string(&args.records)?;
            let records = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(serde_json::from_str)
                .collect::<Result<Vec<stats::Record>, _>>()?;
            let read = |path: Option<PathBuf>| {
                path.map(std::fs::read_to_string)
                    .transpose()
                    .map(Option::unwrap_or_default)
            };
            let (machine, notes) = (read(args.machine)?, read(args.notes)?);
            print!("{}", report::render(&records, &machine, &notes));
            Ok(())
        }
    }
}

fn check_target(target: &Target) -> anyhow::Result<()> {
    anyhow::ensure!(
        target.addr.ip().is_loopback(),
        "the benchmark only targets loopback addresses, not {}",
        target.addr
    );
    Ok(())
}

fn emit(target: &Target, record: &stats::Record) -> anyhow::Result<()> {
    eprintln!(
        "{} {} c={}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, errors {}, server CPU {:.1} µs/req, peak RSS {:.1} MiB {}",
        record.server,
        record.workload,
        record.concurrency,
        record.rps,
        record.p50_ms,
        record.p99_ms,
        record.errors,
        record.cpu_us_per_req,
        record.rss_peak_mib,
        record.note
    );
    append(target.out.as_deref(), record)
}

/// Prints the record as one JSON line and appends it to `out`, when given.
fn append(out: Option<&std::path::Path>, record: &stats::Record) -> anyhow::Result<()> {
    let line = serde_json::to_string(record)?;
    println!("{line}");
    if let Some(path) = out {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        writeln!(file, "{line}")?;
    }
    Ok(())
}
