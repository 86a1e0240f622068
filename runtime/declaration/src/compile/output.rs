//! The compiled declaration: what serving reads, built once by the compiler and shared by all
//! requests (immutable). Pure data and lookups.

use super::CompiledHttp;
use crate::access::{Access, AccessRules};
use crate::resource_uri::{UriTemplate, canonical};
use crate::template::{Templates, Text};
use crate::types::{Auth, CachePolicy, LogLevel};
use crate::value_template::ValueTemplate;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// A declaration ready to serve.
#[derive(Debug)]
pub struct Compiled {
    /// `serverInfo` as sent to clients.
    pub server_info: Value,
    /// The declaration's hash: stamped by the operator, or computed as the operator would
    /// (`declaration::hash_of`). Reported to clients and in a metric.
    pub hash: String,
    /// Server instructions.
    pub instructions: Option<String>,
    /// Caching hints for 2026-07-28 results.
    pub cache: CachePolicy,
    /// Tools in declaration order.
    pub tools: Vec<CompiledTool>,
    /// Fixed resources in declaration order.
    pub resources: Vec<CompiledResource>,
    /// Resource templates in declaration order.
    pub resource_templates: Vec<CompiledResourceTemplate>,
    /// Prompts in declaration order.
    pub prompts: Vec<CompiledPrompt>,
    /// Every template of the declaration.
    pub templates: Templates,
    /// Every HTTP backend, each at its `slot`.
    pub upstreams: Vec<Arc<CompiledHttp>>,
    /// Whether upstreams may be at link-local addresses (`CompileOptions`); the HTTP clients
    /// refuse names that resolve there unless so.
    pub allow_link_local_upstreams: bool,
    /// `spec.auth`, when requests must be authenticated.
    pub auth: Option<Auth>,
    /// How per-item `requiredScopes` and `allow` are evaluated (each item carries its own).
    pub access: AccessRules,
    /// The transports `spec.transports` allows (all when absent).
    pub transports: crate::Transports,
    /// `spec.limits`.
    pub limits: super::CompiledLimits,
    /// `spec.discovery`: what `tools/list` shows, the meta tools and their search index.
    pub discovery: super::CompiledDiscovery,
    /// `spec.views`: the subsets of the items served at paths of their own.
    pub views: super::CompiledViews,
    pub(super) tool_index: HashMap<String, usize>,
    /// Fixed resources by their canonical URI.
    pub(super) resource_index: HashMap<String, usize>,
    pub(super) prompt_index: HashMap<String, usize>,
}

/// What serves a resource URI, and the URI's canonical spelling (the key of its cache entry and
/// its subscriptions).
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedUri {
    /// The item.
    pub item: UriItem,
    /// `canonical_uri` of the requested URI.
    pub uri: String,
}

/// The item a resource URI names.
#[derive(Clone, Debug, PartialEq)]
pub enum UriItem {
    /// A fixed resource (index into `Compiled::resources`).
    Resource(usize),
    /// A resource template (index into `Compiled::resource_templates`) and the URI's variables
    /// (percent-decoded strings), the `args` of its templates and `allow`.
    Template(usize, Value),
}

/// A tool ready to call.
#[derive(Debug)]
pub struct CompiledTool {
    /// Its `tools/list` entry.
    pub descriptor: Value,
    /// Argument validator.
    pub input: jsonschema::Validator,
    /// Validator of `structuredContent`, when an `outputSchema` is declared.
    pub output: Option<jsonschema::Validator>,
    /// Declared content blocks.
    pub content: Vec<ValueTemplate>,
    /// Declared structured content.
    pub structured: Option<ValueTemplate>,
    /// The declared reply is a tool error.
    pub is_error: bool,
    /// Progress notifications, in order.
    pub progress: Vec<CompiledProgress>,
    /// Log messages, in order.
    pub logs: Vec<CompiledLog>,
    /// The upstream call that answers instead of the declared content.
    pub http: Option<Arc<CompiledHttp>>,
    /// What the tool asks the client before it answers.
    pub interaction: super::CompiledInteraction,
    /// Who may see and use it (`requiredScopes`, `allow`).
    pub access: Access,
    /// Its arguments mirrored into `Mcp-Param-*` headers (`x-mcp-header`), in schema order.
    pub param_headers: Vec<super::ParamHeader>,
    /// Its MCP Apps view (`descriptor` then carries `_meta.ui`).
    pub ui: Option<super::CompiledToolUi>,
    /// Whether a call may become a task (`never` unless `http.async`).
    pub task: crate::types::TaskSupport,
    /// The approval each call needs before it runs.
    pub approval: Option<super::CompiledApproval>,
}

/// A declared progress step.
#[derive(Debug)]
pub struct CompiledProgress {
    /// Progress so far.
    pub progress: f64,
    /// Total, when known.
    pub total: Option<f64>,
    /// Message template.
    pub message: Option<Text>,
    /// Wait before sending.
    pub delay: std::time::Duration,
}

/// A declared log message.
#[derive(Debug)]
pub struct CompiledLog {
    /// Severity.
    pub level: LogLevel,
    /// Message template.
    pub message: Text,
    /// Logger name.
    pub logger: Option<String>,
}

/// A fixed resource ready to read.
#[derive(Debug)]
pub struct CompiledResource {
    /// Its `resources/list` entry.
    pub descriptor: Value,
    /// Its `resources/read` contents entry (for `http` resources: `uri` and `mimeType` only).
    pub contents: Value,
    /// The upstream call that provides the contents.
    pub http: Option<Arc<CompiledHttp>>,
    /// Who may see and use it (`requiredScopes`, `allow`).
    pub access: Access,
}

/// A resource template ready to match and read.
#[derive(Debug)]
pub struct CompiledResourceTemplate {
    /// Its `resources/templates/list` entry.
    pub descriptor: Value,
    /// The parsed URI template.
    pub uri: UriTemplate,
    /// MIME type of the contents.
    pub mime_type: Option<String>,
    /// Contents template (absent for `http` templates).
    pub text: Option<Text>,
    /// The upstream call that provides the contents.
    pub http: Option<Arc<CompiledHttp>>,
    /// Completion values per variable.
    pub completions: HashMap<String, Vec<String>>,
    /// Who may see and use it (`requiredScopes`, `allow`).
    pub access: Access,
}

/// A prompt ready to render.
#[derive(Debug)]
pub struct CompiledPrompt {
    /// Its `prompts/list` entry.
    pub descriptor: Value,
    /// Declared description.
    pub description: Option<String>,
    /// Arguments: name, required, completion values.
    pub arguments: Vec<(String, bool, Vec<String>)>,
    /// Message templates (`{role, content}`).
    pub messages: Vec<ValueTemplate>,
    /// What the prompt asks the client before it renders (elicitation only).
    pub interaction: super::CompiledInteraction,
    /// Who may see and use it (`requiredScopes`, `allow`).
    pub access: Access,
}

impl Compiled {
    /// The approvers' groups of the tools that need approvals, each once, sorted (none: no
    /// tool needs an approval store).
    pub fn approver_groups(&self) -> Vec<&str> {
        let mut groups: Vec<&str> = self
            .tools
            .iter()
            .filter_map(|tool| tool.approval.as_ref().map(|a| a.group.as_str()))
            .collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }

    /// Looks a tool up by name.
    pub fn tool(&self, name: &str) -> Option<&CompiledTool> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    /// Looks a fixed resource up by URI (any spelling of it).
    pub fn resource(&self, uri: &str) -> Option<&CompiledResource> {
        self.resource_index
            .get(canonical(uri).as_ref())
            .map(|&i| &self.resources[i])
    }

    /// What serves `uri`: a fixed resource, else the first resource template that matches it.
    /// The one place a URI is matched; every method that names a resource resolves it here.
    pub fn resolve_uri(&self, uri: &str) -> Option<ResolvedUri> {
        let uri = canonical(uri).into_owned();
        if let Some(&index) = self.resource_index.get(&uri) {
            return Some(ResolvedUri {
                item: UriItem::Resource(index),
                uri,
            });
        }
        self.resource_templates
            .iter()
            .enumerate()
            .find_map(|(index, template)| {
                let vars = template.uri.matches(&uri)?;
                let args = vars
                    .into_iter()
                    .map(|(name, value)| (name, Value::String(value)))
                    .collect();
                Some(UriItem::Template(index, Value::Object(args)))
            })
            .map(|item| ResolvedUri { item, uri })
    }

    /// A resource template by its `uriTemplate`.
    pub fn resource_template(&self, uri_template: &str) -> Option<usize> {
        self.resource_templates
            .iter()
            .position(|t| t.descriptor["uriTemplate"] == uri_template)
    }

    /// The index of a tool in `tools`, by name.
    pub fn tool_index(&self, name: &str) -> Option<usize> {
        self.tool_index.get(name).copied()
    }

    /// The index of a prompt in `prompts`, by name.
    pub fn prompt_index(&self, name: &str) -> Option<usize> {
        self.prompt_index.get(name).copied()
    }

    /// Looks a prompt up by name.
    pub fn prompt(&self, name: &str) -> Option<&CompiledPrompt> {
        self.prompt_index.get(name).map(|&i| &self.prompts[i])
    }
}
