//! Names, labels and owner references shared by every child object. Pure.

use crate::resource::MCPServer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};
use std::collections::BTreeMap;

/// Label naming the `MCPServer` a child belongs to; pruning selects on it.
pub const SERVER_LABEL: &str = "kube-mcp.io/server";
/// Value of `app.kubernetes.io/managed-by` on every child; the operator's watches select on it.
pub const MANAGED_BY: &str = "mcp-operator";

/// Labels that select the server's pods (stable for the server's life: a Deployment's selector
/// cannot change).
pub fn selector_labels(server: &MCPServer) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "mcp-server".to_owned()),
        (SERVER_LABEL.to_owned(), server.name_any()),
    ])
}

/// [`selector_labels`] as a label selector string, as the scale subresource reports it.
pub fn pod_selector(server: &MCPServer) -> String {
    selector_labels(server)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Labels of every child object and pod.
pub fn labels(server: &MCPServer) -> BTreeMap<String, String> {
    let mut labels = selector_labels(server);
    labels.extend([
        ("app.kubernetes.io/instance".to_owned(), server.name_any()),
        (
            "app.kubernetes.io/component".to_owned(),
            "mcp-runtime".to_owned(),
        ),
        (
            "app.kubernetes.io/part-of".to_owned(),
            "kube-mcp".to_owned(),
        ),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            MANAGED_BY.to_owned(),
        ),
    ]);
    labels
}

/// Metadata of a child: its name, the server's namespace, labels, and the server as controlling
/// owner (so the garbage collector deletes the child with the server).
pub fn child_meta(server: &MCPServer, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: server.namespace(),
        labels: Some(labels(server)),
        owner_references: server.controller_owner_ref(&()).map(|owner| vec![owner]),
        ..Default::default()
    }
}

/// Name of the ConfigMap holding the runtime manifest.
pub fn config_map_name(server: &MCPServer) -> String {
    format!("{}-manifest", server.name_any())
}
