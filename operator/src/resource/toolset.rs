//! The `MCPToolSet` and `MCPToolSetGrant` custom resources: fragments of a declaration that teams
//! own, and the grants that let servers of other namespaces include them. Their specs are the
//! runtime's types (`mcp_declaration::ToolSetSpec`, `ToolSetGrantSpec`), so `serve` reads the same
//! documents. Pure data.

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{CustomResource, KubeSchema, Resource};
use mcp_declaration::{ToolSetGrantSpec, ToolSetSpec};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::marker::PhantomData;

/// Tools, resources, resource templates and prompts (and the shared schemas they use) that
/// `MCPServer`s include with `spec.include`.
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "kube-mcp.io",
    version = "v1alpha1",
    kind = "MCPToolSet",
    plural = "mcptoolsets",
    shortname = "mcpts",
    category = "kube-mcp",
    namespaced,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    doc = "Tools, resources and prompts that MCPServers include with spec.include."
)]
#[schemars(transform = super::schema::item_rules)]
pub struct MCPToolSetSpec {
    /// What the set declares.
    #[serde(flatten)]
    pub set: ToolSetSpec,
}

/// Lets the `MCPServer`s of other namespaces include this namespace's `MCPToolSet`s, in the style
/// of Gateway API's ReferenceGrant: the namespace that owns the sets decides who may take them.
#[derive(CustomResource, KubeSchema, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "kube-mcp.io",
    version = "v1alpha1",
    kind = "MCPToolSetGrant",
    plural = "mcptoolsetgrants",
    category = "kube-mcp",
    namespaced,
    doc = "Lets MCPServers of other namespaces include this namespace's MCPToolSets."
)]
#[schemars(transform = super::schema::kubernetes_formats)]
pub struct MCPToolSetGrantSpec {
    /// Who may include which sets.
    #[serde(flatten)]
    pub grant: ToolSetGrantSpec,
}

/// An `MCPToolSet` or `MCPToolSetGrant` as the controller's cache keeps it: metadata and the spec
/// as the API server sent it. The reconcile that includes it parses the spec strictly (as `serve`
/// does), so a field this operator does not know refuses the including server, naming the set,
/// instead of being dropped on the way into the cache.
#[derive(Clone, Debug, Deserialize)]
pub struct Cached<K> {
    /// The object's metadata.
    pub metadata: ObjectMeta,
    /// The spec as JSON.
    #[serde(default)]
    pub spec: serde_json::Value,
    #[serde(skip)]
    kind: PhantomData<K>,
}

/// A cached `MCPToolSet`.
pub type CachedToolSet = Cached<MCPToolSet>;
/// A cached `MCPToolSetGrant`.
pub type CachedToolSetGrant = Cached<MCPToolSetGrant>;

impl<K> Resource for Cached<K>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
