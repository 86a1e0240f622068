//! Prometheus metrics of the runtime. Label values come only from the declaration or fixed sets,
//! never raw client input, so cardinality stays bounded. No I/O.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::OnceLock;
use std::time::Duration;

mod latency;

pub use latency::{Latency, TraceLabel};

/// Labels of `mcp_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MethodOutcome {
    /// A known MCP method, or `other`.
    pub method: &'static str,
    /// `ok` or `error`.
    pub outcome: &'static str,
}

/// Labels of per-method histograms.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MethodLabel {
    /// A known MCP method, or `other`.
    pub method: &'static str,
}

/// Labels of `mcp_tool_calls_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolOutcome {
    /// A declared tool name.
    pub tool: String,
    /// `ok`, or `error` (also for `isError` results).
    pub outcome: &'static str,
}

/// Labels of per-tool histograms.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolLabel {
    /// A declared tool name.
    pub tool: String,
}

/// Labels of `mcp_upstream_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamOutcome {
    /// A declared tool name, or `resource:<name>`.
    pub tool: String,
    /// The HTTP status code, or `timeout`, `too_large` or `transport_error`.
    pub code: String,
}

/// Labels of `mcp_sessions_active`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TransportLabel {
    /// `streamable_http` or `sse`.
    pub transport: &'static str,
}

/// Labels of `mcp_reloads_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReloadOutcome {
    /// `success` or `error`.
    pub outcome: &'static str,
}

/// Labels of `mcp_runtime_declaration_info`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HashLabel {
    /// The served declaration's hash (validated when loaded: short and plain).
    pub hash: String,
}

/// Labels of `mcp_auth_failures_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AuthFailure {
    /// A fixed reason (`missing`, `invalid_signature`, `expired`, `wrong_audience`, ...).
    pub reason: &'static str,
}

/// Labels of `mcp_input_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct InputOutcome {
    /// `elicitation`, `sampling` or `roots`.
    pub kind: &'static str,
    /// `asked` (sent to the client), or the answer: `accept`, `decline`, `cancel` (forms),
    /// `answered` (sampling, roots) or `error` (refused or unanswered).
    pub outcome: &'static str,
}

/// Labels of `mcp_session_forwards_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ForwardOutcome {
    /// `forwarded` (the owner answered), `unreachable`, `not_owner` or `outside` (served here
    /// instead; `outside`: the owner lies outside the replica networks),
    /// `busy` (too many forwards at once: 503) or `error` (the owner failed mid-request: 502).
    pub outcome: &'static str,
}

/// Labels of `mcp_held_bytes` and `mcp_budget_refusals_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BudgetLabel {
    /// `global` (every client's parsed messages and queued answers) or `session` (the sum of
    /// the sessions' own budgets).
    pub budget: &'static str,
}

/// Labels of `mcp_client_share_refusals_total` and `mcp_client_share_clients`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ShareLabel {
    /// `sessions`, `listen_streams` or `polled_resources`.
    pub limit: &'static str,
}

/// Values of the `scope` label of `mcp_rate_limited_total` (`limits::Scope::label`; a test there
/// keeps both in step, since `limits` depends on this module and not the other way round).
pub const RATE_LIMIT_SCOPES: [&str; 3] = ["server", "principal", "tool"];

/// Labels of `mcp_token_exchanges_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TokenOutcome {
    /// `ok` (obtained from the authorization server), `cached`, `refused` (the server answered
    /// with an error) or `error` (no answer, an unusable one, or no caller's token).
    pub outcome: &'static str,
}

/// Labels of `mcp_rate_limited_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ScopeLabel {
    /// `server`, `principal` or `tool` (`spec.limits`).
    pub scope: &'static str,
}

/// Every metric the runtime exports.
pub struct Metrics {
    registry: Registry,
    requests: Family<MethodOutcome, Counter>,
    request_duration: Family<MethodLabel, Latency>,
    tool_calls: Family<ToolOutcome, Counter>,
    tool_duration: Family<ToolLabel, Latency>,
    sessions: Family<TransportLabel, Gauge>,
    session_refusals: Counter,
    ping_failures: Counter,
    reloads: Family<ReloadOutcome, Counter>,
    upstream_requests: Family<UpstreamOutcome, Counter>,
    upstream_duration: Family<ToolLabel, Latency>,
    declaration: Family<HashLabel, Gauge>,
    auth_failures: Family<AuthFailure, Counter>,
    input_requests: Family<InputOutcome, Counter>,
    session_forwards: Family<ForwardOutcome, Counter>,
    held_bytes: Family<BudgetLabel, Gauge>,
    budget_refusals: Family<BudgetLabel, Counter>,
    share_refusals: Family<ShareLabel, Counter>,
    rate_limited: Family<ScopeLabel, Counter>,
    token_exchanges: Family<TokenOutcome, Counter>,
    share_clients: Family<ShareLabel, Gauge>,
    /// Handles on each method's series (by its index in `methods::ALL`, then `other`).
    by_method: Box<[MethodSeries]>,
}

/// One method's request series, taken from their families on first use: a family lookup
/// hashes the labels (SipHash) under a lock, and every request took two.
#[derive(Debug, Default)]
struct MethodSeries {
    ok: OnceLock<Counter>,
    error: OnceLock<Counter>,
    duration: OnceLock<Latency>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<MethodOutcome, Counter>::default();
        let request_duration = Family::<MethodLabel, Latency>::default();
        let tool_calls = Family::<ToolOutcome, Counter>::default();
        let tool_duration = Family::<ToolLabel, Latency>::default();
        let sessions = Family::<TransportLabel, Gauge>::default();
        let session_refusals = Counter::default();
        let ping_failures = Counter::default();
        let reloads = Family::<ReloadOutcome, Counter>::default();
        let upstream_requests = Family::<UpstreamOutcome, Counter>::default();
        let upstream_duration = Family::<ToolLabel, Latency>::default();
        let auth_failures = Family::<AuthFailure, Counter>::default();
        registry.register(
            "mcp_auth_failures",
            "Requests refused by authentication or authorization, by reason",
            auth_failures.clone(),
        );
        registry.register(
            "mcp_requests",
            "MCP requests by method and outcome",
            requests.clone(),
        );
        registry.register_with_unit(
            "mcp_request_duration",
            "Time to answer an MCP request",
            prometheus_client::registry::Unit::Seconds,
            request_duration.clone(),
        );
        registry.register(
            "mcp_tool_calls",
            "Tool calls by tool and outcome; isError results count as errors",
            tool_calls.clone(),
        );
        registry.register_with_unit(
            "mcp_tool_call_duration",
            "Time to answer a tool call",
            prometheus_client::registry::Unit::Seconds,
            tool_duration.clone(),
        );
        registry.register(
            "mcp_sessions_active",
            "Open legacy-era sessions by transport",
            sessions.clone(),
        );
        registry.register(
            "mcp_session_refusals",
            "Sessions refused at the session limit",
            session_refusals.clone(),
        );
        registry.register(
            "mcp_ping_failures",
            "Sessions closed because a ping went unanswered",
            ping_failures.clone(),
        );
        registry.register(
            "mcp_reloads",
            "Manifest reloads by outcome",
            reloads.clone(),
        );
        registry.register(
            "mcp_upstream_requests",
            "Requests to upstream HTTP APIs by tool (or resource) and status code",
            upstream_requests.clone(),
        );
        registry.register_with_unit(
            "mcp_upstream_request_duration",
            "Time of one upstream HTTP request, body included",
            prometheus_client::registry::Unit::Seconds,
            upstream_duration.clone(),
        );
        let input_requests = Family::<InputOutcome, Counter>::default();
        registry.register(
            "mcp_input_requests",
            "Questions interactive items asked clients (outcome=asked), and their answers",
            input_requests.clone(),
        );
        let session_forwards = Family::<ForwardOutcome, Counter>::default();
        registry.register(
            "mcp_session_forwards",
            "Legacy-session requests for a session another replica owns, by outcome",
            session_forwards.clone(),
        );
        let held_bytes = Family::<BudgetLabel, Gauge>::default();
        registry.register(
            "mcp_held_bytes",
            "Bytes held for clients (parsed messages, answers not yet written), by budget",
            held_bytes.clone(),
        );
        let budget_refusals = Family::<BudgetLabel, Counter>::default();
        registry.register(
            "mcp_budget_refusals",
            "Messages refused (503) or sessions ended because a byte budget was full",
            budget_refusals.clone(),
        );
        for budget in ["global", "session"] {
            let _ = held_bytes.get_or_create(&BudgetLabel { budget });
            let _ = budget_refusals.get_or_create(&BudgetLabel { budget });
        }
        let share_refusals = Family::<ShareLabel, Counter>::default();
        registry.register(
            "mcp_client_share_refusals",
            "Sessions, listen streams and polled resources refused because one client held its share, by limit",
            share_refusals.clone(),
        );
        for limit in ["sessions", "listen_streams", "polled_resources"] {
            let _ = share_refusals.get_or_create(&ShareLabel { limit });
        }
        let rate_limited = Family::<ScopeLabel, Counter>::default();
        registry.register(
            "mcp_rate_limited",
            "Requests refused by a declared rate limit or quota (spec.limits), by the limit's scope",
            rate_limited.clone(),
        );
        for scope in RATE_LIMIT_SCOPES {
            let _ = rate_limited.get_or_create(&ScopeLabel { scope });
        }
        let token_exchanges = Family::<TokenOutcome, Counter>::default();
        registry.register(
            "mcp_token_exchanges",
            "Tokens for upstream calls (http.auth: token exchange or client credentials), by outcome",
            token_exchanges.clone(),
        );
        for outcome in ["ok", "cached", "refused", "error"] {
            let _ = token_exchanges.get_or_create(&TokenOutcome { outcome });
        }
        let share_clients = Family::<ShareLabel, Gauge>::default();
        registry.register(
            "mcp_client_share_clients",
            "Clients holding at least one session or listen stream (each within its share), by limit",
            share_clients.clone(),
        );
        for limit in ["sessions", "listen_streams"] {
            let _ = share_clients.get_or_create(&ShareLabel { limit });
        }
        let declaration = Family::<HashLabel, Gauge>::default();
        registry.register(
            "mcp_runtime_declaration_info",
            "The declaration being served, by hash (1 for the served one; replaced on reload)",
            declaration.clone(),
        );
        for transport in ["streamable_http", "sse"] {
            let _ = sessions.get_or_create(&TransportLabel { transport });
        }
        for outcome in ["success", "error"] {
            let _ = reloads.get_or_create(&ReloadOutcome { outcome });
        }
        Self {
            registry,
            requests,
            request_duration,
            tool_calls,
            tool_duration,
            sessions,
            session_refusals,
            ping_failures,
            reloads,
            upstream_requests,
            upstream_duration,
            declaration,
            auth_failures,
            input_requests,
            session_forwards,
            held_bytes,
            budget_refusals,
            share_refusals,
            rate_limited,
            token_exchanges,
            share_clients,
            by_method: (0..=mcp_protocol::methods::ALL.len())
                .map(|_| MethodSeries::default())
                .collect(),
        }
    }
}

impl Metrics {
    /// Records one answered request (`trace_id`: its sampled trace, kept as an exemplar).
    /// `method` as the client sent it: a name outside the spec's methods counts as `other`, so
    /// a client cannot add series.
    pub fn request(&self, method: &str, ok: bool, elapsed: Duration, trace_id: Option<String>) {
        let outcome = if ok { "ok" } else { "error" };
        let all = mcp_protocol::methods::ALL;
        let index = all.iter().position(|&m| m == method).unwrap_or(all.len());
        let method = all.get(index).copied().unwrap_or(OTHER_METHOD);
        let Some(series) = self.by_method.get(index) else {
            return;
        };
        let count = if ok { &series.ok } else { &series.error };
        count
            .get_or_init(|| {
                self.requests
                    .get_or_create(&MethodOutcome { method, outcome })
                    .clone()
            })
            .inc();
        series
            .duration
            .get_or_init(|| {
                self.request_duration
                    .get_or_create(&MethodLabel { method })
                    .clone()
            })
            .observe(elapsed.as_secs_f64(), trace_id);
    }

    /// Records one tool call of a declared tool (within its request, whose sampled trace is
    /// kept as an exemplar).
    pub fn tool_call(&self, tool: &str, ok: bool, elapsed: Duration) {
        let outcome = if ok { "ok" } else { "error" };
        let labels = ToolOutcome {
            tool: tool.to_owned(),
            outcome,
        };
        self.tool_calls.get_or_create(&labels).inc();
        self.tool_duration
            .get_or_create(&ToolLabel { tool: labels.tool })
            .observe(elapsed.as_secs_f64(), crate::telemetry::current_trace_id());
    }

    /// Adjusts the open-session gauge of a transport.
    pub fn sessions(&self, transport: &'static str, delta: i64) {
        self.sessions
            .get_or_create(&TransportLabel { transport })
            .inc_by(delta);
    }

    /// Counts a refused session.
    pub fn session_refused(&self) {
        self.session_refusals.inc();
    }

    /// Counts a refusal because one client held its share of `limit` (a fixed label).
    pub fn client_share_refused(&self, limit: &'static str) {
        self.share_refusals
            .get_or_create(&ShareLabel { limit })
            .inc();
    }

    /// Counts a request refused by a declared limit of `scope` (a fixed label).
    pub fn rate_limited(&self, scope: &'static str) {
        self.rate_limited.get_or_create(&ScopeLabel { scope }).inc();
    }

    /// Counts a token obtained or refused for an upstream call (`outcome` from a fixed set).
    pub fn token_exchange(&self, outcome: &'static str) {
        self.token_exchanges
            .get_or_create(&TokenOutcome { outcome })
            .inc();
    }

    /// The gauge of clients holding a place of `limit` (a fixed label).
    pub fn share_clients_gauge(&self, limit: &'static str) -> Gauge {
        self.share_clients
            .get_or_create(&ShareLabel { limit })
            .clone()
    }

    /// Counts a refused request (`reason` is one of a fixed set; never a token).
    pub fn auth_failure(&self, reason: &'static str) {
        self.auth_failures
            .get_or_create(&AuthFailure { reason })
            .inc();
    }

    /// Counts one question asked of a client, or one answer (labels from a fixed set).
    pub fn input_request(&self, kind: &'static str, outcome: &'static str) {
        self.input_requests
            .get_or_create(&InputOutcome { kind, outcome })
            .inc();
    }

    /// Counts a request for a session another replica owns (`outcome` from a fixed set).
    pub fn session_forward(&self, outcome: &'static str) {
        self.session_forwards
            .get_or_create(&ForwardOutcome { outcome })
            .inc();
    }

    /// The gauge of bytes held under `budget` (`global` or `session`), for a
    /// [`crate::budget::Budget`] to keep up to date.
    pub fn held_gauge(&self, budget: &'static str) -> Gauge {
        self.held_bytes
            .get_or_create(&BudgetLabel { budget })
            .clone()
    }

    /// Counts a message refused, or a session ended, because `budget` was full.
    pub fn budget_refused(&self, budget: &'static str) {
        self.budget_refusals
            .get_or_create(&BudgetLabel { budget })
            .inc();
    }

    /// Counts a session closed for an unanswered ping.
    pub fn ping_failed(&self) {
        self.ping_failures.inc();
    }

    /// Counts a reload.
    pub fn reload(&self, ok: bool) {
        self.reloads
            .get_or_create(&ReloadOutcome {
                outcome: if ok { "success" } else { "error" },
            })
            .inc();
    }

    /// Records one upstream HTTP request of a tool or resource (`code`: status or failure kind),
    /// within its request, whose sampled trace is kept as an exemplar.
    pub fn upstream(&self, tool: &str, code: &str, elapsed: Duration) {
        self.upstream_requests
            .get_or_create(&UpstreamOutcome {
                tool: tool.to_owned(),
                code: code.to_owned(),
            })
            .inc();
        self.upstream_duration
            .get_or_create(&ToolLabel {
                tool: tool.to_owned(),
            })
            .observe(elapsed.as_secs_f64(), crate::telemetry::current_trace_id());
    }

    /// Records the declaration now served (`old`: the one it replaces, whose series is dropped so
    /// exactly one hash is exported).
    pub fn declaration_served(&self, old: Option<&str>, new: &str) {
        self.declaration
            .get_or_create(&HashLabel {
                hash: new.to_owned(),
            })
            .set(1);
        if let Some(old) = old.filter(|old| *old != new) {
            self.declaration.remove(&HashLabel {
                hash: old.to_owned(),
            });
        }
    }

    /// Prometheus text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// The `method` label of every method outside the spec's list.
const OTHER_METHOD: &str = "other";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_the_documented_names() {
        let metrics = Metrics::default();
        metrics.request("tools/call", true, Duration::from_millis(2), None);
        // Unlisted names share one slot, labelled `other` whichever name came first.
        metrics.request("made/up", false, Duration::from_millis(2), None);
        metrics.request("evil/{injected}", false, Duration::from_millis(2), None);
        metrics.tool_call("greet", false, Duration::from_millis(1));
        metrics.sessions("sse", 1);
        metrics.upstream("get_issue", "404", Duration::from_millis(3));
        metrics.input_request("elicitation", "decline");
        let text = metrics.encode();
        for expected in [
            "mcp_requests_total{method=\"tools/call\",outcome=\"ok\"} 1",
            "mcp_requests_total{method=\"other\",outcome=\"error\"} 2",
            "mcp_tool_calls_total{tool=\"greet\",outcome=\"error\"} 1",
            "mcp_sessions_active{transport=\"sse\"} 1",
            "mcp_request_duration_seconds_bucket",
            "mcp_tool_call_duration_seconds_count{tool=\"greet\"} 1",
            "mcp_reloads_total{outcome=\"error\"} 0",
            "mcp_ping_failures_total 0",
            "mcp_upstream_requests_total{tool=\"get_issue\",code=\"404\"} 1",
            "mcp_upstream_request_duration_seconds_count{tool=\"get_issue\"} 1",
            "mcp_input_requests_total{kind=\"elicitation\",outcome=\"decline\"} 1",
        ] {
            assert!(text.contains(expected), "missing {expected} in\n{text}");
        }
        assert!(
            !text.contains("made/up") && !text.contains("evil"),
            "{text}"
        );
    }

    #[test]
    fn one_declaration_series_follows_reloads() {
        let metrics = Metrics::default();
        metrics.declaration_served(None, "aaaa");
        metrics.declaration_served(Some("aaaa"), "aaaa");
        assert!(
            metrics
                .encode()
                .contains("mcp_runtime_declaration_info{hash=\"aaaa\"} 1")
        );
        metrics.declaration_served(Some("aaaa"), "bbbb");
        let text = metrics.encode();
        assert!(
            text.contains("mcp_runtime_declaration_info{hash=\"bbbb\"} 1"),
            "{text}"
        );
        assert!(!text.contains("hash=\"aaaa\""), "{text}");
    }
}
