//! The Gateway API `HTTPRoute` of a server with `exposure: gateway`: its host, only the MCP
//! endpoints under the path prefix and the OAuth protected resource metadata of the MCP endpoint,
//! to the server's Service, with the request timeout off so server-sent event streams stay open.
//! Built as a dynamic object: the Gateway API types are not part of Kubernetes' own. Pure.

use super::exposure::{SERVICE_PORT, endpoint_paths, public_endpoint};
use super::meta::child_meta;
use crate::resource::{Exposure, MCPServer};
use kube::ResourceExt;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

/// Gateway API group.
pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// The `HTTPRoute` resource (Gateway API v1, standard channel).
pub fn http_route_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(GATEWAY_GROUP, "v1", "HTTPRoute"),
        "httproutes",
    )
}

/// Where the runtime publishes the OAuth protected resource metadata (RFC 9728) of its MCP
/// endpoint: the well-known path with the endpoint's own path appended.
const PROTECTED_RESOURCE: &str = "/.well-known/oauth-protected-resource";

/// The `HTTPRoute` of `server`, when it is exposed through a gateway.
pub fn http_route(server: &MCPServer) -> Option<DynamicObject> {
    if server.spec.deployment.exposure != Some(Exposure::Gateway) {
        return None;
    }
    let gateway = server.spec.deployment.gateway.as_ref()?;
    let endpoint = public_endpoint(server)?;
    let mut paths = endpoint_paths(endpoint.prefix);
    paths.push(format!(
        "{PROTECTED_RESOURCE}{}/mcp",
        endpoint.prefix.unwrap_or_default()
    ));
    if endpoint.prefix.is_none() {
        paths.push(PROTECTED_RESOURCE.into());
    }
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
    let mut route = DynamicObject::new(&server.name_any(), &http_route_resource()).data(json!({
        "spec": {
            "parentRefs": parents,
            "hostnames": [gateway.host],
            "rules": [{
                "matches": matches,
                "backendRefs": [{"name": server.name_any(), "port": SERVICE_PORT}],
                // "0s" turns the timeout off (Gateway API): SSE streams and long tool calls
                // must not be cut by a default request timeout.
                "timeouts": {"request": "0s"},
            }],
        }
    }));
    route.metadata = child_meta(server, server.name_any());
    Some(route)
}
