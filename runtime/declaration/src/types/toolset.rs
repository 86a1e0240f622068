//! Fragments teams own: the `MCPToolSet` kind (tools, resources, templates, prompts and the shared
//! schemas they use), `spec.include` of an `MCPServer` that selects sets, and the
//! `MCPToolSetGrant` kind that lets servers of other namespaces include a namespace's sets (in
//! the style of Gateway API's ReferenceGrant). Pure data, no I/O.

use super::{Prompt, Resource, ResourceTemplate, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Most entries `spec.include` may have.
pub const MAX_INCLUDES: usize = 32;
/// Most patterns one include's `exclude` may have.
pub const MAX_EXCLUDES: usize = 64;
/// Most sets one server may include in all (each include entry counts the sets it selects).
pub const MAX_INCLUDED_SETS: usize = 256;

/// The items of an `MCPToolSet`: compiled into every `MCPServer` that includes the set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolSetSpec {
    /// JSON Schemas the set's items refer to as `{$ref: "#/schemas/NAME"}`. A set refers only
    /// to its own schemas; sets that share a name must define it identically.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::types::schema_map")]
    pub schemas: BTreeMap<String, Value>,
    /// Tools, as in `MCPServer.spec.tools` (renamed by the including server's `prefix`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Resources with fixed URIs, as in `MCPServer.spec.resources`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Resource>,
    /// Resource templates, as in `MCPServer.spec.resourceTemplates`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_templates: Vec<ResourceTemplate>,
    /// Prompts, as in `MCPServer.spec.prompts` (renamed by the including server's `prefix`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<Prompt>,
}

/// One entry of `spec.include`: the `MCPToolSet`s it selects (by `name`, or by `selector`) in
/// one namespace, and how their items are taken.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Include {
    /// The set with this name (exactly one of `name` and `selector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub name: Option<String>,
    /// Every set whose labels match (exactly one of `name` and `selector`; an empty selector
    /// selects every set of the namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Namespace of the sets (default: the server's). Another namespace's sets are included
    /// only where an `MCPToolSetGrant` in that namespace grants them to the server's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
    /// Put before the names of the sets' tools and prompts (`k8s_` makes `get_pod` into
    /// `k8s_get_pod`); resources keep their URIs and names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub prefix: Option<String>,
    /// Items left out, by their name in the set (before `prefix`): patterns where `*` matches
    /// any run of characters (`delete_*`). Applies to tools, resources, resource templates and
    /// prompts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub exclude: Vec<String>,
}

/// A Kubernetes label selector: every `matchLabels` pair and every `matchExpressions` entry
/// must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels the set must have, with these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements on the set's labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub match_expressions: Vec<LabelRequirement>,
}

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelRequirement {
    /// The label.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: LabelOperator,
    /// The values for `In` and `NotIn` (empty for `Exists` and `DoesNotExist`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub values: Vec<String>,
}

/// How a requirement compares a label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum LabelOperator {
    /// The label has one of `values`.
    In,
    /// The label is absent or has none of `values`.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

impl Include {
    /// Whether this entry, of a server in namespace `own`, selects the set `name` with `labels`
    /// in `namespace`.
    pub fn selects(
        &self,
        own: &str,
        namespace: &str,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> bool {
        self.namespace.as_deref().unwrap_or(own) == namespace
            && match (&self.name, &self.selector) {
                (Some(wanted), _) => wanted == name,
                (None, Some(selector)) => selector.matches(labels),
                (None, None) => false,
            }
    }
}

impl LabelSelector {
    /// Whether `labels` satisfy the selector.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value))
            && self.match_expressions.iter().all(|requirement| {
                let value = labels.get(&requirement.key);
                match requirement.operator {
                    LabelOperator::In => value.is_some_and(|v| requirement.values.contains(v)),
                    LabelOperator::NotIn => !value.is_some_and(|v| requirement.values.contains(v)),
                    LabelOperator::Exists => value.is_some(),
                    LabelOperator::DoesNotExist => value.is_none(),
                }
            })
    }
}

/// What an `MCPToolSetGrant` allows: servers in the `from` namespaces may include the sets named
/// in `to` (every set of the grant's namespace when `to` is empty).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolSetGrantSpec {
    /// Namespaces whose `MCPServer`s may include the granted sets.
    #[schemars(length(min = 1, max = 64))]
    pub from: Vec<GrantFrom>,
    /// The granted sets of this namespace, by name (empty: all of them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub to: Vec<GrantTo>,
}

/// A namespace a grant is given to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrantFrom {
    /// The namespace of the including servers.
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
}

/// A set a grant names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrantTo {
    /// The set's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}
