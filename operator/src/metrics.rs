//! The operator's own Prometheus metrics: reconciles, their failures and durations, and whether
//! this replica leads. No I/O; `admin` serves them.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Duration;

type Labels = Vec<(&'static str, &'static str)>;

/// Every metric of the operator, registered once.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<Labels, Counter>,
    failures: Family<Labels, Counter>,
    duration: Histogram,
    leader: Gauge,
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
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica holds the leader Lease",
            leader.clone(),
        );
        Self {
            registry,
            reconciles,
            failures,
            duration,
            leader,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reconciles_by_result() {
        let metrics = Metrics::new();
        metrics.observe_reconcile(Duration::from_millis(20), None);
        metrics.observe_reconcile(Duration::from_millis(20), Some("apply"));
        metrics.set_leader(true);
        let text = metrics.encode();
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
}
