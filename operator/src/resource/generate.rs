//! The CRD, generated from the Rust types and stamped with its revision: the object the operator
//! applies at start-up, and the YAML that `crds/` and the chart's `crds/` hold (tests fail when
//! the committed copies drift). Pure.

use super::revision::{CRD_REVISION, REVISION_ANNOTATION};
use super::{MCPApproval, MCPServer, MCPToolSet, MCPToolSetGrant};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray,
};
use kube::CustomResourceExt;
use mcp_declaration::SERVED_VERSIONS;
use serde_json::Value;

/// Spec fields of Kubernetes' own types (`k8s-openapi`). Below the field's own description their
/// docs are the Pod API's (`kubectl explain pod.spec.affinity`), so the CRD leaves them out: they
/// were a third of its size, and client-side `kubectl apply` (Argo CD's default) stores the whole
/// CRD in an annotation of at most 256 KiB.
pub const KUBERNETES_TYPED: &[&str] = &[
    "affinity",
    "containerResources",
    "env",
    "imagePullSecrets",
    "tolerations",
    "topologySpreadConstraints",
];

/// Schemas that repeat one documented elsewhere in the spec, by path below `spec` (`items` of
/// arrays is implied). Only their own description stays: the auth schema alone is repeated in
/// every HTTP backend, and documenting each copy put the CRD over client-side apply's limit.
pub const REPEATED: &[&[&str]] = &[
    &["resources", "http"],
    &["resourceTemplates", "http"],
    &["tools", "http", "auth", "tokenExchange", "actor", "client"],
    &["tools", "http", "auth", "clientCredentials"],
    &["tools", "http", "auth", "jwtBearer", "client"],
];

/// The `MCPServer` CustomResourceDefinition, annotated with its revision: the Rust types' version
/// (the storage version) and every other served version with the same schema. One schema makes
/// `conversion: None` (the default, which rewrites nothing but `apiVersion`) lossless both ways.
pub fn crd() -> CustomResourceDefinition {
    let mut crd = MCPServer::crd();
    if let Some(spec) = spec_schema(&mut crd) {
        for name in KUBERNETES_TYPED {
            if let Some(field) = schema_at(spec, &[name]) {
                drop_nested_descriptions(field);
            }
        }
    }
    stamped(without_repeated_docs(crd))
}

/// The `MCPToolSet` and `MCPToolSetGrant` CRDs, stamped and served like [`crd`]: they share its
/// revision (one number for the group's CRDs, raised together).
pub fn toolset_crds() -> [CustomResourceDefinition; 2] {
    [
        stamped(without_repeated_docs(MCPToolSet::crd())),
        stamped(MCPToolSetGrant::crd()),
    ]
}

/// The `MCPApproval` CRD, stamped like [`crd`] (one revision for the group's CRDs). It is
/// served as `v1alpha1` only: the runtime writes that version.
pub fn approval_crd() -> CustomResourceDefinition {
    let mut crd = MCPApproval::crd();
    crd.metadata
        .annotations
        .get_or_insert_default()
        .insert(REVISION_ANNOTATION.into(), CRD_REVISION.to_string());
    crd
}

/// `crd` with the [`REPEATED`] schemas' nested descriptions dropped.
fn without_repeated_docs(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    if let Some(spec) = spec_schema(&mut crd) {
        for path in REPEATED {
            if let Some(field) = schema_at(spec, path) {
                drop_nested_descriptions(field);
            }
        }
    }
    crd
}

/// The `spec` schema of the CRD's one version (the derive emits exactly one, the types' own).
fn spec_schema(crd: &mut CustomResourceDefinition) -> Option<&mut JSONSchemaProps> {
    crd.spec
        .versions
        .first_mut()?
        .schema
        .as_mut()?
        .open_api_v3_schema
        .as_mut()?
        .properties
        .as_mut()?
        .get_mut("spec")
}

/// The schema at `path` below `schema`, stepping into array items on the way.
fn schema_at<'a>(
    schema: &'a mut JSONSchemaProps,
    path: &[&str],
) -> Option<&'a mut JSONSchemaProps> {
    let Some((first, rest)) = path.split_first() else {
        return Some(schema);
    };
    let object = if matches!(schema.items, Some(JSONSchemaPropsOrArray::Schema(_))) {
        match &mut schema.items {
            Some(JSONSchemaPropsOrArray::Schema(items)) => items.as_mut(),
            _ => return None,
        }
    } else {
        schema
    };
    let field = object.properties.as_mut()?.get_mut(*first)?;
    schema_at(field, rest)
}

/// `crd` with the revision annotation and every served version.
fn stamped(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    crd.metadata
        .annotations
        .get_or_insert_default()
        .insert(REVISION_ANNOTATION.into(), CRD_REVISION.to_string());
    if let Some(storage) = crd.spec.versions.first().cloned() {
        for version in SERVED_VERSIONS {
            if *version != storage.name {
                let mut served = storage.clone();
                served.name = (*version).into();
                served.storage = false;
                crd.spec.versions.push(served);
            }
        }
    }
    crd
}

/// Removes every description below `field`'s own.
fn drop_nested_descriptions(field: &mut JSONSchemaProps) {
    /// `value` is a schema, or a list of schemas; a schema's `properties` maps names to
    /// schemas, and a property may itself be called `description`.
    fn strip(value: &mut Value) {
        match value {
            Value::Object(schema) => {
                schema.remove("description");
                for (key, nested) in schema.iter_mut() {
                    match (key.as_str(), nested) {
                        (
                            "properties" | "patternProperties" | "definitions",
                            Value::Object(named),
                        ) => named.values_mut().for_each(strip),
                        (_, nested) => strip(nested),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let own = field.description.take();
    // The schema types round-trip through JSON: a walk of JSON reaches every nested schema.
    if let Ok(mut value) = serde_json::to_value(&*field) {
        strip(&mut value);
        if let Ok(stripped) = serde_json::from_value(value) {
            *field = stripped;
        }
    }
    field.description = own;
}

/// The `MCPServer` CRD as the YAML file in `crds/`.
pub fn crd_yaml() -> Result<String, serde_yaml_ng::Error> {
    yaml(&crd(), "crd")
}

/// The `MCPToolSet` and `MCPToolSetGrant` CRDs as the YAML file in `crds/`.
pub fn toolset_crds_yaml() -> Result<String, serde_yaml_ng::Error> {
    let [sets, grants] = toolset_crds();
    Ok(format!(
        "{}---\n{}",
        yaml(&sets, "toolset-crds")?,
        yaml(&grants, "toolset-crds")?
    ))
}

/// The `MCPApproval` CRD as the YAML file in `crds/`.
pub fn approval_crd_yaml() -> Result<String, serde_yaml_ng::Error> {
    yaml(&approval_crd(), "approval-crd")
}

fn yaml(crd: &CustomResourceDefinition, command: &str) -> Result<String, serde_yaml_ng::Error> {
    let body = serde_yaml_ng::to_string(crd)?;
    Ok(format!(
        "# Generated by `mcp-operator {command}` from the Rust types; do not edit.\n{body}"
    ))
}
