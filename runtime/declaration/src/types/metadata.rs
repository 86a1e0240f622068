//! Server-level metadata: what a client or a registry shows about the server as a whole
//! (`description`, `websiteUrl`, `repository`; `icons` use the item [`Icon`](super::Icon)).
//! Served in `serverInfo` (MCP's `Implementation`, SEP-973) and published by the operator's
//! registry. Pure data, no I/O.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest server `description`: the MCP Registry's `server.json` allows 100 characters.
pub const MAX_SERVER_DESCRIPTION: usize = 100;

/// Where the server's declaration is kept, for people who want to read it (`server.json`'s
/// `repository`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Repository {
    /// URL for browsing the source, such as `https://git.example.com/platform/tracker`
    /// (`https:` or `http:`).
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,
    /// Hosting service, such as `github`, `gitlab` or `git`.
    #[schemars(length(min = 1, max = 64))]
    pub source: String,
    /// The hosting service's stable identifier of the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub id: Option<String>,
    /// Relative path of the server inside the repository, such as `servers/tracker`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub subfolder: Option<String>,
}

/// Which background an icon is drawn for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// Drawn for a light background.
    Light,
    /// Drawn for a dark background.
    Dark,
}
