//! Apply step of the reconcile pipeline: server-side apply of the built children with one field
//! manager, creation and retirement of session keys, and pruning of what the spec no longer asks
//! for. I/O.
//!
//! Every write is skipped when it would change nothing: a session key is created only when the
//! plan (`session_keys`) asks for a new one, a child is applied only when the desired object or
//! the cached child changed since the operator's last apply, and pruning reads the watch cache. Each applied child carries the hash
//! of the object the operator asked for (`kube-mcp.io/applied-hash`), so that a restarted or
//! newly elected operator, whose memory is empty, finds it already applied instead of applying
//! it again. A same-named object someone else created is never adopted: the server gets
//! `ChildConflict` and the object is left alone.

use super::build::{Children, HttpRoute, SERVER_LABEL};
use super::cache::{Child, Stores};
use super::memory::{Applied as Remembered, Memory, child_key, fingerprint, hash_of};
use super::session_keys::Created;
use crate::resource::MCPServer;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};

/// The one field manager of everything the operator writes.
pub const FIELD_MANAGER: &str = "mcp-operator";

/// Annotation of every applied child: the hash of the object the operator asked for (before this
/// annotation was added). The hash is stable for one operator build; another build may apply
/// each child once more.
pub const APPLIED_ANNOTATION: &str = "kube-mcp.io/applied-hash";

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
    /// A session key Secret could not be created (never adopted: a Secret already under that
    /// name is refused, and the next reconcile picks another name).
    #[error("cannot create the session key Secret {name}")]
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
    /// The Ingress and the HTTPRoute as the API server answered their apply, when this
    /// reconcile wrote them: the watch cache may not hold a new one yet, and the echo of the
    /// operator's own write triggers no reconcile, so `Exposed` must not be read from the cache.
    pub ingress: Option<Ingress>,
    /// See `ingress`.
    pub http_route: Option<HttpRoute>,
    /// Children deleted because the spec no longer asks for them, as `Kind/name`.
    pub pruned: Vec<String>,
    /// The session key Secret created.
    pub created_key: Option<String>,
    /// Session key Secrets deleted because the Deployment no longer mounts them.
    pub retired_keys: Vec<String>,
    /// Same-named objects this server does not control; when any, nothing was written.
    pub conflicts: Vec<Conflict>,
    /// API writes made.
    pub writes: u32,
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

/// The session-key writes of a reconcile, as `session_keys::plan` decided them.
#[derive(Debug, Default)]
pub struct KeyWrites {
    /// A new key to create before the Deployment that mounts it, and what to remember of it.
    pub create: Option<(Secret, Created)>,
    /// Keys to delete once the Deployment no longer mounts them.
    pub retire: Vec<String>,
}

/// Writes what changed: a new session key first (pods mount it), the manifest before the pods
/// that read it, then prunes the optional children the spec dropped and deletes the keys the
/// Deployment stopped mounting. With `rollout_queued` the Deployment keeps its pod template (the
/// new one waits for a rollout slot) and takes only the spec's replica count. Refuses (without
/// writing) when a same-named object belongs to someone else.
pub async fn apply(
    target: &Target<'_>,
    children: &Children,
    keys: KeyWrites,
    rollout_queued: bool,
) -> Result<Applied, ApplyError> {
    let mut applied = Applied::default();
    // The checks, and then the writes that do not depend on each other, go out together: a
    // reconcile waits for one round trip per step, not per object.
    let checks = tokio::try_join!(
        owner_of(target, &children.config_map),
        owner_of(target, &children.service),
        owner_of(target, &children.deployment),
        maybe_owner_of(target, children.ingress.as_ref()),
        maybe_owner_of(target, children.pod_disruption_budget.as_ref()),
        maybe_owner_of(target, children.network_policy.as_ref()),
        maybe_owner_of(target, children.http_route.as_ref()),
    )?;
    let access = children.approvals.as_ref();
    let rbac_checks = tokio::try_join!(
        maybe_owner_of(target, access.map(|a| &a.runtime.0)),
        maybe_owner_of(target, access.map(|a| &a.runtime.1)),
        maybe_owner_of(target, access.map(|a| &a.approvers.0)),
        maybe_owner_of(target, access.map(|a| &a.approvers.1)),
    )?;
    applied.conflicts = [
        checks.0,
        checks.1,
        checks.2,
        checks.3,
        checks.4,
        checks.5,
        checks.6,
        rbac_checks.0,
        rbac_checks.1,
        rbac_checks.2,
        rbac_checks.3,
    ]
    .into_iter()
    .flatten()
    .collect();
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

    let deployment_cached = Deployment::cached(
        target.stores,
        &target.namespace(),
        &children.deployment.name_any(),
    )
    .filter(|d| controlled_by(d.as_ref(), &target.uid()));
    let created_key = keys.create.as_ref().map(|(secret, _)| secret.name_any());
    let session_key = async {
        let Some((secret, created)) = keys.create else {
            return Ok(0);
        };
        create_new(target.client, &target.namespace(), &secret).await?;
        target.memory.remember_created_key(&target.uid(), created);
        Ok(1)
    };
    // The session key and the manifest exist before the Deployment whose pods mount them; the
    // Service (its ClusterIP allocation is the slowest create) goes out alongside.
    let pods = async {
        let (key_writes, config_map) =
            tokio::try_join!(session_key, apply_one(target, &children.config_map))?;
        let (deployment, written) = if rollout_queued {
            let live = deployment_cached.as_ref().map(|d| d.as_ref());
            (
                None,
                scale_queued(target, &children.deployment, live).await?,
            )
        } else {
            apply_one(target, &children.deployment).await?
        };
        Ok::<_, ApplyError>((deployment, key_writes + config_map.1 + written))
    };
    let ((deployment, pod_writes), service) =
        tokio::try_join!(pods, apply_one(target, &children.service))?;
    applied.deployment = deployment.or_else(|| deployment_cached.map(|d| d.as_ref().clone()));
    applied.writes += pod_writes + service.1;
    applied.created_key = created_key;
    for name in keys.retire {
        applied.writes += retire(target, &name).await?;
        applied.retired_keys.push(name);
    }
    let optional = tokio::try_join!(
        apply_or_prune(target, children.ingress.as_ref()),
        apply_or_prune(target, children.pod_disruption_budget.as_ref()),
        apply_or_prune(target, children.network_policy.as_ref()),
        // Without the Gateway API CRDs the cache stays empty: nothing to prune, and a route the
        // spec asks for fails to apply with the API server's answer.
        apply_or_prune(target, children.http_route.as_ref()),
    )?;
    // A server's two Roles (and two RoleBindings) come and go together.
    let roles: Vec<&Role> = access
        .map(|a| vec![&a.runtime.0, &a.approvers.0])
        .unwrap_or_default();
    let bindings: Vec<&RoleBinding> = access
        .map(|a| vec![&a.runtime.1, &a.approvers.1])
        .unwrap_or_default();
    // Roles before their bindings: RBAC resolves a binding's Role when it is written (a
    // binding may grant only what its writer holds), so the Role must exist by then.
    let rbac = [
        apply_all_or_prune(target, &roles).await?,
        apply_all_or_prune(target, &bindings).await?,
    ];
    for (writes, pruned) in rbac {
        applied.writes += writes;
        applied.pruned.extend(pruned);
    }
    applied.ingress = optional.0.2;
    applied.http_route = optional.3.2;
    for (writes, pruned) in [
        (optional.0.0, optional.0.1),
        (optional.1.0, optional.1.1),
        (optional.2.0, optional.2.1),
        (optional.3.0, optional.3.1),
    ] {
        applied.writes += writes;
        applied.pruned.extend(pruned);
    }
    Ok(applied)
}

/// Applies every child of kind `K` in `desired`, or prunes the server's children of that kind
/// when there are none; returns the writes made and the children pruned.
async fn apply_all_or_prune<K: Child>(
    target: &Target<'_>,
    desired: &[&K],
) -> Result<(u32, Vec<String>), ApplyError> {
    if desired.is_empty() {
        return prune::<K>(target).await;
    }
    let mut writes = 0;
    for child in desired {
        writes += apply_one(target, *child).await?.1;
    }
    Ok((writes, Vec::new()))
}

/// Scales a Deployment whose rollout waits for a slot to the replicas the spec asks for, through
/// the scale subresource: scaling is no rollout (the pod template stays), so it never waits.
/// Returns the writes made.
async fn scale_queued(
    target: &Target<'_>,
    desired: &Deployment,
    live: Option<&Deployment>,
) -> Result<u32, ApplyError> {
    let replicas = |d: &Deployment| d.spec.replicas;
    let (Some(want), Some(live)) = (replicas(desired), live) else {
        return Ok(0);
    };
    if replicas(live) == Some(want) {
        return Ok(0);
    }
    let name = live.name_any();
    Api::<Deployment>::namespaced(target.client.clone(), &target.namespace())
        .patch_scale(
            &name,
            &PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..Default::default()
            },
            &Patch::Merge(serde_json::json!({"spec": {"replicas": want}})),
        )
        .await
        .map_err(|source| ApplyError::Apply {
            kind: "Deployment".into(),
            name,
            source,
        })?;
    Ok(1)
}

/// Applies an optional child the spec asks for, or prunes the server's children of its kind
/// when it does not; returns the writes made, the children pruned and the API server's answer
/// when it was written.
async fn apply_or_prune<K: Child>(
    target: &Target<'_>,
    desired: Option<&K>,
) -> Result<(u32, Vec<String>, Option<K>), ApplyError> {
    match desired {
        Some(desired) => {
            let (answer, writes) = apply_one(target, desired).await?;
            Ok((writes, Vec::new(), answer))
        }
        None => {
            let (writes, pruned) = prune::<K>(target).await?;
            Ok((writes, pruned, None))
        }
    }
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
    meta_controlled_by(object.meta(), uid)
}

fn meta_controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
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
    let existing: Option<ObjectMeta> = match K::cached(target.stores, &namespace, &name) {
        Some(cached) => Some(cached.meta().clone()),
        // Applied by this process and not yet in the cache: it is ours.
        None if target.memory.applied(&uid, &key).is_some() => return Ok(None),
        None => {
            // Only its owners matter: the metadata is enough.
            let api: Api<K> = Api::namespaced(target.client.clone(), &namespace);
            api.get_metadata_opt(&name)
                .await
                .map_err(|source| ApplyError::Read {
                    kind: K::kind(&()).into_owned(),
                    name: name.clone(),
                    source,
                })?
                .map(|partial| partial.metadata)
        }
    };
    let Some(existing) = existing else {
        return Ok(None);
    };
    if meta_controlled_by(&existing, &uid) {
        return Ok(None);
    }
    let holder = match existing
        .owner_references
        .iter()
        .flatten()
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

/// [`owner_of`] for an optional child.
async fn maybe_owner_of<K: Child>(
    target: &Target<'_>,
    desired: Option<&K>,
) -> Result<Option<Conflict>, ApplyError> {
    match desired {
        Some(desired) => owner_of(target, desired).await,
        None => Ok(None),
    }
}

/// Applies one child unless neither the desired object nor the cached child changed since the
/// last apply (this process's, or a previous leader's as its annotation says); returns the
/// child as the API server answered when it was applied, and the writes made (0 or 1).
async fn apply_one<K: Child>(
    target: &Target<'_>,
    desired: &K,
) -> Result<(Option<K>, u32), ApplyError> {
    let (namespace, name, uid) = (target.namespace(), desired.name_any(), target.uid());
    let key = child_key::<K>(&namespace, &name);
    let desired_hash = hash_of(desired);
    let stamp = format!("{desired_hash:016x}");
    if let Some(cached) = K::cached(target.stores, &namespace, &name) {
        let remembered = Remembered {
            desired: desired_hash,
            fingerprint: fingerprint(cached.as_ref()),
        };
        match target.memory.applied(&uid, &key) {
            Some(last) if last == remembered => return Ok((None, 0)),
            // Nothing remembered (a restart, a new leader): the object says what was applied.
            None if controlled_by(cached.as_ref(), &uid)
                && cached.annotations().get(APPLIED_ANNOTATION) == Some(&stamp) =>
            {
                target.memory.remember_applied(&uid, key, remembered);
                return Ok((None, 0));
            }
            _ => {}
        }
    }
    let mut stamped = desired.clone();
    stamped
        .meta_mut()
        .annotations
        .get_or_insert_default()
        .insert(APPLIED_ANNOTATION.to_owned(), stamp);
    let api: Api<K> = Api::namespaced(target.client.clone(), &namespace);
    let answer = api
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&stamped),
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
    Ok((Some(answer), 1))
}

/// Creates a session key Secret. Needs only `create` on Secrets: the operator never reads a
/// Secret. A Secret already under the name is refused, never adopted: someone planted it (the
/// name's random part is not guessable ahead), or an earlier create's answer was lost; either
/// way the next reconcile picks another name, and the Secret stays with whoever made it.
async fn create_new(client: &Client, namespace: &str, secret: &Secret) -> Result<(), ApplyError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    api.create(&params, secret)
        .await
        .map(drop)
        .map_err(|source| ApplyError::SessionKey {
            name: secret.name_any(),
            source,
        })
}

/// Deletes a session key the Deployment no longer mounts (already gone counts as deleted);
/// returns the deletes sent.
async fn retire(target: &Target<'_>, name: &str) -> Result<u32, ApplyError> {
    let api: Api<Secret> = Api::namespaced(target.client.clone(), &target.namespace());
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(1),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(1),
        Err(source) => Err(ApplyError::Prune {
            kind: "Secret".into(),
            name: name.into(),
            source,
        }),
    }
}

/// Deletes the server's cached children of kind `K`: those labelled with the server and
/// controlled by it (same UID), so a namesake created by someone else is never touched. Returns
/// the deletes sent and the children deleted, as `Kind/name`.
async fn prune<K: Child>(target: &Target<'_>) -> Result<(u32, Vec<String>), ApplyError> {
    let (namespace, server, uid) = (target.namespace(), target.server.name_any(), target.uid());
    let owned = K::store(target.stores).state_filter(|child| {
        child.namespace().as_deref() == Some(namespace.as_str())
            && child.labels().get(SERVER_LABEL) == Some(&server)
            && controlled_by(child, &uid)
            && child.meta().deletion_timestamp.is_none()
    });
    let api: Api<K> = Api::namespaced(target.client.clone(), &namespace);
    let (mut writes, mut pruned) = (0, Vec::new());
    for child in owned {
        let name = child.name_any();
        writes += 1;
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => pruned.push(format!("{}/{name}", K::kind(&()))),
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
    Ok((writes, pruned))
}
