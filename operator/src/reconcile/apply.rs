//! Apply step of the reconcile pipeline: server-side apply of the built children with one field
//! manager, creation of the session key, and pruning of what the spec no longer asks for. I/O.
//!
//! Every write is skipped when it would change nothing: the session key is created once per
//! server, a child is applied only when the desired object or the cached child changed since the
//! operator's last apply, and pruning reads the watch cache. A same-named object someone else
//! created is never adopted: the server gets `ChildConflict` and the object is left alone.

use super::build::{Children, HttpRoute, SERVER_LABEL};
use super::cache::{Child, Stores};
use super::memory::{Applied as Remembered, Memory, child_key, fingerprint, hash_of};
use crate::resource::MCPServer;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};

/// The one field manager of everything the operator writes.
pub const FIELD_MANAGER: &str = "mcp-operator";

/// Why a child could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Server-side apply was refused.
    #[error("cannot apply {kind} {name}")]
    Apply {
        /// Kind of the child.
        kind: String,
        /// Name of the child.
        name: String,
        /// The API server's answer.
        #[source]
        source: kube::Error,
    },
    /// A child that is not in the watch cache could not be read.
    #[error("cannot read {kind} {name}")]
    Read {
        /// Kind of the child.
        kind: String,
        /// Name of the child.
        name: String,
        /// The API server's answer.
        #[source]
        source: kube::Error,
    },
    /// The session key Secret could not be created.
    #[error("cannot create Secret {name}")]
    SessionKey {
        /// Name of the Secret.
        name: String,
        /// The API server's answer.
        #[source]
        source: kube::Error,
    },
    /// A child the spec no longer asks for could not be deleted.
    #[error("cannot prune {kind} {name}")]
    Prune {
        /// Kind of the child.
        kind: String,
        /// Name of the child.
        name: String,
        /// The API server's answer.
        #[source]
        source: kube::Error,
    },
}

impl ApplyError {
    /// The error and its cause on one line, for a condition message.
    pub fn message(&self) -> String {
        let source = match self {
            Self::Apply { source, .. }
            | Self::Read { source, .. }
            | Self::SessionKey { source, .. }
            | Self::Prune { source, .. } => source,
        };
        let cause = match source {
            kube::Error::Api(status) => status.message.clone(),
            other => other.to_string(),
        };
        format!("{self}: {cause}")
    }
}

/// A same-named object that this server does not control: it is left alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// `Kind/name` of the object.
    pub object: String,
    /// Who controls it, as far as its metadata says.
    pub holder: String,
}

impl Conflict {
    /// The condition message.
    pub fn message(conflicts: &[Self]) -> String {
        let parts: Vec<String> = conflicts
            .iter()
            .map(|c| format!("{} exists and is {}", c.object, c.holder))
            .collect();
        format!(
            "{}: the operator does not adopt objects it did not create; delete or rename them",
            parts.join("; ")
        )
    }
}

/// What applying did.
#[derive(Debug, Default)]
pub struct Applied {
    /// The Deployment as last known (the API server's answer, or the watch cache).
    pub deployment: Option<Deployment>,
    /// Children deleted because the spec no longer asks for them, as `Kind/name`.
    pub pruned: Vec<String>,
    /// Same-named objects this server does not control; when any, nothing was written.
    pub conflicts: Vec<Conflict>,
    /// API writes made.
    pub writes: u32,
    /// Whether this apply wrote the Deployment.
    pub deployment_written: bool,
}

/// What an apply works with.
pub struct Target<'a> {
    /// The API client.
    pub client: &'a Client,
    /// The watch caches of the children.
    pub stores: &'a Stores,
    /// What the operator remembers of its own writes.
    pub memory: &'a Memory,
    /// The server.
    pub server: &'a MCPServer,
}

impl Target<'_> {
    fn namespace(&self) -> String {
        self.server.namespace().unwrap_or_default()
    }

    fn uid(&self) -> String {
        self.server.uid().unwrap_or_default()
    }
}

/// Writes what changed: the session key first (pods mount it), the manifest before the pods that
/// read it, then prunes the optional children the spec dropped. Refuses (without writing) when a
/// same-named object belongs to someone else.
pub async fn apply(
    target: &Target<'_>,
    children: &Children,
    session_key: impl FnOnce() -> Secret,
) -> Result<Applied, ApplyError> {
    let mut applied = Applied::default();
    let checks = [
        owner_of(target, &children.config_map).await?,
        owner_of(target, &children.service).await?,
        owner_of(target, &children.deployment).await?,
        match &children.ingress {
            Some(ingress) => owner_of(target, ingress).await?,
            None => None,
        },
        match &children.pod_disruption_budget {
            Some(pdb) => owner_of(target, pdb).await?,
            None => None,
        },
        match &children.network_policy {
            Some(policy) => owner_of(target, policy).await?,
            None => None,
        },
        match &children.http_route {
            Some(route) => owner_of(target, route).await?,
            None => None,
        },
    ];
    applied.conflicts = checks.into_iter().flatten().collect();
    if !applied.conflicts.is_empty() {
        applied.deployment = Deployment::cached(
            target.stores,
            &target.namespace(),
            &children.deployment.name_any(),
        )
        .filter(|d| controlled_by(d.as_ref(), &target.uid()))
        .map(|d| d.as_ref().clone());
        return Ok(applied);
    }

    if !target.memory.has_session_key(&target.uid()) {
        applied.writes += 1;
        create_once(target.client, &target.namespace(), &session_key()).await?;
        target.memory.session_key_exists(&target.uid());
    }
    apply_one(target, &children.config_map, &mut applied.writes).await?;
    apply_one(target, &children.service, &mut applied.writes).await?;
    let before = applied.writes;
    applied.deployment = Some(apply_one(target, &children.deployment, &mut applied.writes).await?);
    applied.deployment_written = applied.writes > before;
    match &children.ingress {
        Some(ingress) => drop(apply_one(target, ingress, &mut applied.writes).await?),
        None => prune::<Ingress>(target, &mut applied).await?,
    }
    match &children.pod_disruption_budget {
        Some(pdb) => drop(apply_one(target, pdb, &mut applied.writes).await?),
        None => prune::<PodDisruptionBudget>(target, &mut applied).await?,
    }
    match &children.network_policy {
        Some(policy) => drop(apply_one(target, policy, &mut applied.writes).await?),
        None => prune::<NetworkPolicy>(target, &mut applied).await?,
    }
    // Without the Gateway API CRDs the cache stays empty: nothing to prune, and a route the spec
    // asks for fails to apply with the API server's answer.
    match &children.http_route {
        Some(route) => drop(apply_one(target, route, &mut applied.writes).await?),
        None => prune::<HttpRoute>(target, &mut applied).await?,
    }
    Ok(applied)
}

/// The server's Deployment as the watch cache has it (the last good one when the spec is
/// refused), if this server controls it.
pub fn cached_deployment(stores: &Stores, server: &MCPServer) -> Option<Deployment> {
    let uid = server.uid().unwrap_or_default();
    Deployment::cached(
        stores,
        &server.namespace().unwrap_or_default(),
        &server.name_any(),
    )
    .filter(|d| controlled_by(d.as_ref(), &uid))
    .map(|d| d.as_ref().clone())
}

fn controlled_by<K: Resource>(object: &K, uid: &str) -> bool {
    object
        .owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// Who holds a same-named object, when it is not this server: from the watch cache, or (for an
/// object without the operator's labels, which the cache never sees) one read.
async fn owner_of<K: Child>(
    target: &Target<'_>,
    desired: &K,
) -> Result<Option<Conflict>, ApplyError> {
    let (namespace, name, uid) = (target.namespace(), desired.name_any(), target.uid());
    let key = child_key::<K>(&namespace, &name);
    let existing = match K::cached(target.stores, &namespace, &name) {
        Some(cached) => Some(cached.as_ref().clone()),
        // Applied by this process and not yet in the cache: it is ours.
        None if target.memory.applied(&uid, &key).is_some() => return Ok(None),
        None => {
            let api: Api<K> = Api::namespaced(target.client.clone(), &namespace);
            api.get_opt(&name)
                .await
                .map_err(|source| ApplyError::Read {
                    kind: K::kind(&()).into_owned(),
                    name: name.clone(),
                    source,
                })?
        }
    };
    let Some(existing) = existing else {
        return Ok(None);
    };
    if controlled_by(&existing, &uid) {
        return Ok(None);
    }
    let holder = match existing
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true))
    {
        Some(owner) => format!("controlled by {} {}", owner.kind, owner.name),
        None => "not controlled by this MCPServer".into(),
    };
    Ok(Some(Conflict {
        object: format!("{}/{name}", K::kind(&())),
        holder,
    }))
}

/// Applies one child unless neither the desired object nor the cached child changed since the
/// last apply; returns the child as it now is.
async fn apply_one<K: Child>(
    target: &Target<'_>,
    desired: &K,
    writes: &mut u32,
) -> Result<K, ApplyError> {
    let (namespace, name, uid) = (target.namespace(), desired.name_any(), target.uid());
    let key = child_key::<K>(&namespace, &name);
    let desired_hash = hash_of(desired);
    let cached = K::cached(target.stores, &namespace, &name);
    if let (Some(cached), Some(last)) = (&cached, target.memory.applied(&uid, &key))
        && last.desired == desired_hash
        && last.fingerprint == fingerprint(cached.as_ref())
    {
        return Ok(cached.as_ref().clone());
    }
    let api: Api<K> = Api::namespaced(target.client.clone(), &namespace);
    *writes += 1;
    let answer = api
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(desired),
        )
        .await
        .map_err(|source| ApplyError::Apply {
            kind: K::kind(&()).into_owned(),
            name,
            source,
        })?;
    target.memory.remember_applied(
        &uid,
        key,
        Remembered {
            desired: desired_hash,
            fingerprint: fingerprint(&answer),
        },
    );
    Ok(answer)
}

/// Creates the Secret unless it exists. Needs only `create` on Secrets: the operator never reads
/// a Secret, and never rewrites the key (that would end every open session).
async fn create_once(client: &Client, namespace: &str, secret: &Secret) -> Result<(), ApplyError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    match api.create(&params, secret).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(source) => Err(ApplyError::SessionKey {
            name: secret.name_any(),
            source,
        }),
    }
}

/// Deletes the server's cached children of kind `K`: those labelled with the server and
/// controlled by it (same UID), so a namesake created by someone else is never touched.
async fn prune<K: Child>(target: &Target<'_>, applied: &mut Applied) -> Result<(), ApplyError> {
    let (namespace, server, uid) = (target.namespace(), target.server.name_any(), target.uid());
    let owned = K::store(target.stores).state_filter(|child| {
        child.namespace().as_deref() == Some(namespace.as_str())
            && child.labels().get(SERVER_LABEL) == Some(&server)
            && controlled_by(child, &uid)
            && child.meta().deletion_timestamp.is_none()
    });
    let api: Api<K> = Api::namespaced(target.client.clone(), &namespace);
    for child in owned {
        let name = child.name_any();
        applied.writes += 1;
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => applied.pruned.push(format!("{}/{name}", K::kind(&()))),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(ApplyError::Prune {
                    kind: K::kind(&()).into_owned(),
                    name,
                    source,
                });
            }
        }
        target
            .memory
            .forget_child(&uid, &child_key::<K>(&namespace, &child.name_any()));
    }
    Ok(())
}
