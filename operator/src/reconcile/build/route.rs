//! The Gateway API `HTTPRoute` of a server with `exposure: gateway`: its host, only the MCP
//! endpoints under the path prefix and the OAuth protected resource metadata of the MCP endpoint,
//! to the server's Service, with the request timeout off so server-sent event streams stay open.
//! The Gateway API types are not part of Kubernetes' own: [`HttpRoute`] is a typed shell (its
//! metadata typed, its spec free-form) so the operator watches, caches and applies it like its
//! other children. Pure.

use super::BuildConfig;
use super::exposure::{SERVICE_PORT, endpoint_paths, metadata_paths, public_endpoint, view_paths};
use super::meta::child_meta;
use crate::resource::{Exposure, MCPServer};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::borrow::Cow;

/// Gateway API group.
pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";
/// Gateway API version of [`HttpRoute`] (standard channel).
pub const GATEWAY_VERSION: &str = "v1";

/// A Gateway API `HTTPRoute`: what the operator writes and reads of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpRoute {
    /// `gateway.networking.k8s.io/v1`.
    pub api_version: String,
    /// `HTTPRoute`.
    pub kind: String,
    /// Standard metadata.
    pub metadata: ObjectMeta,
    /// The route, as the Gateway API defines it.
    #[serde(default)]
    pub spec: Value,
    /// What the gateway controllers say of it (never written by the operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
}

impl Resource for HttpRoute {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "HTTPRoute".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        GATEWAY_GROUP.into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        GATEWAY_VERSION.into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "httproutes".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The `HTTPRoute` of `server`, when it is exposed through a gateway.
pub fn http_route(server: &MCPServer, config: &BuildConfig) -> Option<HttpRoute> {
    if server.spec.deployment.exposure != Some(Exposure::Gateway) {
        return None;
    }
    let gateway = server.spec.deployment.gateway.as_ref()?;
    let endpoint = public_endpoint(server)?;
    let mut paths = endpoint_paths(endpoint.prefix, config.server_cards);
    if server.spec.declaration.auth.is_some() {
        // The protected resource metadata (RFC 9728) clients look up before authenticating.
        paths.extend(metadata_paths(endpoint.prefix));
    }
    // Each of `spec.views` at its own path, with its own metadata.
    paths.extend(view_paths(
        server,
        endpoint.prefix,
        server.spec.declaration.auth.is_some(),
    ));
    let parents: Vec<Value> = gateway
        .parent_refs
        .iter()
        .map(|parent| {
            let mut reference =
                json!({"group": GATEWAY_GROUP, "kind": "Gateway", "name": parent.name});
            if let Some(namespace) = &parent.namespace {
                reference["namespace"] = json!(namespace);
            }
            if let Some(section) = &parent.section_name {
                reference["sectionName"] = json!(section);
            }
            reference
        })
        .collect();
    let matches: Vec<Value> = paths
        .iter()
        .map(|path| json!({"path": {"type": "Exact", "value": path}}))
        .collect();
    Some(HttpRoute {
        api_version: format!("{GATEWAY_GROUP}/{GATEWAY_VERSION}"),
        kind: "HTTPRoute".into(),
        metadata: child_meta(server, server.name_any()),
        spec: json!({
            "parentRefs": parents,
            "hostnames": [gateway.host],
            "rules": [{
                "matches": matches,
                "backendRefs": [{"name": server.name_any(), "port": SERVICE_PORT}],
                // "0s" turns the timeout off (Gateway API): SSE streams and long tool calls
                // must not be cut by a default request timeout.
                "timeouts": {"request": "0s"},
            }],
        }),
        status: None,
    })
}
