//! Status step of the reconcile pipeline, pure part: from what validate, apply and the cluster
//! said, the status to write and the events the change deserves. Condition times move only when
//! a condition changes, so writing the same status twice is a no-op.

use super::validate::{Accepted, Refused};
use crate::resource::{Condition, MCPServer, MCPServerStatus};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Condition type: the declaration compiled.
pub const ACCEPTED: &str = "Accepted";
/// Condition type: every replica is up to date and available.
pub const READY: &str = "Ready";

/// What one reconcile found.
#[derive(Debug)]
pub struct Observation<'a> {
    /// The verdict of the validate step.
    pub verdict: Result<&'a Accepted, &'a Refused>,
    /// The in-cluster or ingress URL of the spec (used only when accepted).
    pub url: String,
    /// Why applying the children failed, if it did.
    pub apply_error: Option<String>,
    /// The server's Deployment as last seen (the last good one when the spec is refused).
    pub deployment: Option<&'a Deployment>,
}

/// The status after this reconcile.
pub fn next_status(server: &MCPServer, seen: &Observation<'_>, now: &Time) -> MCPServerStatus {
    let old = server.status.clone().unwrap_or_default();
    let generation = server.metadata.generation;
    let desired = server.spec.deployment.replicas.unwrap_or(1);
    let (accepted, url, counts) = match seen.verdict {
        Ok(accepted) => {
            let c = accepted.counts;
            let message = format!(
                "compiled {} tools, {} resources, {} resource templates and {} prompts",
                c.tools, c.resources, c.resource_templates, c.prompts
            );
            (state("True", "Compiled", message), Some(seen.url.clone()), Some(c))
        }
        // The last accepted declaration keeps serving: keep what describes it.
        Err(refused) => (state("False", "InvalidDeclaration", refused.message()), old.url.clone(), old.counts),
    };
    let mut ready = ready_state(seen, desired);
    if seen.verdict.is_err() && ready.status == "True" {
        ready.message.push_str("; serving the last accepted declaration");
    }
    let available = seen.deployment.and_then(|d| d.status.as_ref()).and_then(|s| s.available_replicas);
    MCPServerStatus {
        observed_generation: generation,
        conditions: vec![
            condition(&old, ACCEPTED, accepted, generation, now),
            condition(&old, READY, ready, generation, now),
        ],
        url,
        replicas: Some(desired),
        ready_replicas: Some(available.unwrap_or(0)),
        counts,
    }
}

/// Status, reason and message of a condition.
#[derive(Clone, Debug, PartialEq)]
struct State {
    status: &'static str,
    reason: &'static str,
    message: String,
}

fn state(status: &'static str, reason: &'static str, message: String) -> State {
    State { status, reason, message }
}

fn ready_state(seen: &Observation<'_>, desired: i32) -> State {
    if let Some(error) = &seen.apply_error {
        return state("False", "ApplyFailed", error.clone());
    }
    let Some(deployment) = seen.deployment else {
        return match seen.verdict {
            Err(_) => state("False", "NotAccepted", "no declaration has been accepted yet: see the Accepted condition".into()),
            Ok(_) => state("False", "Creating", "the Deployment is being created".into()),
        };
    };
    let status = deployment.status.clone().unwrap_or_default();
    let generation = deployment.metadata.generation.unwrap_or(0);
    let stuck = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_.as_deref() == Some("Progressing") && c.reason.as_deref() == Some("ProgressDeadlineExceeded"));
    let updated = status.updated_replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    if desired == 0 {
        state("False", "ScaledToZero", "spec.replicas is 0: nothing serves".into())
    } else if let Some(stuck) = stuck {
        state("False", "RolloutStuck", stuck.message.clone().unwrap_or_else(|| "the rollout made no progress".into()))
    } else if status.observed_generation.unwrap_or(0) < generation {
        state("False", "RollingOut", "waiting for the Deployment controller to see the new pod template".into())
    } else if updated < desired || total > updated {
        state("False", "RollingOut", format!("{updated} of {desired} replicas updated, {available} available"))
    } else if available < desired {
        state("False", "ReplicasUnavailable", format!("{available} of {desired} replicas available"))
    } else {
        state("True", "Available", format!("{available} of {desired} replicas available"))
    }
}

fn condition(old: &MCPServerStatus, type_: &str, new: State, generation: Option<i64>, now: &Time) -> Condition {
    let previous = old.condition(type_);
    let unchanged = previous.is_some_and(|c| c.status == new.status && c.reason == new.reason);
    Condition {
        type_: type_.into(),
        status: new.status.into(),
        reason: new.reason.into(),
        message: new.message,
        observed_generation: generation,
        last_transition_time: match previous {
            Some(previous) if unchanged => previous.last_transition_time.clone(),
            _ => now.clone(),
        },
    }
}

/// An event to publish about the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// `Normal`, or `Warning` for a state a person should look at.
    pub warning: bool,
    /// The condition's new reason.
    pub reason: String,
    /// What happened.
    pub note: String,
}

/// Reasons that are part of normal operation even though the condition is False.
const BENIGN_REASONS: &[&str] = &["Creating", "RollingOut", "ScaledToZero"];

/// The events a status change deserves: one per condition whose status or reason changed.
pub fn transitions(old: Option<&MCPServerStatus>, new: &MCPServerStatus) -> Vec<Transition> {
    new.conditions
        .iter()
        .filter(|c| {
            let before = old.and_then(|o| o.condition(&c.type_));
            before.is_none_or(|b| b.status != c.status || b.reason != c.reason)
        })
        .map(|c| Transition {
            warning: c.status != "True" && !BENIGN_REASONS.contains(&c.reason.as_str()),
            reason: c.reason.clone(),
            note: format!("{} is {}: {}", c.type_, c.status, c.message),
        })
        .collect()
}
