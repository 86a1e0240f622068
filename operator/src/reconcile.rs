//! Reconciling one `MCPServer`, as a pipeline: read -> validate (pure) -> build (pure) -> apply
//! -> status. This file runs the steps in order; each step lives in its own module.

pub mod apply;
pub mod build;
pub mod cache;
pub mod exposed;
pub mod fragments;
pub mod host_claims;
pub mod manifest_data;
pub mod memory;
pub mod pods;
pub mod rollouts;
pub mod session_keys;
pub mod status;
pub mod validate;
pub mod verified;

use crate::metrics::Metrics;
use crate::resource::{CachedServer, MCPServer, MCPServerStatus};
use crate::verifier::Verifier;
use apply::{ApplyError, FIELD_MANAGER, Target};
use build::SERVER_LABEL;
use cache::Child as _;
use cache::Stores;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client, Resource, ResourceExt};
use mcp_declaration::FieldError;
use memory::Memory;
use rand::Rng as _;
use rollouts::Rollouts;
use status::{Observation, State, Transition};
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
    /// What the pods serve (`None`: `--verify=off`).
    pub verifier: Option<Arc<Verifier>>,
    /// How long pods may serve an older declaration before `Verified` is `False`.
    pub verify_grace: Duration,
    /// The rollout slots: how many servers roll their pods at once.
    pub rollouts: Rollouts,
    /// Where servers waiting for a rollout slot are woken (taken once, by the controller).
    rollout_wakeups: Mutex<Option<RolloutWakeups>>,
    /// Consecutive failures per server, for backoff.
    failures: Mutex<HashMap<String, u32>>,
}

/// Servers woken when a rollout slot frees.
pub type RolloutWakeups = tokio::sync::mpsc::Receiver<ObjectRef<CachedServer>>;

/// What a [`Context`] is made of besides the caches.
pub struct Parts {
    /// The API client, with the operator's own identity.
    pub client: Client,
    /// Settings that shape the built objects.
    pub config: build::BuildConfig,
    /// Publishes Kubernetes events.
    pub recorder: Recorder,
    /// The operator's metrics.
    pub metrics: Arc<Metrics>,
    /// What the operator remembers of its own writes.
    pub memory: Arc<Memory>,
    /// What the pods serve (`None`: `--verify=off`).
    pub verifier: Option<Arc<Verifier>>,
    /// How long pods may serve an older declaration before `Verified` is `False`.
    pub verify_grace: Duration,
    /// Servers rolling their pods at once at most (`0`: no limit).
    pub max_concurrent_rollouts: usize,
}

impl Context {
    /// A context for reconciles.
    pub fn new(parts: Parts, stores: Stores) -> Self {
        let (rollouts, wakeups) = Rollouts::new(parts.max_concurrent_rollouts);
        Self {
            rollouts,
            rollout_wakeups: Mutex::new(Some(wakeups)),
            client: parts.client,
            config: parts.config,
            recorder: parts.recorder,
            metrics: parts.metrics,
            stores,
            memory: parts.memory,
            verifier: parts.verifier,
            verify_grace: parts.verify_grace,
            failures: Mutex::default(),
        }
    }

    /// The servers woken when a rollout slot frees, for the controller (`None` after the first
    /// call).
    pub fn take_rollout_wakeups(&self) -> Option<RolloutWakeups> {
        self.rollout_wakeups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
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

/// How often a server whose children conflict with foreign objects looks again (those objects
/// are not watched: they lack the operator's labels).
const CONFLICT_RECHECK: Duration = Duration::from_secs(60);

/// How often a server waiting for a rollout slot looks again without being woken.
const ROLLOUT_RECHECK: Duration = Duration::from_secs(30);

/// Reconciles one server; the controller calls this on every change of it or its children.
/// A server whose spec this operator cannot read is refused as `Unparseable` (its children are
/// left as they are); it never stops the others.
pub async fn reconcile(cached: Arc<CachedServer>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let (server, unreadable) = match cached.parse() {
        Ok(server) => (server, None),
        Err(error) => {
            let server = MCPServer {
                metadata: cached.metadata.clone(),
                spec: Default::default(),
                status: cached.status.clone(),
            };
            (server, Some(error))
        }
    };
    let result = reconcile_inner(&server, unreadable, &ctx).await;
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
pub fn error_policy(server: Arc<CachedServer>, error: &Error, ctx: Arc<Context>) -> Action {
    let failures = ctx
        .failures
        .lock()
        .map(|mut failures| {
            let count = failures.entry(key(server.as_ref())).or_insert(0);
            *count = count.saturating_add(1);
            *count
        })
        .unwrap_or(1);
    tracing::warn!(server = %key(server.as_ref()), failures, error = %error_chain(error), "reconcile failed");
    Action::requeue(backoff(failures))
}

fn backoff(failures: u32) -> Duration {
    let seconds = 5u64.saturating_mul(1u64 << failures.saturating_sub(1).min(10));
    Duration::from_secs(seconds.min(300))
}

fn key(server: &impl Resource) -> String {
    format!(
        "{}/{}",
        server.meta().namespace.as_deref().unwrap_or_default(),
        server.meta().name.as_deref().unwrap_or_default()
    )
}

/// One reconcile of `server`; `unreadable` is why its spec could not be read (`server` then
/// has an empty spec and is refused).
async fn reconcile_inner(
    server: &MCPServer,
    unreadable: Option<FieldError>,
    ctx: &Context,
) -> Result<Action, Error> {
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
    // An unreadable spec is refused, whatever its `suspend` says.
    let suspended = unreadable
        .is_none()
        .then(|| crate::suspend::status(&old, server, &Time(jiff::Timestamp::now())))
        .flatten();
    if let Some(status) = suspended {
        if status != old || server.status.is_none() {
            write_status(ctx, &namespace, &name, &status).await?;
            ctx.memory.remember_status(&uid, status);
        }
        return Ok(Action::await_change());
    }
    let step = Instant::now();
    // The server's Deployment as the watch cache holds it, read once for every step below.
    let cached = apply::cached_deployment(&ctx.stores, server);
    let verdict = match unreadable {
        None => host_claims::check(
            server,
            &ctx.stores.servers,
            fragments::fragments(&ctx.stores, server).and_then(|fragments| {
                validate::validate(
                    server,
                    ctx.config.allow_link_local_upstreams,
                    build::desired_replicas(server, cached.as_ref()),
                    &fragments,
                )
            }),
        ),
        Some(error) => Err(validate::Refused::unparseable(error)),
    };
    ctx.metrics.observe_step("validate", step.elapsed());
    let url = build::url(server, &ctx.config);
    let mut apply_error = None;
    let mut applied = apply::Applied::default();
    let mut key_recheck = None;
    let mut rollout_queued = false;
    let mut desired_template = None;
    match &verdict {
        Ok(accepted) => {
            let step = Instant::now();
            let plan = session_key_plan(ctx, server, cached.as_ref());
            key_recheck = plan.recheck;
            let children = build::children(
                server,
                &accepted.data,
                &accepted.hash,
                &ctx.config,
                &plan.keys,
                &accepted.service_account_audiences,
                &accepted.approver_groups,
            );
            ctx.metrics.observe_step("build", step.elapsed());
            rollout_queued =
                !ctx.rollouts
                    .may_apply(&ctx.stores, server, cached.as_ref(), &children.deployment);
            desired_template = rollouts::template_hash(&children.deployment);
            let target = Target {
                client: &ctx.client,
                stores: &ctx.stores,
                memory: &ctx.memory,
                server,
            };
            // A queued rollout writes no key either: a new key only matters to new pods.
            let keys = if rollout_queued {
                apply::KeyWrites::default()
            } else {
                key_writes(server, plan)
            };
            let step = Instant::now();
            let applied_now = apply::apply(&target, &children, keys, rollout_queued).await;
            ctx.metrics.observe_step("apply", step.elapsed());
            match applied_now {
                Ok(done) => applied = done,
                Err(error) => {
                    applied.deployment = cached;
                    apply_error = Some(error);
                }
            }
        }
        Err(_) => applied.deployment = cached,
    }
    if !rollout_queued {
        ctx.rollouts.observe(
            server,
            applied.deployment.as_ref(),
            desired_template.as_deref(),
        );
    }
    ctx.metrics.set_rollouts(ctx.rollouts.counts());
    let pods = ctx.stores.pods.state_filter(|pod| {
        pod.namespace().as_deref() == Some(namespace.as_str())
            && pod.labels().get(SERVER_LABEL) == Some(&name)
    });
    // The verify step only reads what the verifier found; it is timed like the others, so the
    // dashboards' per-step panels keep their series.
    let step = Instant::now();
    let (verified, verify_recheck) = verified_step(ctx, server, &verdict, &old, &applied);
    ctx.metrics.observe_step("verify", step.elapsed());
    let step = Instant::now();
    let seen = Observation {
        verdict: verdict.as_ref(),
        url,
        apply_error: apply_error.as_ref().map(ApplyError::message),
        conflicts: &applied.conflicts,
        deployment: applied.deployment.as_ref(),
        pod_problem: pods::problem(pods.iter().map(AsRef::as_ref)),
        verified,
        rollout_queued,
        exposed: exposed::exposed(
            server,
            applied
                .ingress
                .as_ref()
                .or(k8s_openapi::api::networking::v1::Ingress::cached(
                    &ctx.stores,
                    &namespace,
                    &name,
                )
                .as_deref()),
            applied.http_route.as_ref().or(build::HttpRoute::cached(
                &ctx.stores,
                &namespace,
                &name,
            )
            .as_deref()),
        ),
    };
    let status = status::next_status(&old, server, &seen, &Time(jiff::Timestamp::now()));
    // Exported whether or not the status needs writing (after a restart it may not).
    ctx.metrics.set_conditions(
        &namespace,
        &name,
        status
            .conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_str())),
    );
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
    events.extend(session_key_events(&applied));
    publish(ctx, server, &events).await;
    ctx.metrics.observe_step("status", step.elapsed());
    match apply_error {
        Some(error) => Err(error.into()),
        None if !applied.conflicts.is_empty() => Ok(Action::requeue(CONFLICT_RECHECK)),
        // Woken when a slot frees; the requeue covers a lost wake-up.
        None if rollout_queued => Ok(Action::requeue(ROLLOUT_RECHECK)),
        // The end of a grace period (`Verified` may turn False) or of a replaced session key's
        // overlap: due without any other news.
        None => {
            let due = verify_recheck.into_iter().chain(key_recheck).min();
            Ok(Action::requeue(
                due.map_or_else(resync, |due| due.min(resync())),
            ))
        }
    }
}

/// Which session keys the server's pods should mount (`reconcile/session_keys.rs`).
fn session_key_plan(
    ctx: &Context,
    server: &MCPServer,
    cached: Option<&Deployment>,
) -> session_keys::Plan {
    let name = server.name_any();
    let created = ctx.memory.created_key(&server.uid().unwrap_or_default());
    session_keys::plan(
        &session_keys::Facts {
            server: &name,
            requested: server
                .annotations()
                .get(session_keys::ROTATE_ANNOTATION)
                .map(String::as_str),
            deployment: cached,
            created: created.as_ref(),
            now: jiff::Timestamp::now(),
            overlap: ctx.config.session_key_overlap,
        },
        || session_keys::fresh_name(&name),
    )
}

/// The key writes of `plan`: a new key with random bytes, and the keys to retire.
fn key_writes(server: &MCPServer, plan: session_keys::Plan) -> apply::KeyWrites {
    apply::KeyWrites {
        create: plan.create.then(|| {
            let mut key = [0u8; 32];
            rand::rng().fill(&mut key);
            let created = session_keys::Created {
                name: plan.keys.current.clone(),
                replaced: plan.keys.previous.clone(),
                at: plan.keys.rotated_at.unwrap_or_else(jiff::Timestamp::now),
            };
            (build::session_key(server, &plan.keys.current, key), created)
        }),
        retire: plan.retire,
    }
}

/// Events for the session keys this reconcile created (a rotation, when one was replaced) and
/// deleted.
fn session_key_events(applied: &apply::Applied) -> Vec<Transition> {
    let created = applied.created_key.iter().map(|name| Transition {
        action: "RotateSessionKey",
        warning: false,
        reason: "SessionKeyCreated".into(),
        note: format!("created Secret {name}: new sessions are sealed with its key"),
    });
    let retired = applied.retired_keys.iter().map(|name| Transition {
        action: "RotateSessionKey",
        warning: false,
        reason: "SessionKeyRetired".into(),
        note: format!("deleted Secret {name}: sessions its key sealed are no longer served"),
    });
    created.chain(retired).collect()
}

/// The `Verified` condition from what the verifier found (`None`: `--verify=off`), and when to
/// look again without news. Tells the verifier which declaration the pods should serve.
fn verified_step(
    ctx: &Context,
    server: &MCPServer,
    verdict: &Result<validate::Accepted, validate::Refused>,
    old: &MCPServerStatus,
    applied: &apply::Applied,
) -> (Option<State>, Option<Duration>) {
    let Some(verifier) = &ctx.verifier else {
        return (None, None);
    };
    let (namespace, name) = (server.namespace().unwrap_or_default(), server.name_any());
    // What should be served: the declaration applied last (a refused one never was).
    let want = match verdict {
        Ok(accepted) if applied.conflicts.is_empty() => {
            Some((accepted.hash.clone(), accepted.counts))
        }
        Ok(_) => None,
        Err(_) => ConfigMap::cached(&ctx.stores, &namespace, &build::config_map_name(server))
            .and_then(|c| c.annotations().get(validate::HASH_ANNOTATION).cloned())
            .zip(old.counts),
    };
    if let Some((hash, _)) = &want {
        verifier.expect(&namespace, &name, hash);
    }
    let desired = applied
        .deployment
        .as_ref()
        .and_then(|d| d.spec.replicas)
        .unwrap_or(1);
    let found = verified::verdict(
        want.as_ref().map(|(hash, counts)| verified::Want {
            hash,
            counts: *counts,
        }),
        &verifier.view(&namespace, &name),
        desired,
        old.condition(status::VERIFIED),
        ctx.verify_grace,
        Instant::now(),
    );
    (Some(found.state), found.recheck)
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
    use super::host_claims;
    use crate::resource::CachedServer;
    use crate::resource::MCPServer;

    /// `server` as the watch delivers it, compacted as the controller caches it.
    pub fn cached(server: &MCPServer) -> CachedServer {
        let mut cached: CachedServer =
            serde_json::from_value(serde_json::to_value(server).unwrap()).unwrap();
        cached.compact(host_claims::claim);
        cached
    }

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
