//! Spec type of an approval gate: a person of a named group must approve each exact call of a
//! tool before it runs. Shared with the operator's CRD, so every field is documented. Pure data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Each call waits for a person to approve that exact call (caller, arguments and declaration)
/// before the tool runs, once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// Who may approve.
    pub approvers: Approvers,
    /// What the approver is asked; a template over `args`.
    pub message: String,
    /// How long a request for approval, and the approval, stay valid, in milliseconds
    /// (1000-604800000; default 900000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
}

/// Who may approve a call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Approvers {
    /// Kubernetes group whose members may approve (not a `system:` group).
    pub group: String,
}
