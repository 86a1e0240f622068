//! Audit records: one JSON line per tool call and resource read (who, what, a digest of the
//! arguments with sensitive fields redacted, outcome, upstream answer, duration, trace id, and
//! which declaration answered), on their own stream apart from the logs (`--audit-log`).
//! Never argument values, secrets or tokens.
//!
//! Process-wide like logging: [`init`] starts a writer thread fed by a bounded queue, so a slow
//! reader of stdout never stalls requests; records that do not fit are counted, and the count is
//! written as a record of its own. Without [`init`], [`enabled`] is false and nothing is built.

mod redact;

pub use redact::{digest, redact};

use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::Duration;

/// Records waiting for the writer at most.
const QUEUE: usize = 4096;
/// Longest wait for queued records at shutdown.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// Where audit records go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditTarget {
    /// Nowhere (the default).
    Off,
    /// Standard output (the logs are on standard error).
    Stdout,
    /// Standard error, between the log lines.
    Stderr,
}

/// One audit record, written as a JSON line.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// When the call ended (RFC 3339, UTC).
    pub timestamp: String,
    /// What was done: `tools/call` or `resources/read`.
    pub audit: &'static str,
    /// `serverInfo.name` of the declaration that answered.
    pub server: String,
    /// The hash of the declaration that answered (the one reported in `_meta` and in
    /// `mcp_runtime_declaration_info`).
    pub declaration: String,
    /// The tool called.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The resource read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Who called (with authentication on); `null` otherwise.
    pub principal: Option<Caller>,
    /// The protocol version the call was made in.
    pub protocol_version: &'static str,
    /// The `spec.views` view the call came through (absent: the whole server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
    /// A digest of the legacy session's id (never the id, which lets anyone use the session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// `sha256:` over the arguments with sensitive fields replaced (sorted keys, no spaces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments_digest: Option<String>,
    /// JSON pointers of the argument fields redacted before digesting.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
    /// `ok`, `failed` (the tool answered `isError`), `refused` (a protocol error: unknown tool,
    /// invalid parameters, not allowed) or `cancelled` (the client went away).
    pub outcome: &'static str,
    /// The JSON-RPC error code of a refusal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i64>,
    /// The HTTP status of a refusal made before dispatch (403: scopes or `allow` over the token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The upstream's last HTTP status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_status: Option<u16>,
    /// Why the upstream gave no status (`timeout`, `transport_error`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_error: Option<String>,
    /// How the upstream call's token was obtained (`http.auth`): `ok`, `cached`, `refused`
    /// or `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_exchange: Option<&'static str>,
    /// The audience (else the resource) that token was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_audience: Option<String>,
    /// That token's `act` chain (RFC 8693 delegation): who acts for the caller, the current
    /// actor first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub upstream_act: Vec<String>,
    /// The approval a gated call went through (`tools[].approval`): its id, `state`
    /// (`approved`: the call ran), the requester and the approver.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalNote>,
    /// How long the call took, in milliseconds.
    pub duration_ms: f64,
    /// The trace the call belongs to (the request span's, else the client's `traceparent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// The approval a gated call went through (`tools[].approval`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApprovalNote {
    /// The approval's id.
    pub id: String,
    /// `approved` (the call ran), `pending`, `denied` or `expired`.
    pub state: &'static str,
    /// Who asked for the call (`subject (issuer)`, or `anonymous` without `spec.auth`).
    pub requester: String,
    /// Who approved or denied it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
}

/// The authenticated caller of an audited call.
#[derive(Debug, Serialize)]
pub struct Caller {
    /// The token's `iss`.
    pub issuer: String,
    /// The token's `sub` (client-credentials tokens of some servers carry none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

struct Sink {
    queue: SyncSender<Message>,
    dropped: AtomicU64,
}

enum Message {
    Line(String),
    Flush(SyncSender<()>),
}

static SINK: OnceLock<Sink> = OnceLock::new();

/// Whether audit records are written.
pub fn enabled() -> bool {
    SINK.get().is_some()
}

/// Starts writing audit records to `target` (once per process; later calls change nothing).
pub fn init(target: AuditTarget) -> std::io::Result<()> {
    if target == AuditTarget::Off || SINK.get().is_some() {
        return Ok(());
    }
    let (queue, lines) = sync_channel(QUEUE);
    std::thread::Builder::new()
        .name("audit".into())
        .spawn(move || write_lines(target, lines))?;
    let _ = SINK.set(Sink {
        queue,
        dropped: AtomicU64::new(0),
    });
    Ok(())
}

/// Queues a record; when the queue is full it is counted as dropped instead.
pub fn write(record: &Record) {
    let Some(sink) = SINK.get() else {
        return;
    };
    let Ok(mut line) = serde_json::to_string(record) else {
        return;
    };
    let dropped = sink.dropped.swap(0, Ordering::Relaxed);
    if dropped > 0 {
        let notice = serde_json::json!({
            "timestamp": record.timestamp,
            "audit": "dropped",
            "count": dropped,
        });
        line = format!("{notice}\n{line}");
    }
    match sink.queue.try_send(Message::Line(line)) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => {
            sink.dropped.fetch_add(dropped + 1, Ordering::Relaxed);
        }
        Err(TrySendError::Disconnected(_)) => {}
    }
}

/// Waits (bounded) until the queued records are written. Blocks.
pub fn flush() {
    let Some(sink) = SINK.get() else {
        return;
    };
    let (done, written) = sync_channel(1);
    if sink.queue.send(Message::Flush(done)).is_ok() {
        let _ = written.recv_timeout(FLUSH_TIMEOUT);
    }
}

/// The current time as RFC 3339 with milliseconds.
pub fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

fn write_lines(target: AuditTarget, lines: Receiver<Message>) {
    let mut out: Box<dyn Write> = match target {
        AuditTarget::Stderr => Box::new(std::io::stderr()),
        _ => Box::new(std::io::stdout()),
    };
    for message in lines {
        match message {
            Message::Line(line) => {
                // One write per record keeps lines whole next to other writers; a failed write
                // (closed stdout) has nobody to report to.
                let _ = out.write_all(format!("{line}\n").as_bytes());
            }
            Message::Flush(done) => {
                let _ = out.flush();
                let _ = done.send(());
            }
        }
    }
}

/// A short digest of a secret-ish identifier (a session id): enough to correlate, useless to
/// replay.
pub fn short_digest(text: &str) -> String {
    let full = digest(&Value::String(text.to_owned()));
    full.trim_start_matches("sha256:")
        .chars()
        .take(16)
        .collect()
}
