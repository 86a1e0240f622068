//! Build step of the reconcile pipeline: the objects an accepted `MCPServer` needs, as they should
//! be. Pure: same input, same objects; nothing here talks to the cluster.

mod deployment;
mod exposure;
mod meta;

pub use deployment::{ADMIN_PORT, HTTP_PORT, MANIFEST_DIR, SECRETS_DIR, SESSION_KEY_DIR, deployment};
pub use exposure::{ingress, pod_disruption_budget, service, url};
pub use meta::{
    MANAGED_BY, SERVER_LABEL, child_meta, config_map_name, labels, selector_labels, session_key_name,
};

use crate::resource::MCPServer;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use std::collections::BTreeMap;

/// Settings of the operator that shape what it builds.
#[derive(Clone, Debug, PartialEq)]
pub struct BuildConfig {
    /// Runtime image used when a spec names none.
    pub runtime_image: String,
    /// Pull policy used when a spec names none (`None`: Kubernetes' default).
    pub image_pull_policy: Option<String>,
    /// The cluster's DNS domain, for the in-cluster URL and allowed hosts.
    pub cluster_domain: String,
}

impl Default for BuildConfig {
    fn default() -> Self {
        Self {
            runtime_image: "ghcr.io/kube-mcp/kube-mcp:latest".into(),
            image_pull_policy: None,
            cluster_domain: "cluster.local".into(),
        }
    }
}

/// Every object an accepted `MCPServer` owns, except the session key (see [`session_key`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Children {
    /// The runtime manifest.
    pub config_map: ConfigMap,
    /// The runtime pods.
    pub deployment: Deployment,
    /// The pods' Service.
    pub service: Service,
    /// The Ingress, when the spec asks for one.
    pub ingress: Option<Ingress>,
    /// The PodDisruptionBudget, when there is more than one replica.
    pub pod_disruption_budget: Option<PodDisruptionBudget>,
}

/// Key of the runtime manifest in the ConfigMap.
pub const MANIFEST_KEY: &str = "manifest.yaml";

/// Builds the children of `server` from its validated manifest.
pub fn children(server: &MCPServer, manifest_yaml: &str, config: &BuildConfig) -> Children {
    Children {
        config_map: config_map(server, manifest_yaml),
        deployment: deployment(server, config),
        service: service(server),
        ingress: ingress(server),
        pod_disruption_budget: pod_disruption_budget(server),
    }
}

/// The ConfigMap holding the runtime manifest. A declaration change changes only this object:
/// the runtime watches the mounted file and reloads, so pods do not roll.
pub fn config_map(server: &MCPServer, manifest_yaml: &str) -> ConfigMap {
    ConfigMap {
        metadata: child_meta(server, config_map_name(server)),
        data: Some(BTreeMap::from([(MANIFEST_KEY.to_owned(), manifest_yaml.to_owned())])),
        ..Default::default()
    }
}

/// The Secret holding the key that signs legacy session ids, shared by all replicas so any
/// replica serves any session. Created once with a random key and never rewritten.
pub fn session_key(server: &MCPServer, key: [u8; 32]) -> Secret {
    Secret {
        metadata: child_meta(server, session_key_name(server)),
        data: Some(BTreeMap::from([("key".to_owned(), ByteString(key.to_vec()))])),
        type_: Some("Opaque".into()),
        immutable: Some(true),
        ..Default::default()
    }
}
