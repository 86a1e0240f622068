//! Reconciling one `MCPServer`, as a pipeline: read -> validate (pure) -> build (pure) -> apply
//! -> status. This file runs the steps in order; each step lives in its own module.

pub mod apply;
pub mod build;
pub mod cache;
pub mod host_claims;
pub mod memory;
pub mod pods;
pub mod status;
pub mod validate;
pub mod verify;

use crate::metrics::Metrics;
use crate::resource::{MCPServer, MCPServerStatus};
use apply::{ApplyError, FIELD_MANAGER, Target};
use build::SERVER_LABEL;
use cache::Child as _;
use cache::Stores;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Api, Client, Resource, ResourceExt};
use memory::Memory;
use rand::Rng as _;
use status::{Observation, Transition, Verification};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What every reconcile shares.
pub struct Context {
    /// The API client, with the operator's own identity.
    pub client: Client,
    /// Settings that shape the built objects.
    pub config: build::BuildConfig,
    /// Publishes Kubernetes events.
    pub recorder: Recorder,
    /// The operator's metrics.
    pub metrics: Arc<Metrics>,
    /// The watch caches of the children.
    pub stores: Stores,
    /// What the operator remembers of its own writes.
    pub memory: Arc<Memory>,
    /// Consecutive failures per server, for backoff.
    failures: Mutex<HashMap<String, u32>>,
}

impl Context {
    /// A context for reconciles.
    pub fn new(
        client: Client,
        config: build::BuildConfig,
        recorder: Recorder,
        metrics: Arc<Metrics>,
        stores: Stores,
        memory: Arc<Memory>,
    ) -> Self {
        Self {
            client,
            config,
            recorder,
            metrics,
            stores,
            memory,
            failures: Mutex::default(),
        }
    }
}

/// Why a reconcile failed (it is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Only namespaced objects are reconciled.
    #[error("MCPServer {name} has no namespace")]
    NoNamespace {
        /// Name of the server.
        name: String,
    },
    /// A child could not be written.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// The status could not be written.
    #[error("cannot write the status of MCPServer {name}")]
    WriteStatus {
        /// Name of the server.
        name: String,
        /// The API server's answer.
        #[source]
        source: kube::Error,
    },
}

impl Error {
    /// A short label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NoNamespace { .. } => "no_namespace",
            Self::Apply(_) => "apply",
            Self::WriteStatus { .. } => "status",
        }
    }
}

/// How long a server waits before it is looked at again without any change: long (every change
/// is watched; this only repairs a missed event), and jittered so that servers created together
/// do not all come back in the same second.
fn resync() -> Duration {
    Duration::from_secs(rand::rng().random_range(1800..2700))
}

/// Longest wait for the Deployment controller's first look at a new server's Deployment before
/// the first status is written anyway.
const FIRST_LOOK: Duration = Duration::from_secs(5);

/// How often a server whose children conflict with foreign objects looks again (those objects
/// are not watched: they lack the operator's labels).
const CONFLICT_RECHECK: Duration = Duration::from_secs(60);

/// Reconciles one server; the controller calls this on every change of it or its children.
pub async fn reconcile(server: Arc<MCPServer>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let result = reconcile_inner(&server, &ctx).await;
    ctx.metrics
        .observe_reconcile(started.elapsed(), result.as_ref().err().map(Error::kind));
    if result.is_ok()
        && let Ok(mut failures) = ctx.failures.lock()
    {
        failures.remove(&key(&server));
    }
    result
}

/// Backoff after a failed reconcile: 5 s, doubling per consecutive failure, at most 5 minutes.
pub fn error_policy(server: Arc<MCPServer>, error: &Error, ctx: Arc<Context>) -> Action {
    let failures = ctx
        .failures
        .lock()
        .map(|mut failures| {
            let count = failures.entry(key(&server)).or_insert(0);
            *count = count.saturating_add(1);
            *count
        })
        .unwrap_or(1);
    tracing::warn!(server = %key(&server), failures, error = %error_chain(error), "reconcile failed");
    Action::requeue(backoff(failures))
}

fn backoff(failures: u32) -> Duration {
    let seconds = 5u64.saturating_mul(1u64 << failures.saturating_sub(1).min(10));
    Duration::from_secs(seconds.min(300))
}

fn key(server: &MCPServer) -> String {
    format!(
        "{}/{}",
        server.namespace().unwrap_or_default(),
        server.name_any()
    )
}

async fn reconcile_inner(server: &MCPServer, ctx: &Context) -> Result<Action, Error> {
    let name = server.name_any();
    let namespace = server
        .namespace()
        .ok_or_else(|| Error::NoNamespace { name: name.clone() })?;
    if !ctx.stores.ready().await {
        tracing::warn!(server = %format!("{namespace}/{name}"), "child caches not filled; reconciling without them");
    }
    let uid = server.uid().unwrap_or_default();
    // The status as last written: the watch cache may not have seen the operator's last write.
    let old = ctx
        .memory
        .status(&uid)
        .or_else(|| server.status.clone())
        .unwrap_or_default();
    if let Some(status) = crate::suspend::status(&old, server, &Time(jiff::Timestamp::now())) {
        if status != old || server.status.is_none() {
            write_status(ctx, &namespace, &name, &status).await?;
            ctx.memory.remember_status(&uid, status);
        }
        return Ok(Action::await_change());
    }
    let verdict = validate::validate(server);
    let verdict = host_claims::check(server, &ctx.stores.servers, verdict);
    let url = build::url(server, &ctx.config);
    let mut apply_error = None;
    let mut applied = apply::Applied::default();
    match &verdict {
        Ok(accepted) => {
            let children =
                build::children(server, &accepted.manifest_yaml, &accepted.hash, &ctx.config);
            let target = Target {
                client: &ctx.client,
                stores: &ctx.stores,
                memory: &ctx.memory,
                server,
            };
            let session_key = || {
                let mut key = [0u8; 32];
                rand::rng().fill(&mut key);
                build::session_key(server, key)
            };
            match apply::apply(&target, &children, session_key).await {
                Ok(done) => applied = done,
                Err(error) => {
                    applied.deployment = apply::cached_deployment(&ctx.stores, server);
                    apply_error = Some(error);
                }
            }
        }
        Err(_) => applied.deployment = apply::cached_deployment(&ctx.stores, server),
    }
    let pods = ctx.stores.pods.state_filter(|pod| {
        pod.namespace().as_deref() == Some(namespace.as_str())
            && pod.labels().get(SERVER_LABEL) == Some(&name)
    });
    let (verification, verify_misses) = verify_step(ctx, server, &verdict, &old, &applied).await;
    let seen = Observation {
        verdict: verdict.as_ref(),
        url,
        apply_error: apply_error.as_ref().map(ApplyError::message),
        conflicts: &applied.conflicts,
        deployment: applied.deployment.as_ref(),
        pod_problem: pods::problem(pods.iter().map(AsRef::as_ref)),
        verification,
    };
    let status = status::next_status(&old, server, &seen, &Time(jiff::Timestamp::now()));
    // Exported whether or not the status needs writing (after a restart it may not).
    ctx.metrics.set_conditions(
        &namespace,
        &name,
        status
            .conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.status.as_str())),
    );
    // A server's first status waits once, at most FIRST_LOOK, for the Deployment controller's
    // first look at the Deployment just written (its status write is watched, and usually comes
    // within a second or two): "waiting for the Deployment controller" would be superseded at
    // once, so it is not written. A reconcile that did not write the Deployment writes status.
    let deployment_unseen = applied.deployment.as_ref().is_some_and(|d| {
        d.status
            .as_ref()
            .and_then(|s| s.observed_generation)
            .is_none()
    });
    if old.conditions.is_empty()
        && applied.deployment_written
        && deployment_unseen
        && apply_error.is_none()
    {
        tracing::debug!(server = %format!("{namespace}/{name}"), "first status waits for the Deployment controller");
        return Ok(Action::requeue(FIRST_LOOK));
    }
    let mut events = Vec::new();
    if status != old || server.status.is_none() {
        write_status(ctx, &namespace, &name, &status).await?;
        ctx.memory.remember_status(&uid, status.clone());
        // Events follow the status they describe, and only its transitions.
        events = status::transitions(Some(&old), &status);
        tracing::info!(
            server = %format!("{namespace}/{name}"),
            accepted = verdict.is_ok(),
            ready = status.condition(status::READY).map(|c| c.reason.as_str()).unwrap_or_default(),
            writes = applied.writes,
            "status changed"
        );
    } else {
        tracing::debug!(server = %format!("{namespace}/{name}"), writes = applied.writes, "reconciled; status unchanged");
    }
    events.extend(applied.pruned.iter().map(|child| Transition {
        action: "Prune",
        warning: false,
        reason: "Pruned".into(),
        note: format!("deleted {child}: the spec no longer asks for it"),
    }));
    publish(ctx, server, &events).await;
    match apply_error {
        Some(error) => Err(error.into()),
        None if !applied.conflicts.is_empty() => Ok(Action::requeue(CONFLICT_RECHECK)),
        // Not (yet) serving the current declaration: ask again, backing off.
        None if verify_misses > 0 => Ok(Action::requeue(verify_backoff(verify_misses))),
        None => Ok(Action::requeue(resync())),
    }
}

/// Asks the pods which declaration they serve, when a replica is available and the current
/// declaration has not been found served yet. Returns what was found and the misses in a row.
async fn verify_step(
    ctx: &Context,
    server: &MCPServer,
    verdict: &Result<validate::Accepted, validate::Refused>,
    old: &MCPServerStatus,
    applied: &apply::Applied,
) -> (Verification, u32) {
    let uid = server.uid().unwrap_or_default();
    let namespace = server.namespace().unwrap_or_default();
    let available = applied
        .deployment
        .as_ref()
        .and_then(|d| d.status.as_ref())
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    // What should be served: the declaration applied last (the refused one never was).
    let want = match verdict {
        Ok(accepted) => Some((accepted.hash.clone(), accepted.counts)),
        Err(_) => ConfigMap::cached(&ctx.stores, &namespace, &build::config_map_name(server))
            .and_then(|c| c.annotations().get(validate::HASH_ANNOTATION).cloned())
            .zip(old.counts),
    };
    let Some((want_hash, want_counts)) =
        want.filter(|_| available > 0 && applied.conflicts.is_empty())
    else {
        return (Verification::NoReplica, 0);
    };
    if ctx.memory.verified(&uid).as_deref() == Some(want_hash.as_str()) {
        return (Verification::Unchanged, 0);
    }
    let prefix = build::public_endpoint(server)
        .and_then(|endpoint| endpoint.prefix)
        .unwrap_or_default();
    let verification = match verify::ask(&ctx.client, &namespace, &server.name_any(), prefix).await
    {
        Ok(served) => Verification::Answered {
            served,
            want_hash: want_hash.clone(),
            want_counts,
        },
        Err(error) => Verification::Failed(error_chain(&error)),
    };
    let found = verification.verified().then_some(want_hash);
    let misses = ctx.memory.remember_verify(&uid, found);
    (verification, misses)
}

/// Wait before asking again after `misses` verify attempts in a row that did not find the
/// current declaration: 10 s, doubling, at most 5 minutes.
fn verify_backoff(misses: u32) -> Duration {
    let seconds = 10u64.saturating_mul(1u64 << misses.saturating_sub(1).min(5));
    Duration::from_secs(seconds.min(300))
}

/// Writes the status with server-side apply on the status subresource.
async fn write_status(
    ctx: &Context,
    namespace: &str,
    name: &str,
    status: &MCPServerStatus,
) -> Result<(), Error> {
    let api: Api<MCPServer> = Api::namespaced(ctx.client.clone(), namespace);
    let patch = serde_json::json!({
        "apiVersion": MCPServer::api_version(&()),
        "kind": MCPServer::kind(&()),
        "status": status,
    });
    api.patch_status(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map_err(|source| Error::WriteStatus {
        name: name.into(),
        source,
    })?;
    Ok(())
}

/// Publishes events; a failure is logged, never fatal (events are best effort).
async fn publish(ctx: &Context, server: &MCPServer, transitions: &[Transition]) {
    let reference = server.object_ref(&());
    for transition in transitions {
        let event = Event {
            type_: if transition.warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: transition.reason.clone(),
            note: Some(truncate(&transition.note, 1000)),
            action: transition.action.into(),
            secondary: None,
        };
        if let Err(error) = ctx.recorder.publish(&event, &reference).await {
            tracing::warn!(server = %key(server), error = %error, "cannot publish event");
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.into();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// An error and its causes on one line.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::resource::MCPServer;

    /// An `MCPServer` from inline YAML; `apiVersion` and `kind` are added.
    pub fn server(yaml: &str) -> MCPServer {
        let text = format!(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\n{}",
            dedent(yaml)
        );
        let mut server: MCPServer = serde_yaml_ng::from_str(&text).unwrap();
        server
            .metadata
            .uid
            .get_or_insert_with(|| "0d5e6a3c-uid".into());
        server.metadata.generation.get_or_insert(1);
        server
    }

    fn dedent(text: &str) -> String {
        let indent = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start().len())
            .min()
            .unwrap_or(0);
        text.lines()
            .map(|l| l.get(indent..).unwrap_or("").to_owned() + "\n")
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_five_minutes() {
        let waits: Vec<u64> = (1..=8).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [5, 10, 20, 40, 80, 160, 300, 300]);
    }

    #[test]
    fn truncates_on_a_character_boundary() {
        assert_eq!(truncate("héllo", 2), "h…");
        assert_eq!(truncate("hi", 5), "hi");
    }
}
