//! Deployment fields a platform team sets around a server: how it is exposed (an Ingress or a
//! Gateway API HTTPRoute), its NetworkPolicy, and the rules tying `exposure` to the block it
//! needs. Pure data and schema code.

use k8s_openapi::api::networking::v1::NetworkPolicyPeer;
use kube::KubeSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// A URL path prefix such as `/weather`, or `/` (a CEL rule, shared by Ingress and Gateway paths).
pub(super) const URL_PATH_RULE: &str =
    "self == '/' || (self.startsWith('/') && !self.endsWith('/') && !self.contains('//'))";
/// What a path failing `URL_PATH_RULE` is told.
pub(super) const URL_PATH_MESSAGE: &str =
    "must start with `/` and not end with `/`, such as `/weather`";
/// A Kubernetes object name (DNS subdomain).
pub(super) const DNS_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// How the server is reached from outside the cluster.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Exposure {
    /// An Ingress, from `spec.ingress` (default; without `spec.ingress`, in-cluster only).
    #[default]
    Ingress,
    /// A Gateway API `HTTPRoute` attached to a Gateway, from `spec.gateway`.
    Gateway,
}

/// A Gateway API `HTTPRoute` in front of the server. Only the MCP endpoints (`/mcp`, `/sse`,
/// `/messages`) under `path`, and the OAuth protected resource metadata of the MCP endpoint, are
/// routed; request timeouts are off so server-sent event streams stay open.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpec {
    /// Host name clients use, such as `mcp.example.com` (the route's only hostname).
    #[schemars(length(min = 1, max = 253), pattern(DNS_SUBDOMAIN))]
    pub host: String,
    /// Path prefix the endpoints live under, such as `/weather` (default `/`): clients then use
    /// `https://<host>/weather/mcp`. The runtime serves under it itself; nothing is rewritten.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new(URL_PATH_RULE).message(URL_PATH_MESSAGE))]
    #[schemars(length(max = 200))]
    pub path: Option<String>,
    /// Gateways (or listeners of one) the route attaches to.
    #[schemars(length(min = 1, max = 32))]
    pub parent_refs: Vec<GatewayParentRef>,
    /// Scheme of the Gateway listener clients reach, for the URL in status (default `https`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<UrlScheme>,
}

/// A Gateway the route attaches to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayParentRef {
    /// Name of the Gateway.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Namespace of the Gateway (default: the server's); the Gateway must allow routes from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
    /// Listener of the Gateway to attach to (default: every listener that accepts the route).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub section_name: Option<String>,
}

/// Scheme of a URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UrlScheme {
    /// Plain HTTP.
    Http,
    /// HTTPS.
    Https,
}

/// The server's NetworkPolicy: the MCP port admits the ingress or gateway namespaces and the
/// operator, the admin port the monitoring namespaces (both set by the platform when installing
/// the operator). Egress is left to the platform's own policies.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicySpec {
    /// Write the NetworkPolicy (default: as the operator is configured, on unless turned off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// More peers allowed to reach the MCP port, such as in-cluster clients' namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub from: Vec<NetworkPolicyPeer>,
}

/// Adds to the spec's schema the CEL rules tying `exposure` to the block it reads.
pub fn exposure_rules(spec: &mut Map<String, Value>) {
    let rules = spec
        .entry("x-kubernetes-validations")
        .or_insert_with(|| json!([]));
    if let Some(rules) = rules.as_array_mut() {
        rules.push(json!({
            "rule": "has(self.exposure) && self.exposure == 'gateway' ? has(self.gateway) && !has(self.ingress) : !has(self.gateway)",
            "message": "spec.exposure `gateway` needs spec.gateway and no spec.ingress; spec.gateway needs spec.exposure `gateway`",
            "reason": "FieldValueInvalid",
        }));
    }
}
