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
    let desired = super::build::desired_replicas(server, seen.deployment);
    let (accepted, url, counts) = match seen.verdict {
        Ok(accepted) => {
            let c = accepted.counts;
            let message = format!(
                "compiled {} tools, {} resources, {} resource templates and {} prompts",
                c.tools, c.resources, c.resource_templates, c.prompts
            );
            (
                state("True", "Compiled", message),
                Some(seen.url.clone()),
                Some(c),
            )
        }
        // The last accepted declaration keeps serving: keep what describes it.
        Err(refused) => (
            state("False", refused.reason.as_str(), refused.message()),
            old.url.clone(),
            old.counts,
        ),
    };
    let mut ready = ready_state(seen, desired);
    if seen.verdict.is_err() && ready.status == "True" {
        ready
            .message
            .push_str("; serving the last accepted declaration");
    }
    let available = seen
        .deployment
        .and_then(|d| d.status.as_ref())
        .and_then(|s| s.available_replicas);
    MCPServerStatus {
        observed_generation: generation,
        conditions: vec![
            condition(&old, ACCEPTED, accepted, generation, now),
            condition(&old, READY, ready, generation, now),
        ],
        url,
        replicas: Some(desired),
        selector: Some(super::build::pod_selector(server)),
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
    State {
        status,
        reason,
        message,
    }
}

fn ready_state(seen: &Observation<'_>, desired: i32) -> State {
    if let Some(error) = &seen.apply_error {
        return state("False", "ApplyFailed", error.clone());
    }
    let Some(deployment) = seen.deployment else {
        return match seen.verdict {
            Err(_) => state(
                "False",
                "NotAccepted",
                "no declaration has been accepted yet: see the Accepted condition".into(),
            ),
            Ok(_) => state(
                "False",
                "Creating",
                "the Deployment is being created".into(),
            ),
        };
    };
    let status = deployment.status.clone().unwrap_or_default();
    let generation = deployment.metadata.generation.unwrap_or(0);
    let stuck = status.conditions.iter().flatten().find(|c| {
        c.type_.as_deref() == Some("Progressing")
            && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
    });
    let updated = status.updated_replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    if desired == 0 {
        state(
            "False",
            "ScaledToZero",
            "spec.replicas is 0: nothing serves".into(),
        )
    } else if let Some(stuck) = stuck {
        state(
            "False",
            "RolloutStuck",
            stuck
                .message
                .clone()
                .unwrap_or_else(|| "the rollout made no progress".into()),
        )
    } else if status.observed_generation.unwrap_or(0) < generation {
        state(
            "False",
            "RollingOut",
            "waiting for the Deployment controller to see the new pod template".into(),
        )
    } else if updated < desired || total > updated {
        state(
            "False",
            "RollingOut",
            format!("{updated} of {desired} replicas updated, {available} available"),
        )
    } else if available < desired {
        state(
            "False",
            "ReplicasUnavailable",
            format!("{available} of {desired} replicas available"),
        )
    } else {
        state(
            "True",
            "Available",
            format!("{available} of {desired} replicas available"),
        )
    }
}

fn condition(
    old: &MCPServerStatus,
    type_: &str,
    new: State,
    generation: Option<i64>,
    now: &Time,
) -> Condition {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::test_support::server;
    use crate::reconcile::validate::validate;
    use crate::resource::Counts;

    fn time(seconds: i64) -> Time {
        Time(jiff::Timestamp::from_second(1_800_000_000 + seconds).unwrap())
    }

    fn deployment(yaml: &str) -> Deployment {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    const AVAILABLE: &str = "
        metadata: {name: hello, generation: 2}
        spec: {selector: {}, template: {}}
        status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2}
    ";

    fn hello(replicas: i32) -> MCPServer {
        server(&format!(
            "
            metadata: {{name: hello, namespace: tools, generation: 4}}
            spec:
              replicas: {replicas}
              tools: [{{name: hi, content: [{{type: text, text: hi}}]}}]
            "
        ))
    }

    fn broken() -> MCPServer {
        server(
            "
            metadata: {name: hello, namespace: tools, generation: 5}
            spec:
              replicas: 2
              tools: [{name: hi, content: [{type: text, text: '{{ args.x'}]}]
            ",
        )
    }

    fn observe<'a>(
        verdict: Result<
            &'a crate::reconcile::validate::Accepted,
            &'a crate::reconcile::validate::Refused,
        >,
        deployment: Option<&'a Deployment>,
    ) -> Observation<'a> {
        Observation {
            verdict,
            url: "http://hello.tools.svc.cluster.local/mcp".into(),
            apply_error: None,
            deployment,
        }
    }

    #[test]
    fn ready_when_every_replica_is_updated_and_available() {
        let server = hello(2);
        let accepted = validate(&server).unwrap();
        let deployment = deployment(AVAILABLE);
        let status = next_status(
            &server,
            &observe(Ok(&accepted), Some(&deployment)),
            &time(0),
        );
        insta::assert_yaml_snapshot!(status);
    }

    #[test]
    fn a_refused_spec_keeps_describing_what_still_serves() {
        let good = hello(2);
        let accepted = validate(&good).unwrap();
        let deployment = deployment(AVAILABLE);
        let before = next_status(&good, &observe(Ok(&accepted), Some(&deployment)), &time(0));

        let mut bad = broken();
        bad.status = Some(before.clone());
        let refused = validate(&bad).unwrap_err();
        let after = next_status(&bad, &observe(Err(&refused), Some(&deployment)), &time(60));
        let accepted_condition = after.condition(ACCEPTED).unwrap();
        assert_eq!(
            (
                accepted_condition.status.as_str(),
                accepted_condition.reason.as_str()
            ),
            ("False", "InvalidDeclaration")
        );
        assert!(
            accepted_condition
                .message
                .starts_with("spec.tools[0].content[0].text (tool `hi`): "),
            "{}",
            accepted_condition.message
        );
        assert_eq!(accepted_condition.last_transition_time, time(60));
        let ready = after.condition(READY).unwrap();
        assert_eq!(ready.status, "True");
        assert!(
            ready
                .message
                .ends_with("serving the last accepted declaration"),
            "{}",
            ready.message
        );
        assert_eq!(
            ready.last_transition_time,
            time(0),
            "Ready did not change, so its time must not"
        );
        assert_eq!(
            after.counts,
            Some(Counts {
                tools: 1,
                ..Default::default()
            })
        );
        assert_eq!(after.url, before.url);
        assert_eq!(after.observed_generation, Some(5));

        let events = transitions(Some(&before), &after);
        assert_eq!(events.len(), 1);
        assert!(events[0].warning);
        assert_eq!(events[0].reason, "InvalidDeclaration");
    }

    #[test]
    fn a_spec_never_accepted_is_not_ready() {
        let bad = broken();
        let refused = validate(&bad).unwrap_err();
        let status = next_status(&bad, &observe(Err(&refused), None), &time(0));
        let ready = status.condition(READY).unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "NotAccepted")
        );
        assert_eq!(status.url, None);
        assert_eq!(status.counts, None);
    }

    #[test]
    fn each_non_ready_state_has_its_reason() {
        let server = hello(2);
        let accepted = validate(&server).unwrap();
        let cases = [
            ("status: {observedGeneration: 1}", "RollingOut"),
            (
                "status: {observedGeneration: 2, replicas: 3, updatedReplicas: 1, availableReplicas: 2}",
                "RollingOut",
            ),
            (
                "status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 1}",
                "ReplicasUnavailable",
            ),
            (
                "status: {observedGeneration: 2, replicas: 2, updatedReplicas: 1, conditions: [{type: Progressing, status: 'False', reason: ProgressDeadlineExceeded, message: stuck}]}",
                "RolloutStuck",
            ),
        ];
        for (status_yaml, reason) in cases {
            let deployment = deployment(&format!(
                "metadata: {{name: hello, generation: 2}}\nspec: {{selector: {{}}, template: {{}}}}\n{status_yaml}"
            ));
            let status = next_status(
                &server,
                &observe(Ok(&accepted), Some(&deployment)),
                &time(0),
            );
            let ready = status.condition(READY).unwrap();
            assert_eq!(
                (ready.status.as_str(), ready.reason.as_str()),
                ("False", reason),
                "{status_yaml}"
            );
            assert!(!ready.message.is_empty());
        }
    }

    #[test]
    fn scaled_to_zero_is_not_ready() {
        let server = hello(0);
        let accepted = validate(&server).unwrap();
        let deployment = deployment(AVAILABLE);
        let status = next_status(
            &server,
            &observe(Ok(&accepted), Some(&deployment)),
            &time(0),
        );
        assert_eq!(status.condition(READY).unwrap().reason, "ScaledToZero");
    }

    #[test]
    fn an_apply_failure_is_reported() {
        let server = hello(1);
        let accepted = validate(&server).unwrap();
        let mut seen = observe(Ok(&accepted), None);
        seen.apply_error = Some("cannot apply Deployment hello: forbidden".into());
        let status = next_status(&server, &seen, &time(0));
        let ready = status.condition(READY).unwrap();
        assert_eq!(
            (ready.reason.as_str(), ready.message.as_str()),
            ("ApplyFailed", "cannot apply Deployment hello: forbidden")
        );
        let events = transitions(None, &status);
        assert_eq!(
            events
                .iter()
                .map(|e| (e.reason.as_str(), e.warning))
                .collect::<Vec<_>>(),
            [("Compiled", false), ("ApplyFailed", true)]
        );
    }

    #[test]
    fn the_same_status_twice_emits_nothing() {
        let server = hello(2);
        let accepted = validate(&server).unwrap();
        let deployment = deployment(AVAILABLE);
        let first = next_status(
            &server,
            &observe(Ok(&accepted), Some(&deployment)),
            &time(0),
        );
        let mut again = server.clone();
        again.status = Some(first.clone());
        let second = next_status(
            &again,
            &observe(Ok(&accepted), Some(&deployment)),
            &time(30),
        );
        assert_eq!(first, second);
        assert!(transitions(Some(&first), &second).is_empty());
    }
}
