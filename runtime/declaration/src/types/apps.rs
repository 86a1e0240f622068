//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865): a tool names an HTML view (a `ui://`
//! resource) that hosts render its results in, and the view's resource says which origins its
//! sandbox may reach. Pure data, no I/O.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The MIME type of an MCP Apps view.
pub const MCP_APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The view a tool's results are shown in (`_meta.ui` of its `tools/list` entry).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolUi {
    /// URI of a declared `ui://` resource of type `text/html;profile=mcp-app`
    /// (`_meta.ui.resourceUri`).
    pub resource: String,
    /// Who may call the tool: `model` (the agent), `app` (the view). Default: both. A tool
    /// only for `app` is not listed to clients without MCP Apps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub visibility: Vec<UiVisibility>,
}

/// Who may call a tool with a view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum UiVisibility {
    /// The model (agent) sees and calls it.
    Model,
    /// The view calls it.
    App,
}

/// What a view's sandbox may do (`_meta.ui` of the resource and of its contents).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceUi {
    /// Origins the view may reach; hosts build its Content Security Policy from them and allow
    /// nothing else (absent: no external origin at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<UiCsp>,
    /// Browser features the view asks for (hosts may grant them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<UiPermissions>,
    /// Whether the host should draw a border and background around the view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

/// Origins a view may reach, each a literal `https://host[:port]` (connections also `wss://`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiCsp {
    /// Origins of fetch, XHR and WebSocket connections (`connect-src`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_domains: Vec<String>,
    /// Origins of scripts, styles, images, fonts and media (`script-src`, `img-src`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_domains: Vec<String>,
    /// Origins of nested frames (`frame-src`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_domains: Vec<String>,
    /// Origins allowed as the document's base URI (`base-uri`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_uri_domains: Vec<String>,
}

/// Browser features a view asks for: each present (as `{}`) is requested.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiPermissions {
    /// The camera.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<Requested>,
    /// The microphone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microphone: Option<Requested>,
    /// The device's location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<Requested>,
    /// Writing to the clipboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipboard_write: Option<Requested>,
}

/// A requested permission: an empty object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Requested {}
