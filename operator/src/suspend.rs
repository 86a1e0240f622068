//! `spec.suspend`: the operator leaves a suspended server's children exactly as they are (they
//! keep serving) and only says so in status, with a `Suspended` condition next to the last
//! conditions it wrote. Resuming reconciles as usual, which drops the condition. Pure.

use crate::resource::{Condition, MCPServer, MCPServerStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Condition type of a suspended server.
pub const SUSPENDED: &str = "Suspended";

/// The status to write instead of reconciling, when `server` is suspended; `old` is the status
/// as last written.
pub fn status(old: &MCPServerStatus, server: &MCPServer, now: &Time) -> Option<MCPServerStatus> {
    if server.spec.deployment.suspend != Some(true) {
        return None;
    }
    let mut status = old.clone();
    let since = status
        .condition(SUSPENDED)
        .map_or_else(|| now.clone(), |c| c.last_transition_time.clone());
    status.conditions.retain(|c| c.type_ != SUSPENDED);
    status.conditions.push(Condition {
        type_: SUSPENDED.into(),
        status: "True".into(),
        reason: "SpecSuspended".into(),
        message: "spec.suspend is true: changes are not applied; the children are left as they are"
            .into(),
        observed_generation: server.metadata.generation,
        last_transition_time: since,
    });
    Some(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::test_support::server;

    #[test]
    fn only_a_suspended_server_gets_the_condition_and_keeps_the_others() {
        let now = Time(jiff::Timestamp::UNIX_EPOCH);
        let running = server("metadata: {name: a, namespace: t}\nspec: {tools: []}\n");
        assert!(status(&MCPServerStatus::default(), &running, &now).is_none());
        let mut suspended =
            server("metadata: {name: a, namespace: t}\nspec: {tools: [], suspend: true}\n");
        suspended.status = Some(MCPServerStatus {
            url: Some("http://a.t.svc.cluster.local/mcp".into()),
            conditions: vec![Condition {
                type_: "Ready".into(),
                status: "True".into(),
                reason: "Available".into(),
                message: String::new(),
                observed_generation: Some(1),
                last_transition_time: now.clone(),
            }],
            ..Default::default()
        });
        let old = suspended.status.clone().unwrap_or_default();
        let written = status(&old, &suspended, &now).unwrap();
        let types: Vec<&str> = written
            .conditions
            .iter()
            .map(|c| c.type_.as_str())
            .collect();
        assert_eq!(types, ["Ready", SUSPENDED]);
        assert_eq!(written.url, suspended.status.unwrap().url);
    }
}
