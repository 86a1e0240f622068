//! Status step of the reconcile pipeline, pure part: from what validate, apply and the cluster
//! said, the status to write and the events the change deserves. Condition times move only when
//! a condition changes, so writing the same status twice is a no-op.

use super::apply::Conflict;
use super::pods::PodProblem;
use super::validate::{Accepted, Refused};
use super::verify::Served;
use crate::resource::{Condition, Counts, MCPServer, MCPServerStatus};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Condition type: the declaration compiled.
pub const ACCEPTED: &str = "Accepted";
/// Condition type: every replica is up to date and available.
pub const READY: &str = "Ready";
/// Condition type: a real MCP request found the pods serving the current declaration.
pub const VERIFIED: &str = "Verified";

/// What one reconcile found.
#[derive(Debug)]
pub struct Observation<'a> {
    /// The verdict of the validate step.
    pub verdict: Result<&'a Accepted, &'a Refused>,
    /// The in-cluster or ingress URL of the spec (used only when accepted).
    pub url: String,
    /// Why applying the children failed, if it did.
    pub apply_error: Option<String>,
    /// Same-named objects the server does not control (nothing was applied).
    pub conflicts: &'a [Conflict],
    /// The server's Deployment as last seen (the last good one when the spec is refused).
    pub deployment: Option<&'a Deployment>,
    /// Why the pods do not start, when their containers say so.
    pub pod_problem: Option<PodProblem>,
    /// What asking the pods found.
    pub verification: Verification,
}

/// What the verify step found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verification {
    /// Nothing to ask: no replica is available (or nothing was ever accepted).
    NoReplica,
    /// Already verified for this declaration: the condition stays as it is.
    Unchanged,
    /// A replica answered; `want` is the declaration it should serve.
    Answered {
        /// What it serves.
        served: Served,
        /// The hash of the declaration applied last.
        want_hash: String,
        /// What that declaration holds.
        want_counts: Counts,
    },
    /// The question went unanswered.
    Failed(String),
}

impl Verification {
    /// Whether the answer shows the current declaration served.
    pub fn verified(&self) -> bool {
        matches!(self, Self::Answered { served, want_hash, want_counts }
            if served.hash.as_deref() == Some(want_hash.as_str()) && served.counts == *want_counts)
    }
}

fn describe_counts(c: &Counts) -> String {
    format!(
        "{} tools, {} resources, {} resource templates, {} prompts",
        c.tools, c.resources, c.resource_templates, c.prompts
    )
}

fn verified_state(old: &MCPServerStatus, verification: &Verification) -> State {
    match verification {
        Verification::NoReplica => state(
            "Unknown",
            "NotReady",
            "no replica is available to ask".into(),
        ),
        Verification::Unchanged => match old.condition(VERIFIED) {
            Some(c) if c.status == "True" => state("True", "Serving", c.message.clone()),
            _ => state(
                "Unknown",
                "NotReady",
                "no replica is available to ask".into(),
            ),
        },
        Verification::Answered {
            want_hash,
            want_counts,
            ..
        } if verification.verified() => state(
            "True",
            "Serving",
            format!(
                "a replica serves declaration {want_hash} ({})",
                describe_counts(want_counts)
            ),
        ),
        Verification::Answered {
            served,
            want_hash,
            want_counts,
        } => state(
            "False",
            "StaleDeclaration",
            format!(
                "a replica serves declaration {} ({}), not {want_hash} ({}): a ConfigMap update \
                 reaches pods within about a minute, or the runtime refused to reload it (see \
                 its log)",
                served.hash.as_deref().unwrap_or("without hash"),
                describe_counts(&served.counts),
                describe_counts(want_counts)
            ),
        ),
        Verification::Failed(error) => state("False", "Unreachable", error.clone()),
    }
}

/// The status after this reconcile, from the status as last written (`old`: the operator's own
/// memory of it, not the watch cache, which lags the operator's writes).
pub fn next_status(
    old: &MCPServerStatus,
    server: &MCPServer,
    seen: &Observation<'_>,
    now: &Time,
) -> MCPServerStatus {
    let generation = server.metadata.generation;
    // A refused spec was never applied: readiness is measured against the last applied one. An
    // unset count is whatever the Deployment was scaled to (the operator does not force one).
    let desired = match seen.verdict {
        Ok(_) => super::build::desired_replicas(server, seen.deployment),
        Err(_) => seen.deployment.and_then(|d| d.spec.replicas).unwrap_or(1),
    };
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
            condition(old, ACCEPTED, accepted, generation, now),
            condition(old, READY, ready, generation, now),
            condition(
                old,
                VERIFIED,
                verified_state(old, &seen.verification),
                generation,
                now,
            ),
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
pub(crate) struct State {
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
    if !seen.conflicts.is_empty() {
        return state("False", "ChildConflict", Conflict::message(seen.conflicts));
    }
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
        match &seen.pod_problem {
            Some(problem) => state(
                "False",
                problem.reason,
                format!(
                    "{available} of {desired} replicas available: {}",
                    problem.message
                ),
            ),
            None => state(
                "False",
                "ReplicasUnavailable",
                format!("{available} of {desired} replicas available"),
            ),
        }
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
    /// The pipeline step the event is about (`Validate`, `Apply`, `Verify`, `Prune`).
    pub action: &'static str,
    /// `Normal`, or `Warning` for a state a person should look at.
    pub warning: bool,
    /// The condition's new reason.
    pub reason: String,
    /// What happened.
    pub note: String,
}

/// Reasons that are part of normal operation even though the condition is False.
const BENIGN_REASONS: &[&str] = &["Creating", "RollingOut", "ScaledToZero"];
/// Steps of a rollout in progress: the status shows them, but they are not worth an event (a
/// stuck rollout or a failing pod has its own reason, and that is one).
const PROGRESS_REASONS: &[&str] = &["Creating", "RollingOut", "ReplicasUnavailable", "NotReady"];

/// The events a status change deserves: one per condition whose status or reason changed,
/// except to a step of a rollout in progress.
pub fn transitions(old: Option<&MCPServerStatus>, new: &MCPServerStatus) -> Vec<Transition> {
    new.conditions
        .iter()
        .filter(|c| {
            let before = old.and_then(|o| o.condition(&c.type_));
            before.is_none_or(|b| b.status != c.status || b.reason != c.reason)
                && !PROGRESS_REASONS.contains(&c.reason.as_str())
        })
        .map(|c| Transition {
            action: match c.type_.as_str() {
                ACCEPTED => "Validate",
                VERIFIED => "Verify",
                _ => "Apply",
            },
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

    fn next(server: &MCPServer, seen: &Observation<'_>, now: &Time) -> MCPServerStatus {
        next_status(
            &server.status.clone().unwrap_or_default(),
            server,
            seen,
            now,
        )
    }

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
            conflicts: &[],
            deployment,
            pod_problem: None,
            verification: Verification::NoReplica,
        }
    }

    #[test]
    fn ready_when_every_replica_is_updated_and_available() {
        let server = hello(2);
        let accepted = validate(&server).unwrap();
        let deployment = deployment(AVAILABLE);
        let status = next(
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
        let before = next(&good, &observe(Ok(&accepted), Some(&deployment)), &time(0));

        let mut bad = broken();
        bad.status = Some(before.clone());
        let refused = validate(&bad).unwrap_err();
        let after = next(&bad, &observe(Err(&refused), Some(&deployment)), &time(60));
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
        let status = next(&bad, &observe(Err(&refused), None), &time(0));
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
            let status = next(
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
        let status = next(
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
        let status = next(&server, &seen, &time(0));
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
        let first = next(
            &server,
            &observe(Ok(&accepted), Some(&deployment)),
            &time(0),
        );
        let mut again = server.clone();
        again.status = Some(first.clone());
        let second = next(
            &again,
            &observe(Ok(&accepted), Some(&deployment)),
            &time(30),
        );
        assert_eq!(first, second);
        assert!(transitions(Some(&first), &second).is_empty());
    }

    #[test]
    fn a_foreign_child_is_a_conflict_naming_the_object() {
        let server = hello(1);
        let accepted = validate(&server).unwrap();
        let conflicts = [crate::reconcile::apply::Conflict {
            object: "Service/hello".into(),
            holder: "not controlled by this MCPServer".into(),
        }];
        let mut seen = observe(Ok(&accepted), None);
        seen.conflicts = &conflicts;
        let ready = next(&server, &seen, &time(0))
            .condition(READY)
            .unwrap()
            .clone();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "ChildConflict")
        );
        assert!(
            ready
                .message
                .starts_with("Service/hello exists and is not controlled by this MCPServer"),
            "{}",
            ready.message
        );
    }

    #[test]
    fn a_refused_spec_is_measured_against_the_last_applied_replicas() {
        // The refused spec asks for 2 replicas; the applied Deployment has 1, available.
        let mut bad = broken();
        bad.status = None;
        let refused = validate(&bad).unwrap_err();
        let deployment = deployment(
            "metadata: {name: hello, generation: 1}\nspec: {replicas: 1, selector: {}, template: {}}\nstatus: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1}",
        );
        let status = next(&bad, &observe(Err(&refused), Some(&deployment)), &time(0));
        assert_eq!(status.condition(READY).unwrap().status, "True");
        assert_eq!(status.replicas, Some(1));
    }

    #[test]
    fn unavailable_pods_say_why() {
        let server = hello(1);
        let accepted = validate(&server).unwrap();
        let deployment = deployment(
            "metadata: {name: hello, generation: 1}\nspec: {selector: {}, template: {}}\nstatus: {observedGeneration: 1, replicas: 1, updatedReplicas: 1}",
        );
        let mut seen = observe(Ok(&accepted), Some(&deployment));
        seen.pod_problem = Some(crate::reconcile::pods::PodProblem {
            reason: "ImagePullBackOff",
            message: "pod p container runtime: ImagePullBackOff: not found".into(),
        });
        let ready = next(&server, &seen, &time(0))
            .condition(READY)
            .unwrap()
            .clone();
        assert_eq!(ready.reason, "ImagePullBackOff");
        assert_eq!(
            ready.message,
            "0 of 1 replicas available: pod p container runtime: ImagePullBackOff: not found"
        );
    }

    #[test]
    fn verified_follows_what_a_replica_serves() {
        let server = hello(2);
        let accepted = validate(&server).unwrap();
        let deployment = deployment(AVAILABLE);
        let served = |hash: &str, tools| Served {
            hash: Some(hash.into()),
            counts: Counts {
                tools,
                ..Default::default()
            },
        };
        let answered = |s| Verification::Answered {
            served: s,
            want_hash: accepted.hash.clone(),
            want_counts: accepted.counts,
        };
        let cases = [
            (answered(served(&accepted.hash, 1)), "True", "Serving"),
            (answered(served("0123", 1)), "False", "StaleDeclaration"),
            (
                answered(served(&accepted.hash, 3)),
                "False",
                "StaleDeclaration",
            ),
            (
                Verification::Failed("no MCP answer".into()),
                "False",
                "Unreachable",
            ),
            (Verification::NoReplica, "Unknown", "NotReady"),
        ];
        for (verification, status, reason) in cases {
            let mut seen = observe(Ok(&accepted), Some(&deployment));
            seen.verification = verification.clone();
            let first = next(&server, &seen, &time(0));
            let verified = first.condition(VERIFIED).unwrap();
            assert_eq!(
                (verified.status.as_str(), verified.reason.as_str()),
                (status, reason),
                "{verification:?}"
            );
            // Already verified: the condition is carried over without asking again.
            if status == "True" {
                let mut again = server.clone();
                again.status = Some(first.clone());
                let mut seen = observe(Ok(&accepted), Some(&deployment));
                seen.verification = Verification::Unchanged;
                assert_eq!(next(&again, &seen, &time(9)), first);
            }
        }
    }
}
