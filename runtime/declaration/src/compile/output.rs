//! The compiled declaration: what serving reads, built once by the compiler and shared by all
//! requests (immutable). Pure data and lookups.

use super::CompiledHttp;
use crate::access::AccessRules;
use crate::resource_uri::UriTemplate;
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
    /// `spec.auth`, when requests must be authenticated.
    pub auth: Option<Auth>,
    /// Per-item scopes and `allow` conditions.
    pub access: AccessRules,
    pub(super) tool_index: HashMap<String, usize>,
    pub(super) resource_index: HashMap<String, usize>,
    pub(super) prompt_index: HashMap<String, usize>,
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
}

impl Compiled {
    /// Looks a tool up by name.
    pub fn tool(&self, name: &str) -> Option<&CompiledTool> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    /// Looks a fixed resource up by URI.
    pub fn resource(&self, uri: &str) -> Option<&CompiledResource> {
        self.resource_index.get(uri).map(|&i| &self.resources[i])
    }

    /// Looks a prompt up by name.
    pub fn prompt(&self, name: &str) -> Option<&CompiledPrompt> {
        self.prompt_index.get(name).map(|&i| &self.prompts[i])
    }
}
