//! Compiling a tool's `approval`: the approvers' group, the message template (over `args`
//! only: an approver reads it before anything else exists), the bounded lifetime, and the
//! tool's declaration version (a digest of its spec: an approval given for one declaration of
//! a tool never runs another). Pure.

use super::Compiler;
use crate::template::Text;
use crate::types::{Approval, Tool};
use sha2::{Digest, Sha256};
use std::time::Duration;

/// Shortest lifetime of an approval.
pub const MIN_APPROVAL_TTL_MS: u64 = 1_000;
/// Longest lifetime of an approval: a week.
pub const MAX_APPROVAL_TTL_MS: u64 = 7 * 24 * 3_600_000;
/// Lifetime when `ttlMs` is not declared: 15 minutes.
pub const DEFAULT_APPROVAL_TTL_MS: u64 = 900_000;
/// Longest group name (Kubernetes does not bound them; RBAC subjects are object fields).
const MAX_GROUP_CHARS: usize = 253;

/// A tool's approval gate, ready to check calls against.
#[derive(Debug)]
pub struct CompiledApproval {
    /// The Kubernetes group whose members may approve.
    pub group: String,
    /// What the approver is asked, over `args`.
    pub message: Text,
    /// How long a request for approval, and the approval, stay valid.
    pub ttl: Duration,
    /// `sha256:` over the tool's declaration: part of every call digest.
    pub version: String,
}

impl Compiler<'_> {
    /// Compiles `tool.approval` at `path` (`spec.tools[i].approval`).
    pub(super) fn approval(
        &mut self,
        path: &str,
        tool: &Tool,
        approval: &Approval,
    ) -> Option<CompiledApproval> {
        let errors_before = self.errors.len();
        let group = approval.approvers.group.as_str();
        if let Some(problem) = group_problem(group) {
            self.error(format!("{path}.approvers.group"), problem);
        }
        let ttl_ms = approval.ttl_ms.unwrap_or(DEFAULT_APPROVAL_TTL_MS);
        if !(MIN_APPROVAL_TTL_MS..=MAX_APPROVAL_TTL_MS).contains(&ttl_ms) {
            self.error(
                format!("{path}.ttlMs"),
                format!(
                    "must be {MIN_APPROVAL_TTL_MS}-{MAX_APPROVAL_TTL_MS} (one second to a week)"
                ),
            );
        }
        if tool.confirm.is_some() || !tool.elicit.is_empty() || tool.sample.is_some() || tool.roots
        {
            // The approval binds the arguments of the call; values asked later would change them.
            self.error(
                path.to_owned(),
                "cannot be combined with `confirm`, `elicit`, `sample` or `roots`",
            );
        }
        let message_path = format!("{path}.message");
        if approval.message.trim().is_empty() {
            self.error(message_path.clone(), "must not be empty");
        }
        let message = self.text(&message_path, &approval.message);
        if let Some(text) = &message
            && let Some(other) = self
                .templates
                .variables(text)
                .into_iter()
                .find(|v| v != "args")
        {
            self.error(
                message_path,
                format!("reads `{other}`; an approval's message may read only `args`"),
            );
        }
        if self.errors.len() > errors_before {
            return None;
        }
        Some(CompiledApproval {
            group: group.to_owned(),
            message: message?,
            ttl: Duration::from_millis(ttl_ms),
            version: version_of(tool),
        })
    }
}

/// Why `group` cannot name the approvers, if it cannot.
fn group_problem(group: &str) -> Option<&'static str> {
    if group.is_empty() || group.chars().count() > MAX_GROUP_CHARS {
        return Some("must be 1-253 characters");
    }
    if group.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Some("must not contain spaces or control characters");
    }
    if group.starts_with("system:") {
        // `system:authenticated`, `system:serviceaccounts`, ...: everyone, or every workload.
        return Some("must not be a `system:` group: those hold every user or every workload");
    }
    None
}

/// `sha256:` over the tool's spec as JSON (fields in declaration order, which the types fix).
fn version_of(tool: &Tool) -> String {
    // Serializing plain data into a Vec cannot fail; an empty text would still be a version.
    let json = serde_json::to_vec(tool).unwrap_or_default();
    let digest = Sha256::digest(&json);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_that_hold_everyone_are_refused() {
        assert!(group_problem("oncall").is_none());
        assert!(group_problem("oidc:sre-team").is_none());
        assert!(group_problem("system:authenticated").is_some());
        assert!(group_problem("").is_some());
        assert!(group_problem("on call").is_some());
    }

    #[test]
    fn a_changed_tool_has_another_version() {
        let tool = Tool {
            name: "delete".into(),
            ..Tool::default()
        };
        let other = Tool {
            description: Some("changed".into()),
            ..tool.clone()
        };
        assert_eq!(version_of(&tool), version_of(&tool.clone()));
        assert_ne!(version_of(&tool), version_of(&other));
    }
}
