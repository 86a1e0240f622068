//! The watch caches (reflector stores) of the operator's children, filled by the controller's
//! label-scoped watches, and of the servers themselves (for host and path claims). Reconciles
//! read here instead of listing or getting, so a reconcile with nothing to do makes no API call.
//! Kinds the operator reads only through their metadata (ConfigMaps, Services,
//! PodDisruptionBudgets, NetworkPolicies, Roles, RoleBindings) are watched as metadata only; the others are cached
//! without what the operator never reads (`controller.rs` strips them). No I/O.

use super::build::HttpRoute;
use crate::resource::{CachedServer, CachedToolSet, CachedToolSetGrant};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Resource;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::sync::Arc;

/// One store per kind of child, and the pods of the servers (for failure reasons).
#[derive(Clone)]
pub struct Stores {
    /// Runtime manifests (metadata: the declaration hash is an annotation).
    pub config_maps: Store<PartialObjectMeta<ConfigMap>>,
    /// Services (metadata).
    pub services: Store<PartialObjectMeta<Service>>,
    /// Deployments.
    pub deployments: Store<Deployment>,
    /// Ingresses.
    pub ingresses: Store<Ingress>,
    /// PodDisruptionBudgets (metadata).
    pub pod_disruption_budgets: Store<PartialObjectMeta<PodDisruptionBudget>>,
    /// NetworkPolicies (metadata).
    pub network_policies: Store<PartialObjectMeta<NetworkPolicy>>,
    /// Roles of servers with approvals (metadata).
    pub roles: Store<PartialObjectMeta<Role>>,
    /// RoleBindings of servers with approvals (metadata).
    pub role_bindings: Store<PartialObjectMeta<RoleBinding>>,
    /// Gateway API HTTPRoutes (empty, and never filled, when the API server does not serve them).
    pub http_routes: Store<HttpRoute>,
    /// The servers' pods.
    pub pods: Store<Pod>,
    /// Every watched server.
    pub servers: Store<CachedServer>,
    /// Every `MCPToolSet` of the watched namespaces (for `spec.include`).
    pub tool_sets: Store<CachedToolSet>,
    /// Every `MCPToolSetGrant` of the watched namespaces.
    pub tool_set_grants: Store<CachedToolSetGrant>,
}

/// A kind of child the operator applies: how to find its store.
pub trait Child:
    Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// What the cache holds of this kind: the object (stripped), or only its metadata.
    type Cached: Resource<DynamicType = ()> + Clone + Send + Sync + 'static;

    /// The store of this kind.
    fn store(stores: &Stores) -> &Store<Self::Cached>;

    /// The cached object of this kind with this name, if the watch has seen one.
    fn cached(stores: &Stores, namespace: &str, name: &str) -> Option<Arc<Self::Cached>> {
        Self::store(stores).get(&ObjectRef::new(name).within(namespace))
    }
}

impl Child for ConfigMap {
    type Cached = PartialObjectMeta<Self>;
    fn store(stores: &Stores) -> &Store<Self::Cached> {
        &stores.config_maps
    }
}

impl Child for Service {
    type Cached = PartialObjectMeta<Self>;
    fn store(stores: &Stores) -> &Store<Self::Cached> {
        &stores.services
    }
}

impl Child for Deployment {
    type Cached = Self;
    fn store(stores: &Stores) -> &Store<Self> {
        &stores.deployments
    }
}

impl Child for Ingress {
    type Cached = Self;
    fn store(stores: &Stores) -> &Store<Self> {
        &stores.ingresses
    }
}

impl Child for PodDisruptionBudget {
    type Cached = PartialObjectMeta<Self>;
    fn store(stores: &Stores) -> &Store<Self::Cached> {
        &stores.pod_disruption_budgets
    }
}

impl Child for NetworkPolicy {
    type Cached = PartialObjectMeta<Self>;
    fn store(stores: &Stores) -> &Store<Self::Cached> {
        &stores.network_policies
    }
}

impl Child for Role {
    type Cached = PartialObjectMeta<Self>;
    fn store(stores: &Stores) -> &Store<Self::Cached> {
        &stores.roles
    }
}

impl Child for RoleBinding {
    type Cached = PartialObjectMeta<Self>;
    fn store(stores: &Stores) -> &Store<Self::Cached> {
        &stores.role_bindings
    }
}

impl Child for HttpRoute {
    type Cached = Self;
    fn store(stores: &Stores) -> &Store<Self> {
        &stores.http_routes
    }
}

/// Longest wait for the caches' first listing before a reconcile goes on without them (a watch
/// refused by RBAC never lists; the reconcile then reads what it needs, and prunes nothing).
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl Stores {
    /// Waits until every cache has listed once (immediate after start-up); false after
    /// [`READY_WAIT`] if one has not.
    pub async fn ready(&self) -> bool {
        let all = async {
            let (a, b, c, d, e, f) = tokio::join!(
                self.config_maps.wait_until_ready(),
                self.services.wait_until_ready(),
                self.deployments.wait_until_ready(),
                self.ingresses.wait_until_ready(),
                self.pod_disruption_budgets.wait_until_ready(),
                self.pods.wait_until_ready(),
            );
            let (g, h, i, j, k, l, m) = tokio::join!(
                self.network_policies.wait_until_ready(),
                self.http_routes.wait_until_ready(),
                self.servers.wait_until_ready(),
                self.tool_sets.wait_until_ready(),
                self.tool_set_grants.wait_until_ready(),
                self.roles.wait_until_ready(),
                self.role_bindings.wait_until_ready(),
            );
            [a, b, c, d, e, f, g, h, i, j, k, l, m]
                .iter()
                .all(Result::is_ok)
        };
        tokio::time::timeout(READY_WAIT, all).await.unwrap_or(false)
    }
}
