//! Status step of the reconcile pipeline, pure part: from what validate, apply and the cluster
//! said, the status to write and the events the change deserves. Condition times move only when
//! a condition changes, so writing the same status twice is a no-op.

use super::apply::Conflict;
use super::build::RUNTIME_IMAGE_ANNOTATION;
use super::pods::PodProblem;
use super::validate::{Accepted, Refused};
use kube::ResourceExt as _;

/// Condition type: what routes clients from outside took the server.
pub const EXPOSED: &str = "Exposed";
use crate::resource::{Condition, MCPServer, MCPServerStatus};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Condition type: the declaration compiled.
pub const ACCEPTED: &str = "Accepted";
/// Condition type: every replica is up to date and available.
pub const READY: &str = "Ready";
/// Condition type: every Ready pod was found serving the current declaration.
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
    /// The `Verified` condition (`reconcile/verified.rs`); `None` when verification is off.
    pub verified: Option<State>,
    /// The `Exposed` condition (`reconcile/exposed.rs`); `None` for a server not exposed
    /// outside the cluster.
    pub exposed: Option<State>,
    /// A change of the pods waits for a rollout slot (`reconcile/rollouts.rs`).
    pub rollout_queued: bool,
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
    let (limits, tool_sets) = match seen.verdict {
        Ok(accepted) => (accepted.limits.clone(), accepted.tool_sets.clone()),
        Err(_) => (old.limits.clone(), old.tool_sets.clone()),
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
    let mut conditions = vec![
        condition(old, ACCEPTED, accepted, generation, now),
        condition(old, READY, ready, generation, now),
    ];
    if let Some(verified) = &seen.verified {
        conditions.push(condition(old, VERIFIED, verified.clone(), generation, now));
    }
    // What is exposed is the last accepted spec's: a refused one changed nothing.
    if let Some(exposed) = seen.exposed.as_ref().filter(|_| seen.verdict.is_ok()) {
        conditions.push(condition(old, EXPOSED, exposed.clone(), generation, now));
    } else if seen.verdict.is_err()
        && let Some(kept) = old.condition(EXPOSED)
    {
        conditions.push(kept.clone());
    }
    MCPServerStatus {
        observed_generation: generation,
        conditions,
        url,
        replicas: Some(desired),
        selector: Some(super::build::pod_selector(server)),
        ready_replicas: Some(available.unwrap_or(0)),
        counts,
        runtime_image: seen
            .deployment
            .and_then(|d| d.annotations().get(RUNTIME_IMAGE_ANNOTATION).cloned()),
        rollout_queued: seen.rollout_queued.then_some(true),
        limits,
        tool_sets,
    }
}

/// Status, reason and message of a condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// One CamelCase word.
    pub reason: String,
    /// What a person reads.
    pub message: String,
}

impl State {
    /// The state a written condition holds.
    pub fn from_condition(condition: &Condition) -> Self {
        Self {
            status: condition.status.clone(),
            reason: condition.reason.clone(),
            message: condition.message.clone(),
        }
    }
}

/// A condition state.
pub fn state(status: &str, reason: &str, message: String) -> State {
    State {
        status: status.into(),
        reason: reason.into(),
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
    let rollout = rollout(deployment, desired);
    if desired == 0 {
        state(
            "False",
            "ScaledToZero",
            "spec.replicas is 0: nothing serves".into(),
        )
    } else if let Some(refused) = rollout
        .failed_create
        .filter(|_| rollout.available < desired)
    {
        // The cause of a stuck rollout, when pods cannot even be created: say that first.
        state(
            "False",
            "FailedCreate",
            format!(
                "{} of {desired} replicas available: pods cannot be created: {refused}",
                rollout.available
            ),
        )
    } else if let Some(stuck) = rollout.stuck {
        state("False", "RolloutStuck", stuck)
    } else if rollout.rolled_out && rollout.available >= desired {
        state(
            "True",
            "Available",
            format!("{} of {desired} replicas available", rollout.available),
        )
    } else if let Some(problem) = &seen.pod_problem {
        state(
            "False",
            problem.reason,
            format!(
                "{} of {desired} replicas available: {}",
                rollout.available, problem.message
            ),
        )
    } else if !rollout.rolled_out || !rollout.completed {
        // One message for every step of a rollout (the controller's first look, the ReplicaSet
        // making pods, pods starting): they are not transitions a person acts on, and a message
        // that followed each would be a status write per step.
        state(
            "False",
            "RollingOut",
            format!(
                "{} of {desired} replicas available; the Deployment is rolling out",
                rollout.available
            ),
        )
    } else {
        state(
            "False",
            "ReplicasUnavailable",
            format!(
                "{} of {desired} replicas available (the rollout had completed)",
                rollout.available
            ),
        )
    }
}

/// What the `Ready` condition reads of a Deployment: a change of anything else (the
/// controller's bookkeeping while a rollout progresses) does not change `Ready`.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Rollout {
    /// The current pod template is on every replica: the controller saw the current generation,
    /// `desired` replicas are updated and no old one is left.
    pub rolled_out: bool,
    /// The controller reports the rollout complete (`Progressing` reason
    /// `NewReplicaSetAvailable`, kept when replicas are lost later).
    pub completed: bool,
    /// Available replicas.
    pub available: i32,
    /// The message of `Progressing=False/ProgressDeadlineExceeded`, when the rollout is stuck.
    pub stuck: Option<String>,
    /// The message of `ReplicaFailure=True/FailedCreate` (the ReplicaSet cannot create pods: a
    /// quota, an admission webhook or policy refused them), copied by the Deployment controller.
    pub failed_create: Option<String>,
}

impl Rollout {
    /// What decides `Ready` (and its message) with `desired` replicas, pods aside: a change of
    /// anything else is not news. `rolled_out` alone is not (a new server's ReplicaSet making
    /// its pods leaves it rolling out).
    pub fn decides(&self, desired: i32) -> (bool, bool, i32, Option<String>, Option<String>) {
        (
            self.rolled_out && self.available >= desired,
            self.rolled_out && self.completed,
            self.available,
            self.stuck.clone(),
            self.failed_create.clone(),
        )
    }
}

/// The [`Rollout`] of `deployment` against `desired` replicas.
pub fn rollout(deployment: &Deployment, desired: i32) -> Rollout {
    let status = deployment.status.clone().unwrap_or_default();
    let generation = deployment.metadata.generation.unwrap_or(0);
    let progressing = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_.as_deref() == Some("Progressing"));
    let reason = progressing.and_then(|c| c.reason.as_deref());
    let failed_create = status
        .conditions
        .iter()
        .flatten()
        .find(|c| {
            c.type_.as_deref() == Some("ReplicaFailure")
                && c.status.as_deref() == Some("True")
                && c.reason.as_deref() == Some("FailedCreate")
        })
        .map(|c| {
            c.message
                .clone()
                .unwrap_or_else(|| "the ReplicaSet cannot create pods".into())
        });
    let updated = status.updated_replicas.unwrap_or(0);
    Rollout {
        rolled_out: status.observed_generation.unwrap_or(0) >= generation
            && updated >= desired
            && status.replicas.unwrap_or(0) <= updated,
        completed: reason == Some("NewReplicaSetAvailable"),
        available: status.available_replicas.unwrap_or(0),
        failed_create,
        stuck: (reason == Some("ProgressDeadlineExceeded")).then(|| {
            progressing
                .and_then(|c| c.message.clone())
                .unwrap_or_else(|| "the rollout made no progress".into())
        }),
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
        status: new.status,
        reason: new.reason,
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
const BENIGN_REASONS: &[&str] = &[
    "Creating",
    "RollingOut",
    "ScaledToZero",
    "Propagating",
    "Pending",
];
/// Steps of a rollout in progress: the status shows them, but they are not worth an event (a
/// stuck rollout or a failing pod has its own reason, and that is one).
const PROGRESS_REASONS: &[&str] = &[
    "Creating",
    "RollingOut",
    "ReplicasUnavailable",
    "NotReady",
    "Pending",
];

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
                EXPOSED => "Expose",
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
    use crate::reconcile::validate::{Fragments, validate};
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
            verified: None,
            exposed: None,
            rollout_queued: false,
        }
    }

    #[test]
    fn ready_when_every_replica_is_updated_and_available() {
        let server = hello(2);
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
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
        let accepted = validate(&good, false, 1, &Fragments::default()).unwrap();
        let deployment = deployment(AVAILABLE);
        let before = next(&good, &observe(Ok(&accepted), Some(&deployment)), &time(0));

        let mut bad = broken();
        bad.status = Some(before.clone());
        let refused = validate(&bad, false, 1, &Fragments::default()).unwrap_err();
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
        let refused = validate(&bad, false, 1, &Fragments::default()).unwrap_err();
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
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
        let cases = [
            ("status: {observedGeneration: 1}", "RollingOut"),
            (
                "status: {observedGeneration: 2, replicas: 3, updatedReplicas: 1, availableReplicas: 2}",
                "RollingOut",
            ),
            // A new Deployment whose pods have not started: still rolling out.
            (
                "status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 1, conditions: [{type: Progressing, status: 'True', reason: ReplicaSetUpdated}]}",
                "RollingOut",
            ),
            // A completed rollout that lost a replica.
            (
                "status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 1, conditions: [{type: Progressing, status: 'True', reason: NewReplicaSetAvailable}]}",
                "ReplicasUnavailable",
            ),
            (
                "status: {observedGeneration: 2, replicas: 2, updatedReplicas: 1, conditions: [{type: Progressing, status: 'False', reason: ProgressDeadlineExceeded, message: stuck}]}",
                "RolloutStuck",
            ),
            // A quota or admission refused the pods: the ReplicaSet's failure, copied by the
            // Deployment controller, says why (even once the rollout is stuck).
            (
                "status: {observedGeneration: 2, replicas: 0, conditions: [{type: ReplicaFailure, status: 'True', reason: FailedCreate, message: 'pods \"hello-1\" is forbidden: exceeded quota: none, requested: pods=1, used: pods=0, limited: pods=0'}, {type: Progressing, status: 'False', reason: ProgressDeadlineExceeded, message: stuck}]}",
                "FailedCreate",
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
    fn the_steps_of_a_new_rollout_are_one_status() {
        // What the Deployment controller writes while a new server's pods come up (no pod
        // available yet): every step gives the same status, so it is written once.
        let server = hello(2);
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
        let steps = [
            "{}",
            "{observedGeneration: 2}",
            "{observedGeneration: 2, conditions: [{type: Progressing, status: 'True', reason: NewReplicaSetCreated}]}",
            "{observedGeneration: 2, replicas: 1, updatedReplicas: 1, unavailableReplicas: 1, conditions: [{type: Progressing, status: 'True', reason: ReplicaSetUpdated}]}",
            "{observedGeneration: 2, replicas: 2, updatedReplicas: 2, unavailableReplicas: 2, conditions: [{type: Available, status: 'False', reason: MinimumReplicasUnavailable}, {type: Progressing, status: 'True', reason: ReplicaSetUpdated}]}",
        ];
        let mut decides = Vec::new();
        let statuses: Vec<MCPServerStatus> = steps
            .iter()
            .enumerate()
            .map(|(i, step)| {
                let deployment = deployment(&format!(
                    "metadata: {{name: hello, generation: 2}}\nspec: {{selector: {{}}, template: {{}}}}\nstatus: {step}"
                ));
                decides.push(rollout(&deployment, 2).decides(2));
                next(
                    &server,
                    &observe(Ok(&accepted), Some(&deployment)),
                    &time(i as i64),
                )
            })
            .collect();
        let ready = statuses[0].condition(READY).unwrap();
        assert_eq!(ready.reason, "RollingOut");
        assert_eq!(
            ready.message,
            "0 of 2 replicas available; the Deployment is rolling out"
        );
        // Times aside (`server.status` is unset here), every step is the same status.
        let without_times = |s: &MCPServerStatus| {
            let mut s = s.clone();
            for c in &mut s.conditions {
                c.last_transition_time = time(0);
            }
            s
        };
        for (step, status) in steps.iter().zip(&statuses) {
            assert_eq!(without_times(status), without_times(&statuses[0]), "{step}");
        }
        // Nor do they trigger a reconcile.
        assert!(decides.iter().all(|d| *d == decides[0]), "{decides:?}");
    }

    #[test]
    fn scaled_to_zero_is_not_ready() {
        let server = hello(0);
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
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
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
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
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
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
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
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
        let refused = validate(&bad, false, 1, &Fragments::default()).unwrap_err();
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
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
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
    fn verified_is_written_when_on_and_propagating_is_no_warning() {
        let server = hello(2);
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
        let deployment = deployment(AVAILABLE);
        let off = next(
            &server,
            &observe(Ok(&accepted), Some(&deployment)),
            &time(0),
        );
        assert_eq!(off.condition(VERIFIED), None);
        let mut seen = observe(Ok(&accepted), Some(&deployment));
        seen.verified = Some(state(
            "True",
            "Serving",
            "2 of 2 replicas serve x: a; b".into(),
        ));
        let serving = next(&server, &seen, &time(0));
        assert_eq!(serving.condition(VERIFIED).unwrap().reason, "Serving");
        seen.verified = Some(state("Unknown", "Propagating", "1 of 2 ...".into()));
        let propagating = next(&server, &seen, &time(5));
        let events = transitions(Some(&serving), &propagating);
        assert_eq!(
            events
                .iter()
                .map(|e| (e.action, e.reason.as_str(), e.warning))
                .collect::<Vec<_>>(),
            [("Verify", "Propagating", false)]
        );
        seen.verified = Some(state("False", "StaleDeclaration", "...".into()));
        let stale = next(&server, &seen, &time(200));
        assert!(transitions(Some(&propagating), &stale)[0].warning);
    }
}
