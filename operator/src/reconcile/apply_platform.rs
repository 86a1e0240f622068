//! Apply step for the children a platform asks for: the NetworkPolicy and the Gateway API
//! HTTPRoute. Written as dynamic objects (the HTTPRoute's type is not Kubernetes' own, and the
//! Gateway API CRDs may not be installed); pruned like the other optional children. I/O.

use super::apply::{ApplyError, FIELD_MANAGER};
use super::build::{Children, SERVER_LABEL, http_route_resource};
use crate::resource::MCPServer;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};

/// Applies the NetworkPolicy and HTTPRoute the spec asks for and prunes those it dropped;
/// returns what was pruned, as `Kind/name`.
pub async fn apply(
    client: &Client,
    server: &MCPServer,
    children: &Children,
) -> Result<Vec<String>, ApplyError> {
    let mut pruned = Vec::new();
    let policy = ApiResource::erase::<NetworkPolicy>(&());
    let policy_object = match &children.network_policy {
        Some(policy) => Some(dynamic(policy)?),
        None => None,
    };
    for (resource, object) in [
        (policy, policy_object),
        (http_route_resource(), children.http_route.clone()),
    ] {
        match object {
            Some(object) => apply_one(client, server, &resource, &object).await?,
            None => pruned.extend(prune(client, server, &resource).await?),
        }
    }
    Ok(pruned)
}

fn dynamic(policy: &NetworkPolicy) -> Result<DynamicObject, ApplyError> {
    serde_json::to_value(policy)
        .and_then(serde_json::from_value)
        .map_err(|error| ApplyError::Apply {
            kind: "NetworkPolicy".into(),
            name: policy.name_any(),
            source: kube::Error::SerdeError(error),
        })
}

async fn apply_one(
    client: &Client,
    server: &MCPServer,
    resource: &ApiResource,
    object: &DynamicObject,
) -> Result<(), ApplyError> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &server.namespace().unwrap_or_default(),
        resource,
    );
    api.patch(
        &object.name_any(),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .map_err(|source| ApplyError::Apply {
        kind: resource.kind.clone(),
        name: object.name_any(),
        source,
    })?;
    Ok(())
}

/// Deletes the server's children of `resource` that it controls (same UID). A kind the API
/// server does not know (Gateway API not installed) has nothing to prune.
async fn prune(
    client: &Client,
    server: &MCPServer,
    resource: &ApiResource,
) -> Result<Vec<String>, ApplyError> {
    let error = |source| ApplyError::Prune {
        kind: resource.kind.clone(),
        server: server.name_any(),
        source,
    };
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &server.namespace().unwrap_or_default(),
        resource,
    );
    let selector = format!("{SERVER_LABEL}={}", server.name_any());
    let listed = match api.list(&ListParams::default().labels(&selector)).await {
        Ok(listed) => listed,
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(Vec::new()),
        Err(source) => return Err(error(source)),
    };
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
            Ok(_) => pruned.push(format!("{}/{}", resource.kind, child.name_any())),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => return Err(error(source)),
        }
    }
    Ok(pruned)
}
