//! The operator's own Prometheus metrics: reconciles, their failures and durations, the
//! conditions of every MCPServer, Kubernetes API requests, and whether this replica leads.
//! No I/O; `admin` serves them.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

type Labels = Vec<(&'static str, &'static str)>;
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;
type OwnedLabels = Vec<(&'static str, String)>;
/// Per (namespace, name) of an MCPServer: its condition types and the reason of their series.
type ConditionReasons = HashMap<(String, String), BTreeMap<String, &'static str>>;

/// The statuses a condition can have; each gets a series, 1 for the current one.
const STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// The reasons exported as the `reason` label; any other (a condition written by another
/// version of the operator) is exported as `Other`, so the label stays bounded.
const REASONS: &[&str] = &[
    // Accepted
    "Compiled",
    "InvalidDeclaration",
    "HostConflict",
    "Unparseable",
    // Ready
    "Available",
    "Creating",
    "RollingOut",
    "ReplicasUnavailable",
    "RolloutStuck",
    "ScaledToZero",
    "NotAccepted",
    "ApplyFailed",
    "ChildConflict",
    "ImagePullBackOff",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "OOMKilled",
    "FailedCreate",
    "Unschedulable",
    // Verified
    "Serving",
    "Propagating",
    "StaleDeclaration",
    "ReloadRefused",
    "Unreachable",
    "NotReady",
    // Exposed
    "Admitted",
    "Pending",
    "RouteRefused",
    // Suspended
    "SpecSuspended",
];

/// `reason` as exported: itself when known, else `Other`.
fn bounded_reason(reason: &str) -> &'static str {
    REASONS
        .iter()
        .find(|known| **known == reason)
        .copied()
        .unwrap_or("Other")
}

/// Every metric of the operator, registered once.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<Labels, Counter>,
    failures: Family<Labels, Counter>,
    duration: Histogram,
    step_duration: Histograms,
    leader: Gauge,
    conditions: Family<OwnedLabels, Gauge>,
    /// Condition types exported per (namespace, name), with the reason of their series, so that
    /// dropped ones (and a reason's old series) can be removed.
    condition_types: Mutex<ConditionReasons>,
    api_requests: Family<OwnedLabels, Counter>,
    verify_probes: Family<Labels, Counter>,
    verify_in_flight: Gauge,
    verify_pods: Gauge,
    rollouts: Family<Labels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers the metrics under the `mcp_operator` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("mcp_operator");
        let reconciles = Family::<Labels, Counter>::default();
        registry.register(
            "reconciles",
            "Reconciles of MCPServers, by result",
            reconciles.clone(),
        );
        let failures = Family::<Labels, Counter>::default();
        registry.register(
            "reconcile_errors",
            "Failed reconciles, by step that failed",
            failures.clone(),
        );
        let duration = Histogram::new(exponential_buckets(0.005, 2.0, 14));
        registry.register(
            "reconcile_duration_seconds",
            "Time one reconcile takes",
            duration.clone(),
        );
        let step_duration: Histograms =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.0005, 2.0, 16)));
        registry.register(
            "reconcile_step_duration_seconds",
            "Time each step of a reconcile takes: validate, build, apply, verify, status",
            step_duration.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica holds the leader Lease",
            leader.clone(),
        );
        let conditions = Family::<OwnedLabels, Gauge>::default();
        registry.register(
            "server_condition",
            "Conditions of each MCPServer, with the current reason: 1 on the series of the current status",
            conditions.clone(),
        );
        let api_requests = Family::<OwnedLabels, Counter>::default();
        registry.register(
            "api_requests",
            "Kubernetes API requests, by verb and HTTP status code",
            api_requests.clone(),
        );
        let verify_probes = Family::<Labels, Counter>::default();
        registry.register(
            "verify_probes",
            "Questions the verifier asked runtime pods (GET /declaration), by outcome",
            verify_probes.clone(),
        );
        let verify_in_flight = Gauge::default();
        registry.register(
            "verify_in_flight",
            "Verifier questions in flight (bounded by its pool)",
            verify_in_flight.clone(),
        );
        let verify_pods = Gauge::default();
        registry.register(
            "verify_pods",
            "Ready runtime pods the verifier follows",
            verify_pods.clone(),
        );
        let rollouts = Family::<Labels, Gauge>::default();
        registry.register(
            "rollouts",
            "Servers rolling their pods (state=rolling) and waiting for a rollout slot (state=queued)",
            rollouts.clone(),
        );
        Self {
            rollouts,
            registry,
            reconciles,
            failures,
            duration,
            step_duration,
            leader,
            conditions,
            condition_types: Mutex::new(HashMap::new()),
            api_requests,
            verify_probes,
            verify_in_flight,
            verify_pods,
        }
    }

    /// Exports the conditions an MCPServer's status now holds (`(type, status, reason)`), and
    /// drops the series of condition types it no longer has and of reasons it no longer gives.
    pub fn set_conditions<'a>(
        &self,
        namespace: &str,
        name: &str,
        conditions: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    ) {
        let Ok(mut known) = self.condition_types.lock() else {
            return;
        };
        let key = (namespace.to_owned(), name.to_owned());
        let before = known.remove(&key).unwrap_or_default();
        let mut now = BTreeMap::new();
        for (type_, status, reason) in conditions {
            let reason = bounded_reason(reason);
            if let Some(old) = before.get(type_).filter(|old| **old != reason) {
                self.remove_condition(namespace, name, type_, old);
            }
            for candidate in STATUSES {
                self.conditions
                    .get_or_create(&condition_labels(namespace, name, type_, candidate, reason))
                    .set(i64::from(candidate == status));
            }
            now.insert(type_.to_owned(), reason);
        }
        for (gone, reason) in &before {
            if !now.contains_key(gone) {
                self.remove_condition(namespace, name, gone, reason);
            }
        }
        known.insert(key, now);
    }

    /// Drops every series of a deleted MCPServer.
    pub fn forget_server(&self, namespace: &str, name: &str) {
        let Ok(mut known) = self.condition_types.lock() else {
            return;
        };
        for (type_, reason) in known
            .remove(&(namespace.to_owned(), name.to_owned()))
            .into_iter()
            .flatten()
        {
            self.remove_condition(namespace, name, &type_, reason);
        }
    }

    fn remove_condition(&self, namespace: &str, name: &str, type_: &str, reason: &str) {
        for status in STATUSES {
            self.conditions
                .remove(&condition_labels(namespace, name, type_, status, reason));
        }
    }

    /// Counts one Kubernetes API request (`code`: the HTTP status, or `error` without answer).
    pub fn api_request(&self, verb: &'static str, code: &str) {
        self.api_requests
            .get_or_create(&vec![("verb", verb.to_owned()), ("code", code.to_owned())])
            .inc();
    }

    /// Records one reconcile and, when it failed, the step that failed.
    pub fn observe_reconcile(&self, took: Duration, failed: Option<&'static str>) {
        self.duration.observe(took.as_secs_f64());
        let result = if failed.is_some() { "error" } else { "success" };
        self.reconciles
            .get_or_create(&vec![("result", result)])
            .inc();
        if let Some(step) = failed {
            self.failures.get_or_create(&vec![("kind", step)]).inc();
        }
    }

    /// Records how long one step of a reconcile took.
    pub fn observe_step(&self, step: &'static str, took: Duration) {
        self.step_duration
            .get_or_create(&vec![("step", step)])
            .observe(took.as_secs_f64());
    }

    /// Counts one question of the verifier.
    pub fn verify_probe(&self, answered: bool) {
        let outcome = if answered { "answered" } else { "failed" };
        self.verify_probes
            .get_or_create(&vec![("outcome", outcome)])
            .inc();
    }

    /// Sets the verifier's questions in flight.
    pub fn set_verify_in_flight(&self, n: usize) {
        self.verify_in_flight
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Sets the Ready pods the verifier follows.
    pub fn set_verify_pods(&self, n: usize) {
        self.verify_pods.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Sets the servers rolling and waiting for a rollout slot.
    pub fn set_rollouts(&self, (rolling, queued): (usize, usize)) {
        for (state, n) in [("rolling", rolling), ("queued", queued)] {
            self.rollouts
                .get_or_create(&vec![("state", state)])
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Records whether this replica leads.
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// The metrics in Prometheus' text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

fn condition_labels(
    namespace: &str,
    name: &str,
    type_: &str,
    status: &str,
    reason: &str,
) -> OwnedLabels {
    vec![
        ("namespace", namespace.to_owned()),
        ("name", name.to_owned()),
        ("type", type_.to_owned()),
        ("status", status.to_owned()),
        ("reason", reason.to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reconciles_by_result() {
        let metrics = Metrics::new();
        metrics.observe_reconcile(Duration::from_millis(20), None);
        metrics.observe_reconcile(Duration::from_millis(20), Some("apply"));
        metrics.observe_step("apply", Duration::from_millis(3));
        metrics.observe_step("apply", Duration::from_millis(300));
        metrics.observe_step("validate", Duration::from_micros(200));
        metrics.set_leader(true);
        let text = metrics.encode();
        for expected in [
            r#"mcp_operator_reconcile_step_duration_seconds_count{step="apply"} 2"#,
            r#"mcp_operator_reconcile_step_duration_seconds_sum{step="apply"} 0.303"#,
            r#"mcp_operator_reconcile_step_duration_seconds_bucket{le="0.004",step="apply"} 1"#,
            r#"mcp_operator_reconcile_step_duration_seconds_bucket{le="0.0005",step="validate"} 1"#,
        ] {
            assert!(text.contains(expected), "missing {expected} in\n{text}");
        }
        assert!(
            text.contains(r#"mcp_operator_reconciles_total{result="success"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"mcp_operator_reconcile_errors_total{kind="apply"} 1"#),
            "{text}"
        );
        assert!(
            text.contains("mcp_operator_reconcile_duration_seconds_count 2"),
            "{text}"
        );
        assert!(text.contains("mcp_operator_leader 1"), "{text}");
    }

    #[test]
    fn exports_conditions_one_hot_with_a_bounded_reason_and_forgets_them() {
        let metrics = Metrics::new();
        metrics.set_conditions(
            "demo",
            "weather",
            [
                ("Accepted", "True", "Compiled"),
                ("Ready", "False", "RollingOut"),
            ],
        );
        let text = metrics.encode();
        for expected in [
            r#"mcp_operator_server_condition{namespace="demo",name="weather",type="Ready",status="False",reason="RollingOut"} 1"#,
            r#"mcp_operator_server_condition{namespace="demo",name="weather",type="Ready",status="True",reason="RollingOut"} 0"#,
            r#"mcp_operator_server_condition{namespace="demo",name="weather",type="Accepted",status="True",reason="Compiled"} 1"#,
        ] {
            assert!(text.contains(expected), "missing {expected} in\n{text}");
        }
        // A condition type the status no longer has loses its series; a new reason replaces
        // the old one's; an unknown reason is `Other`.
        metrics.set_conditions("demo", "weather", [("Ready", "False", "SomethingNew")]);
        let text = metrics.encode();
        assert!(!text.contains(r#"type="Accepted""#), "{text}");
        assert!(!text.contains("RollingOut"), "{text}");
        assert!(
            text.contains(r#"mcp_operator_server_condition{namespace="demo",name="weather",type="Ready",status="False",reason="Other"} 1"#),
            "{text}"
        );
        metrics.forget_server("demo", "weather");
        assert!(!metrics.encode().contains("weather"));
    }

    #[test]
    fn counts_api_requests_by_verb_and_code() {
        let metrics = Metrics::new();
        metrics.api_request("apply", "200");
        metrics.api_request("apply", "200");
        metrics.api_request("watch", "error");
        let text = metrics.encode();
        assert!(
            text.contains(r#"mcp_operator_api_requests_total{verb="apply",code="200"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"mcp_operator_api_requests_total{verb="watch",code="error"} 1"#),
            "{text}"
        );
    }
}
