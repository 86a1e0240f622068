//! Why a server's pods do not become available, read from their container states and
//! conditions: the reasons a person can act on (a wrong image, a crashing process, a missing
//! Secret, too little memory, no node that fits), with the kubelet's or scheduler's own message.
//! Pure.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// A reason the pods give, for the `Ready` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodProblem {
    /// The condition reason (the kubelet's own word for it).
    pub reason: &'static str,
    /// Which pod and container, and what it says.
    pub message: String,
}

/// Waiting reasons worth naming, most actionable first, with the condition reason each becomes.
const WAITING: &[(&str, &str)] = &[
    ("CreateContainerConfigError", "CreateContainerConfigError"),
    ("InvalidImageName", "ImagePullBackOff"),
    ("ErrImagePull", "ImagePullBackOff"),
    ("ImagePullBackOff", "ImagePullBackOff"),
    ("CrashLoopBackOff", "CrashLoopBackOff"),
];

/// Longest container message quoted.
const MAX_MESSAGE: usize = 300;

/// Rank of a pod the scheduler cannot place: after every container problem (a pod with a
/// container has been placed).
const UNSCHEDULABLE_RANK: usize = WAITING.len() + 1;

/// The most telling problem among the pods, if a container or the scheduler names one.
pub fn problem<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Option<PodProblem> {
    let mut found: Option<(usize, PodProblem)> = None;
    for pod in pods {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        if let Some(unschedulable) = unschedulable(name, pod)
            && found
                .as_ref()
                .is_none_or(|(best, _)| UNSCHEDULABLE_RANK < *best)
        {
            found = Some((UNSCHEDULABLE_RANK, unschedulable));
        }
        let statuses = pod.status.iter().flat_map(|s| {
            s.init_container_statuses
                .iter()
                .flatten()
                .chain(s.container_statuses.iter().flatten())
        });
        for container in statuses {
            if let Some((rank, problem)) = container_problem(name, container)
                && found.as_ref().is_none_or(|(best, _)| rank < *best)
            {
                found = Some((rank, problem));
            }
        }
    }
    found.map(|(_, problem)| problem)
}

/// `PodScheduled=False/Unschedulable`, as the scheduler writes it, with its message (such as
/// `0/3 nodes are available: 3 Insufficient memory.`).
fn unschedulable(name: &str, pod: &Pod) -> Option<PodProblem> {
    let condition = pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
    })?;
    let detail = condition
        .message
        .clone()
        .unwrap_or_else(|| "no node can run it".into());
    let mut problem = describe(name, "", "Unschedulable", &detail);
    problem.message = format!("pod {name}: Unschedulable: {}", trimmed(&detail));
    Some(problem)
}

fn container_problem(pod: &str, container: &ContainerStatus) -> Option<(usize, PodProblem)> {
    let state = container.state.as_ref();
    let oom = container
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .filter(|t| t.reason.as_deref() == Some("OOMKilled"));
    if let Some(waiting) = state.and_then(|s| s.waiting.as_ref()) {
        let waiting_reason = waiting.reason.as_deref().unwrap_or_default();
        if let Some(rank) = WAITING.iter().position(|(r, _)| *r == waiting_reason) {
            // A crash loop whose last run ran out of memory says more as OOMKilled.
            let (reason, detail) = match oom {
                Some(t) if waiting_reason == "CrashLoopBackOff" => (
                    "OOMKilled",
                    t.message
                        .clone()
                        .unwrap_or_else(|| "the container exceeded its memory limit".into()),
                ),
                _ => (
                    WAITING[rank].1,
                    waiting
                        .message
                        .clone()
                        .unwrap_or_else(|| waiting_reason.into()),
                ),
            };
            return Some((rank, describe(pod, &container.name, reason, &detail)));
        }
    }
    oom.map(|t| {
        let detail = t
            .message
            .clone()
            .unwrap_or_else(|| "the container exceeded its memory limit".into());
        (
            WAITING.len(),
            describe(pod, &container.name, "OOMKilled", &detail),
        )
    })
}

fn trimmed(detail: &str) -> String {
    let mut detail = detail.trim().to_owned();
    if detail.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !detail.is_char_boundary(end) {
            end -= 1;
        }
        detail.truncate(end);
        detail.push('…');
    }
    detail
}

fn describe(pod: &str, container: &str, reason: &'static str, detail: &str) -> PodProblem {
    PodProblem {
        reason,
        message: format!(
            "pod {pod} container {container}: {reason}: {}",
            trimmed(detail)
        ),
    }
}

/// Fingerprint of what [`problem`] reads, so that the pod watch triggers a reconcile only when a
/// container's state reason changes (not on every heartbeat of the kubelet).
pub fn states_hash(pod: &Pod) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for container in pod.status.iter().flat_map(|s| {
        s.init_container_statuses
            .iter()
            .flatten()
            .chain(s.container_statuses.iter().flatten())
    }) {
        container.name.hash(&mut hasher);
        let state = container.state.as_ref();
        state
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.as_ref())
            .hash(&mut hasher);
        state.map(|s| s.running.is_some()).hash(&mut hasher);
        container
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.reason.as_ref())
            .hash(&mut hasher);
        container.ready.hash(&mut hasher);
    }
    pod.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> Pod {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn names_each_actionable_reason_with_the_containers_message() {
        let cases = [
            (
                "{waiting: {reason: ImagePullBackOff, message: 'Back-off pulling image \"x:nope\"'}}",
                "",
                "ImagePullBackOff",
                "Back-off pulling image \"x:nope\"",
            ),
            (
                "{waiting: {reason: CreateContainerConfigError, message: 'secret \"token\" not found'}}",
                "",
                "CreateContainerConfigError",
                "secret \"token\" not found",
            ),
            (
                "{waiting: {reason: CrashLoopBackOff, message: back-off 40s}}",
                "",
                "CrashLoopBackOff",
                "back-off 40s",
            ),
            (
                "{waiting: {reason: CrashLoopBackOff, message: back-off 40s}}",
                ", lastState: {terminated: {reason: OOMKilled, exitCode: 137}}",
                "OOMKilled",
                "the container exceeded its memory limit",
            ),
        ];
        for (state, last, reason, detail) in cases {
            let p = pod(&format!(
                "metadata: {{name: p1}}\nstatus: {{containerStatuses: [{{name: runtime, image: x, imageID: '', ready: false, restartCount: 3, state: {state}{last}}}]}}"
            ));
            let found = problem([&p]).unwrap();
            assert_eq!(found.reason, reason, "{state}");
            assert_eq!(
                found.message,
                format!("pod p1 container runtime: {reason}: {detail}")
            );
        }
    }

    #[test]
    fn a_pod_no_node_can_run_says_so_unless_a_container_says_more() {
        let unplaced = pod(
            "metadata: {name: u}\nstatus: {phase: Pending, conditions: [{type: PodScheduled, status: 'False', reason: Unschedulable, message: '0/3 nodes are available: 3 Insufficient memory.'}]}",
        );
        let found = problem([&unplaced]).unwrap();
        assert_eq!(found.reason, "Unschedulable");
        assert_eq!(
            found.message,
            "pod u: Unschedulable: 0/3 nodes are available: 3 Insufficient memory."
        );
        let crashing = pod(
            "metadata: {name: a}\nstatus: {containerStatuses: [{name: runtime, image: x, imageID: '', ready: false, restartCount: 1, state: {waiting: {reason: CrashLoopBackOff}}}]}",
        );
        assert_eq!(
            problem([&unplaced, &crashing]).unwrap().reason,
            "CrashLoopBackOff"
        );
        // Scheduled (or still being scheduled): nothing to say.
        let placed = pod(
            "metadata: {name: p}\nstatus: {conditions: [{type: PodScheduled, status: 'True'}]}",
        );
        assert_eq!(problem([&placed]), None);
    }

    #[test]
    fn a_pending_or_running_pod_has_no_problem_and_the_worst_wins() {
        let running = pod(
            "metadata: {name: ok}\nstatus: {containerStatuses: [{name: runtime, image: x, imageID: '', ready: true, restartCount: 0, state: {running: {}}}]}",
        );
        let pending = pod("metadata: {name: new}\nstatus: {phase: Pending}");
        assert_eq!(problem([&running, &pending]), None);
        let crashing = pod(
            "metadata: {name: a}\nstatus: {containerStatuses: [{name: runtime, image: x, imageID: '', ready: false, restartCount: 1, state: {waiting: {reason: CrashLoopBackOff}}}]}",
        );
        let no_secret = pod(
            "metadata: {name: b}\nstatus: {containerStatuses: [{name: runtime, image: x, imageID: '', ready: false, restartCount: 0, state: {waiting: {reason: CreateContainerConfigError, message: m}}}]}",
        );
        assert_eq!(
            problem([&crashing, &no_secret]).unwrap().reason,
            "CreateContainerConfigError"
        );
        assert_ne!(states_hash(&crashing), states_hash(&no_secret));
    }
}
