//! The `Verified` condition, from what the verifier found of a server's Ready pods (it only
//! reads; the questions are the verifier's). Pure.
//!
//! - `True/Serving`: every Ready replica serves the expected declaration (each one named);
//! - `Unknown/Propagating`: some still serve another one, within the grace period a ConfigMap
//!   update needs to reach every pod;
//! - `False/StaleDeclaration`: past the grace period, naming the pods and what they serve;
//! - `False/ReloadRefused`: a runtime refused to load the expected declaration (its error quoted);
//! - `False/Unreachable`: a Ready replica does not answer (the connect error quoted);
//! - `Unknown/NotReady`: no Ready replica to ask, or none has answered yet.
//!
//! While some Ready replicas have not answered (a new replica, a restarted operator), what was
//! said before stands, so that nothing is written until there is something new to say.

use super::status::{State, state};
use crate::resource::{Condition, Counts};
use crate::verifier::schedule::{PodView, ServerView, UNREACHABLE_AFTER};
use std::time::{Duration, Instant};

/// Reason: every Ready replica serves the expected declaration.
pub const SERVING: &str = "Serving";
/// Reason: replicas still load the expected declaration.
pub const PROPAGATING: &str = "Propagating";
/// Reason: replicas serve another declaration past the grace period.
pub const STALE: &str = "StaleDeclaration";
/// Reason: a runtime refused to load the expected declaration.
pub const RELOAD_REFUSED: &str = "ReloadRefused";
/// Reason: a Ready replica does not answer.
pub const UNREACHABLE: &str = "Unreachable";
/// Reason: no Ready replica.
pub const NOT_READY: &str = "NotReady";

/// Pods named in one message at most.
const MAX_NAMED: usize = 10;

/// The declaration the pods should serve.
#[derive(Clone, Copy, Debug)]
pub struct Want<'a> {
    /// Its hash (the ConfigMap's stamp).
    pub hash: &'a str,
    /// What it holds.
    pub counts: Counts,
}

/// The condition, and when to look again if nothing else happens (the end of a grace period).
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Status, reason and message.
    pub state: State,
    /// Look again after this long.
    pub recheck: Option<Duration>,
}

enum Pod<'a> {
    Serving,
    Refused { serves: &'a str, error: String },
    Stale { serves: &'a str },
    Unreachable { error: &'a str },
    Pending,
}

fn classify<'a>(pod: &'a PodView, want: Want<'_>) -> Pod<'a> {
    match &pod.result {
        Some(Ok(report)) if report.hash == want.hash && report.counts() == want.counts => {
            Pod::Serving
        }
        Some(Ok(report)) => match report.refused(want.hash) {
            Some(reload) => Pod::Refused {
                serves: &report.hash,
                error: reload
                    .error
                    .clone()
                    .unwrap_or_else(|| "no reason given".into()),
            },
            None => Pod::Stale {
                serves: &report.hash,
            },
        },
        Some(Err(error)) if pod.failures >= UNREACHABLE_AFTER => Pod::Unreachable { error },
        _ => Pod::Pending,
    }
}

fn names(parts: Vec<String>) -> String {
    let more = parts.len().saturating_sub(MAX_NAMED);
    let mut text = parts
        .into_iter()
        .take(MAX_NAMED)
        .collect::<Vec<_>>()
        .join("; ");
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text
}

fn describe_counts(c: &Counts) -> String {
    format!(
        "{} tools, {} resources, {} resource templates, {} prompts",
        c.tools, c.resources, c.resource_templates, c.prompts
    )
}

/// The `Verified` condition of a server expecting `want` (`None`: nothing applied yet), from
/// the verifier's `view` of its Ready pods; `old` is the condition as last written, kept while
/// Ready replicas have not all answered (so a restart or a new replica writes nothing until
/// there is something new to say).
pub fn verdict(
    want: Option<Want<'_>>,
    view: &ServerView,
    desired: i32,
    old: Option<&Condition>,
    grace: Duration,
    now: Instant,
) -> Verdict {
    let settled = |state| Verdict {
        state,
        recheck: None,
    };
    if view.pods.is_empty() {
        let message = if desired == 0 {
            "scaled to zero: no replica to ask".into()
        } else {
            "no Ready replica to ask".into()
        };
        return settled(state("Unknown", NOT_READY, message));
    }
    let Some(want) = want else {
        return settled(state(
            "Unknown",
            NOT_READY,
            "no declaration applied yet".into(),
        ));
    };
    let total = view.pods.len();
    let pods: Vec<(&PodView, Pod<'_>)> = view.pods.iter().map(|p| (p, classify(p, want))).collect();
    let serving: Vec<&str> = pods
        .iter()
        .filter(|(_, c)| matches!(c, Pod::Serving))
        .map(|(p, _)| p.name.as_str())
        .collect();
    let refused: Vec<String> = pods
        .iter()
        .filter_map(|(p, c)| match c {
            Pod::Refused { serves, error } => Some(format!(
                "pod {} refused to load declaration {}: {error}; it still serves {serves}",
                p.name, want.hash
            )),
            _ => None,
        })
        .collect();
    if !refused.is_empty() {
        return settled(state("False", RELOAD_REFUSED, names(refused)));
    }
    let unreachable: Vec<String> = pods
        .iter()
        .filter_map(|(p, c)| match c {
            Pod::Unreachable { error } => Some(format!("pod {} ({}): {error}", p.name, p.ip)),
            _ => None,
        })
        .collect();
    if !unreachable.is_empty() {
        return settled(state(
            "False",
            UNREACHABLE,
            format!(
                "{} of {total} Ready replicas do not answer: {}",
                unreachable.len(),
                names(unreachable)
            ),
        ));
    }
    let want_text = format!(
        "declaration {} ({})",
        want.hash,
        describe_counts(&want.counts)
    );
    if serving.len() == total {
        return settled(state(
            "True",
            SERVING,
            format!(
                "{total} of {total} replicas serve {want_text}: {}",
                names(serving.iter().map(|s| (*s).to_owned()).collect())
            ),
        ));
    }
    let stale: Vec<String> = pods
        .iter()
        .filter_map(|(p, c)| match c {
            Pod::Stale { serves } => Some(format!("pod {} serves {serves}", p.name)),
            _ => None,
        })
        .collect();
    let pending = total - serving.len() - stale.len();
    if stale.is_empty() {
        // Some Ready replicas have not answered yet (a new replica, a restarted operator): what
        // was said before stands until they have.
        if let Some(old) = old {
            return settled(State::from_condition(old));
        }
        return settled(state(
            "Unknown",
            NOT_READY,
            format!("asking {pending} of {total} Ready replicas which declaration they serve"),
        ));
    }
    let waited = view
        .want
        .as_ref()
        .filter(|(hash, _)| hash == want.hash)
        .map(|(_, since)| now.saturating_duration_since(*since))
        .unwrap_or_default();
    let summary = format!(
        "{} of {total} replicas serve {want_text}; {}",
        serving.len(),
        names(stale)
    );
    if waited >= grace {
        return settled(state(
            "False",
            STALE,
            format!(
                "{summary}, after the grace period of {}s a ConfigMap update needs to reach \
                 every pod",
                grace.as_secs()
            ),
        ));
    }
    Verdict {
        state: state("Unknown", PROPAGATING, format!("{summary} (loading it)")),
        recheck: Some(grace - waited + Duration::from_secs(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verifier::report::parse;

    const GRACE: Duration = Duration::from_secs(150);

    fn counts() -> Counts {
        Counts {
            tools: 1,
            ..Default::default()
        }
    }

    fn answered(name: &str, json: &str) -> PodView {
        PodView {
            name: name.into(),
            ip: "10.0.0.1".into(),
            result: Some(Ok(parse(json.as_bytes()).unwrap())),
            failures: 0,
        }
    }

    fn serves(name: &str, hash: &str) -> PodView {
        answered(
            name,
            &format!(
                r#"{{"hash": "{hash}", "tools": 1, "resources": 0, "resourceTemplates": 0, "prompts": 0}}"#
            ),
        )
    }

    fn failing(name: &str, failures: u32) -> PodView {
        PodView {
            name: name.into(),
            ip: "10.0.0.9".into(),
            result: Some(Err(
                "cannot connect to 10.0.0.9:9090: Connection refused".into()
            )),
            failures,
        }
    }

    fn pending(name: &str) -> PodView {
        PodView {
            name: name.into(),
            ip: "10.0.0.2".into(),
            result: None,
            failures: 0,
        }
    }

    fn view(pods: Vec<PodView>, since: Instant) -> ServerView {
        ServerView {
            want: Some(("new".into(), since)),
            pods,
        }
    }

    fn want() -> Option<Want<'static>> {
        Some(Want {
            hash: "new",
            counts: counts(),
        })
    }

    fn decide(pods: Vec<PodView>, waited: u64, old: Option<&Condition>) -> Verdict {
        let t0 = Instant::now();
        verdict(
            want(),
            &view(pods, t0),
            1,
            old,
            GRACE,
            t0 + Duration::from_secs(waited),
        )
    }

    fn summary(v: &Verdict) -> (&str, &str, &str) {
        (
            v.state.status.as_str(),
            v.state.reason.as_str(),
            v.state.message.as_str(),
        )
    }

    fn kind(v: &Verdict) -> (&str, &str) {
        (v.state.status.as_str(), v.state.reason.as_str())
    }

    #[test]
    fn serving_names_every_replica() {
        let v = decide(vec![serves("a", "new"), serves("b", "new")], 0, None);
        assert_eq!(
            summary(&v),
            (
                "True",
                "Serving",
                "2 of 2 replicas serve declaration new (1 tools, 0 resources, 0 resource templates, 0 prompts): a; b"
            )
        );
        assert_eq!(v.recheck, None);
    }

    #[test]
    fn another_hash_is_propagating_then_stale() {
        let pods = || vec![serves("a", "new"), serves("b", "old")];
        let v = decide(pods(), 10, None);
        assert_eq!(kind(&v), ("Unknown", "Propagating"));
        assert!(
            v.state
                .message
                .starts_with("1 of 2 replicas serve declaration new"),
            "{}",
            v.state.message
        );
        assert!(
            v.state.message.contains("pod b serves old"),
            "{}",
            v.state.message
        );
        assert_eq!(v.recheck, Some(GRACE - Duration::from_secs(9)));
        let v = decide(pods(), 150, None);
        assert_eq!(kind(&v), ("False", "StaleDeclaration"));
        assert!(
            v.state.message.contains("pod b serves old"),
            "{}",
            v.state.message
        );
        assert!(
            v.state.message.contains("grace period of 150s"),
            "{}",
            v.state.message
        );
    }

    #[test]
    fn a_refused_reload_is_reported_at_once_with_its_error() {
        let refused = answered(
            "b",
            r#"{"hash": "old", "tools": 1, "resources": 0, "resourceTemplates": 0, "prompts": 0,
                "lastReload": {"outcome": "refused", "hash": "new", "error": "spec.tools[0].content[0].text: unclosed"}}"#,
        );
        let v = decide(vec![serves("a", "new"), refused], 0, None);
        assert_eq!(
            summary(&v),
            (
                "False",
                "ReloadRefused",
                "pod b refused to load declaration new: spec.tools[0].content[0].text: unclosed; it still serves old"
            )
        );
    }

    #[test]
    fn unreachable_needs_failures_in_a_row() {
        let v = decide(vec![serves("a", "new"), failing("b", 2)], 0, None);
        assert_eq!(kind(&v), ("False", "Unreachable"));
        assert_eq!(
            v.state.message,
            "1 of 2 Ready replicas do not answer: pod b (10.0.0.9): cannot connect to 10.0.0.9:9090: Connection refused"
        );
        // One failure is a replica not asked successfully yet.
        let v = decide(vec![serves("a", "new"), failing("b", 1)], 0, None);
        assert_eq!(v.state.reason, "NotReady");
    }

    #[test]
    fn unanswered_replicas_keep_what_was_said() {
        let old = Condition {
            type_: "Verified".into(),
            status: "True".into(),
            reason: "Serving".into(),
            message: "1 of 1 replicas serve declaration new (...): a".into(),
            observed_generation: Some(1),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::now(),
            ),
        };
        let v = decide(vec![serves("a", "new"), pending("b")], 0, Some(&old));
        assert_eq!(summary(&v), ("True", "Serving", old.message.as_str()));
        // Nothing said yet: not a propagation (no event), just not known.
        let v = decide(vec![pending("a")], 0, None);
        assert_eq!(
            summary(&v),
            (
                "Unknown",
                "NotReady",
                "asking 1 of 1 Ready replicas which declaration they serve"
            )
        );
    }

    #[test]
    fn no_ready_replica_is_not_ready() {
        let t0 = Instant::now();
        let v = verdict(want(), &ServerView::default(), 0, None, GRACE, t0);
        assert_eq!(
            summary(&v),
            ("Unknown", "NotReady", "scaled to zero: no replica to ask")
        );
        let v = verdict(want(), &ServerView::default(), 2, None, GRACE, t0);
        assert_eq!(v.state.message, "no Ready replica to ask");
    }
}
