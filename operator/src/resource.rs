//! The `MCPServer` custom resource: its spec (the runtime's declaration plus deployment fields),
//! its status, and the CRD generated from them. Pure data and schema code, no I/O.

mod approval;
mod cached;
mod deployment_fields;
mod generate;
mod platform_fields;
mod revision;
mod schema;
mod status;
mod toolset;

pub use approval::{
    ApprovalApprovers, ApprovalCall, ApprovalState, MCPApproval, MCPApprovalSpec, MCPApprovalStatus,
};
pub use cached::{CachedServer, Claim, parse_spec};
pub use deployment_fields::{
    DeploymentFields, ImagePullPolicy, IngressSpec, IngressTls, RegistrySpec, RuntimeLogLevel,
    ServiceSpec, ServiceType, SessionsSpec, TelemetrySpec,
};
pub use generate::{
    approval_crd, approval_crd_yaml, crd, crd_yaml, toolset_crds, toolset_crds_yaml,
};
pub use platform_fields::{
    Exposure, GatewayParentRef, GatewaySpec, NetworkPolicySpec, UrlScheme, exposure_rules,
};
pub use revision::{CRD_REVISION, REVISION_ANNOTATION, RevisionError, Standing, standing};
pub use status::{Condition, Counts, IncludedToolSet, LimitsStatus, MCPServerStatus};
pub use toolset::{
    Cached, CachedToolSet, CachedToolSetGrant, MCPToolSet, MCPToolSetGrant, MCPToolSetGrantSpec,
    MCPToolSetSpec,
};

use kube::{CustomResource, KubeSchema};
use mcp_declaration::Declaration;
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
    scale = r#"{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status","description":"Whether the server's replicas are available"}"#,
    printcolumn = r#"{"name":"Verified","type":"string","jsonPath":".status.conditions[?(@.type==\"Verified\")].status","description":"Whether a replica was found serving the current declaration"}"#,
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".status.url","description":"Where MCP clients connect"}"#,
    printcolumn = r#"{"name":"Tools","type":"integer","jsonPath":".status.counts.tools","description":"Tools served"}"#,
    printcolumn = r#"{"name":"Auth","type":"string","jsonPath":".spec.auth.issuer","description":"Issuer whose tokens every request needs (empty: no authentication)"}"#,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn crd_json() -> Value {
        serde_json::to_value(crd()).unwrap()
    }

    fn spec_schema() -> Value {
        crd_json()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].clone()
    }

    #[test]
    fn deployment_fields_are_the_ones_the_runtime_ignores() {
        let schema =
            schemars::SchemaGenerator::default().into_root_schema_for::<DeploymentFields>();
        let mut ours: Vec<String> = schema.as_value()["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let mut runtime: Vec<String> = mcp_declaration::DEPLOYMENT_FIELDS
            .iter()
            .map(|f| (*f).to_owned())
            .collect();
        ours.sort();
        runtime.sort();
        assert_eq!(ours, runtime);
    }

    #[test]
    fn no_deployment_field_shadows_a_declaration_field() {
        let schema = schemars::SchemaGenerator::default().into_root_schema_for::<Declaration>();
        let declared = schema.as_value()["properties"].as_object().unwrap();
        for field in mcp_declaration::DEPLOYMENT_FIELDS {
            assert!(
                !declared.contains_key(*field),
                "`{field}` is both served and a deployment field"
            );
        }
    }

    /// Both committed copies: `crds/` (for `kubectl apply`) and the chart's `crds/` (installed
    /// by `helm install`; the operator raises it later).
    #[test]
    fn crds_directories_hold_the_generated_crd() {
        let generated = crd_yaml().unwrap();
        for (path, committed) in [
            (
                "crds/mcpservers.kube-mcp.io.yaml",
                include_str!("../../crds/mcpservers.kube-mcp.io.yaml"),
            ),
            (
                "charts/kube-mcp/crds/mcpservers.kube-mcp.io.yaml",
                include_str!("../../charts/kube-mcp/crds/mcpservers.kube-mcp.io.yaml"),
            ),
        ] {
            assert!(
                committed == generated,
                "{path} is stale: run `cargo run -p mcp-operator -- crd > {path}`"
            );
        }
    }

    /// Every CEL rule and list key of the schema, by path: the rules the API server enforces.
    #[test]
    fn crds_directories_hold_the_generated_approval_crd() {
        let generated = approval_crd_yaml().unwrap();
        for (path, committed) in [
            (
                "crds/mcpapprovals.kube-mcp.io.yaml",
                include_str!("../../crds/mcpapprovals.kube-mcp.io.yaml"),
            ),
            (
                "charts/kube-mcp/crds/mcpapprovals.kube-mcp.io.yaml",
                include_str!("../../charts/kube-mcp/crds/mcpapprovals.kube-mcp.io.yaml"),
            ),
        ] {
            assert!(
                committed == generated,
                "{path} is stale: run `cargo run -p mcp-operator -- approval-crd > {path}`"
            );
        }
    }

    #[test]
    fn crds_directories_hold_the_generated_toolset_crds() {
        let generated = toolset_crds_yaml().unwrap();
        for (path, committed) in [
            (
                "crds/mcptoolsets.kube-mcp.io.yaml",
                include_str!("../../crds/mcptoolsets.kube-mcp.io.yaml"),
            ),
            (
                "charts/kube-mcp/crds/mcptoolsets.kube-mcp.io.yaml",
                include_str!("../../charts/kube-mcp/crds/mcptoolsets.kube-mcp.io.yaml"),
            ),
        ] {
            assert!(
                committed == generated,
                "{path} is stale: run `cargo run -p mcp-operator -- toolset-crds > {path}`"
            );
        }
    }

    #[test]
    fn validation_rules() {
        fn walk(schema: &Value, path: &str, out: &mut Vec<String>) {
            let Some(object) = schema.as_object() else {
                return;
            };
            for rule in object
                .get("x-kubernetes-validations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let message = rule
                    .get("message")
                    .or_else(|| rule.get("messageExpression"))
                    .unwrap();
                out.push(format!(
                    "{path}: {} => {message}",
                    rule["rule"].as_str().unwrap()
                ));
            }
            if let Some(keys) = object.get("x-kubernetes-list-map-keys") {
                out.push(format!("{path}: unique by {keys}"));
            }
            if let Some(most) = object.get("maxItems") {
                out.push(format!("{path}: at most {most} items"));
            }
            if let Some(pattern) = object.get("pattern") {
                out.push(format!("{path}: matches {pattern}"));
            }
            for (name, child) in object
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                walk(child, &format!("{path}.{name}"), out);
            }
            if let Some(items) = object.get("items") {
                walk(items, &format!("{path}[]"), out);
            }
        }
        let mut rules = Vec::new();
        walk(
            &crd_json()["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
            "",
            &mut rules,
        );
        insta::assert_yaml_snapshot!(rules);
    }

    #[test]
    fn content_blocks_are_one_structural_object() {
        let block =
            &spec_schema()["properties"]["tools"]["items"]["properties"]["content"]["items"];
        assert_eq!(block["type"], "object");
        assert!(block.get("oneOf").is_none());
        assert_eq!(
            block["properties"]["type"]["enum"],
            serde_json::json!(["text", "image", "audio", "resource", "resource_link"])
        );
        insta::assert_yaml_snapshot!(block);
    }

    /// Client-side `kubectl apply` (Argo CD's default) stores the applied object in an
    /// annotation of at most 256 KiB; the CRD must fit, with room for what a change adds.
    #[test]
    fn the_crd_fits_client_side_apply() {
        const ANNOTATION_LIMIT: usize = 256 * 1024;
        let [sets, grants] = toolset_crds();
        for crd in [crd(), sets, grants] {
            let bytes = serde_json::to_vec(&crd).unwrap().len();
            let name = crd.metadata.name.unwrap_or_default();
            println!("{name} as JSON: {bytes} bytes, limit {ANNOTATION_LIMIT}");
            assert!(
                bytes < ANNOTATION_LIMIT,
                "{name} is {bytes} bytes as JSON, over client-side apply's {ANNOTATION_LIMIT}"
            );
        }
    }

    #[test]
    fn kubernetes_typed_fields_keep_only_their_own_description() {
        let spec = spec_schema();
        for name in generate::KUBERNETES_TYPED {
            let field = &spec["properties"][name];
            assert!(field["description"].is_string(), "{name} keeps its own");
            let nested = serde_json::to_string(&field["items"]).unwrap()
                + &serde_json::to_string(&field["properties"]).unwrap();
            assert!(!nested.contains("\"description\""), "{name}: {nested}");
            assert!(nested.len() > 4, "{name} has a nested schema");
        }
    }

    #[test]
    fn repeated_schemas_keep_only_their_own_description() {
        let servers = spec_schema();
        let sets = serde_json::to_value(toolset_crds()[0].clone()).unwrap()["spec"]["versions"][0]
            ["schema"]["openAPIV3Schema"]["properties"]["spec"]
            .clone();
        for spec in [servers, sets] {
            for path in generate::REPEATED {
                let mut field = &spec;
                for name in *path {
                    let object = if field["items"].is_object() {
                        &field["items"]
                    } else {
                        field
                    };
                    field = &object["properties"][name];
                }
                assert!(field["description"].is_string(), "{path:?} keeps its own");
                // A doc is a string; a property called `description` is a schema.
                let nested = serde_json::to_string(&field["properties"]).unwrap();
                assert!(!nested.contains("\"description\":\""), "{path:?}: {nested}");
                assert!(nested.len() > 4, "{path:?} has a nested schema");
            }
        }
    }

    #[test]
    fn every_served_version_has_the_storage_schema() {
        let crd = crd();
        let names: Vec<&str> = crd.spec.versions.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, mcp_declaration::SERVED_VERSIONS);
        let storage: Vec<String> = crd
            .spec
            .versions
            .iter()
            .filter(|v| v.storage)
            .map(|v| format!("{}/{}", crd.spec.group, v.name))
            .collect();
        assert_eq!(storage, [mcp_declaration::API_VERSION]);
        for version in &crd.spec.versions {
            assert!(version.served, "{}", version.name);
            assert_eq!(
                version.schema, crd.spec.versions[0].schema,
                "{}",
                version.name
            );
            assert_eq!(
                version.additional_printer_columns, crd.spec.versions[0].additional_printer_columns,
                "{}",
                version.name
            );
            assert_eq!(version.subresources, crd.spec.versions[0].subresources);
        }
        assert!(crd.spec.conversion.is_none(), "conversion: None");
    }

    #[test]
    fn the_example_is_a_valid_mcpserver() {
        let server: MCPServer =
            serde_yaml_ng::from_str(include_str!("../../examples/weather.yaml")).unwrap();
        assert!(!server.spec.declaration.tools.is_empty());
    }
}
