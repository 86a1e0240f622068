//! The declaration: the part of an `MCPServer` spec that the runtime serves.
//!
//! One set of types, shared with the operator (which embeds them in the CRD), so every field is
//! documented for `kubectl explain`. Field names follow MCP's own names. Pure data, no I/O.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

mod approval;
mod apps;
mod auth;
mod discovery;
mod http;
mod http_async;
mod http_auth;
mod interactive;
mod limits;
mod metadata;
mod toolset;
mod transport;
mod views;
pub use approval::*;
pub use apps::*;
pub use auth::*;
pub use discovery::*;
pub use http::*;
pub use http_async::*;
pub use http_auth::*;
pub use interactive::*;
pub use limits::*;
pub use metadata::*;
pub use toolset::*;
pub use transport::*;
pub use views::*;

/// Tools, resources and prompts served to MCP clients, exactly as declared.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Declaration {
    /// Human-readable server title, sent as `serverInfo.title`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Server version, sent as `serverInfo.version` (default `0.0.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What the server is for, in at most 100 characters: `serverInfo.description`, and the
    /// description registries and the catalog show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub description: Option<String>,
    /// Icons clients may show for the server (`serverInfo.icons`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub icons: Vec<Icon>,
    /// Home page or documentation of the server (`serverInfo.websiteUrl`; `https:` or `http:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub website_url: Option<String>,
    /// Where the declaration's source is kept (published by the registry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<Repository>,
    /// Instructions for the model on how to use this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long clients of the 2026-07-28 protocol may cache list and read results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CachePolicy>,
    /// JSON Schemas shared by reference within this declaration: name -> schema (names of 1-128
    /// characters of `A-Za-z0-9._-`, at most 4096 entries). A tool's `inputSchema` or
    /// `outputSchema`, an elicited field's `schema`, or another shared schema refers to one as
    /// `{$ref: "#/schemas/NAME"}`. Each tool is served self-contained: its schema carries the
    /// shared schemas it reaches under `$defs`, the references rewritten to `#/$defs/NAME`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::types::schema_map")]
    pub schemas: BTreeMap<String, Value>,
    /// `MCPToolSet` objects whose items this server serves beside its own (at most 32 entries):
    /// by `name` or label `selector`, in this namespace or, where an `MCPToolSetGrant` allows
    /// it, another. Two items of one name (or resource URI) are refused, naming both sources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub include: Vec<Include>,
    /// Tools the server offers, in the order `tools/list` returns them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Resources with fixed URIs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Resource>,
    /// Resources addressed by an RFC 6570 URI template (level 1: `{var}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_templates: Vec<ResourceTemplate>,
    /// Prompt templates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<Prompt>,
    /// Bearer-token authentication of every request (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Auth>,
    /// The transports clients may use (absent: all three). The runtime serves those that both
    /// this list and its `--transports` flag allow; a path of a transport turned off answers
    /// 404 with a hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transports: Option<Vec<Transport>>,
    /// Rate limits and quotas (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// How clients discover the tools (absent: `mode: full`, every tool in `tools/list`).
    /// `mode: search` serves large servers: `tools/list` shows the `pinned` tools plus the
    /// meta tools `search_tools` and `describe_tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery: Option<Discovery>,
    /// Subsets of the items published at paths of their own (at most 32): a view at
    /// `/readers` serves `/readers/mcp` with only the tools, resources, resource templates and
    /// prompts it names, to callers holding its `requiredScopes` as well as the server's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub views: Vec<View>,
}

/// Caching hints sent as `ttlMs` and `cacheScope` on cacheable results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CachePolicy {
    /// Milliseconds a client may reuse a result (default 60000; 0 disables caching).
    #[serde(default = "default_ttl_ms")]
    pub ttl_ms: u64,
    /// Who may share a cached result: `public` (any client) or `private` (this client only).
    #[serde(default)]
    pub scope: CacheScope,
}

fn default_ttl_ms() -> u64 {
    60_000
}

impl Declaration {
    /// Every HTTP backend: of tools, resources and resource templates.
    pub fn http_backends(&self) -> impl Iterator<Item = &Http> {
        let tools = self.tools.iter().filter_map(|t| t.http.as_ref());
        let resources = self.resources.iter().filter_map(|r| r.http.as_ref());
        let templates = self
            .resource_templates
            .iter()
            .filter_map(|t| t.http.as_ref());
        tools.chain(resources).chain(templates)
    }
}

impl Default for CachePolicy {
    fn default() -> Self {
        Self {
            ttl_ms: default_ttl_ms(),
            scope: CacheScope::Public,
        }
    }
}

/// Who may share a cached result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CacheScope {
    /// Any client may reuse the result.
    #[default]
    Public,
    /// Only the requesting client may reuse the result.
    Private,
}

/// A tool: its interface and where its answer comes from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Unique tool name (1-128 characters of `A-Za-z0-9_-.`).
    pub name: String,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema (2020-12) of the arguments; arguments are validated against it before the tool
    /// answers. Default: an object with no declared properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::types::any_object")]
    pub input_schema: Option<Map<String, Value>>,
    /// JSON Schema (2020-12) of `structuredContent`; the declared value is checked against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::types::any_object")]
    pub output_schema: Option<Map<String, Value>>,
    /// Hints about the tool's behaviour, sent as declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons clients may show for the tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// The declared reply: MCP content blocks whose text is a template over `args`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ContentBlock>>,
    /// Declared structured result; every string in it is a template over `args`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::types::any_value")]
    pub structured_content: Option<Value>,
    /// Where the reply comes from instead of `content`: an upstream HTTP API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<Http>,
    /// Whether a call may become an MCP task (default `optional` for `http.async` tools, else
    /// `never`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskSupport>,
    /// Marks the declared reply as a tool error (`isError: true`), readable by the model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Progress notifications sent before the reply, to clients that asked for progress.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progress: Vec<ProgressStep>,
    /// Log messages sent to the client before the reply, at or above its requested level.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<LogMessage>,
    /// Ask the user to confirm before the tool runs (a template over `args`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<Confirm>,
    /// Values asked from the user when the call lacks them, merged into `args`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elicit: Vec<ElicitField>,
    /// A person of a group must approve each exact call before it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// A completion asked from the client's model; the reply templates see it as `sample`.
    /// Declared-content tools only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<Sample>,
    /// Ask the client for its roots; the reply templates see them as `roots` (a list of
    /// `{uri, name}`). Declared-content tools only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub roots: bool,
    /// An MCP Apps view hosts show the results in (`_meta.ui.resourceUri`); the `content`
    /// stays the answer for clients without MCP Apps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<ToolUi>,
    /// Scopes a caller needs to see and use this item (with `spec.auth`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_scopes: Vec<String>,
    /// Condition a caller must meet (with `spec.auth`): a template over `token.claims` and
    /// `args` that renders `true` to allow. One that reads only `token` also hides the item
    /// from lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<String>,
}

/// One declared progress notification of a tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProgressStep {
    /// Progress so far; increases from step to step.
    pub progress: f64,
    /// Total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// Message shown to the user; a template over `args`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Milliseconds to wait before sending this step (at most 10000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

/// One declared log message of a tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogMessage {
    /// Severity (syslog levels, as MCP names them).
    pub level: LogLevel,
    /// Message text; a template over `args`.
    pub message: String,
    /// Logger name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
}

/// Log severities, lowest first.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// System is unusable.
    Emergency,
}

/// Tool behaviour hints (MCP `ToolAnnotations`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling the tool again with the same arguments has no additional effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// An icon a client may display.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// `https:` or `data:` URI of the image.
    pub src: String,
    /// MIME type of the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `48x48` or `any`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// Background the icon is drawn for (default: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
}

/// An MCP content block. Text fields and URIs are templates over `args`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text; a template over `args`.
        text: String,
        /// Audience and priority hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// An image.
    Image {
        /// Base64-encoded image data.
        data: String,
        /// MIME type, such as `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Audience and priority hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// Audio.
    Audio {
        /// Base64-encoded audio data.
        data: String,
        /// MIME type, such as `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Audience and priority hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A resource embedded in the reply.
    Resource {
        /// The embedded resource.
        resource: EmbeddedResource,
        /// Audience and priority hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// URI of the linked resource; a template over `args`.
        uri: String,
        /// Name of the linked resource.
        name: String,
        /// Description of the linked resource.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// MIME type of the linked resource.
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Audience and priority hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
}

/// A resource's contents embedded in a content block: exactly one of `text` or `blob`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// URI of the resource; a template over `args`.
    pub uri: String,
    /// MIME type of the contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents; a template over `args`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64-encoded binary contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// Audience and priority hints on content (MCP `Annotations`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is for: `user`, `assistant` or both.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audience: Vec<Role>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last modification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// A conversation role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human side.
    User,
    /// The model side.
    Assistant,
}

/// A resource with a fixed URI; exactly one of `text`, `blob`, `file` or `http` gives its
/// contents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Unique URI of the resource.
    pub uri: String,
    /// Short name.
    pub name: String,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of the contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Audience and priority hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons clients may show for the resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// Text contents, served as declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64-encoded binary contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Path of a file holding the contents (such as a mounted ConfigMap key), read at load and
    /// on every reload; relative paths are resolved against the manifest's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Contents fetched from an upstream HTTP API on each read; the fields are `tools[].http`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<Http>,
    /// An MCP Apps view (`ui://` URI, `mimeType: text/html;profile=mcp-app`): the origins and
    /// features its sandbox may use (`_meta.ui`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<ResourceUi>,
    /// Scopes a caller needs to see and use this item (with `spec.auth`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_scopes: Vec<String>,
    /// Condition a caller must meet (with `spec.auth`): a template over `token.claims` and
    /// `args` that renders `true` to allow. One that reads only `token` also hides the item
    /// from lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<String>,
}

/// Resources addressed by a URI template; the contents are a template over the URI's variables
/// or come from an upstream HTTP API.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// RFC 6570 level-1 URI template, such as `weather://city/{city}`.
    pub uri_template: String,
    /// Short name.
    pub name: String,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of the contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Audience and priority hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Text contents; a template over `args` (the URI's variables). Exactly one of `text` or
    /// `http`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Contents fetched from an upstream HTTP API; `args` are the URI's variables. The fields
    /// are `tools[].http`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<Http>,
    /// Values offered by `completion/complete` for each URI variable.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub completions: BTreeMap<String, Vec<String>>,
    /// Scopes a caller needs to see and use this item (with `spec.auth`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_scopes: Vec<String>,
    /// Condition a caller must meet (with `spec.auth`): a template over `token.claims` and
    /// `args` that renders `true` to allow. One that reads only `token` also hides the item
    /// from lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<String>,
}

/// A prompt template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Unique prompt name.
    pub name: String,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Arguments the prompt takes; their values are the template variable `args`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// Icons clients may show for the prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// The messages `prompts/get` returns.
    pub messages: Vec<PromptMessage>,
    /// Values asked from the user when the request lacks them, merged into `args` as strings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elicit: Vec<ElicitField>,
    /// Scopes a caller needs to see and use this item (with `spec.auth`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_scopes: Vec<String>,
    /// Condition a caller must meet (with `spec.auth`): a template over `token.claims` and
    /// `args` that renders `true` to allow. One that reads only `token` also hides the item
    /// from lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<String>,
}

/// An argument of a prompt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Argument name.
    pub name: String,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the argument means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `prompts/get` must supply it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// Values offered by `completion/complete`, filtered by the typed prefix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completions: Vec<String>,
}

/// One message of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said: any content block.
    pub content: ContentBlock,
}

/// Schema of an arbitrary JSON object kept as written (embedded JSON Schema documents).
pub(crate) fn any_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Schema of `spec.schemas`: names to JSON Schemas kept as written, at most
/// [`MAX_SHARED_SCHEMAS`](crate::MAX_SHARED_SCHEMAS) of them.
pub(crate) fn schema_map(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "maxProperties": crate::MAX_SHARED_SCHEMAS,
        "additionalProperties": {"x-kubernetes-preserve-unknown-fields": true},
    })
}

/// Schema of any JSON value kept as written.
pub(crate) fn any_value(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "x-kubernetes-preserve-unknown-fields": true,
    })
}
