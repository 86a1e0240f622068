//! Apply step of the reconcile pipeline: server-side apply of the built children with one field
//! manager, creation of the session key, and pruning of what the spec no longer asks for. I/O.

use super::build::{Children, SERVER_LABEL};
use crate::resource::MCPServer;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

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
    /// The session key Secret could not be created.
    #[error("cannot create Secret {name}")]
    SessionKey {
        /// Name of the Secret.
        name: String,
        /// The API server's answer.
        #[source]
        source: kube::Error,
    },
    /// A child the spec no longer asks for could not be listed or deleted.
    #[error("cannot prune {kind} of {server}")]
    Prune {
        /// Kind of the child.
        kind: String,
        /// Name of the server.
        server: String,
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

/// What applying changed besides the applied objects.
#[derive(Debug, Default)]
pub struct Applied {
    /// The Deployment as the API server returned it (with its current status).
    pub deployment: Option<Deployment>,
    /// Whether the session key Secret was created by this call.
    pub created_session_key: bool,
    /// Children deleted because the spec no longer asks for them, as `Kind/name`.
    pub pruned: Vec<String>,
}

/// Writes every child: the session key first (pods mount it), the manifest before the pods that
/// read it, then prunes the optional children the spec dropped.
pub async fn apply(
    client: &Client,
    server: &MCPServer,
    children: &Children,
    session_key: &Secret,
) -> Result<Applied, ApplyError> {
    let namespace = server.namespace().unwrap_or_default();
    let mut applied = Applied {
        created_session_key: create_once(client, &namespace, session_key).await?,
        ..Default::default()
    };
    apply_one::<ConfigMap>(client, &namespace, &children.config_map).await?;
    apply_one::<Service>(client, &namespace, &children.service).await?;
    applied.deployment =
        Some(apply_one::<Deployment>(client, &namespace, &children.deployment).await?);
    match &children.ingress {
        Some(ingress) => drop(apply_one::<Ingress>(client, &namespace, ingress).await?),
        None => applied
            .pruned
            .extend(prune::<Ingress>(client, server).await?),
    }
    match &children.pod_disruption_budget {
        Some(pdb) => drop(apply_one::<PodDisruptionBudget>(client, &namespace, pdb).await?),
        None => applied
            .pruned
            .extend(prune::<PodDisruptionBudget>(client, server).await?),
    }
    let pruned = super::apply_platform::apply(client, server, children).await?;
    applied.pruned.extend(pruned);
    Ok(applied)
}

/// Reads the server's Deployment, if any (the last good one when the spec is refused).
pub async fn current_deployment(
    client: &Client,
    server: &MCPServer,
) -> Result<Option<Deployment>, kube::Error> {
    let api: Api<Deployment> =
        Api::namespaced(client.clone(), &server.namespace().unwrap_or_default());
    api.get_opt(&server.name_any()).await
}

async fn apply_one<K>(client: &Client, namespace: &str, object: &K) -> Result<K, ApplyError>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let name = object.name_any();
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .map_err(|source| ApplyError::Apply {
        kind: K::kind(&()).into_owned(),
        name,
        source,
    })
}

/// Creates the Secret unless it exists. Needs only `create` on Secrets: the operator never reads
/// a Secret, and never rewrites the key (that would end every open session).
async fn create_once(
    client: &Client,
    namespace: &str,
    secret: &Secret,
) -> Result<bool, ApplyError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    match api.create(&params, secret).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(source) => Err(ApplyError::SessionKey {
            name: secret.name_any(),
            source,
        }),
    }
}

/// Deletes the server's children of kind `K`: those labelled with the server and controlled by
/// it (same UID), so a namesake created by someone else is never touched.
async fn prune<K>(client: &Client, server: &MCPServer) -> Result<Vec<String>, ApplyError>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Debug
        + DeserializeOwned,
{
    let kind = K::kind(&()).into_owned();
    let error = |source| ApplyError::Prune {
        kind: kind.clone(),
        server: server.name_any(),
        source,
    };
    let api: Api<K> = Api::namespaced(client.clone(), &server.namespace().unwrap_or_default());
    let selector = format!("{SERVER_LABEL}={}", server.name_any());
    let listed = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(error)?;
    let uid = server.uid();
    let mut pruned = Vec::new();
    for child in listed.items {
        let owned = child
            .owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref());
        if !owned {
            continue;
        }
        match api
            .delete(&child.name_any(), &DeleteParams::background())
            .await
        {
            Ok(_) => pruned.push(format!("{kind}/{}", child.name_any())),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => return Err(error(source)),
        }
    }
    Ok(pruned)
}
