//! Reconciling one `MCPServer`, as a pipeline: read -> validate (pure) -> build (pure) -> apply
//! -> status. This file runs the steps in order; each step lives in its own module.

pub mod apply;
pub mod apply_platform;
pub mod build;
pub mod status;
pub mod validate;

use crate::metrics::Metrics;
use crate::resource::{MCPServer, MCPServerStatus};
use apply::{ApplyError, FIELD_MANAGER};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Api, Client, Resource, ResourceExt};
use rand::Rng as _;
use status::{Observation, Transition};
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
    /// Consecutive failures per server, for backoff.
    failures: Mutex<HashMap<String, u32>>,
    /// The controller's cache of every watched server (set when the controller starts), for
    /// host and path conflicts.
    pub servers: std::sync::OnceLock<kube::runtime::reflector::Store<MCPServer>>,
}

impl Context {
    /// A context for reconciles.
    pub fn new(
        client: Client,
        config: build::BuildConfig,
        recorder: Recorder,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            client,
            config,
            recorder,
            metrics,
            failures: Mutex::default(),
            servers: std::sync::OnceLock::new(),
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
    /// The current Deployment could not be read.
    #[error("cannot read Deployment {name}")]
    ReadDeployment {
        /// Name of the Deployment.
        name: String,
        /// The API server's answer.
        #[source]
        source: kube::Error,
    },
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
            Self::ReadDeployment { .. } => "read",
            Self::WriteStatus { .. } => "status",
        }
    }
}

/// How long a healthy server waits before it is looked at again without any change.
const RESYNC: Duration = Duration::from_secs(300);

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
    if let Some(status) = crate::suspend::status(server, &Time(jiff::Timestamp::now())) {
        write_status(ctx, &namespace, &name, &status).await?;
        return Ok(Action::await_change());
    }
    let verdict = validate::validate(server);
    let verdict = crate::host_claims::check(server, ctx.servers.get(), verdict);
    let url = build::url(server, &ctx.config);
    let mut apply_error = None;
    let mut pruned = Vec::new();
    let deployment = match &verdict {
        Ok(accepted) => {
            let children = build::children(server, &accepted.manifest_yaml, &ctx.config);
            let mut key = [0u8; 32];
            rand::rng().fill(&mut key);
            match apply::apply(
                &ctx.client,
                server,
                &children,
                &build::session_key(server, key),
            )
            .await
            {
                Ok(applied) => {
                    pruned = applied.pruned;
                    applied.deployment
                }
                Err(error) => {
                    let current = apply::current_deployment(&ctx.client, server)
                        .await
                        .ok()
                        .flatten();
                    apply_error = Some(error);
                    current
                }
            }
        }
        Err(_) => apply::current_deployment(&ctx.client, server)
            .await
            .map_err(|source| Error::ReadDeployment {
                name: name.clone(),
                source,
            })?,
    };

    let seen = Observation {
        verdict: verdict.as_ref(),
        url,
        apply_error: apply_error.as_ref().map(ApplyError::message),
        deployment: deployment.as_ref(),
    };
    let status = status::next_status(server, &seen, &Time(jiff::Timestamp::now()));
    let mut events = status::transitions(server.status.as_ref(), &status);
    events.extend(pruned.iter().map(|child| Transition {
        warning: false,
        reason: "Pruned".into(),
        note: format!("deleted {child}: the spec no longer asks for it"),
    }));
    publish(ctx, server, &events).await;
    write_status(ctx, &namespace, &name, &status).await?;
    tracing::info!(
        server = %format!("{namespace}/{name}"),
        accepted = verdict.is_ok(),
        ready = status.condition(status::READY).map(|c| c.reason.as_str()).unwrap_or_default(),
        "reconciled"
    );
    match apply_error {
        Some(error) => Err(error.into()),
        None => Ok(Action::requeue(RESYNC)),
    }
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
            action: "Reconcile".into(),
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
