//! The `MCPApproval` custom resource: a person's approval of one exact call of a gated tool
//! (`tools[].approval`). The runtime creates it (spec: the sealed call, who asked, the message,
//! who may approve, the expiry) and marks it used; approvers patch its status. RBAC decides who
//! may patch; the chart's admission policy keeps the status truthful. Pure data.

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A request for a person's approval of one exact tool call, created by an MCPServer's runtime.
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "kube-mcp.io",
    version = "v1alpha1",
    kind = "MCPApproval",
    plural = "mcpapprovals",
    shortname = "mcpa",
    category = "kube-mcp",
    namespaced,
    status = "MCPApprovalStatus",
    printcolumn = r#"{"name":"State","type":"string","jsonPath":".status.state","description":"pending (empty), approved, denied or used"}"#,
    printcolumn = r#"{"name":"Tool","type":"string","jsonPath":".spec.tool"}"#,
    printcolumn = r#"{"name":"Principal","type":"string","jsonPath":".spec.principal","description":"Who asked"}"#,
    printcolumn = r#"{"name":"Approvers","type":"string","jsonPath":".spec.approvers.group"}"#,
    printcolumn = r#"{"name":"Decided By","type":"string","jsonPath":".status.decidedBy"}"#,
    printcolumn = r#"{"name":"Expires","type":"string","jsonPath":".spec.expires","description":"After this nobody may approve and the call does not run"}"#,
    printcolumn = r#"{"name":"Message","type":"string","jsonPath":".spec.message","priority":1}"#,
    doc = "A person's approval of one exact call of a gated tool; approve it by patching its status."
)]
#[x_kube(validation = Rule::new("self == oldSelf").message("spec is immutable"))]
#[serde(rename_all = "camelCase")]
pub struct MCPApprovalSpec {
    /// The call this approval is for.
    pub call: ApprovalCall,
    /// Who asked: the MCP caller (`subject (issuer)`, or `anonymous` without `spec.auth`).
    pub principal: String,
    /// The tool.
    pub tool: String,
    /// What the approver is asked (the declared message over the call's arguments).
    pub message: String,
    /// Who may approve.
    pub approvers: ApprovalApprovers,
    /// The Kubernetes user that created this approval (the server's ServiceAccount); only it may
    /// mark the approval used.
    pub requested_by: String,
    /// When the approval was asked for (RFC 3339).
    pub created: String,
    /// After this nobody may approve, and the call does not run (RFC 3339).
    pub expires: String,
}

/// The sealed call: every part of it, and the digest over them all.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalCall {
    /// `sha256:` over principal, server, tool, arguments digest and declaration version.
    pub digest: String,
    /// Who asked.
    pub principal: String,
    /// The MCPServer's `serverInfo.name`.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// `sha256:` over the arguments as canonical JSON.
    pub arguments_digest: String,
    /// `sha256:` over the tool's declaration.
    pub declaration_version: String,
}

/// Who may approve.
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApprovalApprovers {
    /// The Kubernetes group whose members may approve.
    pub group: String,
}

/// Where an approval stands: set by approvers (`approved`, `denied`) and by the runtime (`used`).
#[derive(KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MCPApprovalStatus {
    /// `approved` or `denied` (by an approver), `used` (the call ran); absent while pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ApprovalState>,
    /// The approver's Kubernetes user name; the admission policy requires it to be the user
    /// making the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// When the call ran (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_at: Option<String>,
    /// What the call came to, sealed with the runtime's session key (readers of approvals
    /// cannot read results); set once, after `used`, by the runtime that asked, so that any
    /// replica answers the waiting task the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 262144))]
    pub outcome: Option<String>,
}

/// An approval's state.
#[derive(JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalState {
    /// Waiting for an approver.
    Pending,
    /// Approved: the call may run once.
    Approved,
    /// Denied.
    Denied,
    /// The call ran.
    Used,
}
