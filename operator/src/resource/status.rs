//! The status of an `MCPServer`: conditions, the generation they describe, where clients connect,
//! and what is served. Pure data.

pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde::{Deserialize, Serialize};

/// What the operator observed of an `MCPServer`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = super::schema::kubernetes_formats)]
pub struct MCPServerStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Accepted`: the declaration compiled (when False, the message names the failing field).
    /// `Ready`: every replica is up to date and available (when False, the reason says why).
    /// `Verified`: every Ready replica, asked on its admin port, serves the current declaration
    /// (`Propagating`: some still load it; `StaleDeclaration`: past the grace period they
    /// serve another; `ReloadRefused`: a runtime refused it; `Unreachable`: no answer).
    /// `Exposed`: the Ingress or the Gateway API route took the server (`RouteRefused`: a
    /// Gateway refused the route, its reason quoted; `Pending`: no controller answered yet).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// Where MCP clients connect: the Ingress URL when an ingress is declared, else the
    /// in-cluster Service URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Replicas asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Label selector of the server's pods, for the scale subresource (HorizontalPodAutoscaler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// Replicas available to serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// What the served declaration holds (the last accepted one, when the current is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
    /// The runtime image the server's Deployment runs (or rolls to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_image: Option<String>,
    /// True while a change of the server's pods (a new runtime image, a new flag) waits for one
    /// of the operator's `--max-concurrent-rollouts` slots; the Deployment stays as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_queued: Option<bool>,
    /// Each replica's share of `spec.limits`, when it declares any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitsStatus>,
    /// The `MCPToolSet`s `spec.include` took into the served declaration, in include order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_sets: Vec<IncludedToolSet>,
}

/// An `MCPToolSet` a server serves items of.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IncludedToolSet {
    /// The set's namespace.
    pub namespace: String,
    /// The set's name.
    pub name: String,
    /// Tools, resources, resource templates and prompts taken from it.
    pub items: u32,
}

/// Each replica's share of the declared limits: the operator divides every limit by the
/// server's replicas and renders the shares into the manifest the pods read, so the replicas
/// together allow at most what is declared, with no store between them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitsStatus {
    /// The replicas the limits are divided among (the Deployment's replica count).
    pub replicas: i32,
    /// What each replica enforces.
    pub per_replica: mcp_declaration::Limits,
}

/// Numbers of declared items.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Tools.
    pub tools: u32,
    /// Fixed resources.
    pub resources: u32,
    /// Resource templates.
    pub resource_templates: u32,
    /// Prompts.
    pub prompts: u32,
}

impl MCPServerStatus {
    /// The condition of a type, if set.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}
