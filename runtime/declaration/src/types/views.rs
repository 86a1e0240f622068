//! `spec.views`: subsets of the server's items published at paths of their own, each with its
//! own `requiredScopes`, so one declaration serves several audiences without being copied.
//! Pure data, no I/O.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most views one server declares: each adds endpoints to the Ingress or HTTPRoute and its own
/// protected resource metadata, and audiences are few.
pub const MAX_VIEWS: usize = 32;
/// Most patterns one of a view's lists holds.
pub const MAX_VIEW_PATTERNS: usize = 256;
/// Longest view path, in characters.
pub const MAX_VIEW_PATH: usize = 128;

/// A subset of the server's items served at its own path (`<path>/mcp`, `<path>/sse`,
/// `<path>/messages`, under the ingress path prefix). An item a view does not publish is
/// answered there as if it were not declared.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct View {
    /// Unique name of the view (1-63 characters of `a-z0-9-`, starting with a letter):
    /// recorded in audit lines and traces.
    #[schemars(length(min = 1, max = 63))]
    pub name: String,
    /// Where the view is served, below the server's path prefix: `/readers` serves
    /// `/readers/mcp` (and `/readers/sse`, `/readers/messages`). Starts with `/`, no `.` or
    /// `..` segment, no segment named like an endpoint (`mcp`, `sse`, `messages`,
    /// `.well-known`, `healthz`, ...), at most 128 characters.
    #[schemars(length(min = 2, max = 128))]
    pub path: String,
    /// Human-readable title of the view (documentation only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub title: Option<String>,
    /// What the view is for (documentation only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
    /// Scopes a caller needs for every request through this view, in addition to
    /// `spec.auth.requiredScopes` and each item's own (needs `spec.auth`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_scopes: Vec<String>,
    /// Tools the view publishes, by name; `*` matches any run of characters (`get_*`).
    /// Every pattern must match at least one tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub tools: Vec<String>,
    /// Resources the view publishes, by `name` (patterns as for `tools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub resources: Vec<String>,
    /// Resource templates the view publishes, by `name` (patterns as for `tools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub resource_templates: Vec<String>,
    /// Prompts the view publishes, by name (patterns as for `tools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub prompts: Vec<String>,
}
