//! The RBAC of a server whose tools need approvals (`tools[].approval`): a Role and RoleBinding
//! that let its pods' ServiceAccount create, read and mark used `MCPApproval`s in its
//! namespace, and a Role and RoleBinding that let the approvers' groups read them and patch
//! their status. Only servers that declare approvals get them. Which approver may decide which
//! approval, and that the decider is recorded truthfully, is the chart's admission policy's
//! job (`charts/kube-mcp/templates/approvals-policy.yaml`). Pure.

use super::meta::child_meta;
use crate::resource::MCPServer;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::ResourceExt;

/// The API group of `MCPApproval`.
const GROUP: &str = "kube-mcp.io";

/// The approvals RBAC of one server.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalAccess {
    /// What the runtime may do, and its binding to the pods' ServiceAccount.
    pub runtime: (Role, RoleBinding),
    /// What approvers may do, and its binding to their groups.
    pub approvers: (Role, RoleBinding),
}

/// The RBAC for `server` whose gated tools name `groups`; `None` without any.
pub fn approval_access(server: &MCPServer, groups: &[String]) -> Option<ApprovalAccess> {
    if groups.is_empty() {
        return None;
    }
    let name = server.name_any();
    let account = server
        .spec
        .deployment
        .service_account_name
        .clone()
        .unwrap_or_else(|| "default".into());
    let runtime_name = format!("{name}-approvals-runtime");
    let runtime_role = Role {
        metadata: child_meta(server, runtime_name.clone()),
        rules: Some(vec![
            rule("mcpapprovals", &["create", "get", "list"]),
            rule("mcpapprovals/status", &["get", "update"]),
        ]),
    };
    let runtime_binding = RoleBinding {
        metadata: child_meta(server, runtime_name.clone()),
        role_ref: role_ref(runtime_name),
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: account,
            namespace: server.namespace(),
            ..Default::default()
        }]),
    };
    let approvers_name = format!("{name}-approvers");
    let approvers_role = Role {
        metadata: child_meta(server, approvers_name.clone()),
        rules: Some(vec![
            rule("mcpapprovals", &["get", "list", "watch"]),
            rule("mcpapprovals/status", &["get", "patch", "update"]),
        ]),
    };
    let approvers_binding = RoleBinding {
        metadata: child_meta(server, approvers_name.clone()),
        role_ref: role_ref(approvers_name),
        subjects: Some(
            groups
                .iter()
                .map(|group| Subject {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "Group".into(),
                    name: group.clone(),
                    ..Default::default()
                })
                .collect(),
        ),
    };
    Some(ApprovalAccess {
        runtime: (runtime_role, runtime_binding),
        approvers: (approvers_role, approvers_binding),
    })
}

fn rule(resource: &str, verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![GROUP.into()]),
        resources: Some(vec![resource.into()]),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..Default::default()
    }
}

fn role_ref(name: String) -> RoleRef {
    RoleRef {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "Role".into(),
        name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::test_support::server;

    #[test]
    fn only_servers_with_approvals_get_access() {
        let plain = server("metadata: {name: ops, namespace: tools}\nspec: {}\n");
        assert!(approval_access(&plain, &[]).is_none());
        let gated = server(
            "metadata: {name: ops, namespace: tools, uid: u1}\nspec: {serviceAccountName: ops-sa}\n",
        );
        let access = approval_access(&gated, &["oncall".into(), "sre".into()]).unwrap();
        let (role, binding) = &access.runtime;
        assert_eq!(role.metadata.name.as_deref(), Some("ops-approvals-runtime"));
        let subjects = binding.subjects.as_ref().unwrap();
        assert_eq!(
            (subjects[0].kind.as_str(), subjects[0].name.as_str()),
            ("ServiceAccount", "ops-sa")
        );
        let verbs = &role.rules.as_ref().unwrap()[1];
        assert_eq!(verbs.resources.as_ref().unwrap()[0], "mcpapprovals/status");
        assert!(!verbs.verbs.contains(&"patch".to_owned()));
        let (role, binding) = &access.approvers;
        let groups: Vec<&str> = binding
            .subjects
            .as_ref()
            .unwrap()
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(groups, ["oncall", "sre"]);
        assert!(
            role.rules.as_ref().unwrap().iter().all(|rule| !rule
                .verbs
                .iter()
                .any(|verb| verb == "create" || verb == "delete")),
            "approvers neither create nor delete approvals"
        );
        assert_eq!(
            role.metadata.owner_references.as_ref().unwrap()[0].uid,
            "u1"
        );
    }
}
