//! The `MCPServer` custom resource: its spec (the runtime's declaration plus deployment fields),
//! its status, and the CRD generated from them. Pure data and schema code, no I/O.

mod deployment_fields;
mod generate;
mod schema;
mod status;

pub use deployment_fields::{
    DeploymentFields, ImagePullPolicy, IngressSpec, IngressTls, RuntimeLogLevel, ServiceSpec, ServiceType,
    SessionsSpec,
};
pub use generate::{crd, crd_yaml, helm_crd_template};
pub use status::{Condition, Counts, MCPServerStatus};

use kube::{CustomResource, KubeSchema};
use mcp_runtime::declaration::Declaration;
use serde::{Deserialize, Serialize};

/// The spec of an `MCPServer`: what the server serves and how it is deployed.
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "kube-mcp.io",
    version = "v1alpha1",
    kind = "MCPServer",
    plural = "mcpservers",
    shortname = "mcps",
    category = "kube-mcp",
    namespaced,
    status = "MCPServerStatus",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status","description":"Whether the server's replicas are available"}"#,
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".status.url","description":"Where MCP clients connect"}"#,
    printcolumn = r#"{"name":"Tools","type":"integer","jsonPath":".status.counts.tools","description":"Tools served"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    doc = "An MCP server declared by its tools, resources and prompts, served by mcp-runtime pods."
)]
#[schemars(transform = schema::declaration_rules)]
pub struct MCPServerSpec {
    /// What the server serves (read by the runtime).
    #[serde(flatten)]
    pub declaration: Declaration,
    /// How the server is deployed (read by the operator only).
    #[serde(flatten)]
    pub deployment: DeploymentFields,
}
