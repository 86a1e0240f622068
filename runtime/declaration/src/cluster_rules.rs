//! What a cluster refuses beyond compiling, shared by the operator (which mounts only the
//! rendered manifest and the Secrets `spec.secrets` lists) and `mcp-runtime check` (which must
//! accept exactly what the operator accepts). Pure.

use super::field_error::FieldError;
use super::types::Declaration;
use std::collections::BTreeSet;

/// Problems a declaration that compiles still has in a cluster, given the Secrets that
/// `spec.secrets` lists: `file` resources (the pod holds no such file) and Secrets an item or
/// the introspection client references but the list leaves out (they would not be mounted).
pub fn cluster_problems(declaration: &Declaration, listed_secrets: &[String]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, resource) in declaration.resources.iter().enumerate() {
        if resource.file.is_some() {
            errors.push(FieldError {
                path: format!("spec.resources[{i}].file"),
                message:
                    "is not available in a cluster: declare the contents with `text` or `blob`"
                        .into(),
            });
        }
    }
    let by_item = declaration
        .tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let only = Declaration {
                tools: vec![tool.clone()],
                ..Default::default()
            };
            (format!("spec.tools[{i}].http"), only.secret_refs())
        })
        .chain(declaration.resources.iter().enumerate().map(|(i, r)| {
            let only = Declaration {
                resources: vec![r.clone()],
                ..Default::default()
            };
            (format!("spec.resources[{i}].http"), only.secret_refs())
        }))
        .chain(
            declaration
                .resource_templates
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let only = Declaration {
                        resource_templates: vec![t.clone()],
                        ..Default::default()
                    };
                    (
                        format!("spec.resourceTemplates[{i}].http"),
                        only.secret_refs(),
                    )
                }),
        )
        .chain(
            declaration
                .auth
                .iter()
                .filter_map(|auth| auth.introspection.as_ref())
                .map(|introspection| {
                    (
                        "spec.auth.introspection.clientSecret".to_owned(),
                        BTreeSet::from([introspection.client_secret.name.clone()]),
                    )
                }),
        );
    for (path, names) in by_item {
        let unlisted: BTreeSet<String> = names
            .into_iter()
            .filter(|name| !listed_secrets.contains(name))
            .collect();
        errors.extend(unlisted.into_iter().map(|name| FieldError {
            path: path.clone(),
            message: format!(
                "references Secret `{name}`, which spec.secrets does not list: add it there so the pods mount it"
            ),
        }));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declaration(yaml: &str) -> Declaration {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    /// The introspection client's Secret is mounted only when `spec.secrets` lists it; unlisted,
    /// every request would be answered 503 at run time.
    #[test]
    fn the_introspection_secret_must_be_listed() {
        let decl = declaration(
            r#"
auth:
  issuer: "https://idp.example.com"
  introspection: {clientId: kube-mcp, clientSecret: {name: idp-client, key: secret}}
"#,
        );
        let errors = cluster_problems(&decl, &[]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].path, "spec.auth.introspection.clientSecret");
        assert!(errors[0].message.contains("idp-client"));
        assert!(cluster_problems(&decl, &["idp-client".into()]).is_empty());
    }
}
